"""The PNGs of ``bench/run.py``: 004's Figures 5-8 and 10, drawn from ``results.json``.

Why separate from the measuring: every figure here is a function of the
results dict (and, for Figures 5 and 6, of the calibration profile saved next
to it), never of live objects, so ``bench/run.py --plot-only`` redraws them
from a finished run and a figure can be fixed without measuring again.

Figures are built with ``matplotlib.figure.Figure`` and the Agg canvas, not
pyplot: no display, no global state, the same under any backend.

==============================  =========================================================
``fig5_g_sweep.png``            time of an element-wise sum vs work-items, the knee g
                                (``hpu.calibrate.plot_g_sweep``)
``fig6_gamma.png``              CPU time / device time of a one-task merge, γ
                                (``hpu.calibrate.plot_gamma``)
``fig7_alpha_y.png``            speed-up over one core vs α, one curve per y, measured
                                (solid) and predicted by the model (dashed), at one n
``fig8_speedup_vs_n.png``       speed-up vs n: best measured (α, y), the model's
                                prediction, the anchors, and device time / CPU time
``fig10_best_vs_model.png``     best measured α and y vs the model's, per n
``fig11_projection.png``        a PROJECTION, not a measurement: the model's speed-up,
                                α* and y for 004's machines (published p, g, γ) behind
                                PCIe 3.0 x16 (``results["projection"]``)
==============================  =========================================================

Every measured figure names its configuration (``results["configuration"]``):
the default one, or the heterogeneous one of ``bench/run.py --fission N``.
"""
from __future__ import annotations

import math
from pathlib import Path

__all__ = ["FIGURES", "draw_all", "g_sweep", "gamma", "alpha_y", "speedup_vs_n", "best_vs_model",
           "projection"]

FIGURES = ("fig5_g_sweep", "fig6_gamma", "fig7_alpha_y", "fig8_speedup_vs_n", "fig10_best_vs_model",
           "fig11_projection")
_DPI = 120


def _figure(width: float = 8.0, height: float = 4.8):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path) -> str:
    fig.savefig(path, dpi=_DPI)
    return str(path)


def _log2(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else f"{n:,}"


def _machine_line(results) -> str:
    m = results["machine"]
    prof = results["profile"]
    shared = " (shares the CPU's cores)" if prof.get("device_shares_cpu") else ""
    line = (f"{m.get('cpu')}, {m.get('cores')} cores; OpenCL: {m.get('opencl_device')}{shared}; "
            f"{results['created'][:10]}")
    config = results.get("configuration")
    return f"{line}\n{config['label']}" if config else line


def _placeholder(profile, what: str, path) -> str:
    fig = _figure(6.4, 4.2)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, f"no measured {what} sweep:\nthe profile for {profile.device}\nholds "
            f"{profile.source} values (p = {profile.p}, g = {profile.g}, γ = {profile.gamma:.3g}).\n"
            "Run `hpu calibrate`, or bench/run.py with --calibration auto/quick.",
            ha="center", va="center", fontsize=10, transform=ax.transAxes)
    return _save(fig, path)


def _calibration_title(fig, what: str, profile) -> None:
    fig.suptitle(f"{what}\n({'quick' if profile.quick else 'full'} calibration on {profile.host}, "
                 f"{profile.created[:10]})", fontsize=9)


def g_sweep(profile, path) -> str:
    """004 Figure 5 from the profile's sweep (a notice when it has none)."""
    from hpu import calibrate

    if not profile.sweeps.g:
        return _placeholder(profile, "g", path)
    fig = calibrate.plot_g_sweep(profile)
    _calibration_title(fig, "004 Figure 5: g, the work-items after which the device stops speeding up",
                       profile)
    return _save(fig, path)


def gamma(profile, path) -> str:
    """004 Figure 6 from the profile's merge sweeps (a notice when it has none)."""
    from hpu import calibrate

    if not (profile.sweeps.merge_cpu and profile.sweeps.merge_device):
        return _placeholder(profile, "merge", path)
    fig = calibrate.plot_gamma(profile)
    ax = fig.axes[0]
    ax.set_ylim(0, 1.1 * ax.get_ylim()[1])        # room above the γ line
    _calibration_title(fig, "004 Figure 6: γ, one device work-item's merge speed over one CPU core's",
                       profile)
    return _save(fig, path)


# ----------------------------------------------------------------- helpers

def _records(results, n, method):
    return [m for m in results["measurements"] if m["n"] == n and m["method"] == method]


def _median(results, n, method) -> float:
    rs = _records(results, n, method)
    return rs[0]["median_s"] if rs else math.nan


def _sizes(results) -> list[int]:
    return sorted({m["n"] for m in results["measurements"]})


def _best(results, n):
    return min(_records(results, n, "hybrid"), key=lambda m: m["median_s"])


