"""Measure the HPU model's parameters on this machine: p, g, γ, λ and δ.

004 §6.4 estimates its parameters by hand from two experiments; hpu runs
them (and one more, for transfers) with one call and keeps the result as a
:class:`Profile` (storage and checks in :mod:`hpu._profile`):

p
    the cores Numba can use, ``numba.get_num_threads()``.  When the OpenCL
    device is a CPU device (PoCL on this host), it runs on these same cores
    and ``device_shares_cpu`` says so: CPU and device then compete for the
    cores instead of adding up, which the planner has to know.
g
    004 Figure 5: an element-wise sum ``c = a + b`` of two float32 arrays on a
    growing number of work-items, each work-item on one *consecutive*
    segment; g is the knee of time vs work-items, the count after which more
    work-items stop helping (:func:`hpu._stats.find_knee`: the first count
    whose time is within 10 % of the best time at any larger count).
γ
    004 Figure 6: one task (a single work-item; one Numba thread) merges two
    sorted int32 lists, on the CPU and on the device, for several sizes; the
    ratio CPU time / device time per size is kept in the sweeps (the figure).
    Both sides run one Python merge (:mod:`hpu._calib_merge`), compiled by
    Numba and translated by hpu's translator.  The γ the model uses is then
    measured as 004's footnote 6 advises, with the application's own code: a
    one-task mergesort (the shipped mergesort's shape) by hpu's solver on each
    side, the recursion compiled by Numba against the translated iterative
    solver on one work-item; its one-core time also gives the CPU seconds per
    unit of the model's work (``cpu_seconds_per_element``).  A hand-written
    OpenCL merge overstated PoCL 1.5-2x here, and a merge alone missed the
    solver's overhead; either way the planner sent work to a device slower
    than the CPU.  On a CPU device g is its cores (compute units: the sum's knee
    measures the memory bus there, not the cores a level of tasks uses), and the slowdown
    of both sides running at once is measured (``measured_contention``).
g of a GPU
    the sum's knee is not how a GPU runs hpu's tasks (an H200's read 131 072; its
    mergesort levels levelled off near 3 700 tasks, and the plan built on the sum lost
    to the CPU alone).  So a GPU's level times are measured like γ, with hpu's own
    solver: one level of 1, 4, 16, ... 2^14 subtree sorts at once
    (:func:`_solver_occupancy`); their times over one task's are the profile's
    ``device_occupancy`` (the model's :meth:`hpu.model.Machine.device_rounds`) and
    the best throughput, in tasks at the speed of one alone, is g.  The sum's sweep
    stays as Figure 5's measurement.
combines
    the unit above is whole sorts of cache-sized inputs, but the merges above
    a split are single tasks over megabytes: per size (``combine_sizes``), the
    level-0 merge of a ``K = 1`` sort on each side, paired, gives the CPU's
    seconds per unit of combine work by the bytes the task touches
    (``combine_rates``) and the device's speed on combines (``combine_gamma``);
    :func:`hpu.model.combine_factor` prices each combine by them (issue 14).
λ, δ
    000's communication cost λ + δ·w: host->device and device->host copies of
    growing size (1 KiB to 64 MiB).  δ is the robust slope of the largest
    copies and λ what is left at the smallest (:func:`hpu._stats.fit_transfer`:
    cached copies run several times faster, and hpu moves megabytes).
    Zero-copy devices report what they measure, which is small, not zero.

Every number is a median of repeats taken after a warm-up run; every kernel's
first (compiling) run is thrown away, and so is the first run of each sweep
point, because PoCL and GPU drivers specialise a kernel for each launch shape.
Where the repeats' spread leaves a median uncertain, more repeats are taken
(:func:`hpu._stats.adaptive_samples`).  γ and the contention, which decide the
plan, are measured in pairs (both sides back to back, alternately) and taken
as ratios of lower quartiles, because interference only ever adds time: three
quick calibrations once gave γ from 0.95 to 1.16 and three different plans.
The profile records each number's relative standard error
(``Profile.uncertainty``) and ``hpu calibrate`` prints it.

The contention is the one ratio that pairing cannot protect: it compares a
run of two of our threads with runs of one, and other processes take more
from the former (the kernel shares the cores per thread).  So each of its
runs also records the share of the cores other processes used meanwhile and
how long our threads waited for a core (:mod:`hpu._load`), and
:func:`contention_estimate` keeps the rounds nobody disturbed; when too few
were, and the two sides have cores of their own (a ``cpu@N`` sub-device
beside at most ``cores − N`` Numba threads, :func:`disjoint_cores`), it takes
each run's waits for a core off its time, which is all such load adds;
otherwise it corrects the wall times for the load and says it is less sure.  The profile keeps how (``contention_basis``) and the
share of the cores others used over the whole calibration (``outside_load``);
above :data:`BUSY_LOAD` :func:`calibrate` warns.
Device kernels are timed with OpenCL profiling events (the kernel alone, not
the launch); transfers with the host's clock (λ is what the host waits).
Each timed merge works on fresh inputs (a pool of pairs, cycled), because a
merge timed on the same inputs again and again lets the branch predictor
learn it and runs several times too fast.  Kernel results are checked against
NumPy: a device that adds or merges wrongly gives an error, not a profile.

The sizes are a :class:`CalibrationSettings`; :meth:`CalibrationSettings.full`
takes a few minutes, :meth:`CalibrationSettings.quick` well under one, and
tests pass tiny ones.  The plotting helpers (:func:`plot_g_sweep`,
:func:`plot_gamma`, :func:`plot_transfers`) redraw 004's figures from a
profile's raw sweeps, in a notebook or to PNG files.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hpu import _overheads
from hpu import _profile as _profile_module
from hpu import _stats
from hpu._errors import DeviceUnavailableError, HpuError, KernelBuildError
from hpu._profile import (
    Profile,
    ProfileKey,
    Sweeps,
    active_profile,
    load_profile,
    profile_path,
    save_profile,
)

__all__ = [
    "CalibrationSettings",
    "Profile",
    "ProfileKey",
    "Sweeps",
    "calibrate",
    "estimates",
    "Estimates",
    "load_profile",
    "save_profile",
    "active_profile",
    "profile_path",
    "plot_g_sweep",
    "plot_gamma",
    "plot_transfers",
    "FULL_SECONDS",
    "ContentionRound",
    "contention_estimate",
    "round_from_runs",
    "contention_from_times",
    "disjoint_cores",
    "busy_message",
    "BUSY_LOAD",
]

#: Rough duration of a full calibration, for messages.
FULL_SECONDS = 60

#: Relative tolerance of the knee: g is the first count within 10 % of the best later time.
KNEE_TOLERANCE = 0.10

ProgressCallback = Callable[[str, int, int], None]


# ---------------------------------------------------------------------- settings

def _pow2_range(lo_exp: int, hi_exp: int, step: int = 1) -> tuple[int, ...]:
    return tuple(1 << e for e in range(lo_exp, hi_exp + 1, step))


@dataclass(frozen=True)
class CalibrationSettings:
    """The sizes one calibration measures.

    ``sum_elements``: float32 elements per array of the g sweep;
    ``max_work_items``: the largest work-item count swept (powers of two from
    1; ``None`` chooses ``max(2^16, 16 × compute units × SIMD width)``, capped
    at ``sum_elements``); ``merge_sizes``: elements merged by one task for γ;
    ``transfer_bytes``: copy sizes for λ and δ; ``contention_keys``: keys sorted to
    measure contention (CPU devices); ``repeats``: timed runs per
    point after the warm-up; ``min_cpu_sample_s``: a CPU merge sample loops
    until it lasts this long, so that the clock's resolution does not matter.
    ``combine_sizes``: keys of the one top-level merge timed on each side for the
    combine rates (``()``: not measured; :func:`_combine_rates`).
    ``max_repeats`` (None: 4 × ``repeats``) and ``target_rel_error``: where the
    repeats' spread leaves a median's relative standard error above the target,
    more repeats are taken, up to ``max_repeats`` (:func:`hpu._stats.adaptive_samples`).
    ``gamma_seconds``: the least time γ's pairs are spread over (rounds over all
    ``merge_sizes``; :func:`hpu._stats.interleaved_ratios`): the cores' speed
    drifts over hundreds of milliseconds, and a γ taken within less repeated
    no better than 30 % here.
    ``occupancy_tasks``, ``occupancy_step``: a GPU's occupancy sweep launches 1 and then
    ``2**(occupancy_step·k)`` subtree sorts at once, up to ``occupancy_tasks``
    (:func:`_solver_occupancy`).
    """

    sum_elements: int
    merge_sizes: tuple[int, ...]
    transfer_bytes: tuple[int, ...]
    repeats: int
    max_work_items: int | None = None
    min_cpu_sample_s: float = 2e-3
    contention_keys: int = 1 << 16
    max_repeats: int | None = None
    target_rel_error: float = 0.02
    combine_sizes: tuple[int, ...] = ()
    gamma_seconds: float = 0.0
    occupancy_tasks: int = 1 << 14
    occupancy_step: int = 2

    def __post_init__(self):
        def need(ok, what):
            if not ok:
                raise ValueError(f"CalibrationSettings: {what}")
        need(isinstance(self.sum_elements, int) and self.sum_elements >= 1,
             f"sum_elements={self.sum_elements!r}; expected an integer >= 1")
        need(self.max_work_items is None or (isinstance(self.max_work_items, int) and self.max_work_items >= 1),
             f"max_work_items={self.max_work_items!r}; expected None or an integer >= 1")
        need(len(self.merge_sizes) >= 1 and all(isinstance(n, int) and n >= 2 for n in self.merge_sizes),
             f"merge_sizes={self.merge_sizes!r}; expected one or more integers >= 2")
        need(len(set(self.transfer_bytes)) >= 2 and all(isinstance(n, int) and n >= 1 for n in self.transfer_bytes),
             f"transfer_bytes={self.transfer_bytes!r}; expected two or more distinct integers >= 1")
        need(isinstance(self.repeats, int) and self.repeats >= 1,
             f"repeats={self.repeats!r}; expected an integer >= 1")
        need(self.min_cpu_sample_s >= 0, f"min_cpu_sample_s={self.min_cpu_sample_s!r}; expected >= 0")
        need(self.max_repeats is None or (isinstance(self.max_repeats, int)
                                          and self.max_repeats >= self.repeats),
             f"max_repeats={self.max_repeats!r}; expected None or an integer >= repeats "
             f"({self.repeats})")
        need(all(isinstance(n, int) and n >= 4 for n in self.combine_sizes),
             f"combine_sizes={self.combine_sizes!r}; expected integers >= 4 (keys of one "
             "top-level merge), or () to skip")
        need(isinstance(self.gamma_seconds, (int, float)) and 0 <= self.gamma_seconds <= 600,
             f"gamma_seconds={self.gamma_seconds!r}; expected seconds in [0, 600], e.g. 2")
        need(isinstance(self.occupancy_tasks, int) and self.occupancy_tasks >= 1,
             f"occupancy_tasks={self.occupancy_tasks!r}; expected an integer >= 1, e.g. 16384")
        need(isinstance(self.occupancy_step, int) and 1 <= self.occupancy_step <= 8,
             f"occupancy_step={self.occupancy_step!r}; expected an integer in [1, 8], e.g. 2")
        need(0 < self.target_rel_error < 1,
             f"target_rel_error={self.target_rel_error!r}; expected a fraction in (0, 1), e.g. 0.02")

    @property
    def repeat_cap(self) -> int:
        """The most timed runs one point may take (``max_repeats``, else 4 × ``repeats``)."""
        return self.max_repeats if self.max_repeats is not None else 4 * self.repeats

    @classmethod
    def full(cls) -> "CalibrationSettings":
        """2^22-element sum, merges of 2^12..2^18 elements, copies of 1 KiB..64 MiB, 7 repeats, γ over 6 s."""
        return cls(sum_elements=1 << 22, merge_sizes=_pow2_range(12, 18),
                   transfer_bytes=_pow2_range(10, 26), repeats=7, contention_keys=1 << 21,
                   combine_sizes=_pow2_range(16, 22, 2), gamma_seconds=6.0, occupancy_step=1)

    @classmethod
    def quick(cls) -> "CalibrationSettings":
        """2^20-element sum, merges of 2^12..2^16, copies of 1 KiB..16 MiB (×4 steps), 5 repeats, γ over 2 s."""
        return cls(sum_elements=1 << 20, merge_sizes=_pow2_range(12, 16, 2),
                   transfer_bytes=_pow2_range(10, 24, 2), repeats=5, min_cpu_sample_s=1e-3,
                   contention_keys=1 << 19, combine_sizes=_pow2_range(16, 22, 3),
                   gamma_seconds=2.0)


# -------------------------------------------------------------------- the device

_VSUM = "hpu_calib_vsum"
_MERGE = "calib_merge"

_SOURCE = r"""
#pragma OPENCL FP_CONTRACT OFF

