"""Whole-array reductions (hpu/_reductions.py): ``a.sum()``, ``np.max(a)``, ``min(a)``... in
a base case, a combine or a helper give the plain function's answer on every path (CPU,
device, hybrid at several alpha and y), NaN and empty arrays included, Hypothesis choosing
the data; one Python evaluates only under a condition is refused at decoration."""
from __future__ import annotations

import ast
import inspect
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reduction_examples import (INT_EXAMPLES, NAN_EXAMPLES, empty_argmax, empty_block_max,
                                empty_gen_max, empty_filtered_max,
                                empty_builtin_min, empty_mean, misaligned_dot, unbroadcast)

import hpu
from hpu import TranslationError
from hpu._reductions import EMPTY_MESSAGES, reductions_as_loops

COMPILES = settings.get_profile("hpu-compiles")

PATHS = [("cpu", None, None), ("gpu", None, None), ("hybrid", 0.5, 2), ("hybrid", 0.0, 1),
         ("hybrid", 1.0, 3)]

_DECORATED: dict = {}


def _decorated(name):
    if name not in _DECORATED:
        _DECORATED[name] = hpu.divide_and_conquer(INT_EXAMPLES[name][0])
    return _DECORATED[name]


def _same(got, want) -> bool:
    if isinstance(want, tuple):
        return isinstance(got, tuple) and len(got) == len(want) and all(
            _same(g, w) for g, w in zip(got, want))
    if isinstance(want, (float, np.floating)) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return got == want and isinstance(got, float) == isinstance(want, (float, np.floating))


def _check(name, x):
    fn, _, args = INT_EXAMPLES[name]
    xp = x.copy()
    want = fn(*args(xp))
    f = _decorated(name)
    for device, alpha, y in PATHS:
        xd = x.copy()
        opts = {"device": device}
        if device == "hybrid":
            opts.update(alpha=alpha, y=y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            got = f.options(**opts)(*args(xd))
        assert _same(got, want), (name, device, alpha, y, x.size, got, want)
        assert np.array_equal(xd, xp, equal_nan=True), (name, device)


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(INT_EXAMPLES))
@settings(COMPILES, max_examples=5)
@given(data=st.data())
def test_every_path_matches_the_plain_function(name, data):
    low = INT_EXAMPLES[name][1]
    n = data.draw(st.one_of(st.integers(low, 9), st.integers(low, 400)), label="n")
    x = np.array(data.draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n), label="x"),
                 dtype=np.int64)
    _check(name, x)


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(INT_EXAMPLES))
@pytest.mark.parametrize("n", [1, 2, 7, 1025])
def test_sizes(name, n):
    x = np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int64)
    _check(name, x)


@pytest.mark.opencl
@pytest.mark.parametrize("name", NAN_EXAMPLES)
@settings(COMPILES, max_examples=5)
@given(x=st.lists(st.one_of(st.floats(-1e3, 1e3, allow_nan=False), st.just(math.nan)),
                  min_size=1, max_size=80))
def test_floats_with_nan_follow_python_and_numpy(name, x):
    """NumPy's max/min give NaN when any element is NaN, Python's max()/min() only where it
    comes first: each rule on every path (the combines' max(l, r) keep Python's)."""
    _check(name, np.array(x, dtype=np.float64))


@pytest.mark.opencl
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32])
@pytest.mark.parametrize("name", ["sum_method", "sum_builtin", "max_np", "min_builtin"])
def test_other_dtypes(name, dtype):
    """Sums of small ints (exact in float32 too, whichever order adds them)."""
    x = np.random.default_rng(3).integers(0, 9, 50).astype(dtype)
    _check(name, x)


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
@pytest.mark.parametrize("fn,kind", [(empty_block_max, 3), (empty_builtin_min, 0),
                                     (empty_argmax, 5), (empty_gen_max, 1),
                                     (empty_filtered_max, 1)])