def _models(results) -> dict:
    return {m["n"]: m for m in results.get("model", [])}


def _ratio(record) -> float:
    """device_share_s / cpu_share_s: 0 when the device had no tasks, NaN when the CPU's share is
    empty or unknown."""
    if record.get("gpu_tasks") == 0:
        return 0.0
    cpu, dev = record.get("cpu_share_s"), record.get("device_share_s")
    return dev / cpu if cpu and dev is not None else math.nan


def _best_both(results, n):
    """The fastest hybrid point at n where both the CPU and the device solved tasks (or None)."""
    both = [m for m in _records(results, n, "hybrid") if m.get("cpu_tasks") and m.get("gpu_tasks")]
    return min(both, key=lambda m: m["median_s"]) if both else None


def _choice(results, n):
    return next((c for c in results.get("model_choice", []) if c["n"] == n), None)


def _off_scale_note(ax, results, sizes) -> None:
    """np.sort's default (a SIMD sort, no merge) would flatten every other curve: say it in the legend."""
    speed = [_median(results, n, "sequential") / _median(results, n, "np.sort") for n in sizes]
    speed = [v for v in speed if math.isfinite(v)]
    if speed:
        text = (f"np.sort (default): {speed[0]:.0f}x" if len(speed) == 1
                else f"np.sort (default): {min(speed):.0f}x to {max(speed):.0f}x")
        ax.plot([], [], " ", label=text + ", off the scale")      # a legend line, no curve


# ---------------------------------------------------------------- Figure 7

def alpha_y(results, path, n=None) -> str:
    """Speed-up over one core vs α, one curve per requested y, at ``n`` (default: Figure 7's n)."""
    import numpy as np

    sizes = _sizes(results)
    if n is None:
        n = results.get("settings", {}).get("fig7_n") or sizes[-1]
        if n not in sizes:
            n = sizes[-1]
    seq = _median(results, n, "sequential")
    hybrid = _records(results, n, "hybrid")
    ys = sorted({m["y"] for m in hybrid})
    predicted = {(p["alpha"], p.get("y_requested", p["y"])): p
                 for p in _models(results).get(n, {}).get("grid", [])}
    fig = _figure(9.0, 5.2)
    ax = fig.add_subplot()
    if len(ys) <= 10:
        colours = [f"C{k}" for k in range(len(ys))]
    else:
        from matplotlib import colormaps

        colours = [tuple(c) for c in colormaps["viridis"](np.linspace(0, 0.95, len(ys)))]
    any_model = False
    for colour, y in zip(colours, ys):
        rs = sorted((m for m in hybrid if m["y"] == y), key=lambda m: m["alpha"])
        xs = [m["alpha"] for m in rs]
        ax.plot(xs, [seq / m["median_s"] for m in rs], "o-", color=colour, ms=4, label=f"y = {y}")
        pred = [predicted.get((m["alpha"], y)) for m in rs]
        if all(p is not None for p in pred) and pred:
            any_model = True
            ax.plot(xs, [p["predicted_speedup"] for p in pred], "--", color=colour, alpha=0.55, lw=1)
    for method, style, label in (("cpu", "-", "hpu, CPU only"), ("gpu", ":", "hpu, GPU only"),
                                 ("np.sort stable", "-.", "np.sort (stable)")):
        t = _median(results, n, method)
        if math.isfinite(t):
            ax.axhline(seq / t, color="k" if method == "cpu" else "0.45", ls=style, lw=1, label=label)
    _off_scale_note(ax, results, [n])
    ax.axhline(1.0, color="0.75", lw=0.8)
    best = _best(results, n)
    ax.plot([best["alpha"]], [seq / best["median_s"]], "o", ms=13, mfc="none", mec="C3", mew=2,
            label=f"best: α = {best['alpha']:.3g}, y = {best['y']}")
    choice = _choice(results, n)
    if choice is not None:
        ax.plot([choice["alpha"]], [seq / choice["median_s"]], "*", ms=14, color="C2", mec="k",
                label=f"model's choice run: α = {choice['alpha']:.3g}, y = {choice['y']}")
    if any_model:
        ax.plot([], [], "--", color="0.4", lw=1, label="model (dashed, same colour)")
    ax.set_xlabel("α (CPU share of the transfer level's tasks)")
    ax.set_ylabel("speed-up over the one-core recursive mergesort")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, ncol=2 if len(ys) > 6 else 1, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title(f"004 Figure 7 on this machine: mergesort, n = {_log2(n)} int32 keys "
                 f"(solid: measured, median of {results['repeats']})", fontsize=10)
    fig.suptitle(_machine_line(results), fontsize=8, color="0.3")
    return _save(fig, path)


# ---------------------------------------------------------------- Figure 8