/* 004 Figure 5: work-item i adds the consecutive segment [i*seg, min(n, (i+1)*seg)). */
__kernel void hpu_calib_vsum(__global const float *a, __global const float *b,
                             __global float *c, const long n, const long seg)
{
    long lo = (long)get_global_id(0) * seg;
    long hi = lo + seg;
    if (hi > n) hi = n;
    for (long i = lo; i < hi; ++i)
        c[i] = a[i] + b[i];
}

"""


def _device_label(dev) -> str:
    from hpu._opencl._device import device_label

    return device_label(dev)


def _resolve_device(device):
    """A ``pyopencl.Device`` for None, a device string, a DeviceInfo or a Device."""
    from hpu._opencl import _device as dev_mod

    if isinstance(device, dev_mod.DeviceInfo):
        return dev_mod.select_device(device.index)
    if device is None or isinstance(device, str):
        return dev_mod.select_device(device)
    return device


class _OpenCLBench:
    """The device side of the measurements: buffers, kernels, one timed run at a time.

    Each ``*_run`` method performs one run and returns its seconds; the
    caller decides about warm-ups and repeats.
    """

    def __init__(self, device=None):
        import pyopencl as cl

        from hpu._opencl._device import context_and_queue

        self._cl = cl
        self.device = _resolve_device(device)
        ctx, _ = context_and_queue(self.device)
        self.ctx = ctx
        dev = self.device
        t = dev.type
        self.kind = ("GPU" if t & cl.device_type.GPU else "ACCELERATOR" if t & cl.device_type.ACCELERATOR
                     else "CPU" if t & cl.device_type.CPU else cl.device_type.to_string(t))
        self.name = _device_label(dev)
        self.platform = dev.platform.name.strip()
        self.driver_version = dev.driver_version.strip()
        self.compute_units = int(dev.max_compute_units)
        simd = [int(getattr(dev, "preferred_vector_width_float", 1) or 1)]
        for attr in ("warp_size_nv", "wavefront_width_amd"):
            try:
                simd.append(int(getattr(dev, attr)))
            except Exception:
                pass
        self.simd_width = max(simd)
        self.max_alloc = int(dev.max_mem_alloc_size)
        try:
            self.queue = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
            self.events = True
        except cl.Error:  # pragma: no cover - every conformant device supports profiling
            self.queue = cl.CommandQueue(ctx, dev)
            self.events = False
        from hpu._opencl._build import quiet_compiler

        try:
            with quiet_compiler():
                program = cl.Program(ctx, _SOURCE).build()
        except cl.Error as err:
            log = str(err)
            first = next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()), log.strip()[:200])
            raise KernelBuildError(
                f"the OpenCL device {self.name!r} ({self.platform}, driver {self.driver_version}) "
                f"could not compile hpu's calibration kernels: {first}. Check the OpenCL installation "
                "with `hpu devices`, or choose another device with --device / HPU_DEVICE",
                source=_SOURCE, log=log) from None
        self._vsum = cl.Kernel(program, _VSUM)
        from hpu._opencl._build import build_program

        self._merge_prog = _translated_merge()
        self._merge = cl.Kernel(build_program(ctx, self._merge_prog.source), _MERGE)
        self._sum_bufs = None
        self._merge_bufs = None
        self._xfer = None

    # -- timing ------------------------------------------------------------------
    def _timed(self, launch) -> float:
        w = time.perf_counter()
        ev = launch()
        ev.wait()
        wall = time.perf_counter() - w
        if self.events:
            try:
                return max(0.0, (ev.profile.end - ev.profile.start) * 1e-9)
            except self._cl.Error:  # pragma: no cover
                pass
        return wall

    # -- g: element-wise sum ---------------------------------------------------------
    def sum_setup(self, n: int) -> None:
        cl = self._cl
        rng = np.random.default_rng(12345)
        a = rng.random(n, dtype=np.float32)
        b = rng.random(n, dtype=np.float32)
        mf = cl.mem_flags
        self._sum_host = (a, b)
        self._sum_bufs = (cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a),
                          cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b),
                          cl.Buffer(self.ctx, mf.WRITE_ONLY, a.nbytes))
        self._sum_n = n

    def sum_run(self, work_items: int) -> float:
        A, B, C = self._sum_bufs
        n = self._sum_n
        seg = -(-n // work_items)
        # On a CPU device one work-group runs on one thread: groups of one work-item let
        # the driver spread the sweep's work-items over its cores, as a GPU spreads warps.
        local = (1,) if self.kind == "CPU" else None
        return self._timed(lambda: self._vsum(self.queue, (work_items,), local, A, B, C,
                                              np.int64(n), np.int64(seg)))

    def sum_check(self) -> None:
        a, b = self._sum_host
        c = np.empty_like(a)
        self._cl.enqueue_copy(self.queue, c, self._sum_bufs[2])
        if not np.array_equal(c, a + b):
            bad = int(np.argmax(c != a + b))
            raise DeviceUnavailableError(
                f"the OpenCL device {self.name!r} computed a wrong element-wise sum during calibration "
                f"(element {bad}: {c[bad]!r}, expected {(a + b)[bad]!r}); choose another device with "
                "--device / HPU_DEVICE")

    # -- γ: one-task merge -------------------------------------------------------------
    def merge_setup(self, pool: "_MergePool") -> None:
        cl = self._cl
        mf = cl.mem_flags
        self._pool = pool
        self._merge_bufs = (cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=pool.a),
                            cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=pool.b),
                            cl.Buffer(self.ctx, mf.WRITE_ONLY, pool.out.nbytes))

    def merge_run(self, pair: int) -> float:
        A, B, O = self._merge_bufs
        p = self._pool
        args = self._merge_prog.kernel_args(_MERGE, {"a": (A, p.a.size), "b": (B, p.b.size),
                                                     "out": (O, p.out.size), "na": p.na,
                                                     "nb": p.nb, "pair": pair}, 0, 1)
        self._merge.set_args(*args)
        return self._timed(lambda: self._cl.enqueue_nd_range_kernel(self.queue, self._merge,
                                                                    (1,), (1,)))

    def solver_ratio(self, sizes, settings: "CalibrationSettings", rng):
        """``(γ, CPU seconds per unit)`` of hpu's own solver on this device, as
        :class:`hpu._stats.Estimate` (see :func:`_solver_ratio`)."""
        from hpu._calib_merge import _make_sorter

        return _solver_ratio(_make_sorter(), self.device, sizes, settings, rng,
                             around=self._same_core())

    def combine_rates(self, sizes, settings: "CalibrationSettings", rng):
        """``(((bytes, CPU s/unit Estimate), ...), combine γ Estimate)`` of the application's
        own top-level merge on each side (see :func:`_combine_rates`)."""
        from hpu._calib_merge import _make_sorter

        return _combine_rates(_make_sorter(), self.device, sizes, settings, rng,
                              around=self._same_core())

    def solver_occupancy(self, settings: "CalibrationSettings", rng):
        """``((tasks, seconds), ...)`` of one device level of ``tasks`` subtree sorts (see
        :func:`_solver_occupancy`), for the tasks counts :func:`occupancy_counts` gives."""
        from hpu._calib_merge import _make_sorter

        counts = occupancy_counts(settings, self.max_alloc)
        return _solver_occupancy(_make_sorter(), self.device, counts, settings, rng)

    def _same_core(self):
        """For a CPU device: each round of γ's pairs with every thread on one core
        (:mod:`hpu._affinity`), so that both sides of a pair meet the same core's speed."""
        from hpu import _affinity

        return _affinity.rotating() if self.kind == "CPU" else None

    def contention(self, n: int, settings: "CalibrationSettings", rng):
        """Measured slowdown of both sides running at once, an Estimate (see :func:`_measure_contention`)."""
        import numba

        from hpu._calib_merge import _make_sorter
        from hpu._opencl._device import host_cores, sub_device_units

        self.disjoint = disjoint_cores(self.kind, sub_device_units(self.device),
                                       int(numba.get_num_threads()), host_cores())
        return _measure_contention(_make_sorter(), self.device, n, settings, rng,
                                   disjoint=self.disjoint)

    def merge_result(self) -> np.ndarray:
        out = np.empty_like(self._pool.out)
        self._cl.enqueue_copy(self.queue, out, self._merge_bufs[2])
        return out

    # -- λ, δ: copies ------------------------------------------------------------------
    def transfer_setup(self, max_bytes: int) -> None:
        cl = self._cl
        host = np.empty(max_bytes, dtype=np.uint8)
        host.fill(0xA5)                     # touch every page before anything is timed
        self._xfer = (host, cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, max_bytes))
        cl.enqueue_copy(self.queue, self._xfer[1], host).wait()

    def h2d_run(self, nbytes: int) -> float:
        host, buf = self._xfer
        w = time.perf_counter()
        self._cl.enqueue_copy(self.queue, buf, host[:nbytes], is_blocking=True)
        return time.perf_counter() - w

    def d2h_run(self, nbytes: int) -> float:
        host, buf = self._xfer
        w = time.perf_counter()
        self._cl.enqueue_copy(self.queue, host[:nbytes], buf, is_blocking=True)
        return time.perf_counter() - w

    def close(self) -> None:
        self._sum_bufs = self._merge_bufs = self._xfer = None
        self.queue.finish()


