"""Hybrid execution when things go wrong, and what it moves: faults, bad input, threads,
the device solver's stack, the generated OpenCL C, and the bytes of each transfer.

Nothing lost (issue 5, Build 6): a device that fails mid-run, or no usable
OpenCL at all, still gives the correct result, with one warning and the reason
in ``run.fallbacks``; bad arrays are refused with an error naming the
parameter, before anything is touched.  Threads (Build 7): one decorated
function called from four Python threads at once.  Transfers: zero-copy on
devices that share the host's memory (PoCL here), exact ``span`` slices on
discrete ones (simulated by turning the backend's ``unified`` flag off).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from contract_support import (Config, builtin_profile, check_report,  # noqa: F401
                              device_share, inversions_reference, level_sizes, same_bits,
                              split_ranges)

import hpu
import hpu._opencl._device as device_module
from algorithms.inversions import inversions
from algorithms.maxsubarray import max_subarray_sum
from algorithms.mergesort import mergesort
from algorithms.sum import dc_sum
from hpu import HpuPerformanceWarning
from hpu._opencl._backend import FAULT_ENV, OpenCLBackend

pytestmark = pytest.mark.opencl

N = 50_000
FUNCTIONS = {"mergesort": mergesort, "inversions": inversions}
RUNS = [Config("hybrid", 0.5, 3), Config("gpu")]


def data(n=N, seed=0, dtype=np.int64):
    return np.random.default_rng(seed).integers(-10**6, 10**6, n).astype(dtype)


def expected_value(name, x):
    """What the function returns on ``x``: nothing, or the independently counted inversions."""
    return None if name == "mergesort" else inversions_reference(x)


def run_checked(name, config, x, **extra):
    """Run ``name`` on a copy of ``x``; assert the array ends sorted and the value is right."""
    a = x.copy()
    run = FUNCTIONS[name].run(a, np.zeros_like(a), 0, a.size, **config.options, **extra)
    assert same_bits(a, np.sort(x, kind="stable"))
    assert run.value == expected_value(name, x)
    return run


def hpu_warnings(caught):
    return [w for w in caught if issubclass(w.category, HpuPerformanceWarning)]


# ------------------------------------------------------------------ a device fault

@pytest.mark.parametrize("config", RUNS, ids=str)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_device_fault_is_redone_on_the_cpu(name, config, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "1")
    x = data(seed=1)
    with pytest.warns(HpuPerformanceWarning) as caught:
        run = run_checked(name, config, x)
    assert len(hpu_warnings(caught)) == 1
    assert len(run.fallbacks) == 1
    reason = run.fallbacks[0]
    assert "device failed" in reason and FAULT_ENV in reason, reason
    assert str(hpu_warnings(caught)[0].message).endswith(reason)
    # the report says the CPU solved every leaf, the device's share included
    assert run.gpu_tasks == 0 and run.cpu_tasks == level_sizes(run)[run.K]


def test_without_the_fault_switch_the_same_runs_use_the_device(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error", HpuPerformanceWarning)
        run = run_checked("mergesort", Config("hybrid", 0.5, 3), data(seed=1))
    assert run.fallbacks == [] and run.gpu_tasks > 0


# ------------------------------------------------------------------ no usable OpenCL

@pytest.fixture
def no_opencl(monkeypatch):
    def unavailable(spec=None):
        raise hpu.DeviceUnavailableError("no OpenCL device found (test)")

    # run_on_devices imports select_device from this module at each call
    monkeypatch.setattr(device_module, "select_device", unavailable)


@pytest.mark.parametrize("split", [{"alpha": 0.5, "y": 3}, {}], ids=["given", "model"])
def test_without_opencl_the_hybrid_runs_on_the_cpu_and_says_so(no_opencl, split):
    x = data(seed=2)
    a = x.copy()
    with pytest.warns(HpuPerformanceWarning) as caught:
        run = inversions.run(a, np.zeros_like(a), 0, a.size, **split)  # device="hybrid"
    assert same_bits(a, np.sort(x)) and run.value == expected_value("inversions", x)
    assert len(hpu_warnings(caught)) == 1
    assert run.device == "hybrid"
    assert len(run.fallbacks) == 1 and "no OpenCL device found (test)" in run.fallbacks[0]
    assert str(caught[0].message).endswith(run.fallbacks[0])
    assert run.gpu_tasks == 0 and run.transfers == ()
    assert all(r.gpu_tasks == 0 for r in run.levels)


def test_without_opencl_a_plain_call_still_sorts(no_opencl):
    x = data(seed=3)
    a = x.copy()
    with pytest.warns(HpuPerformanceWarning):
        assert mergesort(a, np.zeros_like(a), 0, a.size) is None
    assert same_bits(a, np.sort(x))


def test_without_opencl_device_gpu_raises_and_touches_nothing(no_opencl):
    x = data(n=5000, seed=4)
    a, tmp = x.copy(), np.zeros_like(x)
    with pytest.raises(hpu.DeviceUnavailableError, match="no OpenCL device found"):
        mergesort.run(a, tmp, 0, a.size, device="gpu")
    assert same_bits(a, x) and not tmp.any()


# ------------------------------------------------------------------ bad arrays

def _read_only(x):
    x = x.copy()
    x.setflags(write=False)
    return x


BAD = {
    # name: (make a, make tmp, parameter named, exception, words in the message)
    "read-only a": (_read_only, np.zeros_like, "a", ValueError, "read-only"),
    "read-only tmp": (np.copy, lambda x: _read_only(np.zeros_like(x)), "tmp", ValueError,
                      "read-only"),
}

#: arrays the plain function takes and the breadth-first path does not lay out: the
#: function compiled as written (or the plain function) answers, warned
#: (tests/test_decorator.py::test_arrays_the_breadth_first_path_does_not_take_...)
AS_WRITTEN = {
    "strided a": (lambda x: np.repeat(x, 2)[::2], np.zeros_like, "a", "ascontiguousarray"),
    "strided tmp": (np.copy, lambda x: np.zeros(2 * x.size, x.dtype)[::2], "tmp",
                    "ascontiguousarray"),
    "float16 a": (lambda x: (x % 1000).astype(np.float16), np.zeros_like, "a", "astype"),
}


@pytest.mark.parametrize("device", ["hybrid", "gpu"])
@pytest.mark.parametrize("case", sorted(AS_WRITTEN))
def test_arrays_it_does_not_lay_out_sort_as_the_plain_function(case, device):
    make_a, make_tmp, param, fix = AS_WRITTEN[case]
    x = data(n=1000, seed=5)
    a, tmp = make_a(x), make_tmp(x)
    want = make_a(x)
    mergesort.py_func(want, make_tmp(x), 0, x.size)
    with pytest.warns(hpu.HpuPerformanceWarning) as caught:
        mergesort.run(a, tmp, 0, x.size, **Config(device, 0.5, 2).options)
    assert same_bits(a, want)
    said = " ".join(str(w.message) for w in caught)
    assert f"as {param!r}" in said and fix in said, said


@pytest.mark.parametrize("device", ["hybrid", "gpu"])
@pytest.mark.parametrize("bad", sorted(BAD))
def test_bad_arrays_are_refused_naming_the_parameter_and_left_alone(bad, device):
    make_a, make_tmp, param, error, words = BAD[bad]
    x = data(n=1000, seed=5)
    a, tmp = make_a(x), make_tmp(x)
    a_before, tmp_before = a.copy(), tmp.copy()
    options = Config(device, 0.5, 2).options
    with pytest.raises(error) as info:
        mergesort.run(a, tmp, 0, x.size, **options)
    message = str(info.value)
    assert f"parameter {param!r}" in message and words in message, message
    assert same_bits(a, a_before) and same_bits(tmp, tmp_before)


_MISMATCH_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from algorithms.mergesort import mergesort

    x = np.random.default_rng(6).integers(-1000, 1000, 4000).astype(np.int64)
    cases = {
        "tmp shorter than the span": lambda a: (a, np.zeros(100, a.dtype), 0, a.size),
        "hi beyond a": lambda a: (a, np.zeros_like(a), 0, a.size + 100),
        "negative lo": lambda a: (a, np.zeros_like(a), -5, a.size),
    }
    out = {}
    for device, options in [("hybrid", {"alpha": 0.5, "y": 2}), ("gpu", {})]:
        for name, make in cases.items():
            args = make(x.copy())
            before = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
            try:
                mergesort.run(*args, device=device, **options)
                error = None
            except (ValueError, IndexError) as err:
                error = str(err)
            untouched = all(np.array_equal(v, b) for v, b in zip(args, before)
                            if isinstance(v, np.ndarray))
            out[f"{device}: {name}"] = [error, untouched]
            print(json.dumps(out), flush=True)
""")


