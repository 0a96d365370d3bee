"""The split of one run between the CPU backend and a device backend, as an object.

Why an object
=============

The breadth-first driver (:mod:`hpu._driver`) knows nothing of devices: it asks
``assign(level, phase, m)`` who runs a phase's tasks, and calls two hooks,
``on_expanded(levels)`` once the tree exists and ``before_phase(level, phase)``
before every leaf and combine phase.  :class:`DeviceSplit` is those three
callables plus the state they share, with names: where the split starts, which
task of each level is the device's first, whether the device's work has been
collected, what the CPU redid after a failure.  Any backend that follows the
device lifecycle (:class:`hpu._driver.DeviceBackend`) plugs in: OpenCL today,
a Dask cluster or CUDA later, without a second driver.

How 004's Algorithm 8 maps onto it
----------------------------------

At the transfer level ``y`` (the plan's, clamped to the tree the driver really
expanded) the level's ``m`` tasks split: ``[0, s)`` stay on the CPU with
``s = ⌈α·m⌉`` (:func:`hpu.model.tasks_on_cpu`), the rest go to the device, and
the split propagates down through the offsets (``s_{i+1} = off_i[s_i]``):
children are laid out in parent order, so every subtree is a contiguous range
of every level below it.  For levels ``K..y`` each phase is assigned
device-first (the device only enqueues) and the CPU works meanwhile; before
the first phase above ``y`` (or before the value is read) the device's work
is collected: :meth:`DeviceSplit.collect`, one download.  If the device failed
its data is restored and its share redone on the CPU, recorded in ``redo`` and
``fallbacks``.

Where the device's original data comes from
-------------------------------------------

From the call's one :class:`~hpu._snapshot.Snapshot` (taken before anything
ran, see :mod:`hpu._snapshot`), not from a copy of the device's own: the split
restores the device's span from it before the CPU's redo.  When the device was
given whole arrays (no span), the CPU's share shares those arrays, so the
arrays are restored whole and levels ``K..y`` are redone whole on the CPU (a
restore of the device's part alone cannot be told apart from the CPU's
writes).  Without a snapshot (``keep_inputs=False``) the backend's own
``restore()`` puts its share back (it returns True when that was whole arrays,
and levels ``K..y`` are redone whole); a backend that says it wrote into the
caller's arrays what it cannot put back (``device.wrote_caller_arrays()``: a
download into them began) makes the run raise :class:`~hpu._errors.DeviceFault`
saying the arrays are partially processed.
"""
from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Any, Mapping

import numpy as np

from hpu import model
from hpu._errors import DeviceFault, HpuPerformanceWarning, StackOverflowError, user_stacklevel
from hpu._run import LevelRecord
from hpu._snapshot import Snapshot

__all__ = ["DeviceSplit"]


