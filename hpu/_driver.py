"""The breadth-first driver: one loop over levels, whatever runs the tasks.

Why one driver
==============

004's Algorithm 2 runs a divide-and-conquer function level by level: every
task of a level is divided (base cases are passed down unchanged), the next
level is processed, then every task of the level is combined.  That loop is
the same whether a level's tasks run on Numba threads, as OpenCL work-items, or
split between the two; only "run tasks [start, stop) of this phase of this
level" differs.  So there is exactly one driver (this module) and small
backends with four methods (``count``, ``fill``, ``leaf``, ``combine``, each
over a task range), in the spirit of dask's one scheduler loop with thin
adapters.  A hybrid backend later splits a level's range between devices by
passing a different ``assign``; the driver does not change.

What the driver does
--------------------

1. Level 0 holds the root: one task, its scalar parameters in one-element
   arrays (structure of arrays: one array per varying scalar parameter).
2. Expansion, level ``i`` -> ``i+1``, until the cut-off level ``K``:
   *count* writes each task's child count (1 for a base case, else ``a``) to
   ``off[t+1]``; an exclusive prefix sum (``np.cumsum``) turns counts into
   offsets; if every task was a base case the tree ends here (``K = i``);
   *fill* writes the children of task ``t`` at ``off[t]`` onward, so children
   are in parent order and every subtree is a contiguous range of every level
   below it.  ``K`` is given, or the first level with at least ``min_tasks``
   tasks (the CPU backend asks for ``8·p``).
3. *leaf*: every task at level ``K`` solves its whole subtree (recursively on
   the CPU, with the iterative solver on OpenCL).
4. *combine*, levels ``K-1`` down to ``0``; the root's result is the value.

Only levels ``0..K`` are ever stored, so parameter storage depends on ``K``
and ``a`` (at most ``a**K`` tasks at level ``K``), never on the number of
leaves of the full tree; :class:`Execution` reports the bytes allocated.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from hpu._codegen import Layout, Types
from hpu._run import LevelRecord

__all__ = ["Level", "Backend", "DeviceBackend", "Execution", "execute", "level_env", "check_K"]


@dataclass
class Level:
    """The tasks of one level, structure-of-arrays."""

    index: int
    size: int
    params: dict[str, np.ndarray]                       #: varying parameter -> values
    offsets: np.ndarray | None = None                   #: size + 1 exclusive prefix sum of counts
    carried: dict[str, np.ndarray] = field(default_factory=dict)  #: divide names the combine reads
    results: list[np.ndarray] = field(default_factory=list)       #: one array per result component


def level_env(level: Level, child: Level | None = None) -> dict[str, np.ndarray]:
    """The generated names (``in__p``, ``off__``, ``out__p``, ``loc__x``, ``res__k``,
    ``cres__k``) bound to this level's (and its child level's) arrays."""
    env: dict[str, Any] = {f"in__{k}": v for k, v in level.params.items()}
    if level.offsets is not None:
        env["off__"] = level.offsets
    env.update({f"loc__{k}": v for k, v in level.carried.items()})
    env.update({f"res__{k}": v for k, v in enumerate(level.results)})
    if child is not None:
        env.update({f"out__{k}": v for k, v in child.params.items()})
        env.update({f"cres__{k}": v for k, v in enumerate(child.results)})
    return env


class Backend(Protocol):
    """Runs one phase for the tasks ``[start, stop)`` of a level.

    ``shared`` maps the user's array and unchanging scalar parameters to
    their values.  ``kind`` (``"cpu"`` or ``"gpu"``) says which columns of a
    :class:`LevelRecord` the work is booked to.
    """

    kind: str

    def count(self, level: Level, start: int, stop: int, shared: Mapping[str, Any]) -> None: ...

    def fill(self, level: Level, child: Level, start: int, stop: int,
             shared: Mapping[str, Any]) -> None: ...

    def leaf(self, level: Level, start: int, stop: int, shared: Mapping[str, Any]) -> None: ...

    def combine(self, level: Level, child: Level, start: int, stop: int,
                shared: Mapping[str, Any]) -> None: ...


class DeviceBackend(Backend, Protocol):
    """A backend that works asynchronously on its own device: the device lifecycle.

    :class:`hpu._split.DeviceSplit` drives it; the driver only sees ``leaf`` and
    ``combine`` (which may merely enqueue).  ``kind`` is ``"gpu"``.

    ``prepare(levels, starts, y, span)``
        once the tree is expanded: upload the data (``span = (lo, hi)`` of
        every array, or None for whole arrays) and the level arrays of levels
        ``y..K``; ``starts[i]`` is the device's first task of level ``i``.  A
        failure is remembered, not raised.  What a CPU redo needs is the
        call's :class:`~hpu._snapshot.Snapshot`, set as ``originals`` before
        this call on a backend that has that attribute.
    ``finish()``
        wait and bring results back (the data span and level ``y``'s
        results); raises :class:`~hpu._errors.DeviceFault` or
        :class:`~hpu._errors.StackOverflowError` when the device failed.
    ``restore()``
        stop writing into the caller's arrays before the CPU redoes the
        device's share (the split then restores that share from the call's
        snapshot).  Without a snapshot (``keep_inputs=False``) it puts back a
        copy of its own share, and returns True when that was whole arrays.
    ``wrote_caller_arrays()`` (optional)
        whether the device wrote into the caller's arrays what it cannot put
        back; without a snapshot a failure after that raises.
    ``cancel()``
        leave nothing queued; never raises (an error ended the run elsewhere).
    ``transfers()``
        the :class:`~hpu._run.TransferRecord` of each direction.
    ``event_seconds()``
        ``{(level, phase): seconds}`` measured on the device, where known.
    """

    def prepare(self, levels: Sequence[Level], starts: Mapping[int, int], y: int,
                span: tuple[int, int] | None) -> None: ...

    def finish(self) -> None: ...

    def restore(self) -> None: ...

    def cancel(self) -> None: ...

    def transfers(self) -> tuple: ...

    def event_seconds(self) -> Mapping[tuple[int, str], float]: ...


#: ``assign(level, phase, tasks) -> [(backend, start, stop), ...]`` covering ``[0, tasks)``.
Assign = Callable[[int, str, int], Sequence[tuple[Backend, int, int]]]


@dataclass(frozen=True)
class Execution:
    """What :func:`execute` did."""

    value: Any
    K: int                              #: the cut-off level whose tasks solved their subtrees
    level_sizes: tuple[int, ...]        #: tasks per level 0..K
    leaf_tasks: Mapping[str, int]       #: tasks of level K per backend kind
    levels: tuple[LevelRecord, ...]
    allocated_bytes: int                #: every level array the driver allocated
    seconds: float


def check_K(K) -> int | None:
    if K is None:
        return None
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 0:
        raise ValueError(f"K={K!r} must be None (choose automatically) or an int >= 0: the "
                         "level whose tasks solve their whole subtrees; pass e.g. K=4")
    return int(K)


def execute(layout: Layout, types: Types, args: Mapping[str, Any], backend: Backend, *,
            K: int | None = None, min_tasks: int = 16, assign: Assign | None = None,
            on_expanded: Callable[[list[Level]], None] | None = None,
            before_phase: Callable[[int, str], None] | None = None) -> Execution:
    """Run the function breadth-first on ``backend`` (or on what ``assign`` says per level).

    ``args`` maps every parameter to its (already checked) value.  With
    ``K=None`` expansion stops at the first level with ``min_tasks`` tasks or
    more; it always stops early when every task of a level is a base case.

    Two hooks let a split run (:mod:`hpu._hybrid`) coordinate devices without
    a second driver: ``on_expanded(levels)`` once the tree is expanded (every
    level's parameters, offsets and result arrays exist) and before any leaf
    runs; ``before_phase(level, phase)`` before each leaf and combine phase
    (where the device's results are collected before the CPU needs them), and
    ``before_phase(-1, "finish")`` once more before the value is read.
    """
    K = check_K(K)
    if assign is None:
        def assign(level, phase, m):
            return [(backend, 0, m)]
    t_start = time.perf_counter()
    allocated = 0

    def alloc(n, dtype):
        nonlocal allocated
        arr = np.empty(n, dtype)
        allocated += arr.nbytes
        return arr

    shared = {p: args[p] for p in layout.shared}
    records: list[LevelRecord] = []

    def run_phase(level_index, phase, m, call):
        parts = list(assign(level_index, phase, m))
        tasks = {"cpu": 0, "gpu": 0}
        secs = {"cpu": 0.0, "gpu": 0.0}
        spans: dict[str, list[float]] = {}  # kind -> [first start, last end] (for traces)
        covered = 0
        for be, start, stop in parts:
            if stop <= start:
                continue
            t0 = time.perf_counter()
            call(be, start, stop)
            t1 = time.perf_counter()
            secs[be.kind] += t1 - t0
            tasks[be.kind] += stop - start
            covered += stop - start
            span = spans.setdefault(be.kind, [t0, t1])
            span[1] = t1
        if covered != m:
            raise RuntimeError(f"assign() covered {covered} of the {m} tasks of level "
                               f"{level_index} ({phase}); it must cover [0, {m}) exactly")
        c, g = spans.get("cpu", (None, None)), spans.get("gpu", (None, None))
        records.append(LevelRecord(level_index, phase, tasks["cpu"], tasks["gpu"],
                                   secs["cpu"], secs["gpu"], c[0], c[1], g[0], g[1]))
        return tasks

    root = Level(0, 1, {})
    for v, dt in zip(layout.varying, types.varying):
        root.params[v] = alloc(1, dt)
        root.params[v][0] = args[v]
    levels = [root]
    while True:
        lv = levels[-1]
        if K is not None and lv.index >= K:
            break
        if K is None and lv.size >= min_tasks:
            break
        m = lv.size
        lv.offsets = alloc(m + 1, np.int64)
        lv.offsets[0] = 0
        run_phase(lv.index, "count", m, lambda be, s, e: be.count(lv, s, e, shared))
        np.cumsum(lv.offsets[1:], out=lv.offsets[1:])
        m_next = int(lv.offsets[m])
        if m_next == m:  # every task is a base case: the tree ends at this level
            lv.offsets = None
            break
        child = Level(lv.index + 1, m_next, {v: alloc(m_next, dt)
                                              for v, dt in zip(layout.varying, types.varying)})
        lv.carried = {c: alloc(m, dt) for c, dt in zip(layout.carried, types.carried)}
        run_phase(lv.index, "fill", m, lambda be, s, e: be.fill(lv, child, s, e, shared))
        levels.append(child)

    K_used = levels[-1].index
    for lv in levels:
        lv.results = [alloc(lv.size, dt) for dt in types.results]
    if on_expanded is not None:
        on_expanded(levels)
    if before_phase is not None:
        before_phase(K_used, "leaf")
    leaf = levels[-1]
    leaf_tasks = run_phase(K_used, "leaf", leaf.size, lambda be, s, e: be.leaf(leaf, s, e, shared))
    for i in range(K_used - 1, -1, -1):
        lv, child = levels[i], levels[i + 1]
        if before_phase is not None:
            before_phase(i, "combine")
        run_phase(i, "combine", lv.size,
                  lambda be, s, e: be.combine(lv, child, s, e, shared))

    if before_phase is not None:
        before_phase(-1, "finish")  # every device's work is in before the value is read
    r = layout.result_arity
    if r == 0:
        value = None
    elif r == 1:
        value = root.results[0][0].item()
    else:
        value = tuple(res[0].item() for res in root.results)
    return Execution(value=value, K=K_used, level_sizes=tuple(lv.size for lv in levels),
                     leaf_tasks=dict(leaf_tasks), levels=tuple(records),
                     allocated_bytes=allocated, seconds=time.perf_counter() - t_start)
