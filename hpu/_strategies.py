"""The measured strategies: a split chosen from timings, not from the model alone.

Why measure
===========

The HPU model (004) predicts the split from three figures (p, g, γ) and a cost
function; a real function on a real device can differ (memory-bound combines,
a device whose launch cost dominates small levels, contention the profile did
not see).  Two seeds choose the split from measurements instead; both are
planner strategies (:func:`hpu._plan.make_plan` calls :func:`measured_plan`):
the plan they produce records what was measured (``plan.samples``) and says
why (``plan.reason``), and the run executes it like any other plan.

``strategy="minmax"`` (seed 002)
    At the split level ``y`` (the model's transfer level, deep enough for at
    least :data:`MIN_SPLIT_TASKS` tasks) the ``m`` tasks split ``k`` on the CPU,
    ``m − k`` on the device.  hpu samples ``c(k)`` (the CPU's seconds for its
    share of levels ``≥ y``) and ``g(k)`` (the device's kernels plus its
    transfers) by running the actual function on copies of the actual
    arguments at ``k = m``, ``0`` and ``⌈m/2⌉`` (after one untimed warm-up at
    ``⌈m/2⌉``), interpolates both piecewise linearly through ``(0, 0)``, and
    takes ``argmin_k max(c(k), g(m − k))``: the split where the slower side
    finishes first.  Samples are cached per function specialisation, device
    configuration and size bucket for the life of the process, so only the
    first call pays (about four runs).
``strategy="adaptive"`` (seed 001, HyCOMP's Eq. 1)
    Every adaptive run records each side's rate, ``share of level y's tasks /
    seconds`` (problems per second, so the rate does not depend on the split
    or level that measured it) in :class:`hpu._history.History`.  The next
    run's CPU share is ``α = P_c / (P_c + P_g)`` with ``P`` the *median* of the
    last :data:`~hpu._history.WINDOW` rates of each side: one slow run (a
    timing spike, StarPU's users' complaint) moves the median by at most one
    rank.  Until both sides have a rate, the run explores: the model's split
    if it uses the device, else half the tasks on each side.

Both apply to ``device="hybrid"`` when neither ``alpha`` nor ``y`` is given;
otherwise the split was given and the strategy has nothing to choose.
"""
from __future__ import annotations

import math
import statistics
import threading
from typing import Any, Callable, Mapping

import numpy as np

from hpu import model

__all__ = ["MEASURED", "MIN_SPLIT_TASKS", "measured_plan", "record_run", "split_level",
           "shares_of", "minmax_choice", "adaptive_alpha", "history_key", "clear_cache"]

#: the strategies this module decides
MEASURED = ("minmax", "adaptive")
#: the split level has at least this many tasks (finer shares), when the tree is that deep
MIN_SPLIT_TASKS = 8

#: ``sampler(alpha, y) -> Run``: a run of the actual function on copies of the arguments
Sampler = Callable[[float, int], Any]

_minmax_cache: dict[str, tuple] = {}
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget the min–max samples of this process (the next minmax run samples again)."""
    with _cache_lock:
        _minmax_cache.clear()


# ----------------------------------------------------------------------------- keys
def _type_text(v) -> str:
    if isinstance(v, np.ndarray):
        return f"{v.dtype}[{v.ndim}d]"
    if isinstance(v, np.generic):
        return str(v.dtype)
    return type(v).__name__


def _device_text(cl_device, machine) -> str:
    import numba

    threads = f"{numba.get_num_threads()} threads"
    name = getattr(cl_device, "name", None)
    if name is not None:
        platform = getattr(getattr(cl_device, "platform", None), "name", "")
        return f"{str(name).strip()} ({str(platform).strip()}), {threads}"
    return f"p={machine.p:g} g={machine.g:g} gamma={machine.gamma:.4g}, {threads}"


def history_key(spec, values: Mapping[str, Any], problem, cl_device, machine) -> tuple[str, dict]:
    """``(key, meta)`` of a call: function specialisation, device configuration, size bucket."""
    from hpu._history import key_of

    signature = ", ".join(f"{p}: {_type_text(values[p])}" for p in spec.params)
    device = _device_text(cl_device, machine)
    bucket = int(math.floor(math.log2(max(problem.n, 1))))
    meta = {"function": spec.name, "signature": signature, "device": device, "bucket": bucket}
    return key_of(spec.name, signature, device, bucket), meta


# ----------------------------------------------------------------------------- measuring
def split_level(problem, base: model.Plan) -> int:
    """The level the measured strategies split at: the model's transfer level, deep enough
    for :data:`MIN_SPLIT_TASKS` tasks, within the model's tree."""
    D = model._tree(problem).D
    y = base.transfer_level if base.uses_device and base.transfer_level is not None else 0
    while problem.a ** y < MIN_SPLIT_TASKS and y < D:
        y += 1
    return min(y, D)


