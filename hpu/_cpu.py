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

Ctrl-C: each parallel driver runs on a helper thread (:func:`_interruptible`)
so that ``KeyboardInterrupt`` reaches the caller within a fraction of a second
instead of when the level ends.
"""
from __future__ import annotations

import threading

import numba
import numpy as np

from hpu._codegen import DEFAULT_DEPTH
from hpu._driver import Level, level_env
from hpu._errors import StackOverflowError
from hpu._guard import native_errors, task_failed
from hpu._overheads import SERIAL_EXPAND_TASKS
from hpu._program import Program, numba_signature, specialize

__all__ = ["Program", "specialize", "CpuBackend", "numba_signature", "StackOverflowError"]


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
            if stop - start == 1:
                self.m.leaf_task(start, *args)
            elif level.index in self.serial_levels:
                self.m.leaf_serial__(start, stop, *args)
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

    Python runs signal handlers only on the main thread, between bytecodes: a
    Numba call that runs for seconds defers Ctrl-C until it returns.  So the
    driver (compiled ``nogil``) runs on a helper thread while this thread
    waits in short ``join`` slices, where ``KeyboardInterrupt`` arrives at
    once.  It then sets ``err[1]`` (``args[0]``), which the driver reads
    before each task: the tasks not yet started are skipped, the running ones
    finish, the helper is joined and the interrupt re-raised -- the process
    stays usable.  The arrays are then partly processed; the driver
    (:mod:`hpu._hybrid`) restores what the design promises.  ``chunk``: Numba's
    parallel chunk size, which is per thread, so it is set on the helper.
    """
    err = args[0]
    box: list = []

    def work():
        old = numba.set_parallel_chunksize(chunk) if chunk else None
        try:
            driver(start, stop, *args)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
            box.append(exc)
        finally:
            if chunk:
                numba.set_parallel_chunksize(old)

    helper = threading.Thread(target=work, name="hpu-level", daemon=True)
    helper.start()
    try:
        while helper.is_alive():
            helper.join(POLL_SECONDS)
    except KeyboardInterrupt:
        err[1] = 1  # cancel the tasks not yet started
        while helper.is_alive():
            try:
                helper.join()
            except KeyboardInterrupt:  # a second Ctrl-C: still wait, the threads use the arrays
                err[1] = 1
        raise
    if box:
        raise box[0]


#: How long the calling thread waits on a level's helper thread between looks at signals.
POLL_SECONDS = 0.05
