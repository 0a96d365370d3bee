"""Writes several tasks of one level may make to the same element (hpu._races): found when
the function is decorated, and every run of it one task, depth first, as Python runs it --
the plain function's answer on every device, never a lost update."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from algorithms import inversions, maxsubarray, mergesort, mergesort3
from algorithms import sum as sum_alg
from hpu._errors import HpuPerformanceWarning
from hpu._races import shared_writes


@hpu.divide_and_conquer
def histogram(a, h, lo, hi):
    if hi - lo == 1:
        h[a[lo]] += 1   # LINE_HIST
        return
    mid = (lo + hi) // 2
    histogram(a, h, lo, mid)
    histogram(a, h, mid, hi)


@hpu.divide_and_conquer
def count_leaves(a, cnt, lo, hi):
    if hi - lo <= 2:
        cnt[0] += 1
        return a[lo]
    mid = (lo + hi) // 2
    return count_leaves(a, cnt, lo, mid) + count_leaves(a, cnt, mid, hi)


def _bump(h, v):
    h[v] = h[v] + 1


def _store(out, k, v):
    out[k] = v


def _half_cleaners(a, lo, n):
    """A bitonic merge's pass: compare-exchange at distance m in blocks of 2m (a stepped
    loop, its step a width)."""
    m = n // 2
    for start in range(lo, lo + n, 2 * m):
        for i in range(start, start + m):
            if a[i] > a[i + m]:
                a[i], a[i + m] = a[i + m], a[i]


@hpu.divide_and_conquer
def stepped_passes(a, lo, n):
    """Both halves, then the pass over the block (a bitonic sorter's shape)."""
    if n <= 1:
        return
    m = n // 2
    stepped_passes(a, lo, m)
    stepped_passes(a, lo + m, m)
    _half_cleaners(a, lo, n)


def _cases():
    """(function, the lines flagged): written as users write them."""
    def via_helper(a, h, lo, hi):
        if hi - lo == 1:
            v = a[lo]
            _bump(h, v)
            return
        mid = (lo + hi) // 2
        via_helper(a, h, lo, mid)
        via_helper(a, h, mid, hi)

    def best_so_far(a, best, lo, hi):
        if hi - lo == 1:
            best[0] = max(best[0], a[lo])
            return
        mid = (lo + hi) // 2
        best_so_far(a, best, lo, mid)
        best_so_far(a, best, mid, hi)

    def last_slot(a, out, n, lo, hi):
        if hi - lo == 1:
            out[n - 1] = a[lo]
            return
        mid = (lo + hi) // 2
        last_slot(a, out, n, lo, mid)
        last_slot(a, out, n, mid, hi)

    def cursor(a, out, pos, lo, hi):
        if hi - lo == 1:
            out[pos[0]] = a[lo]
            pos[0] += 1
            return
        mid = (lo + hi) // 2
        cursor(a, out, pos, lo, mid)
        cursor(a, out, pos, mid, hi)

    # -- each task's own elements: never flagged
    def own_loop(a, tmp, lo, hi):
        if hi - lo <= 1:
            return
        mid = (lo + hi) // 2
        own_loop(a, tmp, lo, mid)
        own_loop(a, tmp, mid, hi)
        i, j, k = lo, mid, lo
        while k < hi:
            if j >= hi or (i < mid and a[i] <= a[j]):
                tmp[k] = a[i]
                i += 1
            else:
                tmp[k] = a[j]
                j += 1
            k += 1
        for k in range(lo, hi):
            a[k] = tmp[k]

    def partition(a, lo, hi):
        if hi - lo <= 1:
            return
        p = a[hi - 1]
        i = lo - 1
        for j in range(lo, hi - 1):
            if a[j] <= p:
                i += 1
                a[i], a[j] = a[j], a[i]
        a[i + 1], a[hi - 1] = a[hi - 1], a[i + 1]
        partition(a, lo, i + 1)
        partition(a, i + 2, hi)

    def tree_build(a, tree, node, lo, hi):
        if hi - lo == 1:
            tree[node] = a[lo]
            return
        mid = (lo + hi) // 2
        tree_build(a, tree, 2 * node, lo, mid)
        tree_build(a, tree, 2 * node + 1, mid, hi)
        tree[node] = tree[2 * node] + tree[2 * node + 1]

    def helper_store(a, out, lo, hi):
        if hi - lo == 1:
            _store(out, lo, a[lo] * 2)
            return
        mid = (lo + hi) // 2
        helper_store(a, out, lo, mid)
        helper_store(a, out, mid, hi)

    def clrs_closed(A, tmp, p, r):
        """Closed ranges (p, q), (q + 1, r): apart, not overlapping."""
        if p < r:
            q = (p + r) // 2
            clrs_closed(A, tmp, p, q)
            clrs_closed(A, tmp, q + 1, r)
            for k in range(p, r + 1):
                tmp[k] = A[k]
            i, j = p, q + 1
            for k in range(p, r + 1):
                if j > r or (i <= q and tmp[i] <= tmp[j]):
                    A[k] = tmp[i]
                    i += 1
                else:
                    A[k] = tmp[j]
                    j += 1

    def running(a, lo, hi):
        """A running sum over the leaves: each reads what its left neighbour wrote."""
        if hi - lo == 1:
            if lo > 0:
                a[lo] += a[lo - 1]
            return
        mid = (lo + hi) // 2
        running(a, lo, mid)
        running(a, mid, hi)

    def bubble(a, lo, hi):
        """A bubble pass by leaves: each swaps with its right neighbour's element."""
        if hi - lo == 1:
            if lo + 1 < len(a) and a[lo] > a[lo + 1]:
                a[lo], a[lo + 1] = a[lo + 1], a[lo]
            return
        mid = (lo + hi) // 2
        bubble(a, lo, mid)
        bubble(a, mid, hi)

    def smooth_out(a, out, lo, hi):
        """Reads its neighbours in an array no task writes: its own."""
        if hi - lo == 1:
            out[lo] = a[lo] + a[lo - 1] + a[lo + 1]
            return
        mid = (lo + hi) // 2
        smooth_out(a, out, lo, mid)
        smooth_out(a, out, mid, hi)

    def block_last(a, owner, lo, hi):
        if hi - lo == 1:
            if a[lo] > 0:
                owner[lo // 64] = lo
            return
        mid = (lo + hi) // 2
        block_last(a, owner, lo, mid)
        block_last(a, owner, mid, hi)

    def clip_store(a, out, lo, hi):
        if hi - lo == 1:
            out[min(lo, 5)] += a[lo]
            out[max(lo, hi - 1)] += 0          # (both positions: its own)
            return
        mid = lo + (hi - lo) // 2
        clip_store(a, out, lo, mid)
        clip_store(a, out, mid, hi)

    def by_width(a, out, lo, hi):
        if hi - lo == 1:
            out[hi - lo] += a[lo]
            return
        mid = (lo + hi) >> 1
        by_width(a, out, lo, mid)
        by_width(a, out, mid, hi)

    def mirror(a, lo, hi):
        """Writes the mirrored element: another task's, which it reads."""
        if hi - lo == 1:
            a[len(a) - 1 - lo] = a[lo] * 2 + 1
            return
        mid = (lo + hi) // 2
        mirror(a, lo, mid)
        mirror(a, mid, hi)

    return [(running, ["a[lo - 1] (reads a neighbouring task's element)"]),
            (mirror, ["a[len(a) - 1 - lo] = a[lo] * 2 + 1"]),
            (bubble, ["a[lo + 1] (reads a neighbouring task's element)",   # the test
                      "a[lo + 1] (reads a neighbouring task's element)",   # the swap
                      "a[lo + 1] (writes a neighbouring task's element)"]),
            (smooth_out, []), (block_last, ["owner[lo // 64] = lo"]),
            (clip_store, ["out[min(lo, 5)] += a[lo]"]), (by_width, ["out[hi - lo] += a[lo]"]),
            (clrs_closed, []), (via_helper, ["h[v] = h[v] + 1"]), (best_so_far, ["best[0] = max(best[0], a[lo])"]),
            (last_slot, ["out[n - 1] = a[lo]"]),
            (cursor, ["out[pos[0]] = a[lo]", "pos[0] += 1"]),
            (histogram.py_func, ["h[a[lo]] += 1"]), (count_leaves.py_func, ["cnt[0] += 1"]),
            (own_loop, []), (partition, []), (tree_build, []), (helper_store, []),
            (stepped_passes.py_func, [])]


@pytest.mark.parametrize("fn, flagged", _cases(), ids=lambda v: getattr(v, "__name__", ""))
def test_which_writes_are_shared(fn, flagged):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dc = hpu.divide_and_conquer(fn)
    found = shared_writes(dc._parse(), dc._resolve())
    assert sorted(w.text for w in found) == sorted(flagged)
    assert (dc._shared_writes is None) == (not flagged)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_stepped_loop_over_the_tasks_own_block_runs_in_parallel(device):
    """`for start in range(lo, lo + n, 2 * m)`: the loop's step is a width, not whose the
    elements are -- it was taken for one, so the sorter ran as one task with advice to
    "return a count"; its tasks now run side by side, the answer Python's."""
    assert hpu.divide_and_conquer(stepped_passes.py_func)._shared_writes is None
    for n in (1, 2, 64, 1024):
        x = np.random.default_rng(n).integers(0, 100, n)
        want = x.copy()
        stepped_passes.py_func(want, 0, n)
        y = x.copy()
        opts = {"alpha": 0.5, "y": 2} if device == "hybrid" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            run = stepped_passes.options(device=device, **opts).run(y, 0, n)
        assert np.array_equal(y, want), (device, n)
        assert "other tasks may write" not in (run.reason or ""), run.reason
        assert device == "cpu" or n < 64 or len(run.level_sizes) > 1, run


@pytest.mark.parametrize("dc", [mergesort.mergesort, mergesort3.mergesort3, sum_alg.dc_sum,
                                inversions.inversions, maxsubarray.max_subarray_sum],
                         ids=lambda d: d.__name__)
def test_no_shipped_algorithm_is_flagged(dc):
    assert dc._shared_writes is None


PATHS = [("cpu", {}), ("gpu", {}), ("hybrid", {"alpha": 0.5, "y": 2}), ("hybrid", {})]


@pytest.mark.parametrize("device, kw", PATHS, ids=str)
@settings(max_examples=3, deadline=None)
@given(n=st.integers(1, 1 << 16), bins=st.integers(1, 9), seed=st.integers(0, 99))
def test_shared_updates_are_never_lost(device, kw, n, bins, seed):
    a = np.random.default_rng(seed).integers(0, bins, n)
    want = np.zeros(bins, np.int64)
    histogram.py_func(a, want, 0, n)
    h = np.zeros(bins, np.int64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = histogram.run(a, h, 0, n, device=device, **kw)
    assert np.array_equal(h, want) and h.sum() == n
    assert run.K == 0 and run.cpu_tasks == 1 and run.gpu_tasks == 0
    assert "h[a[lo]] += 1" in run.reason
    warned = [w for w in caught if issubclass(w.category, HpuPerformanceWarning)]
    assert bool(warned) == (device != "cpu")
    cnt, ref = np.zeros(1, np.int64), np.zeros(1, np.int64)
    assert count_leaves.options(device=device, **kw)(a, cnt, 0, n) == \
        count_leaves.py_func(a, ref, 0, n)
    assert cnt[0] == ref[0]


def test_the_plan_says_one_task_and_why():
    a = np.zeros(1000, np.int64)
    plan = histogram.plan(a, np.zeros(1, np.int64), 0, 1000, device="hybrid", alpha=0.5, y=2)
    assert plan.cutoff_level == 0 and not plan.uses_device
    assert "writes into an element other tasks may write too" in plan.reason
    assert "`h[a[lo]] += 1`" in plan.reason


# ------------------------------------------------ the slice form and functional functions
@hpu.divide_and_conquer
def count_halves(a, cnt):
    """The slice form: ``a`` is the task's own, ``cnt`` every task's."""
    if len(a) == 1:
        cnt[0] += 1
        return a[0]
    m = len(a) // 2
    return count_halves(a[:m], cnt) + count_halves(a[m:], cnt)


def _merge(left, right):
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


@hpu.divide_and_conquer
def counted_sort(a, calls):
    """A functional mergesort that counts its calls (compiled as written, fanned out)."""
    calls[0] += 1
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return _merge(counted_sort(a[:m], calls), counted_sort(a[m:], calls))


def _marked_sort(a, marks):
    """Each task marks its own slice of ``marks``: not shared."""
    if len(a) <= 1:
        marks[0] = 1
        return a.copy()
    m = len(a) // 2
    return _merge(_marked_sort(a[:m], marks[:m]), _marked_sort(a[m:], marks[m:]))


def test_the_functional_reading():
    from hpu._races import shared_writes_of

    assert [w.text for w in shared_writes_of(counted_sort.py_func)] == ["calls[0] += 1"]
    assert shared_writes_of(_marked_sort) == ()
    assert shared_writes_of(_merge) == ()          # no recursion: nothing shared
    assert "`cnt[0] += 1`" in count_halves._shared_writes


@pytest.mark.parametrize("device, kw", PATHS, ids=str)
def test_the_slice_and_functional_forms_lose_no_update(device, kw):
    a = np.random.default_rng(7).integers(-50, 50, 1 << 15)
    for f, want in ((count_halves, int(a.sum())), (counted_sort, np.sort(a))):
        mine, ref = np.zeros(1, np.int64), np.zeros(1, np.int64)
        f.py_func(a, ref)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = f.run(a, mine, device=device, **kw)
        assert np.array_equal(run.value, want) and mine[0] == ref[0], (f.__name__, mine, ref)
        assert run.gpu_tasks == 0 and run.cpu_tasks == 1, f.__name__
    plan = counted_sort.plan(a, np.zeros(1, np.int64), device=device, **kw)
    assert plan.K == 0 and "`calls[0] += 1`" in plan.reason


@hpu.divide_and_conquer
def overlapping(a, lo, hi):
    """Sibling ranges that share the midpoint's element: both subtrees write it."""
    if hi - lo <= 2:
        for i in range(lo, hi):
            a[i] += 1
        return
    mid = (lo + hi) // 2
    overlapping(a, lo, mid + 1)
    overlapping(a, mid, hi)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_overlapping_sibling_ranges_run_as_one_task(device):
    assert "overlapping(a, lo, mid + 1) and overlapping(a, mid, hi) overlap" in \
        overlapping._shared_writes
    assert "make the calls' ranges apart" in overlapping._shared_writes
    x = np.zeros(1 << 15, np.int64)
    ref = x.copy()
    overlapping.py_func(ref, 0, ref.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = overlapping.run(x, 0, x.size, device=device, **(
            {"alpha": 0.5, "y": 2} if device == "hybrid" else {}))
    assert np.array_equal(x, ref) and run.K == 0


@hpu.divide_and_conquer(b=2, cost="1")
def spread_max(a, lo, hi):
    """Overlapping ranges again, with a store `a[lo] = ...` in the function itself: the
    store's index read as an assignment of `lo` hid the overlap (a wrong array on cpu)."""
    if hi - lo <= 2:
        if a[lo] < a[hi - 1]:
            a[lo] = a[hi - 1]
        return
    mid = (lo + hi) // 2
    spread_max(a, lo, mid + 1)
    spread_max(a, mid, hi)
    if a[lo] < a[mid]:
        a[lo] = a[mid]


@pytest.mark.parametrize("device, kw", [("cpu", {}), ("gpu", {}),
                                        ("hybrid", {"alpha": 0.5, "y": 2})])
def test_overlap_is_seen_beside_a_store_and_the_run_carries_the_plans_reason(device, kw):
    assert "spread_max(a, lo, mid + 1) and spread_max(a, mid, hi) overlap" in \
        spread_max._shared_writes
    x = np.random.default_rng(65539).integers(-50, 50, 65539)
    ref = x.copy()
    spread_max.py_func(ref, 0, ref.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = spread_max.plan(x, 0, x.size, device=device, **kw)
        run = spread_max.run(x, 0, x.size, device=device, **kw)
    assert np.array_equal(x, ref) and run.K == 0
    # the plan that ran is the plan printed, reason and all (it said "device='cpu': ...")
    assert run.plan == plan and run.plan.reason == plan.reason == run.reason


def _running(a, lo, hi):
    if hi - lo == 1:
        if lo > 0:
            a[lo] += a[lo - 1]
        return
    mid = (lo + hi) // 2
    _running(a, lo, mid)
    _running(a, mid, hi)


def _shift_into(a, out, lo, hi):
    if hi - lo == 1:
        out[lo] = a[lo] + (a[lo - 1] if lo > 0 else 0)
        return
    mid = (lo + hi) // 2
    _shift_into(a, out, lo, mid)
    _shift_into(a, out, mid, hi)


@pytest.mark.parametrize("device, kw", PATHS, ids=str)
@pytest.mark.parametrize("n", [3, 100, 20001])
def test_a_leaf_that_reads_its_neighbour_runs_in_pythons_order(device, kw, n):
    f = hpu.divide_and_conquer(_running)
    x = np.random.default_rng(n).integers(-20, 20, n)
    got = x.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = f.run(got, 0, n, device=device, **kw)
    assert np.array_equal(got, np.cumsum(x))
    assert run.K == 0 and "neighbour" in run.reason


@pytest.mark.parametrize("device, kw", PATHS, ids=str)
def test_arrays_that_share_memory_run_in_pythons_order(device, kw):
    f = hpu.divide_and_conquer(_shift_into)
    base = np.random.default_rng(5).integers(-50, 50, 2001)
    for make in (lambda x: (x, x, 0, len(x)), lambda x: (x[1:], x[:-1], 0, len(x) - 1)):
        want = base.copy()
        _shift_into(*make(want))
        got = base.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = f.run(*make(got), device=device, **kw)
        assert np.array_equal(got, want)
        assert run.K == 0 and "share memory" in run.reason
        assert "share memory" in f.plan(*make(got), device=device, **kw).reason
    apart = base.copy()                 # separate arrays: parallel as before
    out = np.zeros_like(apart)
    run = f.run(apart, out, 0, len(apart), device="cpu")
    assert run.reason is None or "share memory" not in run.reason


@hpu.divide_and_conquer(b=2, cost="1")
def bump_next(a, lo, hi):
    """Half-open calls, and a combine writing `a[hi]`: the next task's element."""
    if hi - lo == 1:
        a[lo] = a[lo] * 2
        return
    mid = (lo + hi) // 2
    bump_next(a, lo, mid)
    bump_next(a, mid, hi)
    if hi < len(a):
        a[hi] += 1


@pytest.mark.parametrize("device, kw", [("cpu", {}), ("gpu", {}),
                                        ("hybrid", {"alpha": 0.5, "y": 2})])
@pytest.mark.parametrize("n", [7, 65539])
def test_a_write_past_the_tasks_range_runs_in_pythons_order(device, kw, n):
    """The children cover [lo, hi): `a[hi] += 1` is the neighbouring task's element, which
    side by side (or breadth first) it wrote before this combine did (a wrong array on every
    device); it now runs as one task, as Python does."""
    assert "writes outside the task's range [lo, hi)" in bump_next._shared_writes
    x = np.arange(n, dtype=np.int64) % 10
    ref = x.copy()
    bump_next.py_func(ref, 0, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = bump_next.run(x, 0, n, device=device, **kw)
    assert np.array_equal(x, ref) and run.K == 0