# ------------------------------------------------------------------------ the CPU

#: Elements in the pool of merge inputs of one size.  Timing the same merge
#: over and over lets the CPU's branch predictor learn its outcomes (measured
#: here: 0.7 instead of 4.5 ns per element at 2^13); cycling through pairs that
#: add up to this many elements keeps every timed merge a fresh one.
MERGE_POOL_ELEMENTS = 1 << 18


@dataclass(frozen=True)
class _MergePool:
    """``pairs`` pairs of sorted int32 lists of ``na`` and ``nb`` elements, concatenated."""

    a: np.ndarray
    b: np.ndarray
    out: np.ndarray
    na: int
    nb: int
    pairs: int

    @classmethod
    def random(cls, n: int, rng) -> "_MergePool":
        na, nb = n // 2, n - n // 2
        k = max(1, MERGE_POOL_ELEMENTS // n)
        a = np.sort(rng.integers(0, 2 * n, (k, na), dtype=np.int32), axis=1).ravel()
        b = np.sort(rng.integers(0, 2 * n, (k, nb), dtype=np.int32), axis=1).ravel()
        return cls(a=a, b=b, out=np.empty(k * n, dtype=np.int32), na=na, nb=nb, pairs=k)

    def expected(self, pair: int) -> np.ndarray:
        na, nb = self.na, self.nb
        return np.sort(np.concatenate([self.a[pair * na:(pair + 1) * na],
                                       self.b[pair * nb:(pair + 1) * nb]]), kind="stable")

    def merged(self, out: np.ndarray, pair: int) -> np.ndarray:
        n = self.na + self.nb
        return out[pair * n:(pair + 1) * n]


@lru_cache(maxsize=None)
def _cpu_merge_kernel():
    import numba

    from hpu import _calib_merge

    merge_one = numba.njit(cache=False, nogil=True)(_calib_merge.merge_one)

    @numba.njit(cache=False, nogil=True)
    def merge_pairs(a, b, out, na, nb, pairs, first, count):
        """Merge ``count`` pairs, cycling from pair ``first``; one thread."""
        for r in range(count):
            merge_one(a, b, out, na, nb, (first + r) % pairs)

    return merge_pairs


@lru_cache(maxsize=None)
def _translated_merge():
    """:func:`hpu._calib_merge.merge_task` as an OpenCL range kernel (see that module)."""
    from hpu import _calib_merge
    from hpu._opencl._translate import INT64, Array, FunctionSource, translate

    i32 = Array(np.int32)
    return translate([(FunctionSource.from_callable(_calib_merge.merge_task),
                       (INT64, i32, i32, i32, INT64, INT64, INT64))],
                     kernels={_MERGE: "merge_task"})


def _cpu_merge_run(pool: _MergePool, min_seconds: float) -> float:
    """Seconds of one CPU merge (one thread): merges cycle through the pool until ``min_seconds`` pass."""
    merge_pairs = _cpu_merge_kernel()
    reps = 1
    while True:
        w = time.perf_counter()
        merge_pairs(pool.a, pool.b, pool.out, pool.na, pool.nb, pool.pairs, 0, reps)
        dt = time.perf_counter() - w
        if dt >= min_seconds or reps >= 1 << 20:
            return dt / reps
        reps = max(reps * 2, int(reps * min_seconds / max(dt, 1e-9) * 1.2) + 1)


# --------------------------------------------------------------------- estimates

@dataclass(frozen=True)
class Estimates:
    """The model's parameters as derived from a profile's raw sweeps."""

    g: int
    g_knee: _stats.Knee
    gamma: _stats.Ratio
    cpu_seconds_per_element: float
    transfer: _stats.Line
    h2d: _stats.Line
    d2h: _stats.Line


def estimates(sweeps: Sweeps, *, tolerance: float = KNEE_TOLERANCE) -> Estimates:
    """Derive g, γ, cpu seconds/element, λ and δ from raw sweeps (pure; used by :func:`calibrate`).

    λ and δ come from one fit (:func:`hpu._stats.fit_transfer`) over both
    directions' copies (the model charges one λ + δ·w per transfer either
    way); the per-direction fits are returned too.  The knee is found on each
    point's lower quartile (:func:`hpu._stats.low_quantile`): the more
    work-items a sum uses, the more it loses to other processes, which moved
    medians' knee between 1 and 2 on a loaded two-core machine.
    """
    xs, reps = _stats.group_samples(sweeps.g)
    knee = _stats.find_knee(xs, [_stats.low_quantile(r) for r in reps], tolerance=tolerance)
    cx, creps = _stats.group_samples(sweeps.merge_cpu)
    dx, dreps = _stats.group_samples(sweeps.merge_device)
    if cx != dx:
        raise ValueError(f"merge sweeps cover different sizes (CPU {cx}, device {dx}); "
                         "expected the same sizes on both sides")
    ratio = _stats.ratio_estimate(creps, dreps)
    per_el = float(np.median(_stats.point_medians(creps) / np.asarray(cx, dtype=float)))
    hx, hreps = _stats.group_samples(sweeps.h2d)
    ox, oreps = _stats.group_samples(sweeps.d2h)
    both_x, both_r = _stats.group_samples(list(sweeps.h2d) + list(sweeps.d2h))
    return Estimates(g=int(knee.x), g_knee=knee, gamma=ratio, cpu_seconds_per_element=per_el,
                     transfer=_stats.fit_transfer(both_x, both_r),
                     h2d=_stats.fit_transfer(hx, hreps), d2h=_stats.fit_transfer(ox, oreps))


# ---------------------------------------------------------------------- progress

class _Progress:
    def __init__(self, progress, total: int):
        self.total = total
        self.done = 0
        self._cb: ProgressCallback | None = None
        self._rich = None
        if callable(progress):
            self._cb = progress
        elif progress is True or (progress is None and sys.stderr.isatty()):
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._rich = Progress(TextColumn("calibrating {task.description:<28}"), BarColumn(),
                                  TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                  console=Console(stderr=True), transient=True)
            self._task = self._rich.add_task("", total=total)

    def __enter__(self):
        if self._rich is not None:
            self._rich.start()
        return self

    def __exit__(self, *exc):
        if self._rich is not None:
            self._rich.stop()

    def begin(self, stage: str) -> None:
        """Show what is being measured now (the callback hears of finished steps only)."""
        if self._rich is not None:
            self._rich.update(self._task, description=stage)

    def step(self, stage: str) -> None:
        self.done += 1
        if self._cb is not None:
            self._cb(stage, self.done, self.total)
        if self._rich is not None:
            self._rich.update(self._task, description=stage, completed=self.done)


# --------------------------------------------------------------------- calibrate

def _after_warmup(run, repeats: int, settings: "CalibrationSettings | None" = None) -> list[float]:
    """One thrown-away run, then ``repeats`` timed ones, more where noisy (``settings``)."""
    run()                       # warm-up: the first run of a shape compiles/specialises
    if settings is None:
        return [run() for _ in range(repeats)]
    return _stats.adaptive_samples(run, min_samples=repeats, max_samples=settings.repeat_cap,
                                   target=settings.target_rel_error)


def calibrate(device=None, quick: bool = False, progress=None, *,
              settings: CalibrationSettings | None = None) -> Profile:
    """Measure p, g, γ, λ, δ (and the CPU's merge seconds per element) and return a Profile.

    ``device``: None (``HPU_DEVICE`` or the default), a device string as
    ``hpu devices`` lists them, a ``DeviceInfo`` or a ``pyopencl.Device``.
    ``quick``: the sizes of :meth:`CalibrationSettings.quick` (under a minute)
    instead of :meth:`~CalibrationSettings.full` (a few minutes); ``settings``
    overrides both (``quick`` is still recorded in the profile).
    ``progress``: None shows a progress bar on stderr when it is a terminal,
    False never, True always, or a callable ``progress(stage, done, total)``.

    The profile is returned, not saved: see :func:`save_profile`.  Raises
    :class:`hpu.KernelBuildError` when the device cannot compile the
    calibration kernels and :class:`hpu.DeviceUnavailableError` when it
    computes wrong results or there is no device.
    """
    import numba

    if settings is None:
        settings = CalibrationSettings.quick() if quick else CalibrationSettings.full()
    elif not isinstance(settings, CalibrationSettings):
        raise TypeError(f"settings must be a CalibrationSettings, got {type(settings).__name__}")
    if not (progress is None or isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress={progress!r}; expected None, True, False or a callable(stage, done, total)")

    from hpu._opencl._device import use_remaining_cores

    from hpu._profile import calibrating

    bench = _OpenCLBench(device)
    # (the runs it times plan with built-in values: the stored profile is the one being
    # replaced, and a corrupt or stale one must not stop its own replacement)
    with calibrating(), contextlib.ExitStack() as done:
        done.callback(bench.close)
        if hasattr(bench, "solver_ratio"):
            _prime_cpu_code()
        # p is what a run on this device will use: beside a CPU sub-device, the other cores
        dev = getattr(bench, "device", None)
        p = use_remaining_cores(dev) if dev is not None else numba.get_num_threads()
        profile = _measure(bench, settings, quick=bool(quick), progress=progress, p=int(p))
    message = busy_message(profile)
    if message:
        import warnings

        from hpu._errors import HpuPerformanceWarning

        warnings.warn(message, HpuPerformanceWarning, stacklevel=2)
    return profile


_PRIME = """
import numpy as np
from hpu._calib_merge import _make_sorter
sorter = _make_sorter()
# the calls calibration makes: gamma's one-core sort, the combines' K = 1 runs, the
# contention's runs split at level 3 (the hybrid's CPU side: the same Numba code whichever
# OpenCL device the parent measures, so the default one serves)
runs = [lambda a, t, n: sorter.sequential(a, t, 0, n),
        lambda a, t, n: sorter.run(a, t, 0, n, device="cpu", K=1),
        lambda a, t, n: sorter.run(a, t, 0, n, device="cpu", K=3),
        lambda a, t, n: sorter.run(a, t, 0, n, device="hybrid", alpha=0.5, y=3, K=4)]
for n in (64, 4096, 1 << 16, 1 << 19):
    for run in runs:
        a = np.arange(n, 0, -1, dtype=np.int32)
        try:
            run(a, np.empty_like(a), n)
        except Exception:       # best effort: the parent measures (and reports) anyway
            pass
"""


def _prime_cpu_code() -> None:
    """Compile the calibration sort's CPU code into the on-disk caches in a child process.

    Why: machine code that Numba compiles in a process ran 20-30 % slower in it than
    the same function loaded from the cache by a later process (the 2-core VM: a one-core
    sort of 2^14 keys 1.24-1.26 ms against 1.00-1.07 ms, three processes each way), so a
    calibration on empty caches read the CPU slow (γ 1.24-1.31 where every later one read
    1.02-1.10) and could send a whole run to a slower device.  Users' runs are the later
    processes; with the code compiled beforehand in a child, this process loads it from the
    cache as they do.  The child imports this process's hpu (:mod:`hpu._child`: run from
    a checkout, ``python -c`` would import the checkout's), and makes the calls that
    calibration makes.  Best effort: without caches or a child the measurement goes on.
    """
    from hpu import _child

    _child.run_quietly("-c", _PRIME, timeout=600)


def busy_message(profile: Profile) -> str:
    """The warning for a profile measured on a busy machine, or "" (see :data:`BUSY_LOAD`)."""
    load = getattr(profile, "outside_load", None)
    if load is None or not load > BUSY_LOAD:
        return ""
    cores = _machine_cores()
    basis = getattr(profile, "contention_basis", None)
    how = {"waits removed": "the contention was read without the waits for a core, which is "
                            "all that load adds where the two sides have cores of their own",
           "loaded rounds": "the contention was corrected for that load and is less sure",
           "quiet rounds": "the contention comes from the rounds the others left quiet"}.get(basis, "")
    return (f"hpu: other processes used {100 * load:.0f} % of this machine's {cores} cores while "
            f"it was calibrated (more than {100 * BUSY_LOAD:.0f} %); the measured figures carry "
            "that load in their ± errors" + (f", and {how}" if how else "")
            + ". Calibrate again on a quiet machine (`uptime`: a load average well below the "
            "core count) with `hpu calibrate`")


def _machine_cores() -> int:
    from hpu import _load

    return _load.machine_cores()


def _sweep_counts(settings: CalibrationSettings, bench) -> list[int]:
    top = settings.max_work_items
    if top is None:
        wide = 16 * max(1, bench.compute_units) * max(1, bench.simd_width)
        top = max(1 << 16, 1 << math.ceil(math.log2(wide)))
    top = max(1, min(top, settings.sum_elements))
    return [1 << e for e in range(0, int(math.log2(top)) + 1)]


def _measure(bench, settings: CalibrationSettings, *, quick: bool, progress, p: int) -> Profile:
    from hpu import _load
    from hpu._profile import _host, _hpu_version, _now

    load_start = _load.sample()
    counts = _sweep_counts(settings, bench)
    merge_sizes = sorted(set(settings.merge_sizes))
    xfer = sorted({min(n, bench.max_alloc) for n in settings.transfer_bytes})
    if len(xfer) < 2:
        raise DeviceUnavailableError(
            f"the OpenCL device {bench.name!r} allows buffers of only {bench.max_alloc} bytes; "
            "too small to measure transfer costs")
    combine_sizes = sorted(set(settings.combine_sizes)) if hasattr(bench, "combine_rates") else []
    total = (len(counts) + 2 * len(merge_sizes) + 2 * len(xfer) + hasattr(bench, "solver_ratio")
             + (bench.kind != "CPU" and hasattr(bench, "solver_occupancy"))
             + bool(combine_sizes)
             + (bench.kind == "CPU" and hasattr(bench, "contention")))
    R = settings.repeats
    g_pairs, cpu_pairs, dev_pairs, h2d_pairs, d2h_pairs = [], [], [], [], []
    rng = np.random.default_rng(2014)

    with _Progress(progress, total) as bar:
        # g: time vs work-items of an element-wise sum on consecutive segments
        bar.begin("g: work-item sweep")
        bench.sum_setup(settings.sum_elements)
        bench.sum_run(counts[0])                    # the kernel's compiling run
        for n_items in counts:
            for t in _after_warmup(lambda: bench.sum_run(n_items), R, settings):
                g_pairs.append((n_items, t))
            bar.step("g: work-item sweep")
        bench.sum_check()

        # γ: a one-task merge on each side, each timed merge on fresh inputs
        merge_pairs = _cpu_merge_kernel()
        first = True
        for n in merge_sizes:
            bar.begin("γ: one-task merge, CPU")
            pool = _MergePool.random(n, rng)
            merge_pairs(pool.a, pool.b, pool.out, pool.na, pool.nb, pool.pairs, 0, pool.pairs)
            for k in range(pool.pairs):             # the first call also compiled it
                if not np.array_equal(pool.merged(pool.out, k), pool.expected(k)):  # pragma: no cover
                    raise HpuError("the CPU merge used for calibration gave a wrong result")
            for t in _after_warmup(lambda: _cpu_merge_run(pool, settings.min_cpu_sample_s), R,
                                   settings):
                cpu_pairs.append((n, t))
            bar.step("γ: one-task merge, CPU")

            bar.begin("γ: one-task merge, device")
            bench.merge_setup(pool)
            used = itertools.count()

            def run_device(pool=pool, used=used):
                return bench.merge_run(next(used) % pool.pairs)

            if first:
                run_device()                        # the kernel's compiling run
                first = False
            for t in _after_warmup(run_device, R, settings):
                dev_pairs.append((n, t))
            got = bench.merge_result()
            for k in range(min(next(used), pool.pairs)):
                want = pool.expected(k)
                have = pool.merged(got, k)
                if not np.array_equal(have, want):
                    bad = int(np.argmax(have != want))
                    raise DeviceUnavailableError(
                        f"the OpenCL device {bench.name!r} merged wrongly during calibration (n={n}, "
                        f"element {bad}: {have[bad]}, expected {want[bad]}); choose another device "
                        "with --device / HPU_DEVICE")
            bar.step("γ: one-task merge, device")

        # γ as hpu's own code sees it (004 footnote 6): a one-task sort by hpu's
        # solver on each side (the recursion compiled by Numba; the translated
        # iterative solver on one work-item).  The merge above is Figure 6's
        # measurement and stays in the sweeps; the model uses this ratio.
        solver_gamma = solver_unit = contention = None
        if hasattr(bench, "solver_ratio"):
            bar.begin("γ: one-task sort by hpu's solver")
            solver_gamma, solver_unit = bench.solver_ratio(merge_sizes, settings, rng)
            bar.step("γ: one-task sort by hpu's solver")
        # a GPU's width for hpu's tasks: one level of 1..2^14 subtree sorts (see
        # _solver_occupancy); a CPU device's width is its cores (below)
        occupancy = ()
        if bench.kind != "CPU" and hasattr(bench, "solver_occupancy"):
            bar.begin("g: tasks per level, hpu's solver")
            occupancy = bench.solver_occupancy(settings, rng)
            bar.step("g: tasks per level, hpu's solver")
        # the combines: the unit above is a whole sort of cache-sized inputs, but the merges
        # near the root are single tasks over megabytes, slower per element (issue 14)
        combine = None
        if combine_sizes:
            bar.begin("combine: one top-level merge per side")
            combine = bench.combine_rates(combine_sizes, settings, rng)
            bar.step("combine: one top-level merge per side")
        # contention: a device on the CPU's own cores and Numba's threads slow each
        # other while both run; the paper's model assumes separate hardware, so
        # measure how much: half the keys on each side at once (a hybrid run split
        # at level 1) against the slower half alone.
        if bench.kind == "CPU" and hasattr(bench, "contention"):
            bar.begin("contention: both at once")
            contention = bench.contention(settings.contention_keys, settings, rng)
            bar.step("contention: both at once")

        # λ, δ: copies of growing size, both directions
        bench.transfer_setup(max(xfer))
        for direction, run, pairs in (("h2d", bench.h2d_run, h2d_pairs), ("d2h", bench.d2h_run, d2h_pairs)):
            label = f"λ, δ: copies {'host→device' if direction == 'h2d' else 'device→host'}"
            for nbytes in xfer:
                bar.begin(label)
                for t in _after_warmup(lambda: run(nbytes), R, settings):
                    pairs.append((nbytes, t))
                bar.step(label)

    outside = _load.outside_share(load_start, _load.sample())
    sweeps = Sweeps(g_elements=settings.sum_elements, g=tuple(g_pairs), merge_cpu=tuple(cpu_pairs),
                    merge_device=tuple(dev_pairs), h2d=tuple(h2d_pairs), d2h=tuple(d2h_pairs),
                    occupancy=tuple(occupancy))
    est = estimates(sweeps)
    g = est.g
    table = occupancy_table(occupancy)
    if table:
        # the sum's knee stays Figure 5's measurement; the model's g is the width the
        # device shows for hpu's own tasks (_solver_occupancy)
        g = occupancy_g(table)
    if bench.kind == "CPU":
        # A CPU device runs one work-item per core at a time, and the model's g counts
        # the cores a task-parallel level can use.  The streaming sum's knee says how
        # many cores saturate the memory bus instead: past the cores it is memory-level
        # parallelism, and below them it is the bus (the 2-core VM's whole PoCL device
        # read g = 2, 1, 1 in three quick calibrations, while its cache-sized sorts
        # scale with both cores).  So g is the device's compute units; the sweep stays
        # as Figure 5's measurement.
        g = max(1, int(bench.compute_units))
    uncertainty = _uncertainty(sweeps, est, solver_gamma, solver_unit, contention, combine)
    return Profile(
        p=p,
        g=g,
        gamma=est.gamma.value if solver_gamma is None else solver_gamma.value,
        # A negative intercept or slope is noise around zero; the model needs >= 0.
        latency_s=max(0.0, est.transfer.intercept),
        seconds_per_byte=max(0.0, est.transfer.slope),
        cpu_seconds_per_element=(est.cpu_seconds_per_element if solver_unit is None
                                 else solver_unit.value),
        device=bench.name, platform=bench.platform, driver_version=bench.driver_version,
        device_kind=bench.kind, compute_units=bench.compute_units,
        device_shares_cpu=bench.kind == "CPU",
        host=_host(), hpu_version=_hpu_version(), created=_now(), quick=bool(quick),
        source="measured", sweeps=sweeps,
        measured_contention=None if contention is None else contention.value,
        contention_basis=None if contention is None or not contention.basis else contention.basis,
        outside_load=None if math.isnan(outside) else round(outside, 4),
        uncertainty=uncertainty,
        combine_rates=(() if combine is None else
                       tuple((int(b), float(e.value)) for b, e in combine[0])),
        combine_gamma=None if combine is None else float(combine[1].value),
        device_occupancy=table,
        **_overheads.measure_quietly(getattr(bench, "device", None)),  # fixed costs (issue 13)
    )


def _uncertainty(sweeps: Sweeps, est: Estimates, solver_gamma, solver_unit, contention,
                 combine=None):
    """Relative standard errors of the profile's numbers, from the spread of their repeats.

    γ and the CPU's seconds per unit: from their own paired estimates (or, for
    the merge ratio, the spread of the per-size ratios); λ: the noise of the
    smallest copies, which decide it; δ: that of the largest; g: the knee's
    tolerance when it had to be widened beyond the default (the sweep was
    noisier than the rule can resolve), else 0.
    """
    def pooled(pairs, pick):
        if not pairs:
            return 0.0
        xs, reps = _stats.group_samples(pairs)
        chosen = pick(list(zip(xs, reps)))
        errs = [_stats.median_rel_error(r) for _, r in chosen]
        finite = [e for e in errs if math.isfinite(e)]
        return float(np.median(finite)) if finite else 0.0

    if solver_gamma is not None:
        gamma_err = solver_gamma.rel_error
    else:
        ratios = est.gamma.ratios
        per_side = (pooled(sweeps.merge_cpu, lambda v: v) ** 2
                    + pooled(sweeps.merge_device, lambda v: v) ** 2) ** 0.5
        spread = _stats.median_rel_error(ratios) if len(ratios) >= 3 else 0.0
        gamma_err = max(per_side / math.sqrt(max(1, len(ratios))), spread)
    unit_err = (solver_unit.rel_error if solver_unit is not None
                else pooled(sweeps.merge_cpu, lambda v: v))
    both = list(sweeps.h2d) + list(sweeps.d2h)
    out = {
        "gamma": gamma_err,
        "cpu_seconds_per_element": unit_err,
        "latency_s": pooled(both, lambda v: v[:2]),
        "seconds_per_byte": pooled(both, lambda v: v[-3:]),
        "g": 0.0 if est.g_knee.tolerance <= KNEE_TOLERANCE + 1e-12 else est.g_knee.tolerance,
    }
    if contention is not None:
        out["contention"] = contention.rel_error
    if combine is not None:
        out["combine_rates"] = max((e.rel_error for _, e in combine[0]), default=0.0)
        out["combine_gamma"] = combine[1].rel_error
    return tuple(sorted((k, float(min(v, 10.0)) if math.isfinite(v) else 10.0)
                        for k, v in out.items()))


def _solver_ratio(sorter, device, sizes, settings: CalibrationSettings, rng, around=None):
    """``(γ, CPU seconds per unit of work)`` of a one-task sort by hpu's own solver.

    Per size, the one-core Numba sort and the one-work-item device sort run in
    pairs, alternately, on fresh keys, in rounds over all sizes that last at
    least ``settings.gamma_seconds`` (:func:`hpu._stats.interleaved_ratios`):
    a burst of load from another process meets both sides alike, each side's
    lower quartile over the whole time is its undisturbed time, and a core's
    speed that drifts over hundreds of milliseconds is sampled throughout
    rather than caught once.  At least ``2 × settings.repeats`` rounds run (γ
    decides the plan).  γ drifts with the size, so it is read off the weighted
    line through all sizes at their geometric middle (:func:`hpu._stats.trend_at`).
    ``around`` (a CPU device's, :mod:`hpu._affinity`): each round with every
    thread on one core, so that both sides of a pair meet the same core.
    Seconds per unit: the one-core time over the model's total work of
    mergesort, n·(log2 n + 1), so that the model's sequential time is the
    measured one.  Both are :class:`hpu._stats.Estimate`.
    """
    def one(side, n):
        keys = rng.integers(0, 2 * n, n).astype(np.int32)
        a, tmp = keys.copy(), np.empty_like(keys)
        if side == "cpu":
            w = time.perf_counter()
            sorter.sequential(a, tmp, 0, n)
            t = time.perf_counter() - w
        else:
            run = sorter.run(a, tmp, 0, n, device="gpu", K=0, cl_device=device)
            if run.fallbacks:
                raise DeviceUnavailableError(
                    f"the OpenCL device failed during calibration: {run.fallbacks[0]}; "
                    "choose another device with --device")
            t = sum(r.gpu_seconds for r in run.levels if r.phase == "leaf")
        if not np.array_equal(a, np.sort(keys)):
            raise DeviceUnavailableError(
                f"the {side} sorted wrongly during calibration (n={n}); choose another "
                "device with --device / HPU_DEVICE")
        return t

    sizes = list(sizes)
    for n in sizes:                     # warm-ups: compilation, first-launch specialisation
        one("cpu", n)
        one("gpu", n)
    measured = _stats.interleaved_ratios(
        [(functools.partial(one, "cpu", n), functools.partial(one, "gpu", n)) for n in sizes],
        min_rounds=2 * settings.repeats, min_seconds=settings.gamma_seconds, around=around)
    ratios, per_unit = [], []
    for n, (ratio, cpu_times, _) in zip(sizes, measured):
        ratios.append(ratio)
        work = n * (math.log2(n) + 1)
        per_unit.append(_stats.Estimate(_stats.low_quantile(cpu_times) / work,
                                        _stats.median_rel_error(cpu_times), len(cpu_times)))
    # γ drifts with the size; the line through every size, read at their geometric
    # middle, repeats where any one size or a median of them does not
    middle = 2.0 ** float(np.mean(np.log2(np.asarray(sizes, dtype=float))))
    gamma = _stats.trend_at(sizes, ratios, middle)
    if not gamma.value > 0:         # a line gone below zero: too few or too wild points
        gamma = _stats.combine_estimates(ratios)
    return gamma, _stats.combine_estimates(per_unit)


#: Bytes a calibration sort's task touches per key: the int32 keys and the int32 scratch.
SORT_BYTES_PER_KEY = 8

#: Keys of each subtree sort in the occupancy sweep (:func:`_solver_occupancy`).
OCCUPANCY_KEYS = 512
def occupancy_counts(settings: CalibrationSettings, max_alloc: int) -> tuple[int, ...]:
    """The task counts of the occupancy sweep: 1, then powers of two (×4 for a quick
    calibration, ×2 for a full one) up to ``settings.occupancy_tasks`` (2^14 subtrees
    of 512 keys: 8 Mi keys), fewer where the device's largest buffer cannot hold
    their keys."""
    fit = max(1, int(max_alloc) // (4 * OCCUPANCY_KEYS))
    top = min(settings.occupancy_tasks, 1 << (fit.bit_length() - 1))
    return tuple(t for t in _pow2_range(0, 30, settings.occupancy_step) if t <= top)


def _solver_occupancy(sorter, device, counts, settings: CalibrationSettings, rng):
    """Per task count ``t``, the device time of one level of ``t`` sorts of
    :data:`OCCUPANCY_KEYS` keys each, by hpu's translated solver (the cut-off level
    ``K = log2 t`` of a hybrid run that gives the device exactly that level).

    Why: the model's ``g`` work-items at speed γ each is not how a GPU runs hpu's
    tasks.  A task is a long serial solver or merge; a GPU runs one per compute unit
    at the speed of one alone, but several on a unit share its issue slots, and the
    device's throughput levels off far below the element-wise sum's knee (an H200:
    sum knee 131 072 work-items; its mergesort levels ran 2x slower per task at 1 024
    tasks than at 128, and the plan that believed the sum lost to the CPU alone).  So
    the device's time per level is measured with the application's own code, as γ is
    (004 footnote 6), from one task to a saturated device.  Each block of keys holds
    its own range of values, so the merges above ``K`` find their runs in order and
    cost nothing; the device's leaf phase is what is timed.  The result is checked.
    """
    import warnings

    pairs = []
    keys = OCCUPANCY_KEYS

    def one(t):
        n = t * keys
        base = np.repeat(np.arange(t, dtype=np.int64) * keys, keys)
        x = (base + rng.integers(0, keys, n)).astype(np.int32)
        a, tmp = x.copy(), np.empty_like(x)
        K = t.bit_length() - 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = sorter.run(a, tmp, 0, n, device="hybrid", alpha=0.0, y=K, K=K,
                             cl_device=device)
        if run.fallbacks:
            raise DeviceUnavailableError(
                f"the OpenCL device failed during calibration: {run.fallbacks[0]}; "
                "choose another device with --device")
        if not np.array_equal(a, np.sort(x)):
            raise DeviceUnavailableError(
                f"the device sorted wrongly during calibration ({t} tasks of {keys} keys); "
                "choose another device with --device / HPU_DEVICE")
        return sum(r.gpu_seconds for r in run.levels if r.phase == "leaf")

    from hpu._opencl._backend import OpenCLBackend

    # one launch per level: a device with its own memory would otherwise launch the
    # leaves in pieces, one after another, and the level's time would be the pieces'
    saved = OpenCLBackend.transfer_chunks
    OpenCLBackend.transfer_chunks = 1
    try:
        for t in counts:
            one(t)                          # first launch of this shape: specialisation
            for sec in _after_warmup(lambda t=t: one(t), settings.repeats, settings):
                pairs.append((t, sec))
    finally:
        OpenCLBackend.transfer_chunks = saved
    return tuple(pairs)


def occupancy_table(pairs) -> tuple[tuple[int, float], ...]:
    """``((tasks, relative time), ...)`` from the sweep's ``(tasks, seconds)`` pairs: each
    count's median over the one-task median (:attr:`hpu.model.Machine.device_occupancy`)."""
    by: dict[int, list[float]] = {}
    for t, sec in pairs:
        by.setdefault(int(t), []).append(float(sec))
    if 1 not in by:
        return ()
    one = float(np.median(by[1]))
    if not one > 0:
        return ()
    return tuple((t, float(np.median(v)) / one) for t, v in sorted(by.items()))


def occupancy_g(table) -> int:
    """The device's width for 004's formulas from an occupancy table: its best throughput,
    ``max(tasks / relative time)``, in tasks running at the speed of one alone."""
    return max(1, int(round(max(t / r for t, r in table))))


#: Pairs of one combine size may take this many times :func:`combine_run_limit`.
COMBINE_PAIRS_BUDGET = 6


def combine_run_limit(settings: CalibrationSettings) -> float:
    """Seconds one device run of :func:`_combine_rates` may be predicted to take before the
    larger sizes are left out: half of ``gamma_seconds``, at least 0.5 s (quick: 1 s,
    full: 3 s).

    Why: each run sorts two whole subtrees of ``n/2`` keys on *one work-item each*.  A
    CPU device does that at a core's speed; a GPU's work-item is 20-80 times slower
    than a core, and on an H100 the quick calibration's 2^22 keys took 134 s of a
    3-minute calibration.  The next size's run is predicted from the last one's by
    ``n log n``; the sizes measured give the combine γ (a GPU's one-task merge runs at
    the same per-key speed at every size, what the model needs from it)."""
    return max(0.5, settings.gamma_seconds / 2)


def _n_log_n(n: int) -> float:
    return n * math.log2(max(n, 2))


def _combine_rates(sorter, device, sizes, settings: CalibrationSettings, rng, around=None):
    """The application's combine, one task at the root, timed on each side by size.

    Why: the CPU's seconds per unit (:func:`_solver_ratio`) come from whole sorts
    of cache-sized inputs, the bottom of the tree; the merges above a split are
    single tasks over megabytes, and on this project's machines they ran
    15-30 % slower per element than that unit on the CPU and 40 % slower than
    γ said on the device (issue 14).  So per size ``n``: a run with ``K = 1``
    (two whole-subtree tasks, then one merge of ``n`` keys at level 0) on the
    CPU and one on the device, in pairs, alternately (:func:`hpu._stats.paired_ratio`);
    the level-0 combine's seconds (the runtime's own record: on the device its
    kernel's profiling time) divided by ``f(n) = n`` is one rate.  Returns
    ``(((bytes, Estimate of CPU seconds per unit), ...), Estimate of the combine γ)``
    with bytes = :data:`SORT_BYTES_PER_KEY` × n, the combine γ the weighted median of
    the per-size ratios (:func:`hpu._stats.combine_estimates`).  The merges over
    megabytes are memory-bound and feel other processes' memory traffic most:
    each size takes more pairs while its ratio is noisy, up to ``settings.repeat_cap``
    (twice ``settings.repeats`` from 2^20 keys, where each pair costs two whole sorts),
    and no more than :data:`COMBINE_PAIRS_BUDGET` times :func:`combine_run_limit` in all;
    sizes (ascending) stop where a device run is predicted to pass that limit.
    """
    rates, ratios = [], []
    limit = combine_run_limit(settings)
    walls: dict[str, float] = {}
    done = None                         # (n, seconds of one device run) of the last size
    for n in sorted(sizes):
        if done is not None and done[1] * _n_log_n(n) / _n_log_n(done[0]) > limit:
            break                       # too slow on this device: see combine_run_limit

        def one(side, n=n):
            keys = rng.integers(0, 2 * n, n).astype(np.int32)
            a, tmp = keys.copy(), np.empty_like(keys)
            start = time.perf_counter()
            run = sorter.run(a, tmp, 0, n, device="cpu" if side == "cpu" else "gpu", K=1,
                             cl_device=device)
            walls[side] = time.perf_counter() - start
            if run.fallbacks or not np.array_equal(a, np.sort(keys)):
                raise DeviceUnavailableError(
                    f"the {side} sorted wrongly or fell back during calibration (n={n}, "
                    f"{run.fallbacks}); choose another device with --device / HPU_DEVICE")
            top = [r for r in run.levels if r.level == 0 and r.phase == "combine"]
            t = sum((r.cpu_seconds if side == "cpu" else r.gpu_seconds) for r in top)
            return max(t, 1e-9)

        one("cpu")                      # warm-ups: first-launch specialisation per shape
        one("gpu")
        cap = settings.repeat_cap if n < 1 << 20 else min(settings.repeat_cap, 2 * settings.repeats)
        pair = walls["cpu"] + walls["gpu"]
        cap = max(settings.repeats, min(cap, int(COMBINE_PAIRS_BUDGET * limit / max(pair, 1e-9))))
        ratio, cpu_times, _ = _stats.paired_ratio(
            lambda: one("cpu"), lambda: one("gpu"), min_pairs=settings.repeats,
            max_pairs=cap, target=settings.target_rel_error, around=around)
        ratios.append(ratio)
        done = (n, walls["gpu"])
        rates.append((SORT_BYTES_PER_KEY * n,
                      _stats.Estimate(_stats.low_quantile(cpu_times) / n,
                                      _stats.median_rel_error(cpu_times), len(cpu_times))))
    return tuple(rates), _stats.combine_estimates(ratios)


#: The level where the contention measurement splits the tree: 2**3 tasks, half on each
#: side, each task n/8 keys (2**16..2**18 for the calibration's sizes) -- the split the
#: planner picks for mergesort in the megabytes, not the one-task-per-side split at level 1
#: whose ratio flipped the plan between calibrations (issue 14).
CONTENTION_LEVEL = 3


def _unclipped_contention(both: float, cpu: float, device: float) -> float:
    """:func:`contention_from_times` before its clip to [1, 16]: for the spread of rounds
    (a median of factors clipped at 1 has no spread when most rounds read 1)."""
    lo, hi = min(cpu, device), max(cpu, device)
    return (both - (hi - lo)) / lo if lo > 0 else 1.0


def contention_from_times(both: float, cpu: float, device: float) -> float:
    """The model's contention factor from one share run together and each run alone.

    :func:`hpu.model.simulate` slows both shares by ``c`` while both compute
    and lets the longer one finish alone, so that together they take
    ``c·min + (max − min)``; solved for ``c`` (at least 1, at most 16).  The
    ratio ``both / max`` that this replaces understates ``c`` when the shares
    are unequal, and is what the model then misapplied.
    """
    lo, hi = min(cpu, device), max(cpu, device)
    if lo <= 0:
        return 1.0
    return float(min(16.0, max(1.0, (both - (hi - lo)) / lo)))


@dataclass(frozen=True)
class ContentionRound:
    """One round of the contention measurement: the three runs' wall seconds and their load.

    ``both``, ``cpu``, ``device``: wall seconds of the run with both sides at
    once and of each share alone (the levels above the split taken off);
    ``*_outside``: the share of the machine's cores other processes used during
    each run (:func:`hpu._load.outside_share`); ``*_ran``: of the time this
    process's threads were ready to run, the share they ran
    (:func:`hpu._load.run_share`); ``nan``: unknown.
    """

    both: float
    cpu: float
    device: float
    both_outside: float = math.nan
    cpu_outside: float = math.nan
    device_outside: float = math.nan
    both_ran: float = math.nan
    cpu_ran: float = math.nan
    device_ran: float = math.nan

    @property
    def outside(self) -> float:
        """The round's outside share: its runs' shares weighted by their wall times."""
        pairs = [(w, o) for w, o in ((self.both, self.both_outside), (self.cpu, self.cpu_outside),
                                     (self.device, self.device_outside)) if not math.isnan(o)]
        total = sum(w for w, _ in pairs)
        return sum(w * o for w, o in pairs) / total if pairs and total > 0 else math.nan

    @property
    def waits_known(self) -> bool:
        return not any(math.isnan(x) for x in (self.both_ran, self.cpu_ran, self.device_ran))

    def factor(self) -> float:
        """:func:`contention_from_times` of the wall times."""
        return contention_from_times(self.both, self.cpu, self.device)

    def spread_factors(self) -> tuple[float, float, float]:
        """The unclipped factors of the wall times, without the waits and corrected
        for the outside load (for the errors of :func:`contention_estimate`)."""
        def keep(o):
            return 1.0 if math.isnan(o) else max(1.0 - o, 0.05)

        return (_unclipped_contention(self.both, self.cpu, self.device),
                _unclipped_contention(*self.without_waits()),
                _unclipped_contention(self.both * keep(self.both_outside),
                                      self.cpu * keep(self.cpu_outside),
                                      self.device * keep(self.device_outside)))

    def without_waits(self) -> tuple[float, float, float]:
        """Each run's wall time times the share its threads ran of the time they were
        ready: the time without the waits for a core (see :func:`contention_estimate`)."""
        return (self.both * self.both_ran, self.cpu * self.cpu_ran, self.device * self.device_ran)

    def waits_factor(self) -> float:
        return contention_from_times(*self.without_waits())

    def corrected_factor(self) -> float:
        """The wall factor with the others' share of the cores taken off each run (see
        :func:`contention_estimate`)."""
        def keep(o):
            return 1.0 if math.isnan(o) else max(1.0 - o, 0.05)

        return contention_from_times(self.both * keep(self.both_outside),
                                     self.cpu * keep(self.cpu_outside),
                                     self.device * keep(self.device_outside))


def round_from_runs(runs) -> ContentionRound:
    """A :class:`ContentionRound` from its three runs, ``{"both" | "cpu" | "device":
    (wall seconds, outside share, {thread id: (seconds on a core, seconds waiting)})}``.

    Each share alone is scaled by the share of their ready time all our threads
    ran (alone, the threads of a run take turns: the caller's launches, the
    device's threads compute, and so on).  The run with both at once ends when
    its last side ends, so it is scaled by the share *that* side's threads ran:
    the threads active in the CPU share's run alone, or those active in the
    device share's run alone and not in the other (the device's own); the side
    that ended it is the one whose time alone, stretched by what its threads
    got, is the longer.  The share of all threads together was tried first:
    exact while our two threads wait alike (two busy loops), but beside other
    processes of unequal weight (a niced one) it read 1.12-1.29 where the
    side's own read 1.00-1.04 (same runs; the quiet factor is 1.01).
    """
    from hpu import _load

    def active(threads):
        return {t for t, (ran, waited) in threads.items() if ran + waited > 0}

    (both, both_out, both_th), (cpu, cpu_out, cpu_th), (dev, dev_out, dev_th) = (
        runs["both"], runs["cpu"], runs["device"])
    cpu_ran, dev_ran = _load.share_of(cpu_th), _load.share_of(dev_th)
    cpu_side = active(cpu_th)
    dev_side = active(dev_th) - cpu_side
    both_ran = math.nan
    if not (math.isnan(cpu_ran) or math.isnan(dev_ran)):
        # the side that ended the run: its share's time alone over the share its threads
        # got meanwhile (not simply the longer share: a side left with a fraction of a core
        # ends last however short its share)
        cpu_got, dev_got = _load.share_of(both_th, cpu_side), _load.share_of(both_th, dev_side)
        if math.isnan(cpu_got) or math.isnan(dev_got):
            both_ran = _load.share_of(both_th)
        else:
            both_ran = dev_got if dev * dev_ran / dev_got > cpu * cpu_ran / cpu_got else cpu_got
    return ContentionRound(both=both, cpu=cpu, device=dev, both_outside=both_out,
                           cpu_outside=cpu_out, device_outside=dev_out, both_ran=both_ran,
                           cpu_ran=cpu_ran, device_ran=dev_ran)


#: Above this share of the machine's cores used by other processes over a whole calibration,
#: :func:`calibrate` warns that the machine was busy.
BUSY_LOAD = 0.25


def contention_estimate(rounds, *, disjoint: bool, quiet: float = _stats.QUIET_LOAD,
                        min_quiet: int = 3) -> _stats.Estimate:
    """The contention factor from measured rounds, robust to other processes' load.

    Three cases, by the rounds' outside load (:func:`hpu._stats.quiet_rounds`)
    and by whether the two sides have cores of their own (``disjoint``: a CPU
    sub-device of N compute units beside at most ``cores − N`` Numba threads,
    :func:`disjoint_cores`); the estimate's ``basis`` says which:

    ``"quiet rounds"``
        at least ``min_quiet`` rounds ran with others using at most ``quiet``
        of the cores: the factor of their wall times, as before (lower
        quartiles of each run, :func:`contention_from_times`).
    ``"waits removed"``
        too few quiet rounds, sides on disjoint cores: each run's wall time
        times the share of their ready time its threads ran (for the run with
        both at once, the threads of the side that ended it:
        :func:`round_from_runs`).  With no more of our threads than cores, a
        wait for a core is another process's doing, while what can slow a
        side beside the other -- the memory system -- keeps a thread on its
        core; so this removes the load and keeps the contention.  Without it,
        on the 2-core VM (PoCL on ``cpu@1``, one Numba thread) the factor read
        1.01 quiet and 1.44-1.97 beside two busy processes (the kernel gives a
        lone thread 2/3 of a core there and each of two threads 1/2); with
        it, 1.00-1.03 beside two busy processes and 1.09 beside other test
        runs (the machine's load average 4-7 throughout; ``bench/README.md``).
    ``"loaded rounds"``
        too few quiet rounds and the sides share cores (or the waits are
        unknown): each run's wall time less the others' share of it
        (``wall · (1 − outside)``: what the run would have taken with the
        cores the others used, which holds when it can use every core, as
        runs on shared cores do), the error widened to at least half the
        change this made (a model of the kernel's sharing, not a measurement).

    The value is the factor of the runs' lower quartiles (the median of the
    per-round factors in the last case), the error the relative standard error
    of the median of the per-round factors before their clip at 1 (clipped, most
    rounds of a factor near 1 read exactly 1 and the error 0);
    ``outside_load`` the median outside share of all rounds.
    """
    rounds = list(rounds)
    if not rounds:
        raise ValueError("no contention rounds; expected at least one")
    known = [r.outside for r in rounds if not math.isnan(r.outside)]
    load = float(np.median(known)) if known else 0.0
    keep = _stats.quiet_rounds([r.outside for r in rounds], quiet=quiet,
                               min_keep=min(min_quiet, len(rounds)))
    if keep is not None:
        used = [rounds[i] for i in keep]
        value = contention_from_times(*(_stats.low_quantile([getattr(r, k) for r in used])
                                        for k in ("both", "cpu", "device")))
        err = _stats.median_rel_error([r.spread_factors()[0] for r in used])
        return _stats.Estimate(value, err, len(used), load, "quiet rounds")
    if disjoint and all(r.waits_known for r in rounds):
        times = [r.without_waits() for r in rounds]
        value = contention_from_times(*(_stats.low_quantile([t[k] for t in times])
                                        for k in range(3)))
        err = _stats.median_rel_error([r.spread_factors()[1] for r in rounds])
        return _stats.Estimate(value, err, len(rounds), load, "waits removed")
    corrected = [r.corrected_factor() for r in rounds]
    value = float(np.median(corrected))
    raw = float(np.median([r.factor() for r in rounds]))
    err = max(_stats.median_rel_error([r.spread_factors()[2] for r in rounds]),
              0.5 * abs(raw - value) / value)
    return _stats.Estimate(value, err, len(rounds), load, "loaded rounds")


def disjoint_cores(kind: str, sub_device_units: int | None, numba_threads: int,
                   cores: int) -> bool:
    """True when a CPU device and Numba's threads cannot need the same core.

    A sub-device of N compute units runs at most N work-items at a time; beside
    at most ``cores − N`` Numba threads, no core has two of our threads to run
    (the kernel may still move them, but never has to share one).  A whole CPU
    device (no fission) uses every core and always shares.
    """
    return (kind == "CPU" and sub_device_units is not None
            and numba_threads + sub_device_units <= cores)


def _measure_contention(sorter, device, n: int, settings: CalibrationSettings, rng, *,
                        disjoint: bool = False):
    """Slowdown when the CPU and a device on the same cores work at once (>= 1), an Estimate.

    A hybrid run of ``n`` keys split at :data:`CONTENTION_LEVEL` (``α = 0.5``:
    half the tasks on each side), less its levels above the split (which the
    CPU runs alone after the join), against each share run alone on its own
    side (a sort of ``n/2`` keys less its levels above the same tasks; every
    run with the same cut-off level, one below the split).  The three runs are
    taken in rounds in a rotating order, each run timed by wall clock, with
    the share of the cores other processes took meanwhile and the share of
    their ready time our threads ran (:class:`hpu._load.Meter`).  Rounds are
    added, up to the cap, while the factor's error is above the target or too
    few rounds were quiet (a loaded machine's load comes and goes: five rounds
    under load agreed within 1.5 % and five more minutes later read 20 % off); :func:`contention_estimate` makes the
    factor of them (quiet rounds; else, where ``disjoint``, the runs less
    their waits for a core; else the loaded rounds corrected for the load,
    less sure).
    """
    from hpu import _load

    half = n // 2
    y = CONTENTION_LEVEL

    def timed(device_kind, count, above, **options):
        keys = rng.integers(0, 2 * count, count).astype(np.int32)
        a, tmp = keys.copy(), np.empty_like(keys)
        w = time.perf_counter()
        run = sorter.run(a, tmp, 0, count, device=device_kind, cl_device=device, **options)
        t = time.perf_counter() - w
        if not np.array_equal(a, np.sort(keys)) or run.fallbacks:
            raise DeviceUnavailableError("the contention measurement sorted wrongly or fell back "
                                         f"({run.fallbacks}); choose another device with --device")
        top = sum(r.cpu_seconds + r.gpu_seconds for r in run.levels
                  if r.level < above and r.phase == "combine")
        return t - top

    # the same cut-off everywhere (level y+1 of the whole tree, level y of a half's), so that
    # each share alone runs exactly the tasks it runs beside the other
    sides = {"both": lambda: timed("hybrid", n, y, alpha=0.5, y=y, K=y + 1),
             "cpu": lambda: timed("cpu", half, y - 1, K=y),
             "device": lambda: timed("gpu", half, y - 1, K=y)}
    for f in sides.values():            # warm-ups
        f()
    rounds: list[ContentionRound] = []
    order = list(sides)

    def one_round():
        k = len(rounds) % len(order)
        got = {}
        for name in order[k:] + order[:k]:
            with _load.Meter() as meter:
                wall = sides[name]()
            got[name] = wall, meter.outside, meter.threads
        rounds.append(round_from_runs(got))

    def settled(est):
        # a loaded machine's rounds take the whole budget: its load comes and goes, and a
        # few rounds that agree with each other only say that the load held meanwhile
        return est.rel_error <= settings.target_rel_error and est.basis == "quiet rounds"

    _stats._check_budget(settings.repeats, settings.repeat_cap, settings.target_rel_error)
    # rounds spread over at least gamma_seconds, as γ's pairs are: a quick calibration's
    # rounds took half a second, caught one state of the VM's cores and agreed with each
    # other, and the whole device's contention read 1.32-2.53 between calibrations (± 1.5-7 %
    # each), enough to flip its plan once in four
    start = time.monotonic()
    most = max(settings.repeat_cap, 16 * settings.repeats)

    def young():
        return time.monotonic() - start < settings.gamma_seconds and len(rounds) < most

    for _ in range(settings.repeats):
        one_round()
    est = contention_estimate(rounds, disjoint=disjoint)
    while (len(rounds) < settings.repeat_cap and not settled(est)) or young():
        # batches of half the rounds so far, up to the cap (the budget while young)
        limit = most if young() else settings.repeat_cap
        for _ in range(min(limit - len(rounds), max(1, len(rounds) // 2))):
            one_round()
        est = contention_estimate(rounds, disjoint=disjoint)
    return est


# ------------------------------------------------------------------------ figures

def _figure():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise HpuError("plotting needs matplotlib, which is not installed; "
                       "install it with `pip install matplotlib`") from None
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _need(pairs, what: str, profile: Profile):
    if not pairs:
        raise HpuError(f"the profile for {profile.device!r} ({profile.source}) has no {what} sweep to "
                       "plot; run `hpu calibrate` to measure one")


def _finish(fig, path):
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def plot_g_sweep(profile: Profile, path=None):
    """004 Figure 5: time vs work-items of the element-wise sum, the knee (g) marked.

    Returns the matplotlib ``Figure``; writes it to ``path`` (PNG) when given.
    """
    _need(profile.sweeps.g, "g", profile)
    xs, reps = _stats.group_samples(profile.sweeps.g)
    med = _stats.point_medians(reps)
    fig = _figure()
    ax = fig.add_subplot()
    for x, r in zip(xs, reps):
        ax.scatter([x] * len(r), r, s=8, color="0.7", zorder=1)
    ax.plot(xs, med, "o-", color="C0", zorder=2, label="median time")
    ax.axvline(profile.g, color="C3", ls="--", label=f"g = {profile.g}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("work-items (each on a consecutive segment)")
    ax.set_ylabel("seconds")
    ax.set_title(f"element-wise sum of 2×{profile.sweeps.g_elements} float32 on {profile.device}",
                 fontsize=9)
    ax.legend()
    return _finish(fig, path)


def plot_gamma(profile: Profile, path=None):
    """004 Figure 6: CPU time / device time of a one-task merge vs size, γ marked."""
    _need(profile.sweeps.merge_cpu, "merge", profile)
    cx, creps = _stats.group_samples(profile.sweeps.merge_cpu)
    _, dreps = _stats.group_samples(profile.sweeps.merge_device)
    ratio = _stats.ratio_estimate(creps, dreps)
    fig = _figure()
    ax = fig.add_subplot()
    ax.plot(cx, ratio.ratios, "o-", color="C0", label="CPU time / device time")
    ax.axhline(profile.gamma, color="C3", ls="--",
               label=f"γ = {profile.gamma:.3g} (1/γ = {profile.inv_gamma:.3g})")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("elements merged by one task")
    ax.set_ylabel("γ (speed of one device work-item / one CPU core)")
    ax.set_title(f"one-task merge, {profile.device}", fontsize=9)
    ax.legend()
    return _finish(fig, path)


def plot_transfers(profile: Profile, path=None):
    """Copy time vs bytes in both directions, with the fitted λ + δ·bytes."""
    _need(profile.sweeps.h2d, "transfer", profile)
    fig = _figure()
    ax = fig.add_subplot()
    xs_all = [x for x, _ in profile.sweeps.h2d + profile.sweeps.d2h]
    bottom, top = max(1, min(xs_all)), max(xs_all)
    for name, pairs, color in (("host→device", profile.sweeps.h2d, "C0"),
                               ("device→host", profile.sweeps.d2h, "C1")):
        if not pairs:
            continue
        xs, reps = _stats.group_samples(pairs)
        ax.plot(xs, _stats.point_medians(reps), "o", color=color, label=name)
    grid = np.geomspace(bottom, top, 64)
    ax.plot(grid, profile.latency_s + profile.seconds_per_byte * grid, "-", color="C3",
            label=f"λ = {profile.latency_s * 1e6:.3g} µs, 1/δ = {_bandwidth(profile)}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes")
    ax.set_ylabel("seconds")
    ax.set_title(f"copies to and from {profile.device}", fontsize=9)
    ax.legend()
    return _finish(fig, path)


def _bandwidth(profile: Profile) -> str:
    if profile.seconds_per_byte <= 0:
        return "∞"
    return f"{1.0 / profile.seconds_per_byte / 1e9:.3g} GB/s"


def _registered_calibrate(device=None, **kwargs):
    return calibrate(device, **kwargs)  # looked up at call time (tests replace it)


_profile_module.set_calibrator(_registered_calibrate, FULL_SECONDS)
