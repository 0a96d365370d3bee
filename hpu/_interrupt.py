"""Ctrl-C inside compiled code: a stop flag the CPU solvers read, and the helper threads.

Why a flag in compiled code, and threads to wait on
===================================================

Python runs signal handlers only on the main thread, between bytecodes: a
Numba call that runs for seconds defers ``KeyboardInterrupt`` until it
returns.  Two things are needed to stop it promptly:

* **the caller must see the signal**: the compiled call runs on a helper
  thread (compiled ``nogil``) while the calling thread waits on it in short
  slices of :data:`POLL_SECONDS`, where ``KeyboardInterrupt`` arrives at once
  (:func:`call`);
* **the compiled code must stop**: the waiting thread then raises the stop
  flag, a process-wide int64 that the generated CPU module reads (:func:`stop_requested`,
  one load) at every call of the recursive function and every iteration of its
  growable-stack loop (:mod:`hpu._codegen`), and raises :class:`Stopped` when it is set.
  In the recursion the read is folded into the depth test the function
  already makes (``depth >= limit - flag``; the flag is 0 or :data:`STOP_VALUE`),
  so a call pays one load and one subtraction.
  The exception unwinds the recursion the way the user's own exceptions do (a
  Numba call already tests a status after every call, so unwinding costs
  nothing until it happens); the level drivers already skip the tasks not yet
  started through their ``err__[1]``.  The waiting thread joins the helper,
  lowers the flag and re-raises the ``KeyboardInterrupt``; the call's snapshot
  (:mod:`hpu._snapshot`) puts the arrays back.

The flag lives in C memory (a :mod:`ctypes` int64) and reaches compiled code
as an external symbol that llvmlite resolves when it loads the code
(``llvmlite.binding.add_symbol``), not as an address frozen into it: Numba's
on-disk cache stays valid in the next process.  It is read with a relaxed
atomic load, a plain ``mov`` on x86, which the compiler may not hoist out of
a loop.  Measured cost: ``bench/bench_solver.py --stop-check`` (guide §9).

Only the main thread gets ``KeyboardInterrupt`` from Ctrl-C, so only its calls
go through a helper; other threads call directly.  Helpers are kept (one per
call that is waiting at the same time, normally one): handing a call to a
waiting thread costs about 15 us, starting a thread several times that.

The flag is the process's, not one run's: a Ctrl-C stops every hpu CPU run in
flight in the process, and those on other threads raise ``KeyboardInterrupt``
too (:func:`raise_if_stopped`), arrays put back.  Not stopped: a loop in the
user's code that runs for long without a recursive call (a base case that
spins), a combine, and a device's kernel in flight (OpenCL cannot abort one).
"""
from __future__ import annotations

import ctypes
import os
import threading

__all__ = ["Stopped", "stop_requested", "call", "stop_epoch", "raise_if_stopped",
           "POLL_SECONDS", "SYMBOL", "STOP_VALUE"]

#: How long the calling thread waits on a helper between looks at signals.
POLL_SECONDS = 0.05

#: The stop flag's symbol in compiled code.
SYMBOL = "hpu_stop_flag__"

#: The flag's value while set: the recursion subtracts it from its depth limit, so one
#: test catches both (any depth is >= limit - 2**62), :func:`hpu._codegen._depth_limited_source`.
STOP_VALUE = 1 << 62

#: The flag alone in a cache line (the line in the middle of a 128-byte buffer): no write
#: to a neighbour makes the compiled code's every read a cache miss.
_LINE = (ctypes.c_int64 * 16)()
_FLAG = ctypes.c_int64.from_buffer(_LINE, (-ctypes.addressof(_LINE)) % 64)
_lock = threading.Lock()
_stopping = 0        # calls between their KeyboardInterrupt and their helper's end
_epoch = 0           # stops requested so far (a run compares it before and after)


def _register_symbol() -> None:
    import llvmlite.binding as ll

    ll.add_symbol(SYMBOL, ctypes.addressof(_FLAG))


_register_symbol()


class Stopped(Exception):
    """Raised inside compiled code when the stop flag is up (Ctrl-C); never reaches users:
    the waiting thread raises ``KeyboardInterrupt``, other paths :func:`raise_if_stopped`."""


def stop_requested() -> int:
    """Nonzero while a Ctrl-C is stopping hpu's runs (in compiled code: one atomic load)."""
    return _FLAG.value


def _register_intrinsic() -> None:
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic, overload

    @intrinsic
    def _load_flag(typingctx):
        def codegen(context, builder, signature, args):
            mod = builder.module
            gv = mod.globals.get(SYMBOL)
            if gv is None:
                gv = ir.GlobalVariable(mod, ir.IntType(64), SYMBOL)
                gv.linkage = "external"
            return builder.load_atomic(gv, "monotonic", 8)
        return types.int64(), codegen

    @overload(stop_requested, jit_options={"cache": True}, inline="always")
    def _stop_requested():
        return lambda: _load_flag()


try:
    _register_intrinsic()