def test_mismatched_arrays_and_bounds_are_refused_before_anything_runs():
    # in a child process: today these index out of bounds, which can crash the interpreter
    child = subprocess.run([sys.executable, "-c", _MISMATCH_CHILD], capture_output=True,
                           text=True, timeout=240, env={**os.environ, "HPU_NO_AUTOCALIBRATE": "1"})
    lines = child.stdout.strip().splitlines()
    assert child.returncode == 0, (child.returncode, child.stderr[-2000:])
    results = json.loads(lines[-1])
    assert len(results) == 6
    for case, (error, untouched) in results.items():
        assert error is not None, f"{case}: no error"
        named = {"tmp": "'tmp'", "hi": "'hi'", "negative": "'lo'"}
        assert any(word in case and p in error for word, p in named.items()), (case, error)
        assert untouched, case


@pytest.mark.parametrize("config", [Config("gpu"), Config("hybrid", 0.5, 3)], ids=str)
def test_a_read_only_array_the_function_only_reads_runs_on_the_device(config):
    x = data(n=20000, seed=8)
    x.setflags(write=False)
    run = max_subarray_sum.run(x, 0, x.size, **config.options)
    values = x.tolist()
    best = cur = values[0]
    for v in values[1:]:
        cur = max(v, cur + v)
        best = max(best, cur)
    assert run.value[0] == sum(values) and run.value[3] == best
    check_report(run, config)  # no fallbacks, the device did its share