def test_an_empty_arrays_min_or_max_raises_valueerror_at_its_line(fn, kind, device):
    x = np.arange(40, dtype=np.int64)
    with pytest.raises(ValueError) as plain:
        fn(x.copy())
    assert str(plain.value) == EMPTY_MESSAGES[kind]
    f = hpu.divide_and_conquer(fn)
    opts = {"device": device} if device != "hybrid" else {"device": device, "alpha": 0.0,
                                                            "y": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        with pytest.raises(ValueError) as got:
            f.options(**opts)(x.copy())
    text = str(got.value)
    assert text.endswith(": " + EMPTY_MESSAGES[kind]), text
    assert "reduction_examples.py:" in text and "hpu_" not in text, text


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
@pytest.mark.parametrize("fn", [misaligned_dot, unbroadcast])
def test_two_arrays_of_lengths_numpy_refuses_raise_its_valueerror(fn, device):
    x = np.arange(40, dtype=np.int64)
    with pytest.raises(ValueError) as plain:
        fn(x.copy())
    opts = {"device": device} if device != "hybrid" else {"device": device, "alpha": 0.0,
                                                            "y": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        with pytest.raises(ValueError) as got:
            hpu.divide_and_conquer(fn).options(**opts)(x.copy())
    text = str(got.value)
    assert text.endswith(": " + str(plain.value)), (text, str(plain.value))
    assert "reduction_examples.py:" in text and "hpu_" not in text, text


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_an_empty_arrays_mean_is_nan(device):
    x = np.arange(20, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # NumPy's "Mean of empty slice"
        assert math.isnan(empty_mean(x))
    opts = {"device": device} if device != "hybrid" else {"device": device, "alpha": 0.5,
                                                            "y": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        got = hpu.divide_and_conquer(empty_mean).options(**opts)(x)
    assert isinstance(got, float) and math.isnan(got)


def in_a_condition(a):
    if len(a) <= 4:
        return len(a) > 2 and a.sum() > 3  # cond-here
    m = len(a) // 2
    return in_a_condition(a[:m]) or in_a_condition(a[m:])


def in_a_while(a):
    if len(a) <= 4:
        i = 0
        while np.max(a) > i:  # while-here
            i += 1
        return i
    m = len(a) // 2
    return in_a_while(a[:m]) + in_a_while(a[m:])


@pytest.mark.parametrize("fn,text", [(in_a_condition, "a.sum()"), (in_a_while, "np.max(a)")])
def test_a_reduction_evaluated_only_under_a_condition_is_refused(fn, text):
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(fn)
    msg = str(info.value)
    assert f"`{text}` inside a condition" in msg and f"s = {text}" in msg, msg
    lines, start = inspect.getsourcelines(fn)
    marker = "cond-here" if fn is in_a_condition else "while-here"
    assert info.value.lineno == start + next(i for i, t in enumerate(lines) if marker in t)


def test_the_loops_keep_pythons_order_and_names():
    """The rewrite itself: calls before the reduction in its statement are taken out first;
    a slice is bound once; names are fresh."""
    tree = ast.parse("def f(a, hpu_sum1):\n"
                     "    return g(a) + np.sum(a[1:]) + min(a)\n").body[0]
    left = reductions_as_loops(tree, {"np": np}, {"a"})
    assert left == []
    text = ast.unparse(tree)
    assert text.index("hpu_t") < text.index("hpu_view") < text.index("hpu__reduce_first")
    assert "hpu_sum1 =" not in text           # the parameter's name is not reused
    assert text.splitlines()[-1].strip().startswith("return hpu_t")


def test_a_shadowed_builtin_or_keywords_are_left_alone():
    tree = ast.parse("def f(a):\n    return max(a) + np.max(a, axis=0)\n").body[0]
    before = ast.unparse(tree)
    assert reductions_as_loops(tree, {"np": np, "max": max}, {"a"}) == []
    assert ast.unparse(tree) == before        # the module's own max(); NumPy's axis=
    tree = ast.parse("def f(a):\n    return max(a)\n").body[0]
    reductions_as_loops(tree, {"np": np}, {"a"})
    assert "max(a)" not in ast.unparse(tree)  # Python's max(): a loop


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_max_of_a_generator_keeps_the_first_of_equal_values(device):
    """Python's max()/min() replace the best only by a larger (smaller) value: of 0.0 and
    -0.0 the first stays, on every path."""
    from reduction_examples import gen_max

    f = hpu.divide_and_conquer(gen_max)
    opts = {"device": device} if device != "hybrid" else {"device": device, "alpha": 0.5,
                                                            "y": 1}
    for x in (np.array([0.0, -0.0, 0.0, -0.0] * 8), np.array([-0.0, 0.0, -0.0] * 9)):
        want = gen_max(x.copy(), 0, len(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            got = f.options(**opts)(x, 0, len(x))
        assert got == want and math.copysign(1, got) == math.copysign(1, want)
    from reduction_examples import argmax_by_key    # max(..., key=): the first of equals

    g = hpu.divide_and_conquer(argmax_by_key)
    for x in (np.zeros(40), np.array([3, 1, 3, 3, 2] * 7, dtype=np.int64)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            got = g.options(**opts)(x, 0, len(x))
        assert got == argmax_by_key(x, 0, len(x)) == 0, got


# ---- float sums in NumPy's order: np.sum and np.mean add pairwise, bit for bit

def leaf_sums(a, lo, hi):
    if hi - lo <= 300:
        return np.sum(a[lo:hi]) + a[lo:hi].mean() * 0.5
    mid = (lo + hi) // 2
    return leaf_sums(a, lo, mid) + leaf_sums(a, mid, hi)


def squares_leaf(a):
    if len(a) <= 1000:
        return (a * a).sum()
    m = len(a) // 2
    return squares_leaf(a[:m]) + squares_leaf(a[m:])


def sorted_and_summed(a):
    """The functional path (a new array out): Numba compiles it as written."""
    if len(a) <= 150:
        return np.sort(a), a.sum(), np.mean(a)
    m = len(a) // 2
    l, x, u = sorted_and_summed(a[:m])
    r, y, v = sorted_and_summed(a[m:])
    return np.concatenate((l, r)), x + y, u + v


@pytest.mark.opencl
@pytest.mark.parametrize("fn, span", [(leaf_sums, True), (squares_leaf, False),
                                      (sorted_and_summed, False)])
@settings(COMPILES, max_examples=3)
@given(n=st.sampled_from([1, 7, 8, 9, 127, 128, 129, 300, 1000, 2500, 40_001]),
       scale=st.integers(0, 9), seed=st.integers(0, 2**32 - 1))
def test_float_sums_are_numpys_bit_for_bit(fn, span, n, scale, seed):
    """NumPy sums floats pairwise (eight running sums up to 128 items, halves beyond); the
    compiled paths add in the same order, so the sums are equal, not close (in order, about
    half of them differed in the last bits)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-scale, scale + 1, n)
    args = (lambda a: (a, 0, len(a))) if span else (lambda a: (a,))
    want = fn(*args(x.copy()))
    f = _DECORATED.setdefault(fn.__name__, hpu.divide_and_conquer(fn))
    for device, alpha, y in PATHS[:3]:     # (the others: test_every_path_matches...)
        opts = {"device": device} if device != "hybrid" else dict(device=device, alpha=alpha,
                                                                     y=y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            got = f.options(**opts)(*args(x.copy()))
        if isinstance(want, tuple):
            assert np.array_equal(got[0], want[0]) and got[1:] == want[1:], (device, n)
        else:
            assert got == want, (device, alpha, y, n, got, want)


def whole_sums(a):
    """np.sum and np.mean of the whole array below the cut-off: NumPy's every shape of
    pairwise sum (in order below 8 items, one block of eight running sums up to 128, the
    walk over the halves beyond)."""
    if len(a) <= 70_000:
        return np.sum(a), a.mean()
    m = len(a) // 2
    ls, lm = whole_sums(a[:m])
    rs, rm = whole_sums(a[m:])
    return ls + rs, lm + rm


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_sum_of_each_size_is_numpys_bit_for_bit(device):
    """Every size up to 300 and a few past the walk's first levels, each array's items of
    magnitudes 1e-9 to 1e9 (so that the order of the additions shows in the last bits)."""
    f = _DECORATED.setdefault("whole_sums", hpu.divide_and_conquer(whole_sums))
    rng = np.random.default_rng(17)
    for n in [*range(1, 301), 1000, 4097, 40_001, 65_537]:
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-9, 10, n)
        got = f.options(device=device)(x)
        assert got == (np.sum(x), np.mean(x)), (device, n)


def count_between(a, low, high):
    """np.count_nonzero of two comparisons joined by `&`, as users count a range."""
    if len(a) <= 8:
        return np.count_nonzero((a >= low) & (a < high)) + 100 * np.count_nonzero(a[:1])
    m = len(a) // 2
    return count_between(a[:m], low, high) + count_between(a[m:], low, high)


@pytest.mark.opencl
@pytest.mark.parametrize("device, alpha, y", PATHS[:3])
@settings(COMPILES, max_examples=10)
@given(xs=st.lists(st.one_of(st.integers(-20, 20).map(float), st.just(math.nan)),
                   max_size=200))
def test_count_nonzero_counts_on_every_path(device, alpha, y, xs):
    """``np.count_nonzero`` is the loop counting items != 0 (a NaN counts, as NumPy's):
    NumPy's count on every path, the device's included, an int."""
    a = np.array(xs, dtype=np.float64)
    opts = {"device": device} | ({"alpha": alpha, "y": y} if device == "hybrid" else {})
    f = hpu.divide_and_conquer(count_between).options(**opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        run = f.run(a, -5.0, 5.0)
    want = count_between(a, -5.0, 5.0)
    assert run.value == want and isinstance(run.value, int), (run.value, want)
    if device == "gpu" and len(xs) > 8:
        assert run.gpu_tasks > 0, run.reason
