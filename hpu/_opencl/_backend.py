"""The OpenCL device backend: a task range's leaf and combine phases as kernels, asynchronously.

Why asynchronous, and what it promises
======================================

004's Algorithm 8 overlaps the device with the CPU: the device's share is
*enqueued* (upload once, leaf kernel, combine kernels: nothing waits) while the
CPU's Numba threads do their share; the device's results are collected once,
when the CPU needs them.  :class:`OpenCLBackend` is one implementation of the
device lifecycle :class:`hpu._driver.DeviceBackend` describes, driven by
:class:`hpu._split.DeviceSplit`:

``prepare(levels, starts, y, span)``
    upload the data span and the level arrays of levels ``y..K`` (the originals
    a CPU redo needs are the call's :class:`~hpu._snapshot.Snapshot`, which the
    split hands over as ``originals``: the device keeps no copy of its own);
``leaf`` / ``combine``
    enqueue a kernel over a task range (a failure is remembered, not raised);
``finish()``
    wait, then one download; raises :class:`~hpu._errors.DeviceFault` or
    :class:`~hpu._errors.StackOverflowError`;
``restore()`` / ``cancel()``
    stop writing before the split puts the originals back for a CPU redo /
    leave nothing queued;
``transfers()`` / ``event_seconds()``
    what moved and how long each kernel ran, for the Run.

Nothing is rebuilt per call: the translated source, the built program, and a
queue and kernels per thread (kernel arguments live on the kernel object, so
threads cannot share one) are built once per (specialisation, device, depth,
scalar types) and kept on the :class:`~hpu._program.Program` (:func:`compiled_for`).

Memory
------

* With ``span=("lo", "hi")`` the device's data is exactly ``[min lo, max hi)``
  of its tasks at level y; without it, whole arrays go over and only the
  elements the device changed are written back (correct, because sibling
  subproblems are independent): which ones, against the call's snapshot of the
  whole arrays.  With ``keep_inputs=False`` (no snapshot) the backend keeps what a
  CPU redo needs itself: on a device working in place, a copy of its share (the
  old cost of the device path); on one with its own memory nothing with a span
  (the caller's arrays are untouched until the download), whole arrays without.
* Devices that share the host's memory (PoCL, integrated GPUs) use the caller's
  arrays in place (``CL_MEM_USE_HOST_PTR``): zero copies.
* ``HPU_INJECT_DEVICE_FAULT=1`` makes the device fail after its first enqueue
  (for tests of the CPU redo).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from hpu import model
from hpu._errors import DeviceFault, StackOverflowError
from hpu._opencl._levels import COMBINE, LEAF
from hpu._reductions import empty_message, pair_message
from hpu._run import TransferRecord

__all__ = ["OpenCLBackend", "compiled_for", "FAULT_ENV"]

FAULT_ENV = "HPU_INJECT_DEVICE_FAULT"


def _cl():
    import pyopencl as cl

    return cl


class _Compiled:
    """What one (specialisation, device, depth, scalar types) needs on the device, built once."""

    def __init__(self, program, shared, device, depth):
        from hpu._opencl._build import build_program, translated_levels
        from hpu._opencl._device import context_and_queue

        self.device = device
        self.translated = translated_levels(program, shared, depth)  # on disk: hpu._cache
        self.ctx, _ = context_and_queue(device)
        self.cl_program = build_program(self.ctx, self.translated.source)
        self._local = threading.local()

    def for_this_thread(self):
        """``(queue, leaf kernel, combine kernel)`` of the calling thread (built on first use)."""
        got = getattr(self._local, "objects", None)
        if got is None:
            cl = _cl()
            queue = cl.CommandQueue(self.ctx, self.device,
                                    properties=cl.command_queue_properties.PROFILING_ENABLE)
            got = (queue, cl.Kernel(self.cl_program, LEAF), cl.Kernel(self.cl_program, COMBINE))
            self._local.objects = got
        return got

    def transfer_queue(self):
        """The calling thread's second queue, for copies pipelined with the kernels."""
        q = getattr(self._local, "transfer_queue", None)
        if q is None:
            cl = _cl()
            q = cl.CommandQueue(self.ctx, self.device,
                                properties=cl.command_queue_properties.PROFILING_ENABLE)
            self._local.transfer_queue = q
        return q


