"""The caller's arrays as they were after any error (issue 11; :mod:`hpu._snapshot`).

Every device path (``cpu``, ``gpu``, ``hybrid`` at several splits, the forced-copy
``discrete`` device) runs a mergesort whose merge and leaves raise for certain data
values *after writing some elements*: ``ZeroDivisionError`` from ``// 0``, or
``IndexError`` in bounds-checked mode.  Hypothesis chooses the data, the value that
trips the error and how large a task must be to trip it (so the error comes at the
leaves, in a combine, or at the root).  Whenever the plain function raises, hpu must
raise the same class, naming the user's line, with every array equal bit for bit to
its copy from before the call; whenever it does not, hpu's result is the plain
function's.

The trap fires only in tasks whose ``lo`` is below ``edge``: the CPU's share of the
split (the OpenCL device has no error channel yet, so a trap there would compute
Numba's ``error_model="numpy"`` value instead of raising).  On ``device="gpu"`` the
device is made to fail (``HPU_INJECT_DEVICE_FAULT``) after it wrote some of its share,
so that the CPU's redo meets the trap.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from contract_support import builtin_profile, device_share, same_bits, split_ranges  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from hpu._opencl._backend import FAULT_ENV

pytestmark = pytest.mark.opencl

COMPILES = settings.get_profile("hpu-compiles")
BIG = 1 << 40  # an index past every array: IndexError in bounds-checked mode


def trap_merge(a, tmp, lo, mid, hi, bad, limit, edge):
    i = lo
    j = mid
    for k in range(lo, hi):
        if j >= hi or (i < mid and not a[j] < a[i]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    for k in range(lo, hi):
        a[k] = tmp[k]
        if tmp[k] == bad and hi - lo >= limit and lo < edge:
            a[k] = lo // (hi - hi)  # LINE_MERGE_TRAP


def trap_insertion(a, lo, hi, bad, limit, edge):
    for i in range(lo + 1, hi):
        v = a[i]
        j = i - 1
        while j >= lo and v < a[j]:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
        if v == bad and hi - lo >= limit and lo < edge:
            a[lo] = lo // (hi - hi)  # LINE_LEAF_TRAP


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def trap_sort(a, tmp, lo, hi, bad, limit, edge):
    if hi - lo <= 16:
        trap_insertion(a, lo, hi, bad, limit, edge)
        return
    mid = (lo + hi) // 2
    trap_sort(a, tmp, lo, mid, bad, limit, edge)
    trap_sort(a, tmp, mid, hi, bad, limit, edge)
    trap_merge(a, tmp, lo, mid, hi, bad, limit, edge)


def index_merge(a, tmp, lo, mid, hi, bad, limit, edge):
    i = lo
    j = mid
    for k in range(lo, hi):
        if j >= hi or (i < mid and not a[j] < a[i]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    for k in range(lo, hi):
        a[k] = tmp[k]
        if tmp[k] == bad and hi - lo >= limit and lo < edge:
            a[k] = tmp[k + BIG]  # LINE_INDEX_TRAP


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"), boundscheck=True)
def index_sort(a, tmp, lo, hi, bad, limit, edge):
    if hi - lo <= 16:
        for i in range(lo + 1, hi):
            v = a[i]
            j = i - 1
            while j >= lo and v < a[j]:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = v
        return
    mid = (lo + hi) // 2
    index_sort(a, tmp, lo, mid, bad, limit, edge)
    index_sort(a, tmp, mid, hi, bad, limit, edge)
    index_merge(a, tmp, lo, mid, hi, bad, limit, edge)


@hpu.divide_and_conquer(b=2, cost="n")
def add_levels(a, lo, hi):
    """No span: whole arrays go to the device; every task adds its depth's 1 to its keys."""
    if hi - lo <= 8:
        for i in range(lo, hi):
            a[i] = a[i] * 3 + 1
        return
    mid = (lo + hi) // 2
    add_levels(a, lo, mid)
    add_levels(a, mid, hi)
    for i in range(lo, hi):
        a[i] = a[i] + 1


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def zero_once(a, lo, hi, bad):
    """Raises on its first run over the data, not on a second: it zeroes what it read."""
    if hi - lo <= 1:
        v = a[lo]
        a[lo] = 0
        if v == bad:
            a[lo] = lo // (hi - hi)  # LINE_ONCE
        return
    mid = (lo + hi) // 2
    zero_once(a, lo, mid, bad)
    zero_once(a, mid, hi, bad)


