"""hpu._kinds: Python's int where Numba unified it with an infinite sentinel's float."""
from __future__ import annotations

import math
import warnings
from math import inf

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import hpu
from hpu._kinds import int_results, restore

EPS = 1e-9


def kind(v):
    if isinstance(v, tuple):
        return tuple(kind(e) for e in v)
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    return type(v).__name__


# ------------------------------------------------------------------ functions people write

def crossing(left, right):
    best_l = -math.inf
    s = 0
    for i in range(len(left) - 1, -1, -1):
        s += left[i]
        best_l = max(best_l, s)
    best_r = -math.inf
    s = 0
    for i in range(len(right)):
        s += right[i]
        best_r = max(best_r, s)
    return best_l + best_r


@hpu.divide_and_conquer
def max_subarray(a):
    if len(a) == 0:
        return float("-inf")
    if len(a) == 1:
        return a[0]
    mid = len(a) // 2
    return max(max_subarray(a[:mid]), max_subarray(a[mid:]), crossing(a[:mid], a[mid:]))


@hpu.divide_and_conquer
def min_max(a):
    if len(a) == 0:
        return inf, -inf
    if len(a) == 1:
        return a[0], a[0]
    mid = len(a) // 2
    lo1, hi1 = min_max(a[:mid])
    lo2, hi2 = min_max(a[mid:])
    return min(lo1, lo2), max(hi1, hi2)


@hpu.divide_and_conquer
def best_with_count(a, lo, hi):
    if hi - lo == 1:
        return a[lo], 1
    if hi <= lo:
        return -np.inf, 0
    m = (lo + hi) // 2
    b1, c1 = best_with_count(a, lo, m)
    b2, c2 = best_with_count(a, m, hi)
    return max(b1, b2), c1 + c2