_compiled_lock = threading.Lock()

#: (select_device, spec, HPU_DEVICE, OCL_ICD_VENDORS) -> the device it chose
_selected: dict = {}
#: (remaining_cores, device, NUMBA_NUM_THREADS) -> its answer (see host_threads)
_remaining: dict = {}
_MISSING = object()
#: device -> hpu._opencl._device._key(device) (its platform's and its own name, its handle)
_device_keys: dict = {}


def _scalar_kind(v) -> str:
    if isinstance(v, np.ndarray):
        return f"array:{v.dtype.str}"
    if isinstance(v, np.generic):
        return f"np:{v.dtype.str}"
    return type(v).__name__


def compiled_for(program, shared: Mapping[str, Any], device, depth: int) -> _Compiled:
    """The cached device objects for ``program`` on ``device`` (see the module docstring)."""
    from hpu._opencl._device import _key as device_key

    dkey = _device_keys.get(device)   # the driver's name queries cost ~25 us a call
    if dkey is None:
        dkey = _device_keys[device] = device_key(device)
    key = (dkey, depth, tuple((n, _scalar_kind(v)) for n, v in sorted(shared.items())))
    cache = program.__dict__.setdefault("_opencl_compiled", {})
    hit = cache.get(key)
    if hit is None:
        built = _Compiled(program, shared, device, depth)
        with _compiled_lock:
            hit = cache.setdefault(key, built)
    return hit


@dataclass
class _Transfer:
    direction: str
    nbytes: int = 0
    seconds: float = 0.0
    events: list = field(default_factory=list)
    spans: list = field(default_factory=list)   #: host (start, end) of each copy or step


