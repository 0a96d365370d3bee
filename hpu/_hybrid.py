"""Hybrid execution: the α/y split of 004's advanced division, with a CPU fallback.

How 004's Algorithm 8 maps onto hpu
===================================

The breadth-first driver (:mod:`hpu._driver`) expands the tree on the host (it
computes only scalar parameters: O(a^K) work, microseconds) down to the cut-off
level K.  Children are laid out in parent order, so every subtree is a
contiguous range of every level below it.  At the transfer level y the level's
``m`` tasks split: ``[0, ⌈α·m⌉)`` stay on the CPU, the rest go to the device,
and the split propagates down through the offsets (``s_{i+1} = off_i[s_i]``).

Then, for levels K..y, every phase is assigned device-first: the device's share
is *enqueued* (upload once, leaf kernel, combine kernels — nothing waits), and
the CPU's Numba threads do their share meanwhile.  Before the first phase above
y (or before the value is read, when y = 0) the device's work is collected:
one download of its data span and of level y's results.  Exactly one transfer
each way.  The CPU then finishes levels y−1..0.  ``device="gpu"`` is the same
run with α = 0 and y = 0 (every leaf and combine on the device: the paper's
GPU-only comparison).

Memory
======

* With ``span=("lo", "hi")`` the device's data is exactly ``[min lo, max hi)``
  of its tasks at level y; without it, whole arrays go over and only the
  elements the device changed are written back (correct, because sibling
  subproblems are independent).
* Devices that share the host's memory (PoCL, integrated GPUs) use the caller's
  arrays in place (``CL_MEM_USE_HOST_PTR``): zero copies.
* The device share's original contents are kept until the device finishes, so
  a device that fails is redone on the CPU from them: the caller gets the
  complete, correct result, a warning, and the reason in ``run.fallbacks``.
  ``HPU_INJECT_DEVICE_FAULT=1`` makes the device fail after its first enqueue
  (for tests of exactly this).
"""
from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from hpu._errors import DeviceUnavailableError, HpuError
from hpu._run import LevelRecord, Run, TransferRecord

__all__ = ["DeviceFault", "HpuPerformanceWarning", "OpenCLBackend", "run_on_devices",
           "choose_split", "FAULT_ENV"]

FAULT_ENV = "HPU_INJECT_DEVICE_FAULT"
#: CPU tasks per Numba thread at the cut-off level (load balance for prange).
TASKS_PER_THREAD = 8
#: device tasks per unit of g at the cut-off level.
TASKS_PER_DEVICE_CORE = 2
#: never expand beyond this many tasks at the cut-off level (parameter memory).
MAX_LEVEL_TASKS = 1 << 20


class DeviceFault(HpuError):
    """The OpenCL device failed during a run (its share is redone on the CPU)."""


class HpuPerformanceWarning(UserWarning):
    """A run did not use a device that was asked for, or fell back to the CPU."""


_told_cpu_only: set[str] = set()


def _cl():
    import pyopencl as cl

    return cl


# --------------------------------------------------------------------------- backend

@dataclass
class _Transfer:
    direction: str
    nbytes: int = 0
    seconds: float = 0.0
    events: list = field(default_factory=list)


