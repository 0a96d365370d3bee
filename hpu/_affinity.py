"""Run a measurement with every thread of the process on one core.

Why
===

γ is a ratio of per-core speeds: one device work-item against one CPU core.
When the device is a CPU device (PoCL on the host's own cores), both sides of
a timed pair run on *some* core the scheduler picks: the CPU side on hpu's
helper thread, the device side on one of PoCL's worker threads.  On this
project's 2-core VM the cores do not run at one speed: each switches between
a fast state and one about 20 % slower for hundreds of milliseconds at a time
(1.02 against 1.21 ms for the same sort, pinned).  A pair whose two sides ran
on different cores then measured the cores, not the code.  On 2026-11-26,
measurements of γ alone (``calibrate._solver_ratio``, quick settings, three
per process) read 1.15-1.39 unpinned and 0.98-1.17 pinned for the whole PoCL
device (four processes each way), and 0.94-1.21 against 1.01-1.14 for
``cpu@1`` (three each way); four quick calibrations of the whole device,
pinned, read 1.01-1.07.  Running each round of pairs with all the process's
threads on one core, the core changing from round to round, puts both sides
of every pair on the same core, so its state cancels in the ratio and every
core is sampled.

Linux only (``os.sched_setaffinity`` on each thread id of ``/proc/self/task``);
elsewhere, or when the process may use a single core, :func:`rotating` gives
no-op contexts.  Threads started while pinned (a thread pool's first use) are
given the process's original cores afterwards, so nothing stays pinned.
"""
from __future__ import annotations

import contextlib
import os

__all__ = ["available", "allowed_cores", "pinned", "rotating"]


def available() -> bool:
    """True where threads can be pinned (Linux: ``sched_setaffinity`` and ``/proc/self/task``)."""
    return hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")


def allowed_cores() -> list[int]:
    """The cores this process may run on, sorted (one core, 0, where that cannot be read)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return [0]


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return []


def _set(tid: int, cores) -> None:
    try:
        os.sched_setaffinity(tid, cores)
    except OSError:         # the thread ended meanwhile, or the mask is not allowed
        pass


@contextlib.contextmanager
def pinned(core: int):
    """Every thread of the process on ``core`` inside the block; each thread's own cores
    back afterwards (threads started inside get the process's original cores)."""
    if not available():
        yield
        return
    before = {}
    for tid in _threads():
        try:
            before[tid] = os.sched_getaffinity(tid)
        except OSError:
            pass
    default = allowed_cores()
    for tid in before:
        _set(tid, {core})
    try:
        yield
    finally:
        for tid in _threads():
            _set(tid, before.get(tid, default))


def rotating(cores=None):
    """``around(k)``: the context for round ``k`` of a measurement, all threads on one
    core, the core changing every two rounds (rounds alternate the sides' order, so each
    core sees both orders).  No-op contexts where pinning is unavailable or pointless."""
    cores = list(allowed_cores() if cores is None else cores)
    if not available() or len(cores) < 2:
        return lambda k: contextlib.nullcontext()
    return lambda k: pinned(cores[(k // 2) % len(cores)])