def _line(tag: str) -> int:
    with open(__file__) as fh:
        for k, text in enumerate(fh, 1):
            if text.rstrip().endswith(f"# {tag}"):
                return k
    raise AssertionError(tag)


# (device options, fault injected on the device)
CONFIGS = [
    ({"device": "cpu"}, False),
    ({"device": "gpu"}, True),
    ({"device": "hybrid", "alpha": 0.5, "y": 2}, False),
    ({"device": "hybrid", "alpha": 0.25, "y": 3}, False),
    ({"device": "hybrid", "alpha": 0.0, "y": 2}, False),   # the CPU only above y
    ({"device": "hybrid", "alpha": 0.5, "y": 1}, True),
]


def _edge(opts, n: int, faulty: bool) -> int:
    """Tasks with ``lo`` below this are the CPU's (every task when the device fails)."""
    if opts["device"] == "cpu" or faulty:
        return n
    if opts["device"] == "gpu":
        return 0
    ranges = split_ranges(0, n, opts["y"])
    s, m = device_share(opts["alpha"], len(ranges))
    return n if s >= m else ranges[s][0]


def _keys(dtype):
    if np.dtype(dtype).kind == "f":
        return st.sampled_from([0.0, -0.0, 1.5, -2.25, np.nan, 7.0, 3.0])
    return st.integers(-6, 6)


def _plain(f, a, tmp, bad, limit, edge):
    """``(exception or None, a, tmp)`` of the plain function on copies."""
    pa, pt = a.copy(), tmp.copy()
    try:
        f.py_func(pa, pt, 0, pa.size, bad, limit, edge)
    except Exception as err:  # noqa: BLE001 - compared with hpu's
        return err, pa, pt
    return None, pa, pt


