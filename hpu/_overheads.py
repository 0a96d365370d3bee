"""The fixed costs of a run, and the decisions they drive: small problems take the small path.

Why this module
===============

The HPU model prices work, not bookkeeping: a level of ``m`` tasks costs
``⌈m/p⌉·f`` in the model however small ``f`` is.  A real run also pays, per
phase, the driver's bookkeeping in Python and — when the phase runs as a
Numba parallel region — a fork and a join of every worker thread; a device
phase pays a kernel launch.  For a small problem those fixed costs are the
whole run: sorting 4096 keys on two threads took twice as long as one
thread, and on a loaded machine a single barrier can wait for a time slice
(milliseconds) while the sequential solver would have finished in a third of
a millisecond.  So the planner needs the fixed costs next to the work, and
two decisions follow from them (both made in :func:`hpu._plan.make_plan`,
the one place plans are decided, and recorded in the Plan):

* :func:`serial_levels`: the leaf and combine phases whose work is too small
  to pay for a parallel region run on the calling thread (count and fill,
  O(1) per task, always do below :data:`SERIAL_EXPAND_TASKS` tasks; see
  :class:`hpu._cpu.CpuBackend`);
* :func:`small_plan_reason`: when one task on the calling thread — the plan
  with ``K = 0``, the sequential solver — is predicted at least as fast as the
  chosen CPU plan with its fixed costs, the run takes it (a plan that uses the
  device is the model's choice with the device's fixed cost, λ, already in it).  ``device="cpu"`` is
  still a CPU run (on one thread); the plan's ``reason`` says why.

Where the figures come from
---------------------------

:func:`measure` times a parallel region and a device launch on this machine;
calibration stores them in the profile (``parallel_level_s``,
``device_launch_s``).  :data:`DEFAULTS` stand in where nothing was measured
(a ``device="cpu"`` plan reads no profile): they are quiet-machine figures of
a 2-core x86 host and err towards parallel runs, so a big problem is never
kept on one thread by them.

A shared machine is the normal case
-----------------------------------

A parallel region costs microseconds on an idle machine and milliseconds on a
busy one: every worker must get a time slice before the join, and with other
processes on the cores that is a scheduler quantum.  Measured on a 2-core VM at
load 2, sorting 4096 keys with one parallel level took 2.7 ms where one task
took 0.64 ms.  No calibration taken earlier can know the load of the moment, so
:func:`observe` watches the process's own small CPU runs: what each parallel
region cost beyond the plan's predicted work (the run's wall time less the
work and the phases' bookkeeping, per region).  The median of the last few
seconds' observations, when it exceeds the calibrated figure, prices the next
plans' regions (:func:`effective`), so that under load small problems take the
small path, and when the load goes the observations expire and the calibrated
figure returns.  The plan's ``reason`` gives the figure it used.
``HPU_OBSERVE_OVERHEADS=0`` turns the observation off (the test suite does, so
that a test's plan does not depend on the tests before it).
"""
from __future__ import annotations

import math
import os
import statistics
import threading
import time
from collections import deque
from typing import Mapping

__all__ = ["DEFAULTS", "SERIAL_EXPAND_TASKS", "Overheads", "measure", "serial_levels",
           "small_plan_reason", "overheads_of", "measure_quietly", "run_seconds", "observe",
           "effective", "OBSERVE_WINDOW_S", "OBSERVE_BELOW_S"]

#: Count and fill phases with fewer tasks than this run on the calling thread: each task
#: is a few loads and stores, so a parallel region would cost more than the tasks.
SERIAL_EXPAND_TASKS = 4096

#: Fixed costs when nothing was measured (seconds).  ``phase_s``: the driver's bookkeeping
#: per phase (argument lookup, dispatch, the level record), paid by every phase;
#: ``parallel_level_s``: what a parallel region adds (fork and join of the workers);
#: ``device_launch_s``: one kernel launch; ``seconds_per_unit``: one unit of f-work on one
#: core, for plans in model units (``device="cpu"`` reads no profile).
DEFAULTS: Mapping[str, float] = {
    "phase_s": 15e-6,
    "parallel_level_s": 10e-6,
    "device_launch_s": 40e-6,
    "seconds_per_unit": 5e-9,
}


class Overheads:
    """The fixed costs one plan is made with (seconds; see :data:`DEFAULTS`)."""

    __slots__ = ("phase_s", "parallel_level_s", "device_launch_s", "seconds_per_unit")

    def __init__(self, phase_s=None, parallel_level_s=None, device_launch_s=None,
                 seconds_per_unit=None):
        self.phase_s = float(DEFAULTS["phase_s"] if phase_s is None else phase_s)
        self.parallel_level_s = float(DEFAULTS["parallel_level_s"] if parallel_level_s is None
                                      else parallel_level_s)
        self.device_launch_s = float(DEFAULTS["device_launch_s"] if device_launch_s is None
                                     else device_launch_s)
        self.seconds_per_unit = float(DEFAULTS["seconds_per_unit"] if seconds_per_unit is None
                                      else seconds_per_unit)

    def key(self) -> tuple:
        return (self.phase_s, self.parallel_level_s, self.device_launch_s, self.seconds_per_unit)

    def __repr__(self):
        return ("Overheads(" + ", ".join(f"{k}={getattr(self, k):.3g}" for k in self.__slots__)
                + ")")


