"""Whole programs through the translator: helpers, arrays, loops, tuples, kernels.

Each test runs a task function as a range kernel (one work-item per task) on
every available back end, and the same task with Numba and plain Python for
t in the same range; the arrays must end up identical.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

from hpu._opencl._translate import BOOL, FLOAT32, FLOAT64, INT64, Array, translate
from ocl_support import FLOATS, backends, check_task, st

pytestmark = pytest.mark.skipif(not backends(), reason="no OpenCL back end can run here")
FAST = settings(max_examples=20, deadline=None)
I64 = Array(np.int64)

# --- helpers that mutate arrays and return values ----------------------------------------


def swap(a, i, j):
    t = a[i]
    a[i] = a[j]
    a[j] = t


def partition(a, lo, hi):
    """Lomuto partition of a[lo:hi]; returns the pivot's final index."""
    pivot = a[hi - 1]
    store = lo
    for i in range(lo, hi - 1):
        if a[i] < pivot:
            swap(a, i, store)
            store += 1
    swap(a, store, hi - 1)
    return store


def insertion_sort(a, lo, hi):
    for i in range(lo + 1, hi):
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


def sort_chunk(t, a, pivots, w):
    """Partition chunk t of width w, record the pivot index, sort both sides."""
    lo = t * w
    hi = min(lo + w, len(a))
    if hi - lo < 2:
        pivots[t] = lo
        return
    p = partition(a, lo, hi)
    pivots[t] = p
    insertion_sort(a, lo, p)
    insertion_sort(a, p + 1, hi)


@FAST
@given(hnp.arrays(np.int64, st.integers(1, 40), elements=st.integers(-50, 50)),
       st.integers(1, 9))
