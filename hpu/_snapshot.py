"""The caller's arrays as they were: one copy per call, put back on any error.

Why one snapshot, in one place
==============================

The design's promise (§4 of the design notes) is that a call either returns
the complete, correct result or raises *with the inputs as they were*.  Three
things can end a run half-way, each after some elements were already written
in place: the user's own code raising (``ZeroDivisionError``, an ``IndexError``
in bounds-checked mode, a runaway recursion...) on the CPU or in the CPU's
share of a hybrid run; a device failing (its share is then redone on the CPU,
from its original data); and ``KeyboardInterrupt``.  All three need the same
thing, the original contents of what the function may write, so there is one
:class:`Snapshot` per call, taken by the call (``_run_checked`` in
:mod:`hpu._decorator`) before anything runs, and used twice:

* on **any** exception out of the run, after the split has stopped the device
  (:meth:`hpu._split.DeviceSplit.abandon` drains its queues, so nothing writes
  afterwards), :meth:`Snapshot.restore` puts every written array back and the
  exception is re-raised unchanged (same object, message and traceback);
* a **device fallback** (:class:`hpu._split.DeviceSplit`) restores only the
  device's share from it (:meth:`Snapshot.restore` with a span) before the CPU
  redoes that share, and an OpenCL device with its own memory that was given
  whole arrays reads from it which elements it changed.  The device keeps no
  second copy: on a device that shares the host's memory (PoCL, integrated
  GPUs) that halves what the device path needs beyond the data.

What is copied: only the arrays the function or its helpers write
(``program.closure.written``, found by the frontend), never those it only
reads; with ``span=("lo", "hi")`` only ``[lo, hi)`` of each (a task touches
nothing else: that is what ``span`` promises).  One ``memcpy`` per written
array per call.

``keep_inputs=False`` (a run option) skips the copy: an error then leaves the
arrays as far as the run got.  A device failure is still redone exactly: a
device that works in the caller's arrays in place then keeps a copy of its own
share (what the device path cost before this snapshot existed); one with its
own memory writes into the caller's arrays only once it succeeded.
``.sequential`` is the plain compiled function and keeps nothing, like Python.

One more use: a task that raised on Numba's threads but not when run again
alone (it depended on data its first run had changed, :mod:`hpu._guard`)
gives only a general :class:`~hpu.HpuError`; from the restored arrays the
plain compiled function is then run once (:meth:`Snapshot.rerun`) and the
exception *it* raises, the one Python raises first, is the call's.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

__all__ = ["Snapshot"]


class Snapshot:
    """The originals of the arrays one call may write (see the module docstring).

    ``copies[name]`` is ``array[lo:hi]`` as it was (``span`` = ``(lo, hi)``, or
    None for whole arrays); ``kept`` is False when ``keep_inputs=False`` asked
    for no copy (then :meth:`restore` does nothing and :meth:`original` is None).
    """

    __slots__ = ("arrays", "copies", "span", "kept", "dead")

    def __init__(self, arrays: Mapping[str, np.ndarray], copies: Mapping[str, np.ndarray],
                 span: tuple[int, int] | None, kept: bool, dead: frozenset = frozenset()):
        self.arrays = dict(arrays)
        self.copies = dict(copies)
        self.span = span
        self.kept = kept
        #: written arrays whose contents no one reads after the run: hpu's own scratch
        #: buffers (hpu._scratch_form), each task's part written before it is read and dead
        #: when the task returns -- neither copied nor put back, nor downloaded from a
        #: device with its own memory
        self.dead = dead

    @classmethod
    def take(cls, program, values: Mapping[str, Any], keep: bool = True,
             dead: frozenset = frozenset()) -> "Snapshot":
        """Copy what ``program`` may write of the call's ``values`` (nothing if not
        ``keep``), but for the arrays named in ``dead`` (see :attr:`dead`)."""
        written = program.closure.written
        dead = frozenset(dead) & frozenset(written)
        arrays = {n: values[n] for n in program.layout.arrays
                  if n in written and n not in dead and isinstance(values.get(n), np.ndarray)}
        span = None
        if program.spec.span is not None:
            lo_name, hi_name = program.spec.span
            span = (int(values[lo_name]), int(values[hi_name]))
        if not keep:
            return cls(arrays, {}, span, False, dead)
        copies = {}
        for name, arr in arrays.items():
            lo, hi = (0, arr.size) if span is None else (max(span[0], 0), min(span[1], arr.size))
            copies[name] = arr[lo:hi].copy()
        return cls(arrays, copies, span, True, dead)

    @property
    def nbytes(self) -> int:
        """Bytes the copies take."""
        return sum(c.nbytes for c in self.copies.values())

    def _bounds(self, arr: np.ndarray) -> tuple[int, int]:
        if self.span is None:
            return 0, arr.size
        return max(self.span[0], 0), min(self.span[1], arr.size)

    def original(self, name: str) -> np.ndarray | None:
        """The whole original of array ``name`` (None unless whole arrays were kept)."""
        if not self.kept or self.span is not None or name not in self.copies:
            return None
        return self.copies[name]

    def rerun_in_order(self, program, values, call=None):
        """``(error, None)`` as :meth:`rerun` finds it, or -- where the plain compiled
        function, run from the restored arguments in Python's order, raises nothing --
        ``(None, (value,))``, its writes left in the arrays: the task that raised was one
        Python never runs (the right operand of ``and``/``or``, a branch of a conditional
        expression), so this run is Python's answer.  ``(None, None)`` where nothing was
        kept to run from.  ``call(values)``: the function to run (the user's function as
        written, compiled: the program's own evaluates every call of an expression)."""
        if not self.kept:
            return None, None
        try:
            value = (call(values) if call is not None
                     else program.run_plain([values[p] for p in program.spec.params],
                                            self.restore))
        except Exception as err:  # noqa: BLE001 - the user's error, raised by the caller
            from hpu._interrupt import raise_if_stopped

            raise_if_stopped(err)  # a Ctrl-C stopped it: KeyboardInterrupt
            self.restore()
            if call is not None:
                # Python meets an error: the program's own run names it as hpu's checks
                # word it (file:line: expression), where the function as written gives
                # Numba's or NumPy's bare text
                again = self.rerun(program, values)
                # (the same exception: Python's, or hpu._checked_ops's subclass of it)
                if again is not None and (isinstance(again, type(err))
                                          or isinstance(err, type(again))):
                    return again, None
            return err.with_traceback(None), None
        except BaseException:
            self.restore()
            raise
        return None, (value,)

    def rerun(self, program, values) -> BaseException | None:
        """The exception the plain compiled function raises on the restored arguments (the
        arrays restored again after it), or None: for a task that failed on Numba's threads
        but not when run alone on the data the level had changed (:mod:`hpu._guard`), the
        sequential run from the originals finds the error Python would raise first."""
        if not self.kept:
            return None
        try:
            program.run_plain([values[p] for p in program.spec.params], self.restore)
        except Exception as err:  # noqa: BLE001 - the user's error, raised by the caller
            from hpu._interrupt import raise_if_stopped

            raise_if_stopped(err)  # a Ctrl-C stopped it: KeyboardInterrupt
            return err.with_traceback(None)
        finally:
            self.restore()
        return None

    def current(self, span: tuple[int, int] | None) -> "Snapshot":
        """The same arrays as they are now, ``[lo, hi)`` of each (None: this snapshot's own
        bounds): the device's share once the divide steps of the levels above it have
        written it, which a device failure is redone from (:mod:`hpu._split`)."""
        eff = span if span is not None else self.span
        out = Snapshot(self.arrays, {}, eff, True, self.dead)
        for name, arr in self.arrays.items():
            lo, hi = out._bounds(arr)
            out.copies[name] = arr[lo:hi].copy()
        return out

    def restore(self, span: tuple[int, int] | None = None) -> None:
        """Put the originals back: everything kept, or only ``[lo, hi)`` of each array."""
        if not self.kept:
            return
        for name, copy in self.copies.items():
            arr = self.arrays[name]
            base, end = self._bounds(arr)
            lo, hi = (base, end) if span is None else (max(span[0], base), min(span[1], end))
            if hi > lo:
                arr[lo:hi] = copy[lo - base:hi - base]