def overheads_of(profile=None) -> Overheads:
    """The fixed costs of a profile (its measured fields, defaults where absent), or the
    defaults for ``None``."""
    if profile is None:
        return Overheads()
    return Overheads(parallel_level_s=getattr(profile, "parallel_level_s", None),
                     device_launch_s=getattr(profile, "device_launch_s", None),
                     seconds_per_unit=getattr(profile, "cpu_seconds_per_element", None))


#: Observations older than this (seconds) no longer count: the load they saw has passed.
OBSERVE_WINDOW_S = 10.0
#: Runs longer than this are not observed: their fixed costs are lost in the work's noise,
#: and the decisions the observations drive concern small problems.
OBSERVE_BELOW_S = 0.05
#: (time.monotonic(), seconds per parallel region beyond the predicted work)
_observed: deque = deque(maxlen=16)
_observed_lock = threading.Lock()
#: id(plan) -> plan, of the plans that have run once (kept alive so that ids are not reused)
_first_runs: dict = {}


def observing() -> bool:
    """Whether runs are observed (``HPU_OBSERVE_OVERHEADS=0`` turns it off, e.g. where
    plans must not depend on what ran before: the test suite)."""
    return os.environ.get("HPU_OBSERVE_OVERHEADS", "1") not in ("0", "")


def _regions(plan) -> int:
    K = plan.cutoff_level or 0
    serial = set(getattr(plan, "serial_levels", ()) or ())
    return sum(1 for i in range(K + 1) if i not in serial)


def observe(run, ov: Overheads | None = None) -> float | None:
    """Record what the parallel regions of a finished CPU run cost beyond its plan's
    predicted work (see the module docstring); the figure, or None when the run says
    nothing about them (no plan, the device used, no parallel region, a long run)."""
    if not observing():
        return None
    plan = getattr(run, "plan", None)
    seconds = getattr(run, "seconds", None)
    if plan is None or seconds is None or plan.uses_device or not plan.cutoff_level:
        return None
    if seconds > OBSERVE_BELOW_S or getattr(run, "fallbacks", None):
        return None
    regions = _regions(plan)
    if regions == 0:
        return None
    with _observed_lock:
        # a plan's first run pays its drivers' first calls (the thread pool's start, code
        # loaded from the cache): that is not what a region costs
        if id(plan) not in _first_runs:
            if len(_first_runs) > 256:
                _first_runs.clear()
            _first_runs[id(plan)] = plan
            return None
    ov = ov or Overheads()
    K = plan.cutoff_level
    work = plan.predicted_time * _seconds(plan, ov)
    excess = max(0.0, (seconds - work - (3 * K + 1) * ov.phase_s) / regions)
    with _observed_lock:
        _observed.append((time.monotonic(), excess))
    return excess


def _recent(now: float | None = None) -> float | None:
    """The median cost per region of the last :data:`OBSERVE_WINDOW_S` seconds' runs
    (at least two of them), or None."""
    now = time.monotonic() if now is None else now
    with _observed_lock:
        xs = [x for t, x in _observed if now - t <= OBSERVE_WINDOW_S]
    if len(xs) < 2:
        return None
    return statistics.median(xs)


def _round_up_pow2_us(seconds: float) -> float:
    """``seconds`` rounded up to a power of two of microseconds: observations that differ
    by noise give the same Overheads, so the cached plans are reused."""
    us = max(math.ceil(seconds * 1e6), 1)
    return float(1 << (us - 1).bit_length()) * 1e-6


def effective(ov: Overheads) -> Overheads:
    """``ov`` with its parallel region priced at what this process's recent runs saw,
    when that is more (see the module docstring)."""
    seen = _recent() if observing() else None
    if seen is None:
        return ov
    seen = _round_up_pow2_us(seen)
    if seen <= ov.parallel_level_s:
        return ov
    return Overheads(phase_s=ov.phase_s, parallel_level_s=seen,
                     device_launch_s=ov.device_launch_s, seconds_per_unit=ov.seconds_per_unit)


def _median_seconds(call, repeats: int) -> float:
    call()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(*, repeats: int = 200, device=None) -> dict[str, float]:
    """Time one parallel region and (when ``device``, a ``pyopencl.Device``, is given) one
    kernel launch; the medians, in seconds, as the profile's fields.

    The parallel region is a ``prange`` over ``2·p`` trivial tasks, minus the same loop
    compiled without ``parallel=True``: what a phase pays for running in parallel.
    """
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def par(start, stop, out):
        for i in numba.prange(start, stop):
            out[i] = i

    @numba.njit
    def ser(start, stop, out):
        for i in range(start, stop):
            out[i] = i

    m = 2 * numba.get_num_threads()
    out = np.zeros(m, np.int64)
    t_par = _median_seconds(lambda: par(0, m, out), repeats)
    t_ser = _median_seconds(lambda: ser(0, m, out), repeats)
    result = {"parallel_level_s": max(t_par - t_ser, 1e-7)}
    if device is not None:
        result["device_launch_s"] = _measure_launch(device, repeats)
    return result