class OpenCLBackend:
    """Runs leaf and combine phases of a task range as OpenCL kernels, asynchronously.

    Call :meth:`prepare` once the tree is expanded (it uploads the data and the
    level arrays of the device's levels), then ``leaf``/``combine`` (they only
    enqueue), then :meth:`finish` (one download; raises :class:`DeviceFault` or
    :class:`hpu._cpu.StackOverflowError` if the device failed).
    """

    kind = "gpu"
    #: pieces the device's data is copied in, each overlapping the kernels of the others
    #: (devices with their own memory, with a span); 1: one upload before, one download after
    transfer_chunks = model.TRANSFER_CHUNKS

    @classmethod
    def unified_memory(cls, device) -> bool:
        """Whether ``device`` uses the host's memory (a CPU device, an integrated GPU): then
        buffers wrap the caller's arrays and nothing is copied.  The planner asks the same
        (:func:`hpu._plan.copy_chunks`)."""
        cl = _cl()
        return bool(device.host_unified_memory) or bool(device.type & cl.device_type.CPU)

    @classmethod
    def select(cls, spec=None):
        """The OpenCL device for ``spec`` (``cl_device``); raises DeviceUnavailableError.

        A device named by a string (or ``None``: ``HPU_DEVICE``/the default) is
        looked up once per process and environment, not on every call (listing the
        platforms costs more than a small run's planning); a failure is not kept.
        """
        from hpu._opencl import _device

        if spec is not None and not isinstance(spec, str):
            return _device.select_device(spec)
        key = (_device.select_device, spec, os.environ.get("HPU_DEVICE"),
               os.environ.get("OCL_ICD_VENDORS"))
        hit = _selected.get(key)
        if hit is None:
            hit = _device.select_device(spec)
            if len(_selected) > 64:
                _selected.clear()
            _selected[key] = hit
        return hit

    @classmethod
    def host_threads(cls, device) -> int:
        """Give Numba the cores a CPU device (or sub-device) leaves free, unless
        ``NUMBA_NUM_THREADS`` says otherwise; return Numba's thread count.

        Whether anything is to be given is decided once per device and environment;
        a device that leaves nothing to give (a GPU, a whole CPU) costs one lookup."""
        from hpu._opencl import _device

        key = (_device.remaining_cores, device, os.environ.get("NUMBA_NUM_THREADS"))
        left = _remaining.get(key, _MISSING)
        if left is _MISSING:
            left = _remaining[key] = _device.remaining_cores(device)
        if left is None:
            import numba

            return int(numba.get_num_threads())
        return _device.use_remaining_cores(device)

    def __init__(self, program, shared: Mapping[str, Any], device, *, depth: int = 64):
        cl = _cl()
        self.program = program
        self.layout = program.layout
        self.shared = dict(shared)
        self.device = device
        self.depth = depth
        built = compiled_for(program, self.shared, device, depth)
        self._built = built
        self.translated = built.translated
        self.ctx = built.ctx
        self.cl_program = built.cl_program
        # a queue and kernels per thread (kernel arguments are per object), built once
        self.queue, self.k_leaf, self.k_combine = built.for_this_thread()
        self.LEAF, self.COMBINE = LEAF, COMBINE
        self.unified = self.unified_memory(device)
        self._cpu_device = bool(device.type & cl.device_type.CPU)
        self._units = max(1, int(device.max_compute_units))
        self._group_limit: dict = {}   # kernel -> its largest work-group on this device
        self.inject_fault = os.environ.get(FAULT_ENV, "") not in ("", "0")
        self._enqueued = 0
        self._bufs: dict = {}
        self._levels = None
        self._events: dict = {}
        self._first: tuple | None = None   # (host perf_counter at the first enqueue, its event)
        self.failed: str | None = None
        self.upload = _Transfer("host->device")
        self.download = _Transfer("device->host")
        #: the call's Snapshot (set by the split; None: keep_inputs=False or used alone)
        self.originals = None
        self._written: tuple[str, ...] = ()        # arrays the function may write
        self._own: dict[str, np.ndarray] = {}      # originals kept here when none are given
        self._wrote = False                        # the caller's arrays may have been written
        self._span = None
        self._pipelined = False
        self._deferred: dict[str, np.ndarray] = {}   # arrays uploaded chunk by chunk

    # -- setup -----------------------------------------------------------------
    def prepare(self, levels, starts: Mapping[int, int], y: int, span) -> None:
        """Upload what the device needs (the originals are the split's ``originals``).

        ``starts[i]`` is the first device task of level ``i`` (``y <= i <= K``);
        ``span`` is ``(base, end)`` of the device's data, or None for whole arrays.
        """
        cl = self._cl = _cl()
        mf = cl.mem_flags
        self._levels, self._starts, self._y = levels, dict(starts), y
        arrays = {n: self.shared[n] for n in self.layout.arrays}
        written = self.program.closure.written
        self._span = span
        # model.copy_chunks: the one rule the planner prices the overlap by
        self._pipelined = (model.copy_chunks(unified=self.unified, span=span is not None,
                                             chunks=self.transfer_chunks) > 1
                           and span[1] > span[0] and levels[-1].size > starts[levels[-1].index]
                           and self._task_span(levels[y], starts[y], starts[y] + 1) is not None)
        if self._pipelined:
            self.tqueue = self._built.transfer_queue()
        t0 = time.perf_counter()
        # (hpu's scratch buffers are written but dead after the run: not copied, not
        # downloaded -- hpu._snapshot.Snapshot.dead)
        dead = () if self.originals is None else self.originals.dead
        self._written = tuple(n for n in arrays if n in written and n not in dead)
        if self.originals is None or not self.originals.kept:  # keep_inputs=False
            for name in self._written:
                arr = arrays[name]
                if self.unified:  # it works in place: its share's originals, for a CPU redo
                    lo, hi = (0, arr.size) if span is None else span
                    self._own[name] = arr[lo:hi].copy()
                elif span is None:  # whole arrays: which elements it changed
                    self._own[name] = arr.copy()
        try:
            for name, arr in arrays.items():
                if name not in written and self.unified:
                    # read only: the caller's array may be read-only itself
                    self._bufs[name] = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                                                 hostbuf=_nonempty(arr))
                    continue
                if self.unified:
                    self._bufs[name] = cl.Buffer(self.ctx, mf.READ_WRITE | mf.USE_HOST_PTR,
                                                 hostbuf=_nonempty(arr))
                    continue
                buf = cl.Buffer(self.ctx, mf.READ_WRITE, max(arr.nbytes, 1))
                lo, hi = (0, arr.size) if span is None else span
                if self._pipelined:  # uploaded in pieces by the leaf phase
                    self._deferred[name] = arr
                elif hi > lo:
                    # without a span the CPU starts on the same arrays right after: the upload
                    # must be complete before it does (blocking); with one it is disjoint
                    ev = cl.enqueue_copy(self.queue, buf, arr[lo:hi],
                                         dst_offset=lo * arr.itemsize,
                                         is_blocking=span is None)
                    self.upload.events.append(ev)
                    self.upload.nbytes += (hi - lo) * arr.itemsize
                self._bufs[name] = buf
            self._err = np.zeros(1, np.int64)
            self._bufs["err__"] = cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                            hostbuf=self._err)
            # the error channel of the user's operations (code, site, value, extra)
            self._uerr = np.zeros(4, np.int64)
            self._bufs["hpu__err"] = cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                               hostbuf=self._uerr)
            for lv in levels[y:]:
                self._level_buffers(lv)
        except Exception as err:  # noqa: BLE001 - any driver failure means: redo on the CPU
            self._fail(f"uploading to the device failed: {err}")
        t1 = time.perf_counter()
        self.upload.seconds += t1 - t0
        self.upload.spans.append((t0, t1))

    def _level_buffers(self, lv) -> None:
        cl = self._cl
        mf = cl.mem_flags
        named = {f"in__{k}": v for k, v in lv.params.items()}
        named.update({f"loc__{k}": v for k, v in lv.carried.items()})
        if lv.offsets is not None:
            named["off__"] = lv.offsets
        for name, arr in named.items():  # read-only on the device
            flag = mf.USE_HOST_PTR if self.unified else mf.COPY_HOST_PTR
            self._bufs[(lv.index, name)] = cl.Buffer(self.ctx, mf.READ_ONLY | flag,
                                                     hostbuf=_nonempty(arr))
            if not self.unified:
                self.upload.nbytes += arr.nbytes
        for k, arr in enumerate(lv.results):
            if self.unified:
                buf = cl.Buffer(self.ctx, mf.READ_WRITE | mf.USE_HOST_PTR, hostbuf=_nonempty(arr))
            else:
                buf = cl.Buffer(self.ctx, mf.READ_WRITE, max(arr.nbytes, 1))
            self._bufs[(lv.index, f"res__{k}")] = buf

    def _values(self, lv, child=None) -> dict:
        vals: dict[str, Any] = {}
        for name in self.layout.arrays:
            vals[name] = (self._bufs[name], self.shared[name].size)
        for name, v in self.shared.items():
            if name not in vals:
                vals[name] = v
        vals["err__"] = (self._bufs["err__"], 1)
        vals["hpu__err"] = (self._bufs["hpu__err"], 4)
        for key, buf in self._bufs.items():
            if isinstance(key, tuple) and key[0] == lv.index:
                vals[key[1]] = (buf, _length_of(lv, key[1]))
        if child is not None:
            for k in range(len(child.results)):
                vals[f"cres__{k}"] = (self._bufs[(child.index, f"res__{k}")], child.size)
        return vals

    # -- phases (enqueue only) --------------------------------------------------
    def _enqueue(self, kernel, name, lv, values, start, stop, phase):
        if self.failed is not None or stop <= start:
            return
        try:
            if self.inject_fault and self._enqueued >= 1:
                raise DeviceFault(f"{FAULT_ENV} is set: the device fails after its first enqueue")
            first = self._pipelined and phase == "leaf"
            last = self._pipelined and lv.index == self._y
            ranges = _pieces(start, stop, self.transfer_chunks) if first or last \
                else [(start, stop)]
            ups = self._cuts(lv, ranges) if first else None
            downs = self._cuts(lv, ranges) if last else None
            for j, (t0, t1) in enumerate(ranges):
                wait = self._upload_piece(*ups[j]) if first else None
                args = self.translated.kernel_args(name, values, t0, t1)
                kernel.set_args(*args)
                glob, local = launch_shape(t1 - t0, self._units, cpu=self._cpu_device,
                                           group_limit=self._largest_group(kernel))
                ev = self._cl.enqueue_nd_range_kernel(self.queue, kernel, glob, local,
                                                      wait_for=wait)
                self._events.setdefault((lv.index, phase), []).append(ev)
                if self._first is None:  # to set the device's clock against the host's
                    self._first = (time.perf_counter(), ev)
                if last:
                    self._download_piece(*downs[j], ev)
            self._enqueued += 1
        except Exception as err:  # noqa: BLE001
            self._fail(f"level {lv.index} {phase} failed on the device: {err}")

    def _largest_group(self, kernel) -> int:
        got = self._group_limit.get(kernel)
        if got is None:
            try:
                got = int(kernel.get_work_group_info(
                    self._cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device))
            except Exception:  # noqa: BLE001 - a driver that cannot say: groups of one
                got = 1
            got = self._group_limit[kernel] = max(1, got)
        return got

    # -- pipelined copies (devices with their own memory) -------------------------
    def _task_span(self, lv, t0: int, t1: int):
        """``(lo, hi)`` of the data tasks ``[t0, t1)`` of level ``lv`` touch (None: unknown)."""
        spec = self.program.spec
        if spec.span is not None:
            lo_name, hi_name = spec.span
            lo = lv.params[lo_name][t0:t1].min() if lo_name in lv.params \
                else self.shared.get(lo_name)
            hi = lv.params[hi_name][t0:t1].max() if hi_name in lv.params \
                else self.shared.get(hi_name)
            return None if lo is None or hi is None else (max(int(lo), 0), int(hi))
        from hpu._views import device_span

        arrays = tuple(self.layout.arrays)
        return device_span(spec, arrays, {k: v[:t1] for k, v in lv.params.items()}, t0,
                           self.shared)

    def _cuts(self, lv, ranges):
        """``(lo, hi)`` per task range: consecutive pieces of the device's span, the ``j``-th
        ending where the tasks of ranges ``0..j`` end (the last at the span's end), so that
        the pieces tile the span exactly and piece ``j`` completes what ranges ``<= j`` use
        (the copies run in order on one queue)."""
        lo, hi = self._span
        cuts, cut = [], lo
        for j, (t0, t1) in enumerate(ranges):
            got = self._task_span(lv, t0, t1)
            end = hi if j == len(ranges) - 1 or got is None else min(max(cut, got[1]), hi)
            cuts.append((cut, end))
            cut = end
        return cuts

    def _upload_piece(self, lo: int, hi: int):
        evs = []
        if hi > lo:
            for name, arr in self._deferred.items():
                ev = self._cl.enqueue_copy(self.tqueue, self._bufs[name], arr[lo:hi],
                                           dst_offset=lo * arr.itemsize, is_blocking=False)
                self.upload.events.append(ev)
                self.upload.nbytes += (hi - lo) * arr.itemsize
                evs.append(ev)
        return evs or None

    def _download_piece(self, lo: int, hi: int, after) -> None:
        if hi <= lo:
            return
        for name in self._written:
            arr = self.shared[name]
            self._wrote = True
            ev = self._cl.enqueue_copy(self.tqueue, arr[lo:hi], self._bufs[name],
                                       src_offset=lo * arr.itemsize, is_blocking=False,
                                       wait_for=[after])
            self.download.events.append(ev)
            self.download.nbytes += (hi - lo) * arr.itemsize

    def leaf(self, level, start, stop, shared) -> None:
        if self.failed is not None:
            return
        self._enqueue(self.k_leaf, self.LEAF, level, self._values(level), start, stop, "leaf")

    def combine(self, level, child, start, stop, shared) -> None:
        if self.failed is not None:
            return
        self._enqueue(self.k_combine, self.COMBINE, level, self._values(level, child), start,
                      stop, "combine")

    def count(self, *a, **k):  # pragma: no cover - the hybrid never assigns expansion here
        raise NotImplementedError("the tree is expanded on the host")

    fill = count

    def _fail(self, reason: str) -> None:
        if self.failed is None:
            self.failed = reason

    # -- collect ---------------------------------------------------------------
    def finish(self) -> None:
        """Wait for the device; bring its data and level-y results back (one download)."""
        cl = self._cl
        if self.failed is None and self.inject_fault and self._enqueued >= 1:
            self._fail(f"{FAULT_ENV} is set: the device fails after its first enqueue")
        try:
            self.queue.finish()  # the device's compute: not part of the download's time
            if self._pipelined:
                self.tqueue.finish()  # the pieces copied while the kernels ran
        except Exception as err:  # noqa: BLE001
            self._fail(f"the device failed while running: {err}")
        t0 = time.perf_counter()
        if self.failed is not None:
            raise DeviceFault(self.failed)
        try:
            cl.enqueue_copy(self.queue, self._err, self._bufs["err__"], is_blocking=True)
            cl.enqueue_copy(self.queue, self._uerr, self._bufs["hpu__err"], is_blocking=True)
            user = device_error(self._uerr, self.translated.sites)
            if user is not None:
                raise _UserError(user)
            if self._err[0]:
                raise StackOverflowError(
                    f"a subtree of {self.program.spec.name} is deeper than the device solver's "
                    f"{self.depth} frames (it went at least {self.depth} calls below the "
                    "device's level); a recursion that ends there (deep but finite) runs on "
                    "the device with a larger depth= (or a larger K) passed to .run")
            if not self.unified:
                self._download()
        except StackOverflowError:
            raise
        except _UserError as err:  # the user's mistake, with the user's line: Python's class
            raise err.args[0] from None
        except Exception as err:  # noqa: BLE001
            raise DeviceFault(f"downloading from the device failed: {err}") from None
        t1 = time.perf_counter()
        self.download.seconds += t1 - t0
        self.download.spans.append((t0, t1))

    def _download(self) -> None:
        cl = self._cl
        for name in self._written:
            arr = self.shared[name]
            if self._span is not None:
                lo, hi = self._span
                if hi > lo and not self._pipelined:  # pipelined: already copied in pieces
                    self._wrote = True
                    cl.enqueue_copy(self.queue, arr[lo:hi], self._bufs[name],
                                    src_offset=lo * arr.itemsize, is_blocking=True)
                    self.download.nbytes += (hi - lo) * arr.itemsize
                continue
            got = np.empty_like(arr)
            cl.enqueue_copy(self.queue, got, self._bufs[name], is_blocking=True)
            self.download.nbytes += arr.nbytes
            was = self._original(name)
            # the bits, not the values: -0.0 written over 0.0 (equal values) is a change,
            # a NaN left as it was is not
            if arr.itemsize in (1, 2, 4, 8) and arr.dtype.kind in "iufb":
                bits = np.dtype(f"u{arr.itemsize}")
                changed = got.view(bits) != was.view(bits)
            else:
                changed = got != was
            self._wrote = True
            # in place, no copy of the changed elements: the memory the run holds does
            # not depend on how many changed (it did: the device form's plan, NVIDIA H200)
            np.copyto(arr, got, where=changed)
            self._own.pop(name, None)
        lv = self._levels[self._y]
        s = self._starts[self._y]
        for k, res in enumerate(lv.results):
            if lv.size > s:
                cl.enqueue_copy(self.queue, res[s:], self._bufs[(lv.index, f"res__{k}")],
                                src_offset=s * res.itemsize, is_blocking=True)
                self.download.nbytes += (lv.size - s) * res.itemsize

    def _drain(self) -> None:
        """Wait for both queues; never raises."""
        for q in (self.queue, getattr(self, "tqueue", None)):
            try:
                if q is not None:
                    q.finish()
            except Exception:  # noqa: BLE001
                pass

    def cancel(self) -> None:
        """Leave nothing queued (an error elsewhere ended the run); never raises."""
        self._drain()

    def restore(self) -> bool:
        """Stop writing before a CPU redo: the split then puts the device share's original
        data back from the call's snapshot (:mod:`hpu._snapshot`).  Without one
        (``keep_inputs=False``) a device working in place puts back its own copy of its
        share; True when that was whole arrays (the CPU's share included: redo it too)."""
        self._drain()  # nothing may land in the caller's arrays after this
        whole = False
        if self.unified and self._own:
            for name, copy in self._own.items():
                arr = self.shared[name]
                lo, hi = (0, arr.size) if self._span is None else self._span
                arr[lo:hi] = copy
            whole = self._span is None
        self._own.clear()
        return whole

    def wrote_caller_arrays(self) -> bool:
        """Whether a download into the caller's arrays began (a device with its own memory)
        that no copy can undo: without the call's snapshot, its failure cannot be redone."""
        return self._wrote

    def _original(self, name: str):
        """The whole original of written array ``name``, or None where none is kept."""
        got = None if self.originals is None else self.originals.original(name)
        return self._own.get(name) if got is None else got

    def event_seconds(self) -> dict:
        out = {}
        for key, evs in self._events.items():
            try:  # a phase run in pieces: its kernels' time added
                out[key] = sum((ev.profile.end - ev.profile.start) * 1e-9 for ev in evs)
            except Exception:  # noqa: BLE001
                pass
        return out

    def _clock(self):
        """Host seconds (``time.perf_counter()``) at the device's time 0, or None."""
        if self._first is None:
            return None
        host, first = self._first
        queued = _profile_ns(first, "queued")
        return host - queued * 1e-9 if queued else None

    def event_spans(self) -> dict:
        """``{(level, phase): (start, end)}`` of each kernel on the host's clock
        (``time.perf_counter()``), from its profiling event; for traces."""
        out = {}
        clock = self._clock()
        if clock is None:
            return out
        for key, evs in self._events.items():
            try:
                out[key] = (clock + min(ev.profile.start for ev in evs) * 1e-9,
                            clock + max(ev.profile.end for ev in evs) * 1e-9)
            except Exception:  # noqa: BLE001
                pass
        return out

    def transfers(self) -> tuple[TransferRecord, ...]:
        recs = []
        clock = self._clock()
        for t in (self.upload, self.download):
            secs = t.seconds
            ev_secs = 0.0
            spans = list(t.spans)
            for ev in t.events:
                try:
                    ev_secs += (ev.profile.end - ev.profile.start) * 1e-9
                    if clock is not None:  # each copy (or piece) when the device made it
                        spans.append((clock + ev.profile.start * 1e-9,
                                      clock + ev.profile.end * 1e-9))
                except Exception:  # noqa: BLE001
                    pass
            recs.append(TransferRecord(t.direction, int(t.nbytes), float(max(secs, ev_secs)),
                                       tuple(sorted(spans))))
        return tuple(recs)


