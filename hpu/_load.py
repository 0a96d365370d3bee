"""What other processes did to the machine while hpu timed something.

Why a module of its own: a calibration on a shared machine measures the
other processes as much as the machine.  Most of its numbers are ratios of
two single-thread runs timed in pairs, which a steady load slows alike and
cancels; the *contention* factor is not one of them.  It compares a run with
both sides at once (two of our threads) to each side alone (one thread), and
the kernel's fair share gives a thread fewer cycles the more threads are
runnable: with two busy processes on two cores a lone thread gets 2/3 of a
core and each of two threads 1/2, so "both at once" looks 1.33x slower for
reasons that have nothing to do with the machine.  Measured here (PoCL on a
1-core sub-device, Numba on the other core): 1.01 quiet, 1.44-1.97 under
that load, and the plan flipped with it.

So every timed run of the contention measurement also records

* ``outside``: the share of the machine's cores that *other* processes used
  during the run: the busy CPU time of all processes (``/proc/stat``, in
  clock ticks) less this process's own CPU time (``time.process_time``, all
  our threads, PoCL's included), over the run's wall time and the cores;
* ``run_share``: of the time our threads were ready to run, the share they
  ran (``/proc/self/task/*/schedstat``: seconds on a core and seconds
  waiting in the run queue, summed over our threads).  Where our threads
  never outnumber the cores (a ``cpu@N`` sub-device beside at most
  ``cores − N`` Numba threads), every wait in the run queue is a core taken by
  another process, and ``wall · run_share`` is the run's time without them.
  A thread stalled on memory is on its core and waits in no queue, so this
  keeps the memory-bandwidth part of the contention (the only part such a
  configuration has) and drops the part other processes add.  The threads
  are read one by one (:func:`thread_times`), so that a run can be scaled by
  the share of the threads that decide its length.  This process's
  CPU time is no substitute: the levels above the split, which the
  measurement takes off by their wall time, would come off CPU times that
  the load did not stretch (tried: the factor read 0.77 of its quiet value).

The statistics that use these records are pure and live in
:mod:`hpu._stats` (:func:`~hpu._stats.quiet_rounds`) and
:func:`hpu.calibrate.contention_estimate`.  Off Linux (no ``/proc``) both
read as unknown (``nan``) and every round counts as quiet: the measurement
is then what it was before.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

__all__ = ["Sample", "sample", "outside_share", "run_share", "machine_cores", "Meter",
           "thread_times", "thread_deltas", "share_of"]

_STAT = "/proc/stat"


@dataclass(frozen=True)
class Sample:
    """A reading of the clocks: wall and own CPU seconds, the machine's busy CPU seconds,
    our threads' seconds on a core and waiting for one."""

    wall: float         # time.perf_counter()
    own_cpu: float      # time.process_time(): every thread of this process
    busy: float         # all processes' non-idle CPU seconds since boot (nan: unknown)
    ran: float = math.nan       # Σ over our threads of seconds on a core (schedstat; nan: unknown)
    waited: float = math.nan    # Σ over our threads of seconds runnable but waiting for a core


def thread_times(task_dir: str = "/proc/self/task") -> dict[int, tuple[float, float]]:
    """``{thread id: (seconds on a core, seconds waiting for one)}`` of this process's threads
    (``{}`` without schedstat)."""
    out = {}
    try:
        tids = os.listdir(task_dir)
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/schedstat") as f:
                fields = f.read().split()
            out[int(tid)] = (int(fields[0]) * 1e-9, int(fields[1]) * 1e-9)
        except (OSError, ValueError, IndexError):
            continue                # a thread that just ended, or no schedstat
    return out


def _own_sched(task_dir: str = "/proc/self/task") -> tuple[float, float]:
    """``(seconds on a core, seconds waiting for one)`` summed over this process's threads."""
    times = thread_times(task_dir)
    if not times:
        return math.nan, math.nan
    return sum(r for r, _ in times.values()), sum(w for _, w in times.values())