# ------------------------------------------------------------------ threads

@pytest.mark.parametrize("config", [Config("cpu"), Config("hybrid", 0.5, 2), Config("gpu")],
                         ids=str)
def test_four_threads_call_the_same_function_at_once(config):
    start = threading.Barrier(4)

    def job(seed):
        x = data(n=5000 + 997 * seed, seed=100 + seed)
        a = x.copy()
        start.wait(timeout=120)  # the first four jobs enter hpu together
        run = mergesort.run(a, np.zeros_like(a), 0, a.size, **config.options)
        return x, a, run

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(job, range(8)))
    for x, a, run in results:
        assert same_bits(a, np.sort(x, kind="stable"))
        check_report(run, config)


# ------------------------------------------------------------------ the device's stack

@pytest.mark.parametrize("config", RUNS, ids=str)
def test_a_device_stack_overflow_is_redone_on_the_cpu_and_said(config):
    x = data(seed=9)
    a = x.copy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # K = 5: leaves of ~1 600 keys recurse deeper than 2 frames.  (The device's K
        # can leave leaves under mergesort's 16-key base case: on an H100, K = 12 did.)
        run = mergesort.run(a, np.zeros_like(a), 0, a.size, depth=2, K=5, **config.options)
    assert same_bits(a, np.sort(x, kind="stable"))
    assert len(run.fallbacks) == 1 and "depth=" in run.fallbacks[0]
    assert run.gpu_tasks == 0
    assert len(hpu_warnings(caught)) == 1


def test_a_deep_enough_device_stack_sorts():
    x = data(seed=9)
    run = run_checked("mergesort", Config("gpu"), x, depth=16)
    assert run.fallbacks == [] and run.gpu_tasks > 0


# ------------------------------------------------------------------ generated OpenCL C

def test_opencl_source_is_commented_with_the_users_lines_and_deterministic():
    x = np.zeros(8, np.int32)
    src = mergesort.opencl_source(x, np.zeros_like(x), 0, x.size)
    assert "__kernel" in src
    assert "__global int *a" in src  # the arrays' dtype, as OpenCL C
    comments = [line for line in src.splitlines() if "/*" in line]
    for user_line in ("merge(a, tmp, lo, mid, hi)", "insertion_sort(a, lo, hi)",
                      "mid = (lo + hi) // 2", "tmp[k] = a[j]"):
        assert any(user_line in c for c in comments), user_line
    assert any("void hpu_merge" in line for line in src.splitlines())  # the helper, translated
    assert mergesort.opencl_source(x, np.zeros_like(x), 0, x.size) == src
    big = np.zeros(1000, np.int32)  # the size does not enter the code, only the types
    assert mergesort.opencl_source(big, np.zeros_like(big), 3, 999) == src
    doubles = np.zeros(8, np.float64)
    other = mergesort.opencl_source(doubles, np.zeros_like(doubles), 0, 8)
    assert "__global double *a" in other and other != src


