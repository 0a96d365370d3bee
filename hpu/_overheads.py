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
"""
from __future__ import annotations

import statistics
import time
from typing import Mapping

__all__ = ["DEFAULTS", "SERIAL_EXPAND_TASKS", "Overheads", "measure", "serial_levels",
           "small_plan_reason", "overheads_of", "measure_quietly", "run_seconds"]

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
    import numpy as np
    import pyopencl as cl

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
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
    unit = _seconds(plan, ov)
    p = max(float(plan.p), 1.0)
    out = []
    for i in range(0, K + 1):
        if i >= len(plan.tasks) or i >= len(plan.levels):
            break  # a given K below the model's tree: the real tree decides, in parallel
        tasks = plan.tasks[i][0]
        if tasks <= 1:
            out.append(i)
            continue
        if i < K:
            per_task = plan.levels[i].work / max(plan.levels[i].tasks, 1.0)
        else:  # the cut-off level solves subtrees: the work below it, per task
            per_task = (sum(lv.work for lv in plan.levels[K:])) / float(plan.a) ** K
        saved = tasks * per_task * unit * (1.0 - 1.0 / min(p, tasks))
        if saved < ov.parallel_level_s:
            out.append(i)
    return tuple(out)


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
            f"~{ov.parallel_level_s * 1e6:.0f} us), so K = 0")