def shares_of(run) -> tuple[int, int, int, float, float] | None:
    """``(m, cpu_tasks, device_tasks, c, g)`` of a run at its split level ``run.y``: the
    level's tasks, each side's, the CPU's seconds for its share of levels ``≥ y`` and the
    device's (kernels plus transfers).  None when the run cannot tell (no split level, or
    the device failed and the CPU redid its share)."""
    if run.y is None or run.fallbacks or not run.level_sizes:
        return None
    y = run.y
    m = run.level_sizes[y]
    at_y = [r for r in run.levels if r.level == y and r.phase in ("leaf", "combine")]
    if not at_y:
        return None
    cpu_tasks, dev_tasks = at_y[0].cpu_tasks, at_y[0].gpu_tasks
    below = [r for r in run.levels if r.level >= y and r.phase in ("leaf", "combine")]
    c = sum(r.cpu_seconds for r in below)
    g = sum(r.gpu_seconds for r in below)
    if dev_tasks:
        g += sum(t.seconds for t in run.transfers)
    return m, cpu_tasks, dev_tasks, c, g


def minmax_choice(samples, m: int) -> tuple[int, float, float]:
    """``(k, c(k), g(m−k))`` minimising ``max(c(k), g(m−k))`` over ``k = 0..m``.

    ``samples``: ``(k, c(k), g(m−k))`` measured; both functions are interpolated
    piecewise linearly through ``(0, 0)`` (no tasks, no time).  Ties go to the larger
    ``k`` (the CPU's share needs no transfer).
    """
    cpts = {0: 0.0}
    gpts = {0: 0.0}
    for k, c, g in samples:
        k = int(k)
        if k > 0:
            cpts[k] = float(c)
        if m - k > 0:
            gpts[m - k] = float(g)
    ck, cv = zip(*sorted(cpts.items()))
    gk, gv = zip(*sorted(gpts.items()))
    ks = np.arange(m + 1)
    cc = np.interp(ks, ck, cv)
    gg = np.interp(m - ks, gk, gv)
    worst = np.maximum(cc, gg)
    k = int(m - np.argmin(worst[::-1]))  # the largest k among the minima
    return k, float(cc[k]), float(gg[k])


def adaptive_alpha(runs, window: int | None = None):
    """``(alpha, cpu_rate, device_rate, used)`` from remembered runs (HyCOMP Eq. 1 on the
    medians of the last ``window`` rates of each side); ``alpha`` is None until both sides
    have a rate."""
    from hpu._history import WINDOW

    window = WINDOW if window is None else window
    cpu = [r["cpu_rate"] for r in runs if r.get("cpu_rate")][-window:]
    dev = [r["device_rate"] for r in runs if r.get("device_rate")][-window:]
    used = tuple((r.get("cpu_rate") or 0.0, r.get("device_rate") or 0.0) for r in runs[-window:])
    if not cpu or not dev:
        return None, (statistics.median(cpu) if cpu else None), \
            (statistics.median(dev) if dev else None), used
    pc, pg = statistics.median(cpu), statistics.median(dev)
    return pc / (pc + pg), pc, pg, used