def speedup_vs_n(results, path) -> str:
    """Speed-up vs n: best measured (α, y), the model's prediction, anchors; device/CPU time ratio."""
    import numpy as np

    sizes = _sizes(results)
    models = _models(results)
    seq = np.array([_median(results, n, "sequential") for n in sizes])
    best = [_best(results, n) for n in sizes]
    fig = _figure(9.0, 6.4)
    ax = fig.add_subplot()
    sp = seq / np.array([b["median_s"] for b in best])
    ax.plot(sizes, sp, "o-", color="C3", lw=2, label="hybrid, best measured (α, y)")
    for n, s, b in zip(sizes, sp, best):
        ax.annotate(f"({b['alpha']:.3g}, {b['y']})", (n, s), textcoords="offset points", xytext=(0, 7),
                    ha="center", fontsize=7, color="C3")
    if all(n in models for n in sizes):
        ax.plot(sizes, [models[n]["predicted_speedup"] for n in sizes], "s--", color="C2",
                label="model's prediction for its choice")
    choices = [_choice(results, n) for n in sizes]
    if all(c is not None for c in choices):
        ax.plot(sizes, seq / np.array([c["median_s"] for c in choices]), "*-", color="C2", ms=9,
                lw=1, label="hybrid, model's choice (measured)")
    for method, style, label in (("cpu", "^:", "hpu, CPU only"), ("gpu", "v:", "hpu, GPU only"),
                                 ("np.sort stable", "d:", "np.sort (stable)")):
        t = np.array([_median(results, n, method) for n in sizes])
        if np.isfinite(t).all():
            ax.plot(sizes, seq / t, style, color="0.35" if method != "np.sort stable" else "C7", ms=5,
                    lw=1, label=label)
    _off_scale_note(ax, results, sizes)
    ax.axhline(1.0, color="0.75", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xlabel("n (int32 keys)")
    ax.set_ylabel("speed-up over the one-core recursive mergesort")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)

    twin = ax.twinx()
    ratio = [_ratio(b) for b in best]
    twin.plot(sizes, ratio, "D-", color="C0", ms=6, alpha=0.85,
              label="device time / CPU time, best point (0: device idle)")
    both = [_best_both(results, n) for n in sizes]
    if any(b is not None and b is not a for a, b in zip(best, both)):
        twin.plot(sizes, [_ratio(b) if b is not None else math.nan for b in both], "D--", color="C0",
                  mfc="none", ms=6, alpha=0.85, label="the same, best point where both sides worked")
    twin.set_ylabel("device time / CPU time in the levels ≥ y", color="C0")
    twin.tick_params(axis="y", colors="C0")
    finite = [r for r in ratio + [_ratio(b) for b in both if b is not None] if math.isfinite(r)]
    twin.set_ylim(0, max([2.0] + [1.15 * r for r in finite]))
    twin.axhline(1.0, color="C0", lw=0.6, ls=":")
    lines, labels = ax.get_legend_handles_labels()
    more, more_labels = twin.get_legend_handles_labels()
    ax.legend(lines + more, labels + more_labels, fontsize=7.5, loc="upper center",
              bbox_to_anchor=(0.5, -0.13), ncol=3)
    ax.set_title("004 Figure 8 on this machine: speed-up vs n (labels: best (α, y))", fontsize=10)
    fig.suptitle(_machine_line(results), fontsize=8, color="0.3")
    return _save(fig, path)


# --------------------------------------------------------------- Figure 10

