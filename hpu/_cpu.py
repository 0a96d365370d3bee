"""The Numba CPU backend: one ``prange`` over a range of a level's tasks per phase.

Small ranges (count and fill below :data:`hpu._overheads.SERIAL_EXPAND_TASKS`
tasks, the plan's ``serial_levels``) run a serial driver on the calling thread
instead: a parallel region is a fork and a join of every worker, which costs
more than small phases and stalls when other processes hold the cores.

The backend (:class:`CpuBackend`) is four short methods: each calls a
generated ``*_level`` driver, ``for t in prange(start, stop)`` over the tasks
of a level, with its arguments looked up by name (:meth:`Layout.count_args`
and friends), so the generated signatures and the calls cannot drift apart.
The specialisation it runs (:class:`~hpu._program.Program`) lives in
:mod:`hpu._program`, shared with the OpenCL backend; the names are re-exported
here for older imports.

Ctrl-C: each parallel driver, and each leaf phase on the calling thread (one
task, or a serial level), runs on a helper thread (:func:`_interruptible`,
:func:`hpu._interrupt.call`) so that ``KeyboardInterrupt`` reaches the caller
within a fraction of a second instead of when the level ends; the recursive
solver reads the stop flag at every call, so a long task stops too.
"""
from __future__ import annotations

import numpy as np

from hpu._codegen import DEFAULT_DEPTH
from hpu._driver import Level, level_env
from hpu._errors import StackOverflowError
from hpu._guard import native_errors, task_failed
from hpu._interrupt import POLL_SECONDS, call, raise_if_stopped, stop_epoch
from hpu._overheads import SERIAL_EXPAND_TASKS
from hpu._program import Program, numba_signature, specialize

__all__ = ["Program", "specialize", "CpuBackend", "numba_signature", "StackOverflowError",
           "POLL_SECONDS"]