def _check(f, opts, faulty, dtype, data, tag):
    n = data.draw(st.integers(40, 700), label="n")
    a = np.array(data.draw(st.lists(_keys(dtype), min_size=n, max_size=n), label="a"), dtype)
    tmp = np.array(data.draw(st.lists(_keys(dtype), min_size=n, max_size=n), label="tmp"), dtype)
    bad = data.draw(st.sampled_from(sorted({float(v) for v in a if v == v}) + [99.0]),
                    label="bad")
    bad = int(bad) if np.dtype(dtype).kind == "i" else bad
    limit = data.draw(st.sampled_from([1, 17, 64, n // 2, n]), label="limit")
    edge = _edge(opts, n, faulty)
    err, pa, pt = _plain(f, a, tmp, bad, limit, edge)
    before_a, before_t = a.copy(), tmp.copy()
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        if faulty:
            mp.setenv(FAULT_ENV, "1")
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        if err is None:
            f.options(**opts)(a, tmp, 0, n, bad, limit, edge)
            assert same_bits(a, pa) and same_bits(tmp, pt)
            return
        with pytest.raises(type(err)) as got:
            f.options(**opts)(a, tmp, 0, n, bad, limit, edge)
    assert f"{__file__.rsplit('/', 1)[-1]}:" in str(got.value)
    # the trap's line, in a helper too (guide §9)
    assert any(f":{_line(t)}:" in str(got.value) for t in tag), str(got.value)
    assert same_bits(a, before_a) and same_bits(tmp, before_t)
    time.sleep(0.05)  # nothing writes after the exception left the call
    assert same_bits(a, before_a) and same_bits(tmp, before_t)


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
@pytest.mark.parametrize("opts,faulty", CONFIGS, ids=lambda c: str(c))
@settings(COMPILES, max_examples=12)
@given(data=st.data())
def test_a_zero_division_leaves_the_arrays_as_they_were(opts, faulty, dtype, data):
    _check(trap_sort, opts, faulty, dtype, data,
           ("LINE_MERGE_TRAP", "LINE_LEAF_TRAP"))


# the device is not bounds-checked: only splits where the device never meets the trap
@pytest.mark.parametrize("opts,faulty", [c for c in CONFIGS if not c[1]], ids=lambda c: str(c))
@settings(COMPILES, max_examples=8)
@given(data=st.data())
def test_an_index_error_in_bounds_mode_leaves_the_arrays_as_they_were(opts, faulty, data):
    _check(index_sort, opts, faulty, np.int64, data, ("LINE_INDEX_TRAP",))


@pytest.mark.parametrize("opts", [{"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2}],
                         ids=str)
def test_the_forced_copy_device_restores_too(discrete, opts, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "1")
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, 3000).astype(np.int32)
    tmp = rng.integers(-50, 50, 3000).astype(np.int32)
    bad = int(a[10])
    before_a, before_t = a.copy(), tmp.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        with pytest.raises(ZeroDivisionError):
            trap_sort.options(**opts)(a, tmp, 0, a.size, bad, 1, a.size)
    assert discrete and same_bits(a, before_a) and same_bits(tmp, before_t)


def test_an_interrupt_while_the_device_runs_restores_and_nothing_writes_afterwards(monkeypatch):
    """Ctrl-C (any BaseException) arriving in the CPU's share while the device still runs
    its own: the device is stopped, then the arrays are put back."""
    from hpu._cpu import CpuBackend

    original = CpuBackend.leaf

    def leaf(self, level, start, stop, shared):
        original(self, level, start, stop, shared)
        raise KeyboardInterrupt

    monkeypatch.setattr(CpuBackend, "leaf", leaf)
    from algorithms.mergesort import mergesort

    rng = np.random.default_rng(6)
    a = rng.integers(0, 1 << 30, 1 << 18).astype(np.int32)
    tmp = np.zeros_like(a)
    before_a, before_t = a.copy(), tmp.copy()
    with pytest.raises(KeyboardInterrupt):
        mergesort.options(device="hybrid", alpha=0.25, y=2)(a, tmp, 0, a.size)
    assert same_bits(a, before_a) and same_bits(tmp, before_t)
    time.sleep(0.3)
    assert same_bits(a, before_a) and same_bits(tmp, before_t)


@pytest.mark.parametrize("discrete_device", [False, True], ids=["unified", "discrete"])
@pytest.mark.parametrize("opts", [{"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2}],
                         ids=str)
def test_a_device_fault_is_redone_exactly_from_the_one_snapshot(opts, discrete_device, request,
                                                                monkeypatch):
    if discrete_device:
        request.getfixturevalue("discrete")
    monkeypatch.setenv(FAULT_ENV, "1")
    from algorithms.mergesort import mergesort

    a = np.random.default_rng(7).integers(-1000, 1000, 5000).astype(np.int32)
    want = np.sort(a, kind="stable")
    with pytest.warns(hpu.HpuPerformanceWarning, match="redone on the CPU"):
        run = mergesort.options(**opts).run(a, np.empty_like(a), 0, a.size)
    assert same_bits(a, want) and len(run.fallbacks) == 1 and run.gpu_tasks == 0


@pytest.mark.parametrize("keep", [True, False], ids=["keep", "nokeep"])
@pytest.mark.parametrize("discrete_device", [False, True], ids=["unified", "discrete"])
@pytest.mark.parametrize("alpha,y", [(0.5, 2), (0.25, 3), (0.0, 1)])
def test_a_device_fault_without_a_span_is_redone_whole_and_exactly(alpha, y, discrete_device,
                                                                  keep, request, monkeypatch):
    """Whole arrays went to the device: the CPU's share wrote the same arrays, so the
    arrays are restored whole and levels K..y redone whole on the CPU."""
    if discrete_device:
        request.getfixturevalue("discrete")
    monkeypatch.setenv(FAULT_ENV, "1")
    a = np.random.default_rng(8).integers(-1000, 1000, 4000).astype(np.int64)
    want = a.copy()
    add_levels.py_func(want, 0, want.size)
    with pytest.warns(hpu.HpuPerformanceWarning, match="redone on the CPU"):
        run = add_levels.options(device="hybrid", alpha=alpha, y=y, keep_inputs=keep).run(
            a, 0, a.size)
    assert same_bits(a, want) and len(run.fallbacks) == 1


@pytest.mark.parametrize("opts", [{"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2}],
                         ids=str)
def test_keep_inputs_false_still_redoes_a_device_working_in_place_exactly(opts, monkeypatch):
    """No call snapshot: the device sharing the host's memory keeps its share's originals."""
    from algorithms.mergesort import mergesort

    monkeypatch.setenv(FAULT_ENV, "1")
    a = np.random.default_rng(9).integers(-1000, 1000, 5000).astype(np.int32)
    want = np.sort(a, kind="stable")
    with pytest.warns(hpu.HpuPerformanceWarning, match="redone on the CPU"):
        run = mergesort.options(keep_inputs=False, **opts).run(a, np.empty_like(a), 0, a.size)
    assert same_bits(a, want) and len(run.fallbacks) == 1


def test_keep_inputs_false_still_redoes_a_device_that_never_wrote_the_callers_arrays(
        discrete, monkeypatch):
    """A device with its own memory writes back only when it succeeded: its failure is redone."""
    from algorithms.mergesort import mergesort

    monkeypatch.setenv(FAULT_ENV, "1")
    a = np.random.default_rng(10).integers(-1000, 1000, 5000).astype(np.int32)
    want = np.sort(a, kind="stable")
    with pytest.warns(hpu.HpuPerformanceWarning, match="redone on the CPU"):
        run = mergesort.options(device="hybrid", alpha=0.5, y=2, keep_inputs=False).run(
            a, np.empty_like(a), 0, a.size)
    assert same_bits(a, want) and len(run.fallbacks) == 1


def test_keep_inputs_false_raises_the_users_error_with_the_arrays_as_far_as_they_got():
    a = np.arange(200, 0, -1).astype(np.int32)
    tmp = np.zeros_like(a)
    with pytest.raises(ZeroDivisionError):
        trap_sort.options(device="cpu", keep_inputs=False)(a, tmp, 0, a.size, 150, 1, a.size)
    assert not np.array_equal(a, np.arange(200, 0, -1))   # partially processed, as documented


def test_keep_inputs_must_be_a_bool():
    with pytest.raises(TypeError, match="keep_inputs='no' must be True"):
        trap_sort.options(keep_inputs="no")


def test_the_snapshot_copies_only_what_the_function_writes_and_only_its_span():
    from hpu._snapshot import Snapshot

    a = np.arange(100, dtype=np.int64)
    program, values = trap_sort._program_for(a, np.zeros_like(a), 10, 30, 0, 1, 100)
    snap = Snapshot.take(program, values)
    assert set(snap.copies) == {"a", "tmp"} and snap.nbytes == 2 * 20 * 8
    a[:] = -1
    snap.restore((15, 20))
    assert list(a[14:21]) == [-1, 15, 16, 17, 18, 19, -1]
    snap.restore()
    assert list(a[9:31]) == [-1] + list(range(10, 30)) + [-1]
    assert Snapshot.take(program, values, keep=False).nbytes == 0

    from algorithms.maxsubarray import max_subarray_sum
    from algorithms.sum import dc_sum

    x = np.arange(50, dtype=np.int64)
    program, values = max_subarray_sum._program_for(x, 0, x.size)
    assert Snapshot.take(program, values).copies == {}  # read only: nothing copied
    program, values = dc_sum._program_for(x, 0, x.size)
    assert set(Snapshot.take(program, values).copies) == {"a"}


@pytest.mark.parametrize("opts", [{"device": "cpu", "K": 4},
                                  {"device": "hybrid", "alpha": 0.75, "y": 2, "K": 4}], ids=str)
def test_an_error_a_task_does_not_repeat_alone_is_found_from_the_snapshot(opts):
    """The task's rerun alone (hpu._guard) sees the data its first run changed and does not
    fail: the call reruns the plain compiled function from the restored arrays instead."""
    a = np.arange(1, 4097, dtype=np.int64)
    before = a.copy()
    with pytest.raises(ZeroDivisionError, match=f"test_safety_restore.py:{_line('LINE_ONCE')}:"):
        zero_once.options(**opts)(a, 0, a.size, 1000)
    assert same_bits(a, before)
