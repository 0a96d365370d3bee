"""The report of one run: what was computed, where, and how long each level took.

Why a report object
===================

A hybrid run makes decisions the caller cannot see (the split α, the transfer
level y, the cut-off level K, fallbacks to the CPU); the paper's figures are
made of per-level timings.  ``DivideAndConquer.run`` therefore returns the
value *and* a record of the run, as frozen dataclasses with named fields, so
that benchmarks, the CLI and notebooks read the same numbers.
"""
from __future__ import annotations

import contextlib

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Run", "LevelRecord", "TransferRecord", "PHASES"]

#: The phases of a level, in the order a run performs them.
PHASES = ("count", "fill", "leaf", "combine")


@dataclass(frozen=True)
class LevelRecord:
    """One phase of one level: how many tasks each side ran, and in how many seconds.

    ``phase`` is ``"count"`` (which tasks are base cases), ``"fill"`` (write
    the children's parameters), ``"leaf"`` (solve whole subtrees at the
    cut-off level) or ``"combine"``.
    """

    level: int
    phase: str
    cpu_tasks: int
    gpu_tasks: int
    cpu_seconds: float
    gpu_seconds: float
    #: when each side worked on this phase, in ``time.perf_counter()`` seconds (the host's
    #: clock; the device's from its profiling events, moved onto the host's clock); None
    #: when the side had no tasks or the time is unknown.  For traces (:mod:`hpu._trace`).
    cpu_start: float | None = None
    cpu_end: float | None = None
    gpu_start: float | None = None
    gpu_end: float | None = None

    @property
    def tasks(self) -> int:
        return self.cpu_tasks + self.gpu_tasks


@dataclass(frozen=True)
class TransferRecord:
    """One host<->device copy: ``direction`` is ``"host->device"`` or ``"device->host"``."""

    direction: str
    bytes: int
    seconds: float
    #: ``(start, end)`` of each copy (or chunk of one), in ``time.perf_counter()`` seconds;
    #: empty when unknown
    spans: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class Run:
    """The result and report of one call of a divide-and-conquer function.

    ``value``: what the function returns (``None`` for in-place functions).
    ``device``: ``"cpu"``, ``"gpu"``, ``"hybrid"`` (or ``"python"`` under
    ``HPU_DISABLE=1``).  ``alpha``: the share of the split level's tasks kept
    on the CPU (1.0 on the CPU alone); ``y``: the transfer level of the split
    (clamped to the tree: at most ``K``; ``None`` on ``device="cpu"``).  Whether
    the device did any work is ``gpu_tasks > 0``.  ``K``: the cut-off level whose tasks
    solved their whole subtrees.  ``cpu_tasks``/``gpu_tasks``: the tasks of
    level ``K`` each side solved.  ``fallbacks``: one line per device failure
    that was redone on the CPU.  ``levels``: one :class:`LevelRecord` per
    phase per level, in execution order, as assigned; after a device failure
    the CPU's redo of the device's share follows as extra records.  ``transfers``: host<->device copies
    (none on the CPU).  ``seconds``: wall time of the whole run.  ``plan``: the
    :class:`hpu.model.Plan` the run executed (its ``cutoff_level``,
    ``transfer_level``, ``split_alpha`` and per-level ``tasks``; ``None`` under
    ``HPU_DISABLE``; ``plan.strategy`` and ``plan.reason`` say which strategy
    chose the split and why).  ``level_sizes``: the tasks of each level ``0..K`` as
    really expanded (a tree whose tasks are all base cases ends above the plan's
    ``cutoff_level``; otherwise ``K == plan.cutoff_level``).
    """

    value: Any
    device: str
    alpha: float | None
    y: int | None
    K: int
    cpu_tasks: int
    gpu_tasks: int
    fallbacks: list[str] = field(default_factory=list)
    levels: tuple[LevelRecord, ...] = ()
    transfers: tuple[TransferRecord, ...] = ()
    seconds: float = 0.0
    plan: Any = field(default=None, repr=False)
    level_sizes: tuple[int, ...] = ()
    #: ``time.perf_counter()`` when the run began: the origin of the records' timestamps
    started: float | None = field(default=None, repr=False)
    #: why the run took its shape when no plan says it (a functional function, guide §10:
    #: how many subtrees ran on how many threads, or why it ran as one call); else None
    reason: str | None = None
    #: bytes of host memory the call had allocated at its peak, over what was allocated
    #: when it began (``memory=True``, :func:`hpu._run.traced_peak`); else None
    peak_memory: int | None = None

    def trace(self, path) -> "Path":
        """Write this run as a Chrome/Perfetto trace (Trace Event Format JSON) to ``path``.

        One track per CPU thread group and per device queue, one slice per phase
        and level, uploads and downloads, and the plan's predicted phases as a
        second process; open it in https://ui.perfetto.dev or chrome://tracing.
        Returns the path written (see :mod:`hpu._trace`).
        """
        from hpu._trace import write_trace

        return write_trace(self, path)

    def level_seconds(self, phase: str | None = None) -> float:
        """Wall seconds spent in ``phase`` (all phases when None), both sides added."""
        return sum(r.cpu_seconds + r.gpu_seconds for r in self.levels
                   if phase is None or r.phase == phase)

    def summary(self) -> str:
        """A few lines for a terminal: device, split, K and seconds per phase."""
        head = (f"{self.device}: K={self.K}, alpha={self.alpha}, y={self.y}, "
                f"tasks cpu={self.cpu_tasks} gpu={self.gpu_tasks}, {self.seconds:.6f} s")
        lines = [head]
        if self.reason is not None:
            lines.append(f"  {self.reason}")
        if self.plan is not None:  # why it ran this way (e.g. a small problem as one task)
            lines.append(f"  plan: {self.plan.reason}")
            lines.append(f"  strategy: {self.plan.strategy}")
        for r in self.levels:
            lines.append(f"  level {r.level:>2} {r.phase:<8} cpu {r.cpu_tasks:>8} tasks "
                         f"{r.cpu_seconds:.6f} s   gpu {r.gpu_tasks:>8} tasks {r.gpu_seconds:.6f} s")
        lines.extend(f"  fallback: {f}" for f in self.fallbacks)
        return "\n".join(lines)


@contextlib.contextmanager
def traced_peak():
    """Yields a function that, after the block, gives the bytes the block had allocated at
    its peak over what was allocated when it began: Python's ``tracemalloc``, which sees
    NumPy's arrays, Numba's (its runtime allocates through Python's raw allocator) and
    Python objects, on every thread; not an OpenCL device's buffers, and not what the C
    library keeps after a ``free`` (resident memory, ``bench/bench_functional.py``).  If
    the caller already traces, its peak is reset (``tracemalloc.reset_peak``) and the
    tracing left on."""
    import tracemalloc

    ours = not tracemalloc.is_tracing()
    if ours:
        tracemalloc.start()
    else:
        tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    result: list[int] = []
    try:
        yield lambda: result[0]
    finally:
        result.append(max(0, tracemalloc.get_traced_memory()[1] - before))
        if ours:
            tracemalloc.stop()