class CpuBackend:
    """Runs phases on Numba's threads (``prange`` over the task range).

    ``leaf="recursive"`` solves subtrees with the compiled recursive function
    (the default, depth-first and cache friendly); ``leaf="iterative"`` uses
    the generated stack-based solver, exactly what an OpenCL device runs, so
    that it can be checked on the CPU.
    """

    kind = "cpu"

    def __init__(self, program: Program, *, leaf: str = "recursive", depth: int = DEFAULT_DEPTH,
                 serial_levels=(), serial_expand: int = SERIAL_EXPAND_TASKS):
        if leaf not in ("recursive", "iterative"):
            raise ValueError(f"leaf={leaf!r}: expected 'recursive' or 'iterative'")
        self.program = program
        self.layout = program.layout
        self.m = program.cpu_module  # deep recursion continues on a growable stack
        self.leaf_mode = leaf
        self.depth = depth
        self.serial_levels = frozenset(serial_levels)
        self.serial_expand = int(serial_expand)
        self._iter = program.iter_module(depth) if leaf == "iterative" else None
        lay = self.layout
        self._names = {"count": lay.count_args(), "fill": lay.fill_args(),
                       "leaf": lay.leaf_args(), "combine": lay.combine_args()}

    @staticmethod
    def _args(names, env):
        return [env[n] for n in names]

    # Where a phase runs.  One task: the task function on the calling thread.  Count and
    # fill below ``serial_expand`` tasks, and leaf and combine phases of the plan's
    # ``serial_levels``: the serial driver on the calling thread (a parallel region's fork
    # and join cost more than such tasks, and stall for a time slice when the cores are
    # busy).  Otherwise the parallel driver; leaf and combine with a chunk size of one task,
    # so that a thread that finishes early (or was descheduled late) takes the next task
    # instead of waiting on a static share.  A task that raises inside a parallel driver
    # is recorded in ``err`` and run again alone, so that its exception surfaces
    # (:func:`hpu._guard.task_failed`); the serial drivers raise directly.
    @native_errors  # issue 11: the user's exception, not Numba's SystemError
    def count(self, level: Level, start: int, stop: int, shared) -> None:
        args = self._args(self._names["count"], {**level_env(level), **shared})
        if stop - start == 1:
            level.offsets[start + 1] = self.m.count_task(start, *args)
        elif stop - start < self.serial_expand:
            self.m.count_serial__(start, stop, level.offsets, *args)
        else:
            err = np.zeros(2, np.int64)
            _interruptible(self.m.count_level, start, stop, [err, level.offsets, *args])
            task_failed(err, self.m.count_task, args, self.program.spec, "count", level.index)

    @native_errors  # issue 11: the user's exception, not Numba's SystemError
    def fill(self, level: Level, child: Level, start: int, stop: int, shared) -> None:
        args = self._args(self._names["fill"], {**level_env(level, child), **shared})
        if stop - start == 1:
            self.m.fill_task(start, *args)
        elif stop - start < self.serial_expand:
            self.m.fill_serial__(start, stop, *args)
        else:
            err = np.zeros(2, np.int64)
            _interruptible(self.m.fill_level, start, stop, [err, *args])
            task_failed(err, self.m.fill_task, args, self.program.spec, "divide", level.index)

    @native_errors  # issue 11: the user's exception, not Numba's SystemError
    def leaf(self, level: Level, start: int, stop: int, shared) -> None:
        env = {**level_env(level), **shared}
        if self._iter is None:
            args = self._args(self._names["leaf"], env)
            if stop - start == 1:  # on a helper thread, as the serial driver: Ctrl-C
                _solve(self.m.leaf_task, start, *args)
            elif level.index in self.serial_levels:
                _solve(self.m.leaf_serial__, start, stop, *args)
            else:
                err = np.zeros(2, np.int64)
                _interruptible(self.m.leaf_level, start, stop, [err, *args], chunk=1)
                task_failed(err, self.m.leaf_task, args, self.program.spec, "leaf", level.index)
            return
        err = np.zeros(1, np.int64)
        env["err__"] = err
        self._iter.leaf_level_iter(start, stop, *self._args(self.layout.leaf_iter_args(), env))
        if err[0]:
            raise StackOverflowError(
                f"a subtree of {self.program.spec.name} at level {level.index} is deeper than "
                f"the iterative solver's {self.depth} frames: if the recursion ends (deep but "
                "finite), pass a larger depth; if it never ends (a base case that is not "
                "reached), fix the guard")

    @native_errors  # issue 11: the user's exception, not Numba's SystemError
    def combine(self, level: Level, child: Level, start: int, stop: int, shared) -> None:
        args = self._args(self._names["combine"], {**level_env(level, child), **shared})
        if stop - start == 1:
            self.m.combine_task(start, *args)
        elif level.index in self.serial_levels:
            self.m.combine_serial__(start, stop, *args)
        else:
            err = np.zeros(2, np.int64)
            _interruptible(self.m.combine_level, start, stop, [err, *args], chunk=1)
            task_failed(err, self.m.combine_task, args, self.program.spec, "combine", level.index)


def _interruptible(driver, start: int, stop: int, args, chunk: int = 0) -> None:
    """Run a parallel driver so that Ctrl-C stops it within a slice of :data:`POLL_SECONDS`.

    The driver (compiled ``nogil``) runs on a helper thread while this thread
    waits where ``KeyboardInterrupt`` can arrive (:func:`hpu._interrupt.call`).
    It then sets ``err[1]`` (``args[0]``), which the driver reads before each
    task: the tasks not yet started are skipped; the running ones stop at
    their next recursive call (the stop flag), the helper is joined and the
    interrupt re-raised -- the process stays usable.  The arrays are then partly
    processed; the call's snapshot (:mod:`hpu._snapshot`) puts them back.
    A task stopped by another call's Ctrl-C (the flag is the process's) records
    a failure in ``err[0]`` like any exception: that too raises
    ``KeyboardInterrupt`` (:func:`hpu._interrupt.raise_if_stopped`).
    ``chunk``: Numba's parallel chunk size, which is per thread, so it is set on
    the helper.
    """
    err = args[0]
    epoch = stop_epoch()

    def cancel():
        err[1] = 1  # skip the tasks not yet started

    call(driver, start, stop, *args, on_stop=cancel, chunk=chunk)
    if err[0]:
        raise_if_stopped(None, epoch)


def _solve(fn, *args):
    """A phase that may be one long task (the sequential solver, or the serial driver of a
    level): like :func:`_interruptible`, stopped by Ctrl-C at its next recursive call."""
    epoch = stop_epoch()
    try:
        call(fn, *args)
    except KeyboardInterrupt:
        raise
    except Exception as err:  # noqa: BLE001 - the user's, unless a Ctrl-C stopped the run
        raise_if_stopped(err, epoch)
        raise
