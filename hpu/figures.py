"""Pictures of the HPU model, for notebooks and reports.

:func:`plot_division` draws 004's Figure 3: the level ``y(α)`` the device reaches
while the CPU keeps its cores busy, and the device's share of the work, both
against the CPU's share ``α``, with the maximising ``α*`` marked.  Seeing the
curve, not only its maximum, shows how flat the optimum is and where the
device switches from saturated to unsaturated (the kinks).

Matplotlib is an optional dependency (the ``test`` extra), so it is imported
inside the function; the figure is built without pyplot, so it draws under any
backend, including Agg on a machine with no display.
"""
from __future__ import annotations

import numpy as np

from hpu import model

__all__ = ["plot_division", "gantt"]


def _matplotlib():
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - matplotlib is in the test extra
        raise ImportError(
            "hpu.figures needs matplotlib, which is not installed: "
            "install it with `pip install 'hpu[test]'` or `pip install matplotlib`") from err
    return Figure


def plot_division(problem: model.Problem, machine: model.Machine, ax=None, alphas=None):
    """Draw 004's Figure 3 for ``problem`` on ``machine`` and return the Figure.

    Left: ``y(α)`` (:func:`hpu.model.gpu_level`); right: ``100·W_g(α)/W`` (the
    device's percentage of the total work); both over ``alphas`` (default 200
    points from ``α_min = p/n**log_b(a)`` to 1), with ``α*`` from
    :func:`hpu.model.advanced_division` marked.  ``ax`` may be a pair of
    Matplotlib axes to draw into; by default a new two-panel figure is made.
    """
    Figure = _matplotlib()
    lo, hi = model.alpha_bounds(problem, machine)
    if alphas is None:
        alphas = np.linspace(lo, hi, 200)
    alphas = np.asarray(alphas, dtype=float)
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError(f"alphas has shape {alphas.shape}: expected a non-empty 1-D sequence "
                         "of fractions in [0, 1]; pass e.g. numpy.linspace(0.01, 1, 200)")
    if ax is None:
        fig = Figure(figsize=(10, 4), layout="constrained")
        left, right = fig.subplots(1, 2)
    else:
        try:
            left, right = ax
        except (TypeError, ValueError):
            raise ValueError(f"ax = {ax!r} is not a pair of axes: expected (left, right) for "
                             "y(alpha) and the device's work; pass ax=None for a new figure"
                             ) from None
        fig = left.figure
    total = model.total_work(problem)
    ys = np.array([model.gpu_level(problem, machine, a) for a in alphas])
    share = np.array([100.0 * model.gpu_work(problem, machine, a, y) / total
                      for a, y in zip(alphas, ys)])
    best = model.advanced_division(problem, machine)

    left.plot(alphas, ys, color="C0")
    left.set_xlabel("alpha (CPU share of the tasks)")
    left.set_ylabel("y (level reached by the device)")
    left.set_ylim(0, max(problem.height, 1e-9))
    right.plot(alphas, share, color="C1")
    right.set_xlabel("alpha (CPU share of the tasks)")
    right.set_ylabel("device work (% of total)")
    if best.uses_device:
        left.axvline(best.alpha, color="0.5", linestyle=":")
        left.plot([best.alpha], [best.y], "o", color="C3",
                  label=f"alpha* = {best.alpha:.3f}, y = {best.y:.2f}")
        right.axvline(best.alpha, color="0.5", linestyle=":")
        right.plot([best.alpha], [100 * best.gpu_work_fraction], "o", color="C3",
                   label=f"alpha* = {best.alpha:.3f}: {100 * best.gpu_work_fraction:.1f} %")
        left.legend(loc="best")
        right.legend(loc="best")
    fig.suptitle(f"a = {problem.a}, b = {problem.b:g}, f(n) = {problem.cost.text}, "
                 f"n = {problem.n}, p = {machine.p:g}, g = {machine.g:g}, "
                 f"gamma = {machine.gamma:.4g}")
    return fig


def gantt(run, ax=None):
    """Draw ``run`` as a Gantt chart (what :meth:`hpu.Run.trace` writes) and return the Figure.

    One row per track of the trace (CPU threads, device queue, transfers, then
    the plan's predicted phases), one bar per slice, labelled with its level and
    phase; seconds from the run's start on the x axis.  Drawing the same events
    as the trace file keeps the picture and the file in agreement.
    """
    from hpu._trace import trace_events

    Figure = _matplotlib()
    data = trace_events(run)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in data["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = [e for e in data["traceEvents"] if e["ph"] == "X"]
    rows = sorted({(e["pid"], e["tid"]) for e in slices})
    if ax is None:
        fig = Figure(figsize=(10, 1.0 + 0.6 * max(len(rows), 1)), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    colours = {"count": "C0", "fill": "C1", "leaf": "C2", "combine": "C3"}
    for row, key in enumerate(rows):
        for e in (e for e in slices if (e["pid"], e["tid"]) == key):
            phase = e["args"].get("phase")
            colour = colours.get(phase, "C4" if e["cat"] == "link" else "C7")
            ax.broken_barh([(e["ts"] * 1e-6, max(e["dur"], 0.0) * 1e-6)], (row - 0.4, 0.8),
                           facecolors=colour, edgecolor="k", linewidth=0.3,
                           alpha=0.5 if key[0] != 1 else 1.0)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([names.get(k, f"{k[0]}:{k[1]}") for k in rows])
    ax.set_ylim(-0.6, max(len(rows), 1) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("seconds from the run's start")
    plan = run.plan
    title = f"{run.device}: K={run.K}, alpha={run.alpha}, y={run.y}, {run.seconds:.4g} s"
    if plan is not None:
        title += f" (strategy {plan.strategy})"
    ax.set_title(title)
    return fig