def measure_quietly(device=None) -> dict[str, float]:
    """:func:`measure` for calibration: the fields it measured, none where it failed (the
    defaults then stand in; a profile is never lost to this extra)."""
    try:
        return measure(device=device)
    except Exception:  # noqa: BLE001 - an optional measurement
        try:
            return measure(device=None)
        except Exception:  # noqa: BLE001
            return {}


def _measure_launch(device, repeats: int) -> float:
    """Median seconds of enqueueing an empty kernel and waiting for it."""
    import pyopencl as cl

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    from hpu._opencl._build import quiet_compiler

    with quiet_compiler():
        prg = cl.Program(ctx, "__kernel void k(__global int *x) { x[get_global_id(0)] = 1; }").build()
    kernel = prg.k
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=64 * 4)
    kernel.set_args(buf)

    def launch():
        cl.enqueue_nd_range_kernel(queue, kernel, (64,), None)
        queue.finish()

    return _median_seconds(launch, max(10, repeats // 4))


def _seconds(plan, ov: Overheads) -> float:
    """Seconds per unit of the plan's times."""
    return 1.0 if plan.time_unit == "s" else ov.seconds_per_unit


def serial_levels(plan, ov: Overheads) -> tuple[int, ...]:
    """Levels ``0..K`` whose CPU leaf or combine phase runs on the calling thread: those
    with one task, or whose work saved by ``p`` threads, ``work·(1 − 1/p)``, is below
    what the parallel region costs."""
    K = plan.cutoff_level
    if K is None:
        return ()
    out = []
    for i, saved in _saved_by_threads(plan, ov):
        if saved is None or saved < ov.parallel_level_s:
            out.append(i)
    return tuple(out)


def _saved_by_threads(plan, ov: Overheads):
    """``(level, seconds)`` for levels ``0..K``: what running the level's CPU phase on
    ``p`` threads saves over the calling thread, ``work·(1 − 1/min(p, tasks))`` (None for
    a level of one task).  Stops where the model's tree does (a given K below it)."""
    K = plan.cutoff_level or 0
    unit = _seconds(plan, ov)
    p = max(float(plan.p), 1.0)
    for i in range(0, K + 1):
        if i >= len(plan.tasks) or i >= len(plan.levels):
            break  # a given K below the model's tree: the real tree decides, in parallel
        tasks = plan.tasks[i][0]
        if tasks <= 1:
            yield i, None
            continue
        if i < K:
            per_task = plan.levels[i].work / max(plan.levels[i].tasks, 1.0)
        else:  # the cut-off level solves subtrees: the work below it, per task
            per_task = (sum(lv.work for lv in plan.levels[K:])) / float(plan.a) ** K
        yield i, tasks * per_task * unit * (1.0 - 1.0 / min(p, tasks))


def run_seconds(plan, ov: Overheads, serial: tuple[int, ...] = ()) -> float:
    """The plan's predicted time in seconds with its fixed costs: one phase per count,
    fill, leaf and combine, a parallel region for each that is not serial, a launch per
    device phase."""
    K = plan.cutoff_level or 0
    unit = _seconds(plan, ov)
    t = plan.predicted_time * unit
    phases = 3 * K + 1  # count and fill per expanded level, combines, the leaf
    t += phases * ov.phase_s
    regions = sum(1 for i in range(K + 1) if i not in serial)
    t += regions * ov.parallel_level_s
    # a serial level's work runs on one thread: what the threads would have saved is paid
    t += sum(saved for i, saved in _saved_by_threads(plan, ov)
             if saved is not None and i in serial)
    if plan.uses_device and plan.transfer_level is not None:
        t += (K - plan.transfer_level + 1) * ov.device_launch_s
    return t


def small_plan_reason(plan, ov: Overheads) -> str | None:
    """Why one task on the calling thread beats ``plan`` (None when it does not): the
    sequential solver with one phase against the plan's time with its fixed costs."""
    if not plan.cutoff_level or plan.uses_device:
        # a split the model sends to the device already prices its fixed cost (λ per
        # transfer); the small path weighs the CPU's phases against one task
        return None
    unit = _seconds(plan, ov)
    seq = plan.sequential_time * unit + ov.phase_s
    serial = serial_levels(plan, ov)
    par = run_seconds(plan, ov, serial)
    if seq > par:
        return None
    return (f"small problem: one task on the calling thread (~{seq * 1e6:.0f} us predicted) "
            f"is not slower than the split over K = {plan.cutoff_level} levels "
            f"(~{par * 1e6:.0f} us with {3 * plan.cutoff_level + 1} phases at "
            f"~{ov.phase_s * 1e6:.0f} us and parallel regions at "
            f"~{ov.parallel_level_s * 1e6:.0f} us{_source(ov)}), so K = 0")


def _source(ov: Overheads) -> str:
    seen = _recent()
    if seen is not None and _round_up_pow2_us(seen) == ov.parallel_level_s:
        return " as this process's recent runs measured them"
    return ""