class _UserError(Exception):
    """Carries a user-code exception out of the try that turns driver errors into faults."""


def device_error(err: np.ndarray, sites) -> Exception | None:
    """The exception the device's error channel holds, or None.

    ``err`` is the 4 longs the kernels wrote (:func:`hpu._opencl._translate.translate`,
    checked mode): the code word (a 32-bit compare-and-swap: the first 4 bytes),
    the site index into ``sites``, the value and an extra.  The texts are the CPU
    module's (:data:`hpu._codegen._CHECKED_PRELUDE`), so every path says the same.
    """
    code = int(err.view(np.int32)[0])
    if code == 0:
        return None
    site, value, extra = int(err[1]), int(err[2]), int(err[3])
    where = sites[site] if 0 <= site < len(sites) else "<unknown site>"
    if code == 1:
        from hpu._checked_ops import _ZERO

        return ZeroDivisionError(where + ": " + _ZERO.get(
            value, "integer division or modulo by zero"))
    if code == 2:
        return ValueError(where + ": cannot convert float NaN to integer")
    if code == 3:   # texts: hpu._checked_ops.OverflowError's
        return OverflowError(where + (": cannot convert float infinity to integer" if value
                                      else ": Python int too large to convert to C long"))
    if code == 4:
        return IndexError(where + f": index {value} is out of bounds for length {extra}")
    if code == 5:
        return ValueError(where + f": could not broadcast input array from shape ({value},) "
                          f"into shape ({extra},)")
    if code == 6:
        return ValueError(where + ": " + empty_message(value))
    if code in (7, 8):
        return ValueError(where + ": " + pair_message(code - 7, value, extra))
    if code == 10:  # past int64: the call runs again as the plain function (hpu._decorator)
        from hpu._checked_ops import IntOverflowError

        return IntOverflowError(where + ": an integer result beyond int64 (64-bit integers "
                                "wrap in compiled code, where Python's int grows)")
    if code == 9:   # the user's raise statement (hpu/_raises.py): Python's exception
        from hpu._raises import exception_from_site

        made = exception_from_site(where)
        if made is not None:
            return made
    return DeviceFault(f"the device reported an unknown error code {code}")  # pragma: no cover