except ImportError:  # pragma: no cover - Numba is a dependency; plain Python still works
    pass


def stop_epoch() -> int:
    """How many stops were requested so far: a run that saw an error while this changed
    was stopped by Ctrl-C (possibly another call's), not failed."""
    return _epoch


def raise_if_stopped(err: BaseException, epoch: int | None = None) -> None:
    """``KeyboardInterrupt`` in place of ``err`` when ``err`` is the compiled code's stop
    (:class:`Stopped`), or any error of a run during which a stop was requested."""
    if isinstance(err, Stopped) or (epoch is not None and epoch != _epoch):
        raise KeyboardInterrupt from None


def _request() -> None:
    global _stopping, _epoch
    with _lock:
        _stopping += 1
        _epoch += 1
        _FLAG.value = STOP_VALUE


def _release() -> None:
    global _stopping
    with _lock:
        _stopping -= 1
        if _stopping == 0:
            _FLAG.value = 0


class _Job:
    """One call handed to a helper; ``done`` is released once, after ``finished`` is set (a
    fresh lock per call: a wait interrupted right after taking it cannot leave the next
    call's lock out of step)."""

    __slots__ = ("fn", "args", "chunk", "done", "finished", "result", "error")

    def __init__(self, fn, args, chunk: int):
        self.fn, self.args, self.chunk = fn, args, chunk
        self.done = threading.Lock()
        self.done.acquire()
        self.finished = False
        self.result = None
        self.error: BaseException | None = None

    def wait(self) -> None:
        """Until the call ends; ``KeyboardInterrupt`` can arrive between slices."""
        while not self.finished:
            self.done.acquire(timeout=POLL_SECONDS)


class _Helper:
    """A daemon thread that runs one call at a time for a waiting thread."""

    #: native recursion runs up to hpu._guard.NATIVE_DEPTH frames deep on this stack
    STACK_BYTES = 16 << 20

    def __init__(self):
        self._go = threading.Lock()
        self._go.acquire()
        self._job: _Job | None = None
        old = threading.stack_size()
        try:
            threading.stack_size(max(old, self.STACK_BYTES))
        except (ValueError, RuntimeError):  # pragma: no cover - a platform without it
            old = None
        try:
            self._thread = threading.Thread(target=self._loop, name="hpu-helper", daemon=True)
            self._thread.start()
        finally:
            if old is not None:
                threading.stack_size(old)

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            job, self._job = self._job, None
            old = None
            try:
                if job.chunk:  # Numba's parallel chunk size is per thread: set it here
                    import numba

                    old = numba.set_parallel_chunksize(job.chunk)
                job.result = job.fn(*job.args)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the waiting thread
                job.error = exc
            finally:
                if job.chunk:
                    import numba

                    numba.set_parallel_chunksize(old)
                job.finished = True
                job.done.release()
                # not held while idle: the call's arrays are the caller's to free (an
                # idle helper keeping the last call's arguments kept, e.g., the in-place
                # form's buffer alive after its run)
                job = None

    def start(self, job: _Job) -> None:
        self._job = job
        self._go.release()


_idle: list[_Helper] = []


def _take() -> _Helper:
    with _lock:
        if _idle:
            return _idle.pop()
    return _Helper()


def _give(helper: _Helper) -> None:
    with _lock:
        _idle.append(helper)


def _forget_helpers() -> None:  # a forked child has none of the parent's threads
    global _lock, _stopping
    _idle.clear()
    _lock = threading.Lock()
    _stopping = 0
    _FLAG.value = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


def call(fn, *args, on_stop=None, chunk: int = 0):
    """``fn(*args)`` (a ``nogil`` compiled function) such that Ctrl-C stops it promptly.

    On the main thread: on a helper thread, this one waiting where
    ``KeyboardInterrupt`` can arrive.  When it does, ``on_stop()`` (if given:
    e.g. the level driver's cancel ``err[1] = 1``) and the stop flag tell the
    compiled code to stop; the helper is waited for (a second Ctrl-C waits
    too: the compiled code still uses the arrays), the flag is lowered and the
    interrupt re-raised.  Elsewhere: ``fn(*args)`` directly.  ``chunk``: Numba's
    parallel chunk size for the call (it is per thread, so set on the helper).
    """
    if threading.current_thread() is not threading.main_thread():
        if not chunk:
            return fn(*args)
        import numba

        old = numba.set_parallel_chunksize(chunk)
        try:
            return fn(*args)
        finally:
            numba.set_parallel_chunksize(old)
    helper = _take()
    job = _Job(fn, args, chunk)
    helper.start(job)
    try:
        job.wait()
    except KeyboardInterrupt:
        _request()
        try:
            if on_stop is not None:
                on_stop()
            while True:
                try:
                    job.wait()
                    break
                except KeyboardInterrupt:  # a second Ctrl-C: still wait, the call uses the arrays
                    pass
        finally:
            _release()
            _give(helper)
        raise
    _give(helper)
    if job.error is not None:
        raise job.error
    return job.result