def test_helpers_that_mutate_arrays_and_return_values(a, w):
    chunks = -(-len(a) // w)
    ref = check_task(sort_chunk, (INT64, I64, I64, INT64),
                     {"a": a, "pivots": np.zeros(chunks, np.int64), "w": w}, 0, chunks)
    for t in range(chunks):   # and the result is right, independently of Numba
        lo, hi = t * w, min(t * w + w, len(a))
        assert list(ref["a"][lo:hi]) == sorted(a[lo:hi])


# --- tuple returns and unpacking ---------------------------------------------------------

def min_max_sum(a, lo, hi):
    mn = a[lo]
    mx = a[lo]
    s = 0.0
    for i in range(lo, hi):
        mn = min(mn, a[i])
        mx = max(mx, a[i])
        s += a[i]
    return mn, mx, s


def stats(t, a, out, w):
    lo = t * w
    mn, mx, s = min_max_sum(a, lo, lo + w)
    mx, mn = mn, mx          # swapping through a tuple
    out[3 * t] = mn
    out[3 * t + 1] = mx
    out[3 * t + 2] = s


@FAST
@given(hnp.arrays(np.float64, 12, elements=FLOATS))
def test_tuple_returns_and_unpacking(a):
    check_task(stats, (INT64, Array(np.float64), Array(np.float64), INT64),
               {"a": a, "out": np.zeros(12, np.float64), "w": 3}, 0, 4)
    prog = translate([(min_max_sum, (Array(np.float64), INT64, INT64))])
    assert "typedef struct" in prog.source
    assert prog.functions[("min_max_sum", (Array(np.float64), INT64, INT64))].return_type.items \
        == (FLOAT64, FLOAT64, FLOAT64)


# --- nested loops with break and continue --------------------------------------------------

def first_pair(t, a, out, target):
    """Index pair (i, j), i < j, with a[i] + a[j] == target + t; skips negative a[i]."""
    found_i = -1
    found_j = -1
    for i in range(len(a)):
        if a[i] < 0:
            continue
        j = i + 1
        while j < len(a):
            if a[i] + a[j] == target + t:
                found_j = j
                break
            j += 1
        if found_j >= 0:
            found_i = i
            break
    out[2 * t] = found_i
    out[2 * t + 1] = found_j


@FAST
@given(hnp.arrays(np.int64, st.integers(0, 15), elements=st.integers(-5, 10)),
       st.integers(-3, 12))
def test_nested_loops_with_break_and_continue(a, target):
    check_task(first_pair, (INT64, I64, I64, INT64),
               {"a": a, "out": np.zeros(8, np.int64), "target": target}, 0, 4)


# --- the loop variable after the loop ---------------------------------------------------------

def after_loop(t, out, n, step):
    i = -1
    for i in range(0, n, step):
        pass
    j = 100
    for j in range(n, n):     # never runs: j keeps its value
        j = -5
    k = 0
    while k < n:
        k += step
    out[3 * t] = i
    out[3 * t + 1] = j
    out[3 * t + 2] = k


@pytest.mark.parametrize("n,step", [(0, 1), (5, 1), (5, 2), (7, 3), (1, 5)])
def test_loop_variable_after_the_loop(n, step):
    ref = check_task(after_loop, (INT64, I64, INT64, INT64),
                     {"out": np.zeros(3, np.int64), "n": n, "step": step}, 0, 1)
    assert ref["out"][0] == (list(range(0, n, step)) or [-1])[-1]
    assert ref["out"][1] == 100


# --- kernels over a sub-range, narrow and float32 arrays, bool parameters ---------------------

def scale(t, src, dst, factor, negate):
    v = src[t] * factor
    if negate:
        v = -v
    dst[t] = v


def test_kernel_over_a_subrange_with_narrow_arrays_and_a_bool():
    src = np.array([1, -2, 3, 120, -128, 7, 0, 55], dtype=np.int8)
    dst = np.zeros(8, dtype=np.int16)
    ref = check_task(scale, (INT64, Array(np.int8), Array(np.int16), INT64, BOOL),
                     {"src": src, "dst": dst, "factor": 300, "negate": True}, 2, 7,
                     python=False)  # NumPy scalars (not Python) would reject int8 * 300
    assert list(ref["dst"][:2]) == [0, 0] and list(ref["dst"][7:]) == [0]
    prog = translate([(scale, (INT64, Array(np.int8), Array(np.int16), INT64, BOOL))],
                     kernels={"k": "scale"})
    kinds = [(p.name, p.kind, p.dtype.name) for p in prog.kernels["k"]]
    assert kinds == [("src", "array", "int8"), ("src_len", "length", "int64"),
                     ("dst", "array", "int16"), ("dst_len", "length", "int64"),
                     ("factor", "scalar", "int64"), ("negate", "scalar", "uint8"),
                     ("hpu_start", "start", "int64"), ("hpu_stop", "stop", "int64")]


def saxpy(t, x, y, a):
    y[t] = a * x[t] + y[t]


@FAST
@given(hnp.arrays(np.float32, 16, elements=st.floats(width=32)),
       hnp.arrays(np.float32, 16, elements=st.floats(width=32)),
       st.floats(width=32))
def test_float32_kernel_is_bit_exact(x, y, a):
    check_task(saxpy, (INT64, Array(np.float32), Array(np.float32), FLOAT32),
               {"x": x, "y": y, "a": np.float32(a)}, 0, 16, python=False)


# --- math -------------------------------------------------------------------------------------

def exact_math(t, x, out):
    v = x[t]
    out[8 * t] = math.sqrt(v)
    out[8 * t + 1] = math.floor(v) if math.isfinite(v) else 0
    out[8 * t + 2] = math.ceil(v) if math.isfinite(v) else 0
    out[8 * t + 3] = math.fabs(v)
    out[8 * t + 4] = math.copysign(2.0, v)
    out[8 * t + 5] = math.trunc(v) if math.isfinite(v) else 0
    out[8 * t + 6] = 1.0 if math.isnan(v) else (2.0 if math.isinf(v) else 3.0)
    out[8 * t + 7] = math.pi * math.e - math.inf if v > 1e308 else math.pi


@FAST
@given(hnp.arrays(np.float64, 6, elements=FLOATS.filter(lambda v: math.isnan(v) or
                                                          abs(v) < 9e18 or math.isinf(v))))
def test_exact_math_functions(x):
    check_task(exact_math, (INT64, Array(np.float64), Array(np.float64)),
               {"x": x, "out": np.zeros(48)}, 0, 6, python=False)


TRANSCENDENTAL = [math.exp, math.log, math.log2, math.log10, math.sin, math.cos, math.tan,
                  math.atan, math.sinh, math.tanh, math.expm1, math.log1p, math.erf]


def transcendental(t, x, out):
    v = x[t]
    out[13 * t] = math.exp(v)
    out[13 * t + 1] = math.log(v)
    out[13 * t + 2] = math.log2(v)
    out[13 * t + 3] = math.log10(v)
    out[13 * t + 4] = math.sin(v)
    out[13 * t + 5] = math.cos(v)
    out[13 * t + 6] = math.tan(v)
    out[13 * t + 7] = math.atan(v)
    out[13 * t + 8] = math.sinh(v)
    out[13 * t + 9] = math.tanh(v)
    out[13 * t + 10] = math.expm1(v)
    out[13 * t + 11] = math.log1p(v)
    out[13 * t + 12] = math.hypot(v, 3.0) + math.atan2(v, -2.0) + v ** 0.5


def test_transcendental_math_functions_within_a_few_ulps():
    # OpenCL allows these a few ulps of error (glibc's are not exact either): compare with
    # Python's math to 4 ulps; NaN/inf positions must agree exactly
    import numba
    x = np.array([0.5, 1.0, 2.0, 10.0, 1e-3, 0.75, 3.0, 1e5])
    jit = numba.njit(transcendental)
    ref = np.zeros(13 * len(x))
    for t in range(len(x)):
        jit(t, x, ref)
    prog = translate([(transcendental, (INT64, Array(np.float64), Array(np.float64)))],
                     kernels={"k": "transcendental"})
    for be in backends():
        got = be.run(prog, "k", {"x": x, "out": np.zeros(13 * len(x))}, {}, 0, len(x))["out"]
        ulps = np.abs(got.view(np.int64) - ref.view(np.int64))
        assert int(ulps.max()) <= 4, (be.name, got, ref)


# --- private arrays: an explicit stack ------------------------------------------------------

DEPTH = 32


def tree_sum(t, a, out):
    """Sum of a[lo:hi] for the t-th block, by explicit-stack recursion on halves."""
    stack = np.empty(DEPTH, np.int64)
    lo = t * 8
    hi = min(lo + 8, len(a))
    sp = 0
    stack[sp] = lo
    stack[sp + 1] = hi
    sp = 2
    total = 0
    while sp > 0:
        sp -= 2
        l = stack[sp]
        h = stack[sp + 1]
        if h - l <= 1:
            if h - l == 1:
                total += a[l]
            continue
        m = (l + h) // 2
        stack[sp] = l
        stack[sp + 1] = m
        stack[sp + 2] = m
        stack[sp + 3] = h
        sp += 4
    out[t] = total


@FAST
@given(hnp.arrays(np.int64, st.integers(1, 40), elements=st.integers(-2**40, 2**40)))
def test_private_array_as_an_explicit_stack(a):
    blocks = -(-len(a) // 8)
    ref = check_task(tree_sum, (INT64, I64, I64), {"a": a, "out": np.zeros(blocks, np.int64)},
                     0, blocks, private_arrays=True)
    assert list(ref["out"]) == [int(a[8 * b:8 * b + 8].sum()) for b in range(blocks)]
    assert f"long stack[{DEPTH}];" in translate(
        [(tree_sum, (INT64, I64, I64))], private_arrays=True).source


# --- a level of merge sort, as the decorator will generate it --------------------------------

def merge(a, tmp, lo, mid, hi):
    i = lo
    j = mid
    k = lo
    while i < mid and j < hi:
        if a[j] < a[i]:
            tmp[k] = a[j]
            j += 1
        else:
            tmp[k] = a[i]
            i += 1
        k += 1
    while i < mid:
        tmp[k] = a[i]
        i += 1
        k += 1
    while j < hi:
        tmp[k] = a[j]
        j += 1
        k += 1
    for k in range(lo, hi):
        a[k] = tmp[k]


def merge_level(t, a, tmp, width):
    lo = t * 2 * width
    mid = min(lo + width, len(a))
    hi = min(lo + 2 * width, len(a))
    merge(a, tmp, lo, mid, hi)


@FAST
@given(hnp.arrays(np.int32, st.integers(1, 70), elements=st.integers(-2**31, 2**31 - 1)))
def test_bottom_up_merge_sort_by_levels(a):
    x = a.copy()
    tmp = np.zeros_like(x)
    width = 1
    prog = translate([(merge_level, (INT64, Array(np.int32), Array(np.int32), INT64))],
                     kernels={"level": "merge_level"})
    results = {be.name: x.copy() for be in backends()}
    while width < len(x):
        tasks = -(-len(x) // (2 * width))
        for be in backends():
            results[be.name] = be.run(prog, "level", {"a": results[be.name], "tmp": tmp},
                                      {"width": width}, 0, tasks)["a"]
        width *= 2
    for name, got in results.items():
        assert list(got) == sorted(a.tolist()), name


# --- if / elif / else ----------------------------------------------------------------------

def classify(t, x, out):
    v = x[t]
    if v < -10:
        c = 0
    elif v < 0:
        c = 1
    elif v == 0:
        c = 2
    else:
        if v > 100:
            c = 4
        else:
            c = 3
    out[t] = c


def test_elif_chains():
    xs = np.array([-50, -10, -3, 0, 5, 100, 101])
    ref = check_task(classify, (INT64, I64, I64), {"x": xs, "out": np.zeros(7, np.int64)}, 0, 7)
    assert list(ref["out"]) == [0, 1, 1, 2, 3, 3, 4]
    src = translate([(classify, (INT64, I64, I64))]).source
    assert src.count("} else if (") == 2 and "elif v == 0: */" in src