# ------------------------------------------------------------------ transfers

def test_a_device_sharing_host_memory_is_used_zero_copy():
    device = device_module.select_device(None)
    import pyopencl as cl

    if not (device.host_unified_memory or device.type & cl.device_type.CPU):
        pytest.skip(f"{device.name} has its own memory: no zero-copy here")
    run = run_checked("inversions", Config("hybrid", 0.5, 3), data(seed=10))
    assert run.gpu_tasks > 0
    assert {t.direction: t.bytes for t in run.transfers} == {"host->device": 0,
                                                             "device->host": 0}


def _level_array_bytes(program, sizes, y, K):
    """Bytes of the level arrays the device reads at levels y..K (parameters; offsets and
    carried names on the levels that were divided)."""
    per_task = sum(np.dtype(t).itemsize for t in program.types.varying)
    per_divided = sum(np.dtype(t).itemsize for t in program.types.carried)
    total = 0
    for i in range(y, K + 1):
        m = sizes[i]
        total += m * per_task
        if i < K:
            total += m * per_divided + (m + 1) * 8
    return total


@pytest.mark.parametrize("config", RUNS, ids=str)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_discrete_device_gets_exactly_its_span_each_way(name, config, discrete):
    x = data(seed=11)
    run = run_checked(name, config, x)
    assert len(discrete) == 1 and run.fallbacks == []
    s, m = check_report(run, config)
    assert s < m
    # the device's share of level y, from the function's own splitting rule
    lo = min(a for a, _ in split_ranges(0, x.size, run.y)[s:])
    hi = max(b for _, b in split_ranges(0, x.size, run.y)[s:])
    assert len(split_ranges(0, x.size, run.y)) == m
    span_bytes = 2 * (hi - lo) * x.itemsize  # a and tmp
    program, _ = FUNCTIONS[name]._program_for(x, np.zeros_like(x), 0, x.size)
    sizes = level_sizes(run)
    levels = _level_array_bytes(program, sizes, run.y, run.K)
    results = (m - s) * sum(np.dtype(t).itemsize for t in program.types.results)
    moved = {t.direction: t.bytes for t in run.transfers}
    assert moved == {"host->device": span_bytes + levels, "device->host": span_bytes + results}
    if config.device == "gpu":
        assert (lo, hi) == (0, x.size)
    else:
        assert 0 < lo < hi == x.size and span_bytes < 2 * x.nbytes


def test_a_discrete_device_fault_restores_its_span_and_redoes_it(discrete, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "1")
    with pytest.warns(HpuPerformanceWarning):
        run = run_checked("inversions", Config("hybrid", 0.5, 3), data(seed=12))
    assert len(run.fallbacks) == 1 and run.gpu_tasks == 0


def test_a_sum_on_a_discrete_device_writes_back_only_its_share(discrete):
    # dc_sum keeps partial sums in the array itself: the CPU's part must survive the download
    x = data(seed=13)
    a = x.copy()
    run = dc_sum.run(a, 0, a.size, device="hybrid", alpha=0.5, y=3)
    want = x.copy()
    dc_sum.py_func(want, 0, want.size)
    assert same_bits(a, want) and run.value == int(np.sum(x))
    s, m = device_share(0.5, level_sizes(run)[run.y])
    assert 0 < s < m and run.gpu_tasks > 0
    assert math.isclose(run.alpha, 0.5)


def _negate(a, lo, hi):
    if hi - lo == 1:
        a[lo] = -a[lo]
        return
    mid = (lo + hi) // 2
    _negate(a, lo, mid)
    _negate(a, mid, hi)


@pytest.mark.parametrize("alpha, y", [(None, None), (0.5, 2)])
def test_a_discrete_device_writes_back_a_sign_change_of_zero(discrete, alpha, y):
    """Whole arrays come back with the elements the device changed: -0.0 written over 0.0
    is a change (equal values, other bits), a NaN left alone is not."""
    f = hpu.divide_and_conquer(_negate)
    x = np.zeros(100_000)
    x[7] = np.nan
    opts = {"device": "gpu"} if alpha is None else {"device": "hybrid", "alpha": alpha, "y": y}
    run = f.run(x, 0, x.size, **opts)
    want = np.zeros(100_000)
    want[7] = np.nan
    _negate(want, 0, want.size)
    assert run.gpu_tasks > 0 and discrete
    assert same_bits(x, want) and np.signbit(x).all()          # (-NaN too)