class DeviceSplit:
    """The α/y split of one run between ``cpu`` and ``device`` (see the module docstring).

    State, all public for reports and tests:

    ``alpha``, ``planned_y``
        the plan's split: share of level ``y``'s tasks kept on the CPU, and ``y``;
    ``y``
        the transfer level used: ``planned_y`` clamped to the deepest level
        expanded (set by :meth:`on_expanded`);
    ``starts``
        level -> index of the device's first task, for levels ``y..K``;
    ``levels``
        the expanded levels (set by :meth:`on_expanded`);
    ``active``
        the device has a non-empty share and was prepared;
    ``synced``
        the device's work has been collected (or there is none);
    ``redo``
        :class:`~hpu._run.LevelRecord` of the CPU's redo after a device failure;
    ``fallbacks``
        one line per failure that was redone on the CPU;
    ``snapshot``
        the call's :class:`~hpu._snapshot.Snapshot`, the device's share is restored from.
    """

    def __init__(self, cpu, device, *, alpha: float, y: int, values: Mapping[str, Any], spec,
                 shared: Mapping[str, Any], snapshot: Snapshot | None = None):
        self.cpu = cpu
        self.device = device
        self.alpha = float(alpha)
        self.planned_y = int(y)
        self.y = int(y)
        self.starts: dict[int, int] = {}
        self.levels: list | None = None
        self.active = False
        self.synced = True
        self.redo: list[LevelRecord] = []
        self.fallbacks: list[str] = []
        self.snapshot = snapshot
        self._prepared = False
        self._device_span = None
        self._expanded: Snapshot | None = None
        self._values = values
        self._spec = spec
        self._shared = shared

    # -- the driver's hooks ----------------------------------------------------
    def on_expanded(self, levels) -> None:
        """Fix ``y`` and the device's first task per level; prepare the device's share."""
        K = levels[-1].index
        self.y = y = min(self.planned_y, K)
        self.levels = levels
        m = levels[y].size
        s = min(m, model.tasks_on_cpu(self.alpha, m))
        starts = {y: s}
        for i in range(y, K):
            starts[i + 1] = int(levels[i].offsets[starts[i]])
        self.starts = starts
        if s >= m:
            return  # the device's share is empty
        self._device_span = span = self._span(levels[y], s)
        if self.snapshot is not None and self.snapshot.kept and _expansion_writes(self._spec):
            # a quicksort's partitions: the share as the levels above left it, not as the
            # call began, is what a failure is redone from (the redo runs no divide again)
            self._expanded = self.snapshot.current(span)
        if self.snapshot is not None and hasattr(self.device, "originals"):
            # the device keeps no copy of its own; it downloads what differs from these
            self.device.originals = self._expanded or self.snapshot
        self._prepared = True  # from here on the device may have work queued
        self.device.prepare(levels, starts, y, span)
        self.active = True
        self.synced = False

    def assign(self, level: int, phase: str, m: int):
        """Who runs ``[0, m)`` of this phase: the tree is expanded on the host (count,
        fill); levels above ``y`` are the CPU's; below, the device's share goes first
        (it only enqueues)."""
        if phase in ("count", "fill") or not self.active or level < self.y:
            return [(self.cpu, 0, m)]
        s = self.starts[level]
        return [(self.device, s, m), (self.cpu, 0, s)]

    def before_phase(self, level: int, phase: str) -> None:
        """Collect the device's work before the CPU needs it."""
        if self.active and not self.synced and (phase == "finish" or level < self.y):
            self.collect()

    # -- collecting ------------------------------------------------------------
    def collect(self) -> None:
        """Wait for the device; on failure restore its data and redo its share on the CPU."""
        self.synced = True
        try:
            self.device.finish()
            return
        except DeviceFault as err:
            what = f"the OpenCL device failed ({err})"
            reason = f"{what}; its share was redone on the CPU"
        except StackOverflowError as err:  # the CPU's recursion has no fixed stack
            # redo first, advise after: a recursion that never ends raises HpuRecursionError
            # on the CPU, and must not be told to try a larger depth= (issue 11)
            self._redo_on_cpu(self._put_back(str(err)))
            reason = (f"{err}; the device's share was redone on the CPU, where the recursion "
                      "ended")
            warnings.warn(f"hpu: {reason}", HpuPerformanceWarning, stacklevel=user_stacklevel())
            self.fallbacks.append(reason)
            return
        whole = self._put_back(what)
        warnings.warn(f"hpu: {reason}", HpuPerformanceWarning, stacklevel=user_stacklevel())
        self.fallbacks.append(reason)
        self._redo_on_cpu(whole)

    def _put_back(self, what: str) -> bool:
        """The device share's original data back in place; True when the arrays were
        restored whole and levels ``K..y`` must be redone whole (see the module docstring)."""
        # the device stops writing (and, without a snapshot, puts back a copy of its own)
        whole = bool(self.device.restore())
        span = self._device_span
        snap = self.snapshot
        if snap is not None and snap.kept:
            # the device's span (a task touches nothing outside it)
            (self._expanded or snap).restore(span)
            return span is None
        wrote = getattr(self.device, "wrote_caller_arrays", None)
        if wrote is not None and wrote():
            names = ", ".join(sorted(snap.arrays)) if snap is not None else "the written arrays"
            raise DeviceFault(
                f"{what}; it had already written part of its results into the caller's "
                f"arrays ({names}) and keep_inputs=False kept no copy to redo its share from, "
                f"so {names} are partially processed: run again on fresh inputs with "
                "keep_inputs=True (the default) or device='cpu'")
        return whole

    def _redo_on_cpu(self, whole: bool = False) -> None:
        levels, y = self.levels, self.y
        starts = {i: 0 for i in self.starts} if whole else self.starts
        K = levels[-1].index
        t0 = time.perf_counter()
        self.cpu.leaf(levels[K], starts[K], levels[K].size, self._shared)
        t1 = time.perf_counter()
        self.redo.append(LevelRecord(K, "leaf", levels[K].size - starts[K], 0, t1 - t0, 0.0,
                                     t0, t1))
        for i in range(K - 1, y - 1, -1):
            t0 = time.perf_counter()
            self.cpu.combine(levels[i], levels[i + 1], starts[i], levels[i].size, self._shared)
            t1 = time.perf_counter()
            self.redo.append(LevelRecord(i, "combine", levels[i].size - starts[i], 0, t1 - t0,
                                         0.0, t0, t1))

    def abandon(self) -> None:
        """An error ended the run elsewhere: leave nothing queued on the device, so that
        nothing writes into the caller's arrays once the error leaves the run (the call
        restores them next, :mod:`hpu._snapshot`)."""
        if self._prepared:  # collected or not: an interrupted finish() may leave work queued
            self.device.cancel()

    # -- reporting -------------------------------------------------------------
    def leaf_split(self, leaf_tasks: int) -> tuple[int, int]:
        """``(cpu, device)`` tasks of the cut-off level as they were finally solved."""
        if not self.active or self.fallbacks:
            return leaf_tasks, 0
        K = self.levels[-1].index
        s = self.starts.get(K, leaf_tasks)
        return s, leaf_tasks - s

    def records(self, executed) -> tuple[LevelRecord, ...]:
        """The driver's records with the device's kernel times, then the CPU's redo."""
        ok = self.active and not self.fallbacks
        ev = self.device.event_seconds() if ok else {}
        # when the device ran each phase, on the host's clock (a backend may not know)
        spans = self.device.event_spans() if ok and hasattr(self.device, "event_spans") else {}
        out = []
        for r in executed:
            key = (r.level, r.phase)
            if r.gpu_tasks and key in ev:
                start, end = spans.get(key, (r.gpu_start, r.gpu_end))
                r = dataclasses.replace(r, gpu_seconds=ev[key], gpu_start=start, gpu_end=end)
            out.append(r)
        out.extend(self.redo)
        return tuple(out)

    def transfers(self):
        return self.device.transfers() if self.active else ()

    def _span(self, level, s: int):
        """``(lo, hi)`` of the data the device's tasks at level ``y`` touch (None: whole arrays)."""
        spec = self._spec
        if spec.span is None:  # a function on NumPy slices: its tasks' views bound what they touch
            from hpu._views import device_span

            arrays = tuple(n for n, v in self._shared.items() if isinstance(v, np.ndarray))
            return device_span(spec, arrays, level.params, s, self._values)
        lo_name, hi_name = spec.span
        lo_vals = level.params.get(lo_name)
        hi_vals = level.params.get(hi_name)
        lo = int(lo_vals[s:].min()) if lo_vals is not None else int(self._values[lo_name])
        hi = int(hi_vals[s:].max()) if hi_vals is not None else int(self._values[hi_name])
        return (max(lo, 0), hi)


def _expansion_writes(spec) -> bool:
    """Whether expanding the tree may write the arrays: a divide step or a guard that
    stores into an array or calls a helper (a partition); ``mid = (lo + hi) // 2``, or
    builtins without effects (``len``, ``min``, ...), leave them as the call began."""
    import ast

    from hpu._views import _PURE_CALLS as _PURE

    for stmt in (*spec.check, *spec.divide):
        for n in ast.walk(stmt):
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                return True
            if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name)
                                                and n.func.id in _PURE):
                return True
    return False