def thread_deltas(start: dict, end: dict) -> dict[int, tuple[float, float]]:
    """Per thread, ``(Δ on a core, Δ waiting)`` between two :func:`thread_times` readings
    (a thread born in between counts from zero)."""
    return {tid: (ran - start.get(tid, (0.0, 0.0))[0], waited - start.get(tid, (0.0, 0.0))[1])
            for tid, (ran, waited) in end.items()}


def share_of(deltas: dict, tids=None) -> float:
    """Of the ready time of the threads ``tids`` (all: None), the share they ran; ``nan``
    when they neither ran nor waited."""
    pick = [v for t, v in deltas.items() if tids is None or t in tids]
    ran = sum(max(r, 0.0) for r, _ in pick)
    waited = sum(max(w, 0.0) for _, w in pick)
    return float(ran / (ran + waited)) if ran + waited > 0 else math.nan


def _machine_busy(path: str = _STAT) -> float:
    """Non-idle CPU seconds of all processes since boot (``/proc/stat``'s ``cpu`` line)."""
    try:
        with open(path) as f:
            fields = f.readline().split()
    except OSError:
        return math.nan
    if not fields or fields[0] != "cpu":
        return math.nan
    ticks = [int(v) for v in fields[1:9]]   # user nice system idle iowait irq softirq steal
    while len(ticks) < 8:
        ticks.append(0)
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / _clock_ticks()


def _clock_ticks() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 100.0


def machine_cores() -> int:
    """The cores ``/proc/stat`` counts: all of the machine's, not just this process's."""
    return max(1, os.cpu_count() or 1)


def sample() -> Sample:
    """Read the clocks now (cheap: one small file read)."""
    ran, waited = _own_sched()
    return Sample(wall=time.perf_counter(), own_cpu=time.process_time(), busy=_machine_busy(),
                  ran=ran, waited=waited)


def outside_share(start: Sample, end: Sample, cores: int | None = None) -> float:
    """The share of the machine's cores other processes used between two samples, in [0, 1].

    ``(Δ busy − Δ own CPU) / (Δ wall · cores)``; ``nan`` when ``/proc/stat``
    could not be read or no time passed.  ``/proc/stat`` counts in clock ticks
    (10 ms), so a run of tens of milliseconds reads to within a few tens of
    percent: enough to tell a quiet run from one beside a busy process.
    """
    cores = machine_cores() if cores is None else cores
    wall = end.wall - start.wall
    if not (wall > 0) or math.isnan(start.busy) or math.isnan(end.busy):
        return math.nan
    others = (end.busy - start.busy) - (end.own_cpu - start.own_cpu)
    return float(min(1.0, max(0.0, others / (wall * cores))))


def run_share(start: Sample, end: Sample) -> float:
    """Of the time our threads were ready to run between two samples, the share they ran.

    ``Δ ran / (Δ ran + Δ waited)`` in (0, 1]; ``nan`` when unknown (no
    schedstat) or when no thread ran or waited.
    """
    ran, waited = end.ran - start.ran, end.waited - start.waited
    if math.isnan(ran) or math.isnan(waited) or ran + waited <= 0:
        return math.nan
    return float(min(1.0, max(ran, 0.0) / (ran + max(waited, 0.0))))


class Meter:
    """Times one run: ``with Meter() as m: ...`` then ``m.wall``, ``m.cpu``, ``m.outside``,
    ``m.run_share`` and ``m.threads`` (:func:`thread_deltas`)."""

    wall: float = math.nan
    cpu: float = math.nan
    outside: float = math.nan
    run_share: float = math.nan

    def __init__(self) -> None:
        self.threads: dict[int, tuple[float, float]] = {}

    def __enter__(self) -> "Meter":
        # the files are read outside the timed interval: a short run is not charged for them
        self._threads = thread_times()
        self._start = sample()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        t1 = time.perf_counter()
        end = sample()
        self.threads = thread_deltas(self._threads, thread_times())
        self.wall = t1 - self._t0
        self.cpu = end.own_cpu - self._start.own_cpu
        self.outside = outside_share(self._start, end)
        self.run_share = run_share(self._start, end)