#: the largest work-group hpu asks a GPU for: two warps (NVIDIA) or one wavefront (AMD);
#: more tasks than ``GROUP_CAP`` per compute unit fill a unit with several groups
GROUP_CAP = 64


def launch_shape(tasks: int, units: int, *, cpu: bool,
                 group_limit: int = GROUP_CAP) -> tuple[tuple[int], tuple[int]]:
    """``(global size, work-group size)`` of a launch of ``tasks`` work-items (one per task).

    Why hpu chooses the group size instead of the driver: a task is a long serial
    piece of work (a merge, a subtree), so what matters is how many compute units
    the tasks land on.  A GPU runs a work-group on one compute unit; left to choose,
    NVIDIA's driver put a level's 128 tasks in one group, on one of 132 units, and
    each of them ran ~5x slower than a task alone (H100, 2026-11-27).  So tasks are
    spread: groups of ``tasks // units`` (a power of two, at least 1, at most
    ``GROUP_CAP`` and the kernel's own limit), as many groups as cover the tasks; the
    kernel's ``index < hpu_stop`` test idles the work-items past the last task.  A CPU
    device (PoCL) runs a group on one thread: groups of one spread tasks over its cores.
    """
    tasks = int(tasks)
    if cpu or tasks <= 0:
        return (max(tasks, 0),), (1,)
    per_unit = max(1, tasks // max(1, int(units)))
    local = 1 << (min(per_unit, GROUP_CAP, max(1, int(group_limit))).bit_length() - 1)
    return (-(-tasks // local) * local,), (local,)


def _pieces(start: int, stop: int, chunks: int) -> list[tuple[int, int]]:
    """``[start, stop)`` in at most ``chunks`` consecutive, nearly equal, non-empty ranges."""
    n = stop - start
    c = max(1, min(chunks, n))
    cuts = [start + (n * j) // c for j in range(c + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _profile_ns(ev, what: str) -> int:
    """A profiling time of ``ev`` in the device's nanoseconds (0 when unavailable yet)."""
    try:
        return int(getattr(ev.profile, what))
    except Exception:  # noqa: BLE001 - not yet known (queued) or not profiled
        return 0


def _nonempty(arr: np.ndarray) -> np.ndarray:
    return arr if arr.size else np.zeros(1, arr.dtype)


def _length_of(lv, name: str) -> int:
    if name == "off__":
        return lv.size + 1
    return lv.size