def best_vs_model(results, path) -> str:
    """Best measured α and y against the model's continuous α*, y and the runtime's integer split."""
    sizes = _sizes(results)
    models = _models(results)
    best = [_best(results, n) for n in sizes]
    fig = _figure(11.0, 5.0)
    left, right = fig.subplots(1, 2)
    left.plot(sizes, [b["alpha"] for b in best], "o", ms=10, color="C3", label="best measured α")
    split = [b["alpha"] < 1 for b in best]
    if any(split):
        right.plot([n for n, s in zip(sizes, split) if s], [b["y"] for b, s in zip(best, split) if s], "o",
                   ms=10, color="C3", label="best measured y")
    if not all(split):
        right.plot([n for n, s in zip(sizes, split) if not s], [b["y"] for b, s in zip(best, split) if not s],
                   "o", ms=10, mfc="none", mec="C3", mew=1.5, label="best measured y (α = 1: y unused)")
    both = [(n, b) for n, b, a in zip(sizes, (_best_both(results, n) for n in sizes), best)
            if b is not None and b is not a]
    if both:
        left.plot([n for n, _ in both], [b["alpha"] for _, b in both], "D", ms=7, mfc="none", mec="C0",
                  mew=1.5, label="best point where both sides worked")
        right.plot([n for n, _ in both], [b["y"] for _, b in both], "D", ms=7, mfc="none", mec="C0",
                   mew=1.5, label="best point where both sides worked")
    if all(n in models for n in sizes):
        ms = [models[n] for n in sizes]
        left.plot(sizes, [m["alpha"] for m in ms], "s", color="C2", label="model α* (continuous)")
        left.plot(sizes, [m["choice_alpha"] for m in ms], "x", ms=9, mew=2, color="k",
                  label="runtime's split α (integer tasks)")
        right.plot(sizes, [m["y"] if m["alpha"] < 1 else math.nan for m in ms], "s", color="C2",
                   label="model y(α*) (continuous)")
        right.plot(sizes, [m["choice_y"] if m["uses_device"] else math.nan for m in ms], "x", ms=9,
                   mew=2, color="k", label="runtime's transfer level")
        if not any(m["uses_device"] for m in ms):
            right.text(0.03, 0.5, "model: everything on the CPU\n(no transfer level)",
                       transform=right.transAxes, fontsize=8, va="center")
    grid_ys = sorted({m["y"] for m in results["measurements"] if m["method"] == "hybrid"})
    left.set_ylim(-0.05, 1.05)
    left.set_ylabel("α (CPU share of the transfer level's tasks)")
    right.set_ylabel("y (transfer level)")
    right.set_ylim(-0.5, max(grid_ys + [1]) + 0.5)
    for ax, what in ((left, "α"), (right, "y")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)
        ax.set_xlabel("n (int32 keys)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
        ax.set_title(f"best measured {what} vs the model's", fontsize=10)
    fig.suptitle(f"004 Figure 10 on this machine (the measured values are grid points)\n"
                 f"{_machine_line(results)}", fontsize=9)
    return _save(fig, path)


# -------------------------------------------------------------- projection

def projection(results, path) -> str:
    """The model's predictions for 004's machines behind PCIe 3.0 x16, labelled a projection."""
    proj = results.get("projection")
    if not proj:
        fig = _figure(6.4, 3.0)
        ax = fig.add_subplot()
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no projection in results.json (written by an older bench/run.py);\n"
                "to add one, measure again", ha="center", va="center", fontsize=10,
                transform=ax.transAxes)
        return _save(fig, path)
    fig = _figure(11.0, 5.4)
    left, right = fig.subplots(1, 2)
    for k, (name, m) in enumerate(proj["machines"].items()):
        rows = m["rows"]
        ns = [r["n"] for r in rows]
        color = f"C{k}"
        left.plot(ns, [r["with_transfer"]["predicted_speedup"] for r in rows], "o-", color=color,
                  label=f"{name}: p = {m['p']}, g = {m['g']}, 1/γ = {m['inv_gamma']}, with transfers")
        left.plot(ns, [r["without_transfer"]["predicted_speedup"] for r in rows], "--", color=color,
                  label=f"{name}: without transfers (004's model)")
        right.plot(ns, [r["with_transfer"]["alpha"] for r in rows], "s-", color=color,
                   label=f"{name}: α*")
        twin_vals = [r["with_transfer"]["y"] if r["with_transfer"]["uses_device"] else math.nan
                     for r in rows]
        right.plot(ns, [v / 20 for v in twin_vals], "^:", color=color, label=f"{name}: y / 20")
    left.set_ylabel("predicted speed-up over one core")
    left.set_ylim(bottom=0)
    right.set_ylabel("α* (CPU share), and y / 20")
    right.set_ylim(-0.02, 1.02)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n (int32 keys)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1)
    t = proj["transfer"]
    left.set_title("mergesort: predicted speed-up", fontsize=10)
    right.set_title("the model's α* and y", fontsize=10)
    fig.suptitle(
        "PROJECTION -- the model's prediction from published parameters, nothing measured\n"
        f"004's machines (§6.4, Table 2: p, g, γ) with a discrete GPU behind {t['what']};\n"
        f"CPU speed per unit of work: {proj['cpu_seconds_per_unit'] * 1e9:.3g} ns "
        f"({proj['cpu_source']})", fontsize=9, color="C3")
    return _save(fig, path)


# -------------------------------------------------------------------- all

def draw_all(results, profile, out) -> dict:
    """Write every figure into folder ``out``; return ``{name: path}``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return {
        "fig5_g_sweep": g_sweep(profile, out / "fig5_g_sweep.png"),
        "fig6_gamma": gamma(profile, out / "fig6_gamma.png"),
        "fig7_alpha_y": alpha_y(results, out / "fig7_alpha_y.png"),
        "fig8_speedup_vs_n": speedup_vs_n(results, out / "fig8_speedup_vs_n.png"),
        "fig10_best_vs_model": best_vs_model(results, out / "fig10_best_vs_model.png"),
        "fig11_projection": projection(results, out / "fig11_projection.png"),
    }