# ----------------------------------------------------------------------------- planning
def measured_plan(strategy: str, spec, values, problem, machine, element_bytes: int,
                  contention: float, K, cl_device, sampler: Sampler | None, given_plan, *,
                  chunks: int = 1):
    """The plan of ``strategy`` (``"minmax"`` or ``"adaptive"``) for this call.

    ``given_plan(alpha, y, reason, samples)`` makes the plan of a chosen split (the
    planner's); ``sampler`` runs the function on copies (min–max only; without one,
    only samples cached by an earlier run can be used).
    """
    from hpu._plan import model_plan

    # cached: the model's plan costs tens of milliseconds at 2^22 keys, which every adaptive
    # run would otherwise pay before it starts (a tenth of a mergesort there)
    base = model_plan(problem, machine, "advanced", element_bytes, contention, 0.0, chunks)
    y = split_level(problem, base)
    key, _ = history_key(spec, values, problem, cl_device, machine)
    if strategy == "adaptive":
        from hpu._history import History

        runs = History().runs(key)
        alpha, pc, pg, used = adaptive_alpha(runs)
        if alpha is None:
            alpha = base.split_alpha if base.uses_device and base.transfer_level == y else 0.5
            missing = " and ".join(side for side, rate in (("the CPU", pc), ("the device", pg))
                                   if rate is None)
            reason = (f"adaptive (001): {len(runs)} remembered run(s) for this function, "
                      f"device and size; no rate yet for {missing}, so this run explores "
                      f"alpha={alpha:.3g} at y={y} and records both")
        else:
            reason = (f"adaptive (001): medians of the last {len(used)} runs' rates, CPU "
                      f"{pc:.4g} and device {pg:.4g} problems/s; alpha = Pc/(Pc+Pg) = "
                      f"{alpha:.3f} (HyCOMP Eq. 1) at y={y}")
        return given_plan(alpha, y, reason, used)
    # minmax
    ckey = f"{key} | K={K}"
    with _cache_lock:
        hit = _minmax_cache.get(ckey)
    if hit is None:
        if sampler is None:
            raise ValueError(
                f"strategy='minmax' for {spec.name} needs samples of the function on this "
                "size, which only a run takes: call .run(...) once first (the samples are "
                "kept for this process), or use strategy='advanced' to plan without running")
        hit = _sample(sampler, y, problem.a)
        with _cache_lock:
            _minmax_cache[ckey] = hit
    y_used, m, samples = hit
    k, c, g = minmax_choice(samples, m)
    alpha = k / m if m else 1.0
    reason = (f"min-max (002): sampled c(k) and g(m-k) at level {y_used} (m={m} tasks) for "
              f"k in {', '.join(str(int(s[0])) for s in samples)}; argmin_k max(c(k), "
              f"g(m-k)) is k={k}: {c:.4g} s on the CPU, {g:.4g} s on the device")
    return given_plan(alpha, y_used, reason, tuple(tuple(float(v) for v in s) for s in samples))


def _sample(sampler: Sampler, y: int, a: int):
    """``(y, m, samples)``: one warm-up, then runs at k = m, 0 and ⌈m/2⌉."""
    sampler(0.5, y)  # compiles what a first call compiles; not a sample
    samples = []
    y_used, m = y, None
    for alpha in (1.0, 0.0, 0.5):
        got = shares_of(sampler(alpha, y))
        if got is None:
            continue
        m, k, d, c, g = got
        samples.append((k, c, g))
    if m is None:  # the tree has no split level (a single task): everything on the CPU
        return y, 1, ((1, 0.0, 0.0),)
    return y_used, m, tuple(samples)


def record_run(run, spec, values, problem, cl_device, machine) -> dict | None:
    """Remember an adaptive run's rates in the history; returns the row (None: nothing to
    learn, e.g. the device failed)."""
    from hpu._history import History

    got = shares_of(run)
    if got is None:
        return None
    m, k, d, c, g = got
    if m <= 0:
        return None
    cpu_rate = (k / m) / c if k and c > 0 else None
    dev_rate = (d / m) / g if d and g > 0 else None
    if cpu_rate is None and dev_rate is None:
        return None
    key, meta = history_key(spec, values, problem, cl_device, machine)
    row = {"n": int(problem.n), "alpha": float(run.alpha), "y": int(run.y), "cpu_tasks": int(k),
           "device_tasks": int(d), "cpu_seconds": float(c), "device_seconds": float(g),
           "cpu_rate": cpu_rate, "device_rate": dev_rate, "seconds": float(run.seconds)}
    History().record(key, meta, row)
    return row