@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2)])
@settings(max_examples=10, deadline=None)
@given(x=arrays(np.int64, st.integers(0, 300), elements=st.integers(-10**6, 10**6)))
def test_an_int_arrays_answer_is_an_int_as_in_python(device, alpha, y, x):
    opts = dict(device=device, alpha=alpha, y=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        for f in (max_subarray, min_max):
            want = f.py_func(x.copy())
            run = f.run(x.copy(), **opts)
            got = run.value
            assert got == want and kind(got) == kind(want), (f.__name__, got, want)
            # compiled (breadth-first, on the device where asked), not the plain function
            assert run.fallbacks == [] and (device == "cpu" or len(x) < 2 or run.gpu_tasks)
        if len(x):
            want = best_with_count.py_func(x, 0, len(x))
            got = best_with_count.run(x, 0, len(x), **opts).value
            assert got == want and kind(got) == kind(want)


@pytest.mark.filterwarnings("ignore::hpu.HpuPerformanceWarning")
def test_floats_stay_floats_and_the_sentinel_stays_a_float():
    x = np.array([1.0, -2.0, 3.0])
    assert kind(max_subarray(x)) == "float" and max_subarray(x) == 3.0
    got = max_subarray.run(np.zeros(0, np.int64), device="cpu").value
    assert got == -math.inf and kind(got) == "float"
    assert min_max.sequential(np.array([4, 2, 9])) == (2, 9)
    assert kind(min_max.sequential(np.array([4, 2, 9]))) == ("int", "int")
    assert kind(min_max([5, 1])) == ("int", "int")          # a list of ints
    assert kind(min_max([5.0, 1])) == ("float", "float")    # one float: floats, as Python


# ------------------------------------------------------------------ the analysis

def zero_float(a):
    if len(a) == 0:
        return 0.0                  # a finite float: Python's 0.0 must stay 0.0
    return max(zero_float(a[1:]), a[0])


def divides(a):
    if len(a) <= 1:
        return -inf if len(a) == 0 else a[0]
    return (divides(a[:1]) + divides(a[1:])) / 2


def mod_of_sentinel(a):
    if len(a) <= 1:
        return -inf if len(a) == 0 else a[0]
    return max(mod_of_sentinel(a[:1]), mod_of_sentinel(a[1:])) % 7   # 3 % inf is 3.0


def floor_of_lengths(a):
    if len(a) <= 1:
        return -inf if len(a) == 0 else a[0]
    m = len(a) // 2 + len(a) % 2
    return max(floor_of_lengths(a[:m]), floor_of_lengths(a[m:]))


def float_array(a):
    if len(a) <= 1:
        return -inf if len(a) == 0 else a[0]
    out = np.zeros(len(a))
    return max(float_array(a[:1]), out[0])


def int_array(a):
    if len(a) <= 1:
        return -inf if len(a) == 0 else a[0]
    out = np.zeros(len(a), np.int64)
    return max(int_array(a[:1]), out[0])


def epsilon(a):
    if len(a) <= 1:
        return -inf if len(a) == 0 else a[0]
    return max(epsilon(a[:1]), epsilon(a[1:])) - EPS


def no_sentinel(a):
    if len(a) <= 1:
        return 0 if len(a) == 0 else a[0]
    return no_sentinel(a[:1]) + no_sentinel(a[1:])


def library(a):
    if len(a) <= 1:
        return -inf if len(a) == 0 else a[0]
    return max(library(a[:1]), math.sqrt(len(a)))


@pytest.mark.parametrize("fn, expected", [
    (max_subarray.py_func, True), (min_max.py_func, True), (best_with_count.py_func, True),
    (zero_float, False), (divides, False), (mod_of_sentinel, False), (floor_of_lengths, True),
    (float_array, False), (int_array, True), (epsilon, False), (no_sentinel, False),
    (library, False)])
def test_which_functions_keep_floats_to_sentinels(fn, expected):
    assert int_results(fn) is expected


@settings(max_examples=60, deadline=None)
@given(x=st.lists(st.integers(-50, 50), max_size=8))
def test_where_the_analysis_says_int_python_gives_no_finite_float(x):
    """The claim :mod:`hpu._kinds` rests on, checked on the plain functions it accepts."""
    a = np.array(x, dtype=np.int64)
    for fn in (max_subarray.py_func, min_max.py_func, floor_of_lengths, int_array):
        v = fn(a)
        for e in (v if isinstance(v, tuple) else (v,)):
            assert kind(e) == "int" or not math.isfinite(e), (fn.__name__, x, v)


def test_restore_leaves_float_arguments_and_non_integral_values_alone():
    assert restore(3.0, (np.array([1.5]),), {}) == 3.0
    assert kind(restore(3.0, (np.array([1.5]),), {})) == "float"
    assert kind(restore(3.5, (np.array([1]),), {})) == "float"
    assert kind(restore((3.0, -inf, 2), (np.array([1]), 0, 1), {})) == ("int", "float", "int")
    assert kind(restore(3.0, ([1, 2],), {})) == "int"
    assert kind(restore(3.0, ([1, 2.0],), {})) == "float"


@hpu.divide_and_conquer(b=2, cost="n")
def _max_with_options(a, lo, hi):
    if hi <= lo:
        return float("-inf")
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    left = _max_with_options(a, lo, mid)
    right = _max_with_options(a, mid, hi)
    if left > right:
        return left
    return right


def test_a_decorator_with_options_keeps_an_int_answer_an_int():
    """``@hpu.divide_and_conquer(b=2)`` is a call above the function: it is not the
    function's code, and the int answer is an int as with the bare decorator."""
    assert int_results(_max_with_options.py_func)
    x = np.array([3, 9, 2, 33, 5], np.int64)
    for device in ("cpu", "gpu", "hybrid"):
        got = _max_with_options.run(x, 0, 5, device=device).value
        assert type(got) is int and got == 33, device


@pytest.mark.parametrize("device", ["cpu", "gpu", "sequential"])
def test_ints_past_2_53_are_exact_through_the_plain_function(device):
    x = 1_780_000_000_000_000_000 + np.random.default_rng(3).integers(0, 10**12, 501)
    want = min_max.py_func(x.copy())
    with pytest.warns(hpu.HpuPerformanceWarning, match="2\\*\\*53"):
        got = (min_max.sequential(x.copy()) if device == "sequential"
               else min_max.run(x.copy(), device=device).value)
    assert got == want and kind(got) == kind(want)
    assert got[1] == int(x.max())                     # not rounded to float64
    small = x - 1_780_000_000_000_000_000             # within 2**53: compiled, as before
    assert min_max.run(small, device=device if device != "sequential" else "cpu"
                       ).fallbacks == []


def merge3_by_sentinel(x, y, z):
    """A three-way merge that finds the smallest front against ``np.inf``: ints beside an
    infinite float, so the analysis asks for Python's ints back."""
    out = np.empty(len(x) + len(y) + len(z), x.dtype)
    i = j = k = 0
    for t in range(len(out)):
        best = 0
        v = np.inf
        if i < len(x) and x[i] < v:
            v = x[i]
            best = 1
        if j < len(y) and y[j] < v:
            v = y[j]
            best = 2
        if k < len(z) and z[k] < v:
            best = 0
        if best == 0:
            out[t] = z[k]
            k += 1
        elif best == 1:
            out[t] = x[i]
            i += 1
        else:
            out[t] = y[j]
            j += 1
    return out


@hpu.divide_and_conquer
def sort3_by_sentinel(a):
    if len(a) <= 1:
        return a.copy()
    t = (len(a) + 2) // 3
    return merge3_by_sentinel(sort3_by_sentinel(a[:t]), sort3_by_sentinel(a[t:2 * t]),
                              sort3_by_sentinel(a[2 * t:]))


@pytest.mark.parametrize("device, split", [("gpu", {}), ("hybrid", {"alpha": 0.5, "y": 1})])
def test_only_the_callers_ints_are_checked_against_2_53(device, split, monkeypatch):
    """The device form runs on hpu's buffers too, whose np.empty elements are whatever the
    memory held (ints past 2**53 as often as not): they sent a call on [5, 3, 1] to the
    plain function, "given ints beyond 2**53".  Only the caller's arguments are checked."""
    import hpu._kinds as kinds

    seen = []
    real = kinds.past_float
    monkeypatch.setattr(kinds, "past_float", lambda a, k: seen.append(a) or real(a, k))
    assert int_results(sort3_by_sentinel.py_func)
    x = np.array([5, 3, 1, 2**40, -7])
    run = sort3_by_sentinel.run(x, device=device, **split)
    assert run.device == device and run.fallbacks == []
    assert list(run.value) == sorted(x.tolist()) == list(sort3_by_sentinel.py_func(x))
    assert len(seen) == 1 and seen[0][0] is x
    big = np.array([2**60, 3, -2**62])
    with pytest.warns(hpu.HpuPerformanceWarning, match="beyond 2"):
        run = sort3_by_sentinel.run(big, device=device, **split)
    assert run.device == "python" and list(run.value) == sorted(big.tolist())



def sum_or_zero(a, lo, hi):
    if lo > hi:
        return 0
    if lo == hi:
        return a[lo]
    mid = (lo + hi) // 2
    return sum_or_zero(a, lo, mid) + sum_or_zero(a, mid + 1, hi)


def total_and_count(a):
    if len(a) == 0:
        return 0, 0
    if len(a) == 1:
        return a[0], 1
    m = len(a) // 2
    s1, c1 = total_and_count(a[:m])
    s2, c2 = total_and_count(a[m:])
    return s1 + s2, c1 + c2


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_an_empty_float_array_gives_the_int_the_function_returns(device):
    """``return 0`` beside ``return a[lo]``: Numba types both float64 for a float array;
    for an empty one Python returns the int 0 (and ``(0, 0)``), and so does hpu; a
    non-empty one gives floats as before."""
    f = hpu.divide_and_conquer(sum_or_zero).options(device=device)
    g = hpu.divide_and_conquer(total_and_count).options(device=device)
    empty = np.array([])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        got = f(empty, 0, -1)
        pair = g(empty)
        full = f(np.array([1.5, 2.0, -0.5]), 0, 2)
    assert got == 0 and type(got) is int
    assert pair == (0, 0) and all(type(v) is int for v in pair)
    assert full == 3.0 and type(full) is float