def _halves_sum(a, lo, hi):
    if hi - lo <= 1:
        return a[lo] if hi > lo else 0
    mid = (lo + hi) // 2
    return _halves_sum(a, lo, mid) + _halves_sum(a, mid, hi)


def test_the_models_cpu_only_warning_names_the_callers_line():
    """However the function is called -- ``f(x)``, ``f.run(x)``, ``f.options(...)(x)`` -- the
    warning that the model keeps a small problem on the CPU points at the caller's line, not
    into hpu."""
    import hpu._hybrid as hybrid

    f = hpu.divide_and_conquer(_halves_sum)
    x = np.arange(64, dtype=np.int64)
    for call in (lambda: f(x, 0, 64), lambda: f.run(x, 0, 64),
                 lambda: f.options(device="hybrid")(x, 0, 64)):
        hybrid._told_cpu_only.discard("_halves_sum")       # it is said once per function
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        told = [w for w in caught if "keeps everything on the CPU" in str(w.message)]
        assert told and all(w.filename == __file__ for w in told), \
            [(w.filename, w.lineno) for w in caught]


def _lomuto_partition(a, lo, hi):
    pivot = a[hi]
    i = lo - 1
    for j in range(lo, hi):
        if a[j] <= pivot:
            i += 1
            a[i], a[j] = a[j], a[i]
    a[i + 1], a[hi] = a[hi], a[i + 1]
    return i + 1


def _lomuto(a, lo, hi):
    if lo < hi:
        p = _lomuto_partition(a, lo, hi)
        _lomuto(a, lo, p - 1)
        _lomuto(a, p + 1, hi)


@pytest.mark.opencl
@pytest.mark.parametrize("copies", [False, True], ids=["unified", "discrete"])
def test_a_partition_is_redone_from_the_share_as_the_levels_above_left_it(copies, request):
    """A quicksort's divide writes the array: when the device's subtrees overflow its stack,
    its share is redone on the CPU from the data the partitions above it left, not from the
    call's originals (the redo runs no divide: it sorted only the ends' swaps back, wrongly);
    a device with its own memory downloads what differs from that same state."""
    if copies:
        request.getfixturevalue("discrete")
    f = hpu.divide_and_conquer(_lomuto)
    rng = np.random.default_rng(3)
    nan_keys = np.arange(600.0)                   # sorted: as deep as reversed keys
    nan_keys[rng.integers(0, 599, 40)] = np.nan
    for x in (np.arange(500, dtype=np.int64)[::-1].copy(), np.arange(400.0), nan_keys):
        want = x.copy()
        _lomuto(want, 0, len(want) - 1)
        for opts in ({"device": "gpu"}, {"device": "hybrid", "alpha": 0.0, "y": 1}):
            a = x.copy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", HpuPerformanceWarning)
                run = f.run(a, 0, len(a) - 1, **opts)
            assert any("deeper than the device solver" in r for r in run.fallbacks), opts
            assert np.array_equal(a, want, equal_nan=True), (opts, x[:5])


@pytest.mark.opencl
def test_a_device_with_its_own_memory_downloads_what_changed_since_the_partitions(discrete):
    """Whole arrays on a device with its own memory: it downloads the elements that differ
    from the data it was given.  A quicksort's partitions above the split had already
    changed that data; compared with the call's originals instead, an element the device
    put back to its original value stayed as the partition left it (thousands wrong)."""
    f = hpu.divide_and_conquer(_lomuto)
    for seed in (8, 28, 0):
        x = np.random.default_rng(seed).integers(0, 50, 3000)
        want = x.copy()
        _lomuto(want, 0, len(want) - 1)
        a = x.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            run = f.run(a, 0, len(a) - 1, device="hybrid", alpha=0.5, y=2, K=5, depth=512)
        assert run.gpu_tasks > 0 and run.fallbacks == []
        assert np.array_equal(a, want), (seed, int((a != want).sum()))