class OpenCLBackend:
    """Runs leaf and combine phases of a task range as OpenCL kernels, asynchronously.

    Call :meth:`prepare` once the tree is expanded (it uploads the data and the
    level arrays of the device's levels), then ``leaf``/``combine`` (they only
    enqueue), then :meth:`finish` (one download; raises :class:`DeviceFault` or
    :class:`hpu._cpu.StackOverflowError` if the device failed).
    """

    kind = "gpu"

    def __init__(self, program, shared: Mapping[str, Any], device, *, depth: int = 64):
        from hpu._opencl._build import build_program
        from hpu._opencl._device import context_and_queue
        from hpu._opencl._levels import COMBINE, LEAF, translate_levels

        cl = _cl()
        self.program = program
        self.layout = program.layout
        self.shared = dict(shared)
        self.device = device
        self.depth = depth
        self.translated = translate_levels(program, self.shared, depth)
        ctx, _ = context_and_queue(device)
        self.ctx = ctx
        self.cl_program = build_program(ctx, self.translated.source)
        self.queue = cl.CommandQueue(ctx, device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        # kernels are not safe to share between threads: one set per backend (per run)
        self.k_leaf = cl.Kernel(self.cl_program, LEAF)
        self.k_combine = cl.Kernel(self.cl_program, COMBINE)
        self.LEAF, self.COMBINE = LEAF, COMBINE
        self.unified = bool(device.host_unified_memory) or bool(device.type & cl.device_type.CPU)
        # a work-group runs on one thread of a CPU device: groups of one task spread tasks
        # over its cores; on a GPU the driver picks the group size
        self.local = (1,) if device.type & cl.device_type.CPU else None
        self.inject_fault = os.environ.get(FAULT_ENV, "") not in ("", "0")
        self._enqueued = 0
        self._bufs: dict = {}
        self._levels = None
        self._events: dict = {}
        self.failed: str | None = None
        self.upload = _Transfer("host->device")
        self.download = _Transfer("device->host")
        self._snapshots: dict[str, np.ndarray] = {}
        self._span = None

    # -- setup -----------------------------------------------------------------
    def prepare(self, levels, starts: Mapping[int, int], y: int, span) -> None:
        """Keep the device share's originals, then upload what the device needs.

        ``starts[i]`` is the first device task of level ``i`` (``y <= i <= K``);
        ``span`` is ``(base, end)`` of the device's data, or None for whole arrays.
        """
        cl = self._cl = _cl()
        mf = cl.mem_flags
        self._levels, self._starts, self._y = levels, dict(starts), y
        arrays = {n: self.shared[n] for n in self.layout.arrays}
        written = self.program.closure.written
        self._span = span
        t0 = time.perf_counter()
        for name, arr in arrays.items():
            if name in written:  # what the device may change, kept until it is done
                lo, hi = (0, arr.size) if span is None else span
                self._snapshots[name] = arr[lo:hi].copy()
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
                if hi > lo:
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
            for lv in levels[y:]:
                self._level_buffers(lv)
        except Exception as err:  # noqa: BLE001 - any driver failure means: redo on the CPU
            self._fail(f"uploading to the device failed: {err}")
        self.upload.seconds += time.perf_counter() - t0

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
            args = self.translated.kernel_args(name, values, start, stop)
            kernel.set_args(*args)
            ev = self._cl.enqueue_nd_range_kernel(self.queue, kernel, (stop - start,), self.local)
            self._events[(lv.index, phase)] = ev
            self._enqueued += 1
        except Exception as err:  # noqa: BLE001
            self._fail(f"level {lv.index} {phase} failed on the device: {err}")

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
        from hpu._cpu import StackOverflowError

        cl = self._cl
        if self.failed is None and self.inject_fault and self._enqueued >= 1:
            self._fail(f"{FAULT_ENV} is set: the device fails after its first enqueue")
        try:
            self.queue.finish()  # the device's compute: not part of the download's time
        except Exception as err:  # noqa: BLE001
            self._fail(f"the device failed while running: {err}")
        t0 = time.perf_counter()
        if self.failed is not None:
            raise DeviceFault(self.failed)
        try:
            cl.enqueue_copy(self.queue, self._err, self._bufs["err__"], is_blocking=True)
            if self._err[0]:
                raise StackOverflowError(
                    f"a subtree of {self.program.spec.name} is deeper than the device solver's "
                    f"{self.depth} frames: if the recursion ends (deep but finite), pass a "
                    "larger depth= (or a larger K) to .run; if it never ends (a base case "
                    "that is not reached), fix the guard")
            if not self.unified:
                self._download()
        except StackOverflowError:
            raise
        except Exception as err:  # noqa: BLE001
            raise DeviceFault(f"downloading from the device failed: {err}") from None
        self.download.seconds += time.perf_counter() - t0

    def _download(self) -> None:
        cl = self._cl
        for name in self.layout.arrays:
            if name not in self._snapshots:  # never written by the function
                continue
            arr = self.shared[name]
            if self._span is not None:
                lo, hi = self._span
                if hi > lo:
                    cl.enqueue_copy(self.queue, arr[lo:hi], self._bufs[name],
                                    src_offset=lo * arr.itemsize, is_blocking=True)
                    self.download.nbytes += (hi - lo) * arr.itemsize
                continue
            got = np.empty_like(arr)
            cl.enqueue_copy(self.queue, got, self._bufs[name], is_blocking=True)
            self.download.nbytes += arr.nbytes
            changed = got != self._snapshots[name]
            if arr.dtype.kind == "f":  # NaN == NaN for "unchanged"
                changed &= ~(np.isnan(got) & np.isnan(self._snapshots[name]))
            arr[changed] = got[changed]
        lv = self._levels[self._y]
        s = self._starts[self._y]
        for k, res in enumerate(lv.results):
            if lv.size > s:
                cl.enqueue_copy(self.queue, res[s:], self._bufs[(lv.index, f"res__{k}")],
                                src_offset=s * res.itemsize, is_blocking=True)
                self.download.nbytes += (lv.size - s) * res.itemsize

    def restore(self) -> None:
        """Put the device share's original data back (before a CPU redo)."""
        try:
            self.queue.finish()
        except Exception:  # noqa: BLE001 - a broken queue must not stop the restore
            pass
        for name, snap in self._snapshots.items():
            arr = self.shared[name]
            lo, hi = (0, arr.size) if self._span is None else self._span
            arr[lo:hi] = snap

    def event_seconds(self) -> dict:
        out = {}
        for key, ev in self._events.items():
            try:
                out[key] = (ev.profile.end - ev.profile.start) * 1e-9
            except Exception:  # noqa: BLE001
                pass
        return out

    def transfers(self) -> tuple[TransferRecord, ...]:
        recs = []
        for t in (self.upload, self.download):
            secs = t.seconds
            ev_secs = 0.0
            for ev in t.events:
                try:
                    ev_secs += (ev.profile.end - ev.profile.start) * 1e-9
                except Exception:  # noqa: BLE001
                    pass
            recs.append(TransferRecord(t.direction, int(t.nbytes), float(max(secs, ev_secs))))
        return tuple(recs)


def _nonempty(arr: np.ndarray) -> np.ndarray:
    return arr if arr.size else np.zeros(1, arr.dtype)


def _length_of(lv, name: str) -> int:
    if name == "off__":
        return lv.size + 1
    return lv.size


# ------------------------------------------------------------------------ planning

def choose_split(dc, program, values, device, strategy: str):
    """α and y from the HPU model with the machine's profile (004 §5.2 / §5.1).

    The same plan as ``dc.plan(...)`` gives for these arguments and device.
    """
    plan = dc.plan_for(values, device=device, strategy=strategy)
    if not plan.uses_device or plan.transfer_level is None:
        return 1.0, 0, plan
    alpha = plan.split_alpha if strategy == "advanced" else 0.0
    return float(alpha), int(plan.transfer_level), plan


def _cutoff(a: int, y: int, alpha: float, p: int, g: int) -> int:
    need = 1.0
    if alpha > 0:
        need = max(need, TASKS_PER_THREAD * p / alpha)
    if alpha < 1:
        need = max(need, TASKS_PER_DEVICE_CORE * g / (1 - alpha))
    need = min(need, MAX_LEVEL_TASKS)
    return max(y, math.ceil(math.log(need, a) - 1e-9))


# ------------------------------------------------------------------------------ run

def run_on_devices(dc, program, values, *, device: str, device_spec=None, alpha=None, y=None,
                   K=None, strategy: str = "advanced", depth: int = 64) -> Run:
    """Run ``program`` with ``device="gpu"`` or ``"hybrid"`` and return the Run."""
    import numba

    from hpu._cpu import CpuBackend
    from hpu._driver import execute
    from hpu._opencl._device import select_device

    t_start = time.perf_counter()
    fallbacks: list[str] = []
    p = numba.get_num_threads()
    cpu = CpuBackend(program)
    try:
        cl_device = select_device(device_spec)
    except DeviceUnavailableError as err:
        if device == "gpu":
            raise
        reason = f"no usable OpenCL device ({err}); ran on the CPU"
        warnings.warn(f"hpu: {reason}", HpuPerformanceWarning, stacklevel=3)
        return _cpu_only(program, values, cpu, K, p, fallbacks=[reason], t_start=t_start,
                         device=device)

    plan = None
    if device == "gpu":
        alpha, y = 0.0, 0
    elif alpha is None or y is None:
        a_, y_, plan = choose_split(dc, program, values, cl_device, strategy)
        alpha = a_ if alpha is None else alpha
        y = y_ if y is None else y
    alpha, y = float(alpha), int(y)
    if alpha >= 1.0:
        if plan is not None and (spec_name := program.spec.name) not in _told_cpu_only:
            _told_cpu_only.add(spec_name)  # once per function and process: a decision, not a fault
            warnings.warn(f"hpu: {spec_name}: the model keeps everything on the CPU "
                          f"({plan.reason}); pass alpha= and y= to split anyway",
                          HpuPerformanceWarning, stacklevel=3)
        return _cpu_only(program, values, cpu, K, p, fallbacks=fallbacks, t_start=t_start,
                         device=device, alpha=1.0, y=y)

    shared = {n: values[n] for n in program.layout.shared}
    gpu = OpenCLBackend(program, shared, cl_device, depth=depth)
    g = int(getattr(plan, "g", 0) or cl_device.max_compute_units)
    if K is None:
        K = _cutoff(program.spec.a, y, alpha, p, g)
    state = {"active": False, "synced": True, "y": y, "starts": {}, "redo": []}
    spec = program.spec

    def on_expanded(levels):
        K_used = levels[-1].index
        y_eff = min(y, K_used)
        state["y"] = y_eff
        m = levels[y_eff].size
        s = min(m, math.ceil(alpha * m - 1e-12))
        starts = {y_eff: s}
        for i in range(y_eff, K_used):
            starts[i + 1] = int(levels[i].offsets[starts[i]])
        state["starts"] = starts
        state["levels"] = levels
        if s >= m:
            return  # the device's share is empty
        span = None
        if spec.span is not None:
            lv = levels[y_eff]
            lo_name, hi_name = spec.span
            lo_vals = lv.params.get(lo_name)
            hi_vals = lv.params.get(hi_name)
            lo = int(lo_vals[s:].min()) if lo_vals is not None else int(values[lo_name])
            hi = int(hi_vals[s:].max()) if hi_vals is not None else int(values[hi_name])
            span = (max(lo, 0), hi)
        gpu.prepare(levels, starts, y_eff, span)
        state["active"] = True
        state["synced"] = False

    def collect():
        from hpu._cpu import StackOverflowError

        state["synced"] = True
        try:
            gpu.finish()
            return
        except DeviceFault as err:
            reason = f"the OpenCL device failed ({err}); its share was redone on the CPU"
        except StackOverflowError as err:  # the CPU's recursion has no fixed stack
            reason = f"{err}; the device's share was redone on the CPU"
        warnings.warn(f"hpu: {reason}", HpuPerformanceWarning, stacklevel=4)
        fallbacks.append(reason)
        gpu.restore()
        levels, starts, y_eff = state["levels"], state["starts"], state["y"]
        K_used = levels[-1].index
        t0 = time.perf_counter()
        cpu.leaf(levels[K_used], starts[K_used], levels[K_used].size, shared)
        state["redo"].append(LevelRecord(K_used, "leaf", levels[K_used].size - starts[K_used], 0,
                                         time.perf_counter() - t0, 0.0))
        for i in range(K_used - 1, y_eff - 1, -1):
            t0 = time.perf_counter()
            cpu.combine(levels[i], levels[i + 1], starts[i], levels[i].size, shared)
            state["redo"].append(LevelRecord(i, "combine", levels[i].size - starts[i], 0,
                                             time.perf_counter() - t0, 0.0))

    def before_phase(level, phase):
        if state["active"] and not state["synced"] and (phase == "finish" or level < state["y"]):
            collect()

    def assign(level, phase, m):
        if phase in ("count", "fill") or not state["active"] or level < state["y"]:
            return [(cpu, 0, m)]
        s = state["starts"][level]
        return [(gpu, s, m), (cpu, 0, s)]  # device first: it only enqueues

    try:
        ex = execute(program.layout, program.types, values, cpu, K=K,
                     min_tasks=TASKS_PER_THREAD * p, assign=assign,
                     on_expanded=on_expanded, before_phase=before_phase)
    finally:
        if state["active"] and not state["synced"]:  # an error elsewhere: leave nothing queued
            try:
                gpu.queue.finish()
            except Exception:  # noqa: BLE001
                pass

    ev = gpu.event_seconds() if state["active"] and not fallbacks else {}
    records = []
    for r in ex.levels:
        if r.gpu_tasks and (r.level, r.phase) in ev:
            r = LevelRecord(r.level, r.phase, r.cpu_tasks, r.gpu_tasks, r.cpu_seconds,
                            ev[(r.level, r.phase)])
        records.append(r)
    records.extend(state["redo"])
    K_used = ex.K
    starts = state["starts"]
    leaf_cpu = starts.get(K_used, ex.level_sizes[-1]) if state["active"] else ex.level_sizes[-1]
    leaf_gpu = ex.level_sizes[-1] - leaf_cpu
    if fallbacks:
        leaf_cpu, leaf_gpu = ex.level_sizes[-1], 0
    return Run(value=ex.value, device=device, alpha=alpha, y=state["y"], K=K_used,
               cpu_tasks=int(leaf_cpu), gpu_tasks=int(leaf_gpu), fallbacks=fallbacks,
               levels=tuple(records), transfers=gpu.transfers() if state["active"] else (),
               seconds=time.perf_counter() - t_start)


def _cpu_only(program, values, cpu, K, p, *, fallbacks, t_start, device, alpha=1.0, y=None):
    from hpu._driver import execute

    ex = execute(program.layout, program.types, values, cpu, K=K,
                 min_tasks=TASKS_PER_THREAD * p)
    return Run(value=ex.value, device=device, alpha=alpha,
               y=None if y is None else min(y, ex.K), K=ex.K,
               cpu_tasks=ex.leaf_tasks.get("cpu", 0), gpu_tasks=0, fallbacks=fallbacks,
               levels=ex.levels, transfers=(), seconds=time.perf_counter() - t_start)
