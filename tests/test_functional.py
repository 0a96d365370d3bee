"""Functional-style recursion (``hpu._functional`` and its hooks in the frontend and
the decorator): sentinels, truth of arrays, whole-array builtins and lists at the call,
each giving plain Python's answer on every device path, or refused at decoration at the
user's line with every blocking construct named."""
from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
import warnings
import math

import numpy as np
import pytest
from functional_examples import REFERENCES, one_line_qsort
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpu
from hpu import TranslationError

COMPILES = settings.get_profile("hpu-compiles")

PATHS = [("cpu", None, None), ("gpu", None, None), ("hybrid", 0.5, 2), ("hybrid", 0.0, 1),
         ("hybrid", 0.25, 3)]


def _options(device, alpha, y):
    opts = {"device": device}
    if device == "hybrid":
        opts.update(alpha=alpha, y=y)
    return opts


def _same(got, want):
    return (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want, rel=1e-9,
                                                                          abs=1e-9)


def _check(name, xs):
    f, plain = REFERENCES[name]
    want = plain(xs)
    assert _same(f.py_func(list(xs)), want)                   # plain Python, on the list
    assert _same(f.sequential(list(xs)), want)
    for device, alpha, y in PATHS:
        got = f.run(list(xs), **_options(device, alpha, y)).value   # a list in
        assert _same(got, want), (name, device, alpha, y, len(xs), got, want)


FLOATS = st.lists(st.integers(-50, 50).map(float), min_size=1, max_size=40)


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(REFERENCES))
@settings(COMPILES, max_examples=5)
@given(xs=FLOATS)
def test_every_path_matches_plain_python(name, xs):
    _check(name, xs)


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_sizes(name, n):
    xs = [float((i * 37) % 23 - 11) for i in range(n)]
    _check(name, xs)


@pytest.mark.parametrize("name", ["max_subarray", "list_sum"])
def test_empty_list_gives_the_sentinel_on_the_cpu(name):
    f, plain = REFERENCES[name]
    assert f.options(device="cpu")([]) == plain([])


def test_list_dtype_is_numpys():
    from hpu._functional import list_to_array

    assert list_to_array([1, 2]).dtype == np.asarray([1, 2]).dtype
    assert list_to_array([1, 2.5]).dtype == np.float64
    assert list_to_array(["x"]) == ["x"]          # not numbers: left for the usual error


def test_integer_list_in():
    f, _ = REFERENCES["list_sum"]
    assert f.options(device="cpu")([3, 4, 5]) == 12.0


def _line(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, t in enumerate(lines) if marker in t)


def whole_min(a, lo, hi):
    if hi - lo <= 1:
        return min(a)  # min-here
    mid = (lo + hi) // 2
    return whole_min(a, lo, mid) + whole_min(a, mid, hi)


def three_blockers(a, lo, hi):
    if hi - lo <= 1:
        return a[lo, 0]  # index-here
    mid = (lo + hi) // 2
    x = len(sorted(a))  # sorted-here
    for i in range(lo, hi):
        x = x + (i > lo and a.sum())  # cond-here
    return three_blockers(a, lo, mid) + three_blockers(a, mid, hi) + x


def none_sentinel(a):
    if len(a) == 0:
        return None  # none-here
    if len(a) == 1:
        return a[0]
    m = len(a) // 2
    return max(none_sentinel(a[:m]), none_sentinel(a[m:]))


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_whole_array_min_runs_as_its_loop(device):
    """``min(a)`` of the whole array (hpu/_reductions.py): Python's answer on every path."""
    f = hpu.divide_and_conquer(whole_min)
    x = np.array([5, -3, 8, 2, -3, 7, 1], np.int64)
    assert f.options(device=device)(x, 0, len(x)) == whole_min(x, 0, len(x)) == -21


def test_every_blocking_construct_is_named_at_once():
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(three_blockers)
    err = info.value
    text = str(err)
    assert "3 constructs" in text
    for marker in ("index-here", "sorted-here", "cond-here"):
        assert f":{_line(three_blockers, marker)}: " in text, (marker, text)
    assert [e.lineno for e in err.errors] == [_line(three_blockers, m)
                                            for m in ("index-here", "sorted-here", "cond-here")]
    assert "`a.sum()` inside a condition" in text and "s = a.sum()" in text


def sliced_blockers(a):
    if len(a) == 0:
        return None  # none2-here
    if len(a) == 1:
        return len(sorted(a))  # sorted2-here
    m = len(a) // 2
    left = a[:m]
    return max(sliced_blockers(left), sliced_blockers(a[m:])) + len(sorted(left))  # s3-here


def sum_helper(v, lo, hi):
    return len(sorted(v[lo:hi]))  # helper-sorted-here


def calls_sum_helper(a):
    if len(a) == 1:
        return a[0]
    m = len(a) // 2
    return calls_sum_helper(a[:m]) + calls_sum_helper(a[m:]) + sum_helper(a, 0, 1)


def test_blockers_of_a_sliced_function_are_named_at_once_as_written():
    """Before slices become views: `sorted(a)` of a slice parameter, `sorted(left)` of a view and
    `return None`, each with its line and as written (not hpu's view arguments)."""
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(sliced_blockers)
    err = info.value
    text = str(err)
    assert "3 constructs" in text and "__" not in text, text
    assert [e.lineno for e in err.errors] == [_line(sliced_blockers, m)
                                            for m in ("none2-here", "sorted2-here", "s3-here")]
    assert "`sorted(a)`" in text and "`sorted(left)`" in text and "sentinel" in text
    with pytest.raises(TranslationError) as info:       # at decoration: the helper is known
        hpu.divide_and_conquer(calls_sum_helper)
    assert info.value.lineno == _line(sum_helper, "helper-sorted-here")
    assert "`sorted(v[lo:hi])`" in str(info.value) and "__" not in str(info.value)


def leading(x):
    return int(str(x)[0])  # str-helper-here


def karatsuba_as_written(x, y):
    if x < 10 or y < 10:
        return x * y
    n = max(len(str(x)), len(repr(y))) + 0 * leading(x)  # repr-here
    p = 10 ** (n // 2)
    a, b = divmod(x, p)
    c, d = divmod(y, p)
    ac = karatsuba_as_written(a, c)
    bd = karatsuba_as_written(b, d)
    mid = karatsuba_as_written(a + b, c + d) - ac - bd
    return ac * p * p + mid * p + bd + int(hex(0), 16)  # hex-here


def test_every_builtin_outside_the_subset_is_named_at_once_in_line_order():
    """``str`` in a helper, ``repr`` and ``hex`` (lines apart) in the function are refused
    together, in the order of the lines, each with a rewrite; ``divmod`` is not among them
    (it is ``//`` and ``%``), nor ``len(str(x))`` (a digit count, below)."""
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(karatsuba_as_written)
    err = info.value
    text = str(err)
    assert [e.lineno for e in err.errors] == [_line(leading, "str-helper-here")] + [
        _line(karatsuba_as_written, m) for m in ("repr-here", "hex-here")], text
    assert "the builtin str()" in text and "x // 10 ** k % 10" in text, text
    assert "the builtin repr()" in text and "the builtin hex()" in text, text
    assert "divmod" not in text


def karatsuba_textbook(a: int, b: int) -> int:
    """A published Python Karatsuba, as written: the digit counts are ``len(str(x))``."""
    if len(str(a)) == 1 or len(str(b)) == 1:
        return a * b
    m1 = max(len(str(a)), len(str(b)))
    m2 = m1 // 2
    a1, a2 = divmod(a, 10**m2)
    b1, b2 = divmod(b, 10**m2)
    x = karatsuba_textbook(a2, b2)
    y = karatsuba_textbook((a1 + a2), (b1 + b2))
    z = karatsuba_textbook(a1, b1)
    return (z * 10 ** (2 * m2)) + ((y - z - x) * 10 ** (m2)) + (x)


def digit_counts(xs, lo, hi):
    if hi - lo <= 1:
        return len(str(xs[lo])) if hi > lo else 0
    mid = (lo + hi) // 2
    return digit_counts(xs, lo, mid) + digit_counts(xs, mid, hi)


@pytest.mark.parametrize("path", PATHS[:3], ids=lambda p: "-".join(map(str, p)))
@settings(COMPILES, max_examples=25)
@given(x=st.integers(0, 10**9), y=st.integers(0, 10**9))
def test_len_of_str_of_an_int_is_its_digit_count_on_every_path(path, x, y):
    """``len(str(a))`` of an integer -- Karatsuba's digit count -- is accepted as written
    and counts the digits on the CPU and on the device, where the tasks run; a product past
    int64 runs the plain function, exactly.  (Negative numbers: this Karatsuba recurses
    without end, ``divmod(-5, 10)`` being ``(-1, 5)``, in Python as compiled.)"""
    f = hpu.divide_and_conquer(karatsuba_textbook).options(**_options(*path))
    run = f.run(x, y)
    assert run.value == x * y == karatsuba_textbook(x, y), (x, y, run.value)
    assert run.device != "python" and not run.fallbacks, (run.reason, run.fallbacks)
    with pytest.warns(hpu.HpuPerformanceWarning, match="beyond int64"):
        big = f.run(10**15 + 3, 10**15 + 7)
    assert big.value == (10**15 + 3) * (10**15 + 7) and big.device == "python"


@pytest.mark.parametrize("path", PATHS[:3], ids=lambda p: "-".join(map(str, p)))
def test_len_of_str_counts_int64s_extremes_and_unsigned_keys(path):
    """Every width's extremes (``-2**63``, whose ``str`` Numba's own ``str()`` could not
    make) on a task path whose leaves the device runs; a float's ``str`` has a point, so
    its count is the plain function's."""
    device = path[0]
    f = hpu.divide_and_conquer(digit_counts).options(**_options(*path))
    keys = np.array([0, 9, 10, -1, -9, -10, -99, -100, 99, 100, 2**63 - 1, -2**63]
                    * 700, dtype=np.int64)
    for xs in (keys, keys.astype(np.int32), np.arange(8400, dtype=np.uint64) * (2**50 + 7),
               np.arange(8400, dtype=np.int8)):
        want = sum(len(str(v)) for v in xs)
        run = f.run(xs, 0, len(xs))
        assert run.value == want and run.device != "python", (xs.dtype, run.reason)
        if device != "cpu":
            assert run.gpu_tasks > 0, (xs.dtype, run.fallbacks)
    floats = np.array([1.5, -0.25, 1e300])
    with pytest.warns(hpu.HpuPerformanceWarning, match=r"len\(str\(x\)\) of a float64"):
        run = f.run(floats, 0, 3)
    assert run.value == sum(len(str(v)) for v in floats) and run.device == "python"


def digit_sum(n):
    if n < 10:
        return n
    s = str(n)  # str-sliced-here
    h = len(s) // 2
    return digit_sum(int(s[:h])) + digit_sum(int(s[h:]))


def test_a_string_sliced_is_refused_as_the_str_it_is():
    """``s = str(n)`` then ``s[:h]``: the refusal names ``str()`` at its line, with its
    rewrite -- not the slice, which reads as an array's view."""
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(digit_sum)
    text = str(info.value)
    assert info.value.lineno == _line(digit_sum, "str-sliced-here"), text
    assert "the builtin str()" in text and "x // 10 ** k % 10" in text, text
    assert "view" not in text, text


def karatsuba_divmod(x, y):
    if x < 10 or y < 10:
        return x * y
    n = 1
    t = max(x, y)
    while t >= 10:
        t //= 10
        n += 1
    p = pow(10, n // 2)
    a, b = divmod(x, p)
    c, d = divmod(y, p)
    ac = karatsuba_divmod(a, c)
    bd = karatsuba_divmod(b, d)
    mid = karatsuba_divmod(a + b, c + d) - ac - bd
    return ac * p * p + mid * p + bd


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_divmod_and_pow_are_floor_division_modulo_and_power(device):
    """Karatsuba with ``divmod`` and ``pow``: compiled while the products fit in int64,
    Python's exact int (the plain function) past it."""
    f = hpu.divide_and_conquer(karatsuba_divmod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x, y in [(1234, 5678), (12345678, 87654321), (-7, 3), (10**15 + 3, 10**15 + 7),
                     (2**62, 3)]:
            run = f.options(device=device).run(x, y)
            assert run.value == x * y == karatsuba_divmod(x, y), (x, y, run.value)
            assert (run.device == "python") == (abs(x * y) >= 2**63), (x, y, run.reason)


def halves_by_true_division(a):
    if len(a) <= 1:
        return a[0] if len(a) else 0
    mid = len(a) / 2
    return halves_by_true_division(a[:mid]) + halves_by_true_division(a[mid:])  # float-mid


def test_a_slice_bound_made_with_true_division_is_refused_at_decoration():
    """``/`` always gives a float, which Python refuses as a slice bound: the breadth-first
    path says so when the function is decorated (Numba would slice with it)."""
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(halves_by_true_division)
    err = info.value
    assert len(err.errors) == 2 and err.lineno == _line(halves_by_true_division, "float-mid")
    assert "the slice bound `mid` in `a[:mid]`" in str(err) and "`//`" in str(err)


def list_merge_overrun(lst):
    if len(lst) <= 1:
        return lst
    mid = len(lst) // 2
    left = list_merge_overrun(lst[:mid])
    right = list_merge_overrun(lst[mid:])
    out = []
    i = j = 0
    while i < len(left) or j < len(right):
        if left[i] <= right[j]:  # list-overrun
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_list_index_out_of_range_names_the_line_as_python_says_it(device):
    """Numba's own list error says "getitem out of range" and names no line."""
    f = hpu.divide_and_conquer(list_merge_overrun)
    with pytest.raises(IndexError, match="^list index out of range$"):
        list_merge_overrun([2, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(IndexError) as info:
            f.run([2, 1], device=device)
    assert str(info.value) == (f"{__file__}:{_line(list_merge_overrun, 'list-overrun')}: "
                               "right[j]: list index out of range")


def floats_of(a):
    if len(a) <= 1:
        return np.array(a, dtype=np.float64)  # array-of-list
    mid = len(a) // 2
    return np.concatenate((floats_of(a[:mid]), floats_of(a[mid:])))


def test_what_numba_cannot_compile_is_named_at_the_users_line():
    """Numba's message for a NumPy call it cannot type names its own source first; the
    reason names the user's line."""
    f = hpu.divide_and_conquer(floats_of)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = f.run([3, 1, 2], device="cpu")
    assert run.value.tolist() == [3.0, 1.0, 2.0]
    assert run.reason.startswith(f"{__file__}:{_line(floats_of, 'array-of-list')}: Numba "
                                 "cannot compile floats_of"), run.reason


def points_sum(P):
    if len(P) == 1:
        return P[0, 0] + P[0, 1]  # two-d
    mid = len(P) // 2
    return points_sum(P[:mid]) + points_sum(P[mid:])


def quadrant_count(M, r0, r1, c0, c1):
    """A quadtree count over a 2-D array: four calls, ``M[r, c]``."""
    if r1 - r0 <= 1 and c1 - c0 <= 1:
        return 1 if r1 > r0 and c1 > c0 and M[r0, c0] > 0 else 0
    rm = (r0 + r1) // 2
    cm = (c0 + c1) // 2
    return (quadrant_count(M, r0, rm, c0, cm) + quadrant_count(M, r0, rm, cm, c1)
            + quadrant_count(M, rm, r1, c0, cm) + quadrant_count(M, rm, r1, cm, c1))


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
@settings(deadline=None, max_examples=4, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 200), seed=st.integers(0, 2**16))
def test_a_two_dimensional_index_runs_as_numba_compiles_it(device, n, seed):
    """``P[0, 0]`` of a 2-D array was refused at decoration ("hpu's arrays are 1-D"): Numba
    indexes it as written, so the function runs so, on the CPU's threads (a device asked
    for says why: the levels hold 1-D arrays), with the plain answer."""
    rng = np.random.default_rng(seed)
    P = rng.integers(-99, 99, (n, 2))
    f = _TWO_D.setdefault("points_sum", hpu.divide_and_conquer(points_sum))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = f.run(P, device=device)
        assert run.value == points_sum(P)
        M = rng.integers(-5, 5, (n % 37 + 1, n % 23 + 1))
        g = _TWO_D.setdefault("quadrant_count", hpu.divide_and_conquer(quadrant_count))
        args = (M, 0, M.shape[0], 0, M.shape[1])
        assert g(*args) == quadrant_count(*args) == int((M > 0).sum())
    if device != "cpu":
        assert "indexes a 2-D array" in run.fallbacks[0] and run.gpu_tasks == 0
        assert _line(points_sum, "two-d") == int(run.fallbacks[0].split("(line ")[1].split(":")[0])
        assert any("indexes a 2-D array" in str(w.message) for w in caught)


_TWO_D: dict = {}


def row_max(M, lo, hi):
    if hi - lo == 1:
        return M[lo].max()      # a row's method
    m = (lo + hi) // 2
    return max(row_max(M, lo, m), row_max(M, m, hi))


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_rows_method_runs_as_numba_compiles_it(device):
    """``M[lo].max()`` was refused ("only functions of math and numpy can be called by
    attribute"): compiled as written, the plain answer."""
    M = np.random.default_rng(4).integers(-999, 999, (3001, 3))
    f = _TWO_D.setdefault("row_max", hpu.divide_and_conquer(row_max))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = f.run(M, 0, len(M), device=device)
    assert run.value == row_max(M, 0, len(M)) == M.max()
    assert device == "cpu" or "`M[lo].max()`" in run.fallbacks[0]


def test_none_sentinel_is_refused_with_the_rewrite():
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(none_sentinel)
    err = info.value
    assert err.lineno == _line(none_sentinel, "none-here")
    assert "sentinel" in str(err) and "float('-inf')" in str(err)


def closest_pair(pts):
    if len(pts) < 2:
        return float("inf"), None, None  # none-in-tuple
    if len(pts) == 2:
        return pts[1] - pts[0], pts[0], pts[1]
    m = len(pts) // 2
    d1, a1, b1 = closest_pair(pts[:m])
    d2, a2, b2 = closest_pair(pts[m:])
    if d1 <= d2:
        return d1, a1, b1
    return d2, a2, b2


def test_none_in_a_result_tuple_is_refused_at_decoration():
    """`return float("inf"), None, None`: accepted at decoration, then refused at the first
    call naming Numba's OptionalType(int64); now refused when decorated, at the line."""
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(closest_pair)
    err = info.value
    assert err.lineno == _line(closest_pair, "none-in-tuple")
    assert "`None` as component 2 of the result" in str(err)
    assert "float('inf')" in str(err) and "Optional" not in str(err)


def writes_list(a, lo, hi):
    if hi - lo <= 1:
        a[lo] = a[lo] * 2
        return
    mid = (lo + hi) // 2
    writes_list(a, lo, mid)
    writes_list(a, mid, hi)


def test_a_list_the_function_writes_is_written_as_python_writes_it():
    f = hpu.divide_and_conquer(writes_list)
    xs = [1.0, 2.0]
    run = f.options(device="cpu").run(xs, 0, 2)
    assert xs == [2.0, 4.0] and "was given a list" in run.reason
    with pytest.raises(TypeError, match="np.asarray"):      # no breadth-first plan of it
        f.plan([1.0, 2.0], 0, 2, device="cpu")


@pytest.mark.parametrize("text, value", [("inf", math.inf), ("-inf", -math.inf),
                                         ("Infinity", math.inf), (" nan ", math.nan)])
def test_special_float_constants(text, value):
    import ast

    from hpu._functional import rewrite_values

    tree = ast.parse(f"def g(a):\n    return float({text!r})").body[0]
    rewrite_values(tree)
    got = tree.body[0].value
    assert isinstance(got, ast.Constant)
    assert _same(got.value, value)


def test_truth_of_an_array_means_not_empty():
    import ast

    from hpu._functional import rewrite_values

    tree = ast.parse("def g(a, k):\n    if not a or k:\n        return 0\n"
                     "    while a:\n        k = bool(a)\n    return a[0]").body[0]
    rewrite_values(tree)
    text = ast.unparse(tree)
    assert "len(a) == 0 or k" in text and "while len(a) != 0" in text
    assert "k = len(a) != 0" in text


def sum_of_list(arr):
    if not arr:
        return 0
    if len(arr) == 1:
        return arr[0]
    m = len(arr) // 2
    return sum_of_list(arr[:m]) + sum_of_list(arr[m:])


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_the_truth_of_a_numpy_array_is_pythons(device):
    """``if not arr`` is a list's emptiness, which hpu compiles for a list at the call; on a
    NumPy array Python raises ValueError for any length but 1 (and reads the one element's
    value then), so a call given an array runs the plain function: its error, at the
    user's line, or its answer -- and the plan says so."""
    f = hpu.divide_and_conquer(sum_of_list)
    for n in (0, 2, 3000):
        x = np.arange(n, dtype=np.int64)
        with pytest.raises(ValueError) as plain:
            sum_of_list(x)
        with pytest.raises(ValueError) as got:
            f.run(x, device=device)
        assert str(got.value) == str(plain.value) and "truth value" in str(got.value)
        assert got.traceback[-1].lineno + 1 == _line(sum_of_list, "if not arr")
    for x in (np.array([0.0]), np.array([7])):
        run = f.run(x, device=device)
        assert run.value == sum_of_list(x) and type(run.value) is type(sum_of_list(x))
        assert run.device == "python" and "truth of an array" in run.reason
        plan = f.plan(x, device=device)
        assert plan.device == "python" and plan.reason == run.reason
    xs = list(range(-50, 3000))
    run = f.run(xs, device=device)
    assert run.value == sum(xs) and run.device == device


# ---------------------------------------------------------------- arrays allocated and returned

from functional_examples import ARRAY_REFERENCES  # noqa: E402

from hpu import HpuPerformanceWarning  # noqa: E402

ALL_DEVICES = [("cpu", None, None), ("gpu", None, None), ("hybrid", 0.5, 2),
               ("hybrid", 0.0, 1)]


def _check_array_result(name, xs, dtype):
    f, plain = ARRAY_REFERENCES[name]
    want = plain(list(xs))
    x = np.asarray(xs, dtype=dtype)
    keep = x.copy()
    # msort and sort_count run on the device in their in-place form, whose every path
    # tests/test_functional_dps.py checks (count_inversions is sort_count; each function
    # compiles a CPU module and a device program, ~60 s here): the CPU here
    in_place = f._in_place()[0] is not None
    for device, alpha, y in (ALL_DEVICES[:1] if in_place else ALL_DEVICES):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = f.run(x, **_options(device, alpha, y))
        got = run.value if isinstance(run.value, tuple) else (run.value,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if isinstance(g, np.ndarray):
                assert g.dtype == x.dtype                 # Numba's dtype: the input's
                assert g.tolist() == list(w), (name, device)
            else:
                assert _same(g, w), (name, device, g, w)
        assert np.array_equal(x, keep)                    # the input untouched
        if device == "cpu":
            assert run.fallbacks == []
        else:                                             # no device form: the CPU, said
            assert len(run.fallbacks) == 1 and "allocates" in run.fallbacks[0]
            assert any(issubclass(w.category, HpuPerformanceWarning) for w in caught)


@pytest.mark.parametrize("name", sorted(ARRAY_REFERENCES))
@settings(COMPILES, max_examples=8)
@given(xs=st.lists(st.integers(-40, 40), max_size=60), dtype=st.sampled_from(
    [np.int32, np.int64, np.float64]))
def test_array_results_match_plain_python(name, xs, dtype):
    _check_array_result(name, xs, dtype)


@pytest.mark.parametrize("name", sorted(ARRAY_REFERENCES))
@pytest.mark.parametrize("n", [1, 2, 7, 1001])
def test_array_results_sizes(name, n):
    xs = [(i * 7919) % 211 - 100 for i in range(n)]
    _check_array_result(name, xs, np.int64)


def test_a_list_in_an_array_out():
    from functional_examples import msort

    got = msort.options(device="cpu")([3, 1, 2])
    assert isinstance(got, np.ndarray) and got.tolist() == [1, 2, 3]
    assert got.dtype == np.asarray([3, 1, 2]).dtype
    assert msort.sequential([2.5, 1.5]).tolist() == [1.5, 2.5]


def test_allocation_is_decided_at_decoration_and_plan_says_why():
    from functional_examples import msort

    from functional_examples import sort_min

    assert msort._functional is not None and "copy" in msort._functional[2]
    plan = sort_min.plan(np.arange(4))              # its own plan: tests/test_functional_plan.py
    assert plan.device == "cpu" and "allocates or returns arrays" in plan.device_reason
    assert "does not apply: it returns `(out, out[0])`" in plan.device_reason
    with pytest.raises(TranslationError, match="allocates or returns arrays"):
        sort_min.opencl_source(np.arange(4))
    # msort has a device form: the kernels of it (_functional_dps; its plan and runs:
    # tests/test_functional_dps.py)
    assert msort._in_place()[0] is not None
    assert "merge_into" in msort.opencl_source(np.arange(4))


def one_call_alloc(a):
    if len(a) <= 1:
        return a.copy()
    return one_call_alloc(a[1:])


def test_a_functional_function_with_one_call_is_refused_at_decoration():
    with pytest.raises(TranslationError, match="recursive call"):
        hpu.divide_and_conquer(one_call_alloc)


def returns_param(a, lo, hi):
    if hi - lo <= 1:
        return a  # param-here
    mid = (lo + hi) // 2
    a[lo] = a[mid]
    x = returns_param(a, lo, mid)
    y = returns_param(a, mid, hi)
    return x


def test_returning_an_array_parameter_is_refused_at_decoration():
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(returns_param)
    assert info.value.lineno == _line(returns_param, "param-here")
    assert "a.copy()" in str(info.value)


# ---------------------------------------------------------------- every core (FanOut)

from functional_examples import FANOUT_REFERENCES, checked_sort, msort  # noqa: E402

from hpu._functional import FANOUT_MIN, Lazy, fanout_levels  # noqa: E402


def _check_fanout(name, xs, dtype, K):
    f, plain = FANOUT_REFERENCES[name]
    want = plain(list(xs))
    x = np.asarray(xs, dtype=dtype)
    keep = x.copy()
    run = f.run(x, device="cpu", K=K)
    seq = f.sequential(x)
    got = run.value if isinstance(run.value, tuple) else (run.value,)
    seq = seq if isinstance(seq, tuple) else (seq,)
    assert len(got) == len(want) == len(seq)
    for g, s, w in zip(got, seq, want):
        assert type(g) is type(s), (name, g, s)             # boxed as .sequential's
        if isinstance(g, np.ndarray):
            assert g.dtype == s.dtype
            assert g.tolist() == list(w), (name, K)
        else:
            assert _same(g, w), (name, K, g, w)
    assert np.array_equal(x, keep)                           # the input untouched
    assert run.K == K and run.reason.startswith(f"K={K} given")
    return run


@pytest.mark.parametrize("name", sorted(FANOUT_REFERENCES))
@settings(COMPILES, max_examples=10)
@given(xs=st.lists(st.integers(-40, 40), max_size=70), data=st.data(), K=st.integers(1, 4))
def test_fanout_matches_plain_python(name, xs, data, K):
    # the dtypes the tests above compile already; the new examples compile one
    dtypes = [np.int64, np.float64] if name in ARRAY_REFERENCES else [np.int64]
    _check_fanout(name, xs, data.draw(st.sampled_from(dtypes)), K)


@pytest.mark.parametrize("name", sorted(FANOUT_REFERENCES))
@pytest.mark.parametrize("n", [0, 1, 2, 7, 1001])
def test_fanout_sizes(name, n):
    xs = [(i * 7919) % 211 - 100 for i in range(n)]
    run = _check_fanout(name, xs, np.int64, 3)
    if n >= 1000:           # every level full: a^K subtrees compiled, the top levels Python
        a = 4 if name == "msort4" else 2
        assert run.cpu_tasks == a ** 3
        assert run.level_sizes == tuple(a ** d for d in range(4))
    elif n <= 1:            # the root is a base case: nothing below it
        assert run.cpu_tasks == 0 and run.level_sizes == (1,)


def test_a_list_at_the_call_fans_out():
    from functional_examples import prefix_sums

    run = prefix_sums.run([1, 2, 3, 4, 5], device="cpu", K=2)
    assert run.value.tolist() == [1.0, 3.0, 6.0, 10.0, 15.0]
    assert run.cpu_tasks == 4


def test_large_inputs_fan_out_on_their_own():
    import numba

    x = np.random.default_rng(5).integers(0, 1 << 20, FANOUT_MIN)
    run = msort.run(x, device="cpu")
    assert np.array_equal(run.value, np.sort(x))
    threads = numba.get_num_threads()
    K, reason = fanout_levels(x.size, 2, 2.0, threads)
    assert (run.K, run.reason) == (K, reason)
    if threads > 1:
        assert run.K >= 1 and run.cpu_tasks == 2 ** run.K
        assert f"on {threads} threads" in run.reason
    small = msort.run(x[:100], device="cpu")
    assert small.K == 0 and small.cpu_tasks == 1 and "one call" in small.reason


def test_the_fan_out_gives_freed_memory_back(monkeypatch):
    """glibc keeps the pages of freed blocks in each thread's arena: the fan-out trims them
    before every combine at the top levels, after every top-level call and at the end."""
    import hpu._functional as fu

    calls = []
    monkeypatch.setattr(fu, "trim_memory", lambda: calls.append(1))
    xs = [(i * 7919) % 211 for i in range(1001)]
    run = msort.run(np.asarray(xs), device="cpu", K=2)
    assert run.value.tolist() == sorted(xs)
    combines, nodes = 1 + 2, 2          # merges at levels 0 and 1; the calls at level 1
    assert len(calls) == combines + nodes + 1


def test_trim_memory_reaches_the_c_library():
    import platform

    import hpu._functional as fu

    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert fu._MALLOC_TRIM is not None
    fu.trim_memory()                    # a no-op where the C library has no malloc_trim


def test_fanout_levels():
    assert fanout_levels(1 << 20, 2, 2.0, 1)[0] == 0                     # one thread
    assert fanout_levels(FANOUT_MIN - 1, 2, 2.0, 8)[0] == 0               # too small
    assert fanout_levels(1 << 20, 2, 2.0, 2)[0] == 2                      # 4 = 2 per thread
    assert fanout_levels(1 << 24, 2, 2.0, 16)[0] == 5                     # 32 subtrees
    assert fanout_levels(1 << 24, 4, 4.0, 16)[0] == 3
    assert fanout_levels(FANOUT_MIN, 2, 2.0, 64)[0] == 4    # subtrees of >= 2**11 elements
    assert fanout_levels(10, 2, 2.0, 2, K=5) == (5, fanout_levels(10, 2, 2.0, 2, K=5)[1])
    assert fanout_levels(1 << 20, 2, 2.0, 2, K=0)[0] == 0
    from functional_examples import merge

    from hpu._functional import recursion_through_globals

    assert recursion_through_globals(msort.py_func, msort)      # the name the copy rebinds
    assert not recursion_through_globals(merge, msort)


def test_an_exception_in_a_subtree_is_the_users():
    x = np.arange(64)[::-1].copy()
    x[50] = -1                                     # in the last of the 8 subtrees
    with pytest.raises(ValueError) as seq:
        checked_sort.sequential(x)
    with pytest.raises(ValueError) as par:
        checked_sort.run(x, device="cpu", K=3)
    assert type(par.value) is type(seq.value) and str(par.value) == str(seq.value)
    assert str(par.value) == "negative key"
    x[50] = 7                                      # the next call is fine
    assert checked_sort.run(x, device="cpu", K=3).value.tolist() == sorted(x.tolist())


def test_lazy_values_act_as_their_value():
    arr = np.array([3.0, 1.0, 2.0])

    def lazy(v, arity=None):
        return Lazy(lambda: v, arity)

    assert np.sort(lazy(arr)).tolist() == [1.0, 2.0, 3.0]             # __array__
    assert (lazy(2) + 3, 3 + lazy(2), lazy(7) // lazy(2), -lazy(2)) == (5, 5, 3, -2)
    assert lazy(2.5) > 1 and max(lazy(1.0), lazy(4.0), 2.0) == 4.0
    assert len(lazy(arr)) == 3 and lazy(arr)[1] == 1.0 and lazy(arr).dtype == np.float64
    assert float(lazy(np.int64(2))) == 2.0 and int(lazy(2.9)) == 2 and [0, 1][lazy(1)] == 1
    assert not lazy(0) and lazy(arr) is not None
    s, c = lazy((arr, 4), arity=2)                       # unpacked without waiting
    assert isinstance(s, Lazy) and c + 1 == 5 and s.tolist() == arr.tolist()
    waited = []
    p = Lazy(lambda: waited.append(1) or (1, 2), arity=2)
    first, second = p
    assert waited == [] and len(p) == 2 and (first, second) == (1, 2) and waited == [1]


def test_ctrl_c_stops_waiting_and_cancels_the_pending_subtrees():
    """Ctrl-C while subtrees run: KeyboardInterrupt on the caller without waiting for the
    subtrees (seen between wait slices: ``interrupt_main`` wakes no blocked wait), the
    ones not started never run, the process stays usable."""
    import _thread
    import threading
    import time

    from functional_examples import spin_sort

    import numba

    # more leaves than threads, so that some are still pending when Ctrl-C comes (with 16
    # threads, four leaves all started at once and none was left to cancel)
    K = max(2, (2 * numba.get_num_threads() - 1).bit_length())
    x = np.arange(2 ** K)
    marks = np.zeros(x.size, np.int64)
    spin_sort.sequential(x, marks, 1)                      # compiled before the signal

    def ours():
        return [t for t in threading.enumerate() if t.name.startswith("hpu-spin_sort")]

    def interrupt():
        while not any(t.name.startswith("hpu-spin_sort_") for t in ours()):  # the pool
            time.sleep(0.005)
        _thread.interrupt_main()

    marks[:] = 0
    threading.Thread(target=interrupt, daemon=True).start()
    # 2**K >= 2 * threads leaves of about two seconds each on numba.get_num_threads()
    # threads
    with pytest.raises(KeyboardInterrupt):
        spin_sort.run(x, marks, 100_000_000, device="cpu", K=K)
    while ours():                                          # the running leaves finish
        time.sleep(0.02)
    assert np.count_nonzero(marks) < x.size                # the pending ones were cancelled
    assert msort.run(np.arange(9)[::-1].copy(), device="cpu", K=2).value.tolist() == \
        list(range(9))


def _merge_back(a, lo, mid, hi):
    left = a[lo:mid].copy()
    right = a[mid:hi].copy()
    i = j = 0
    k = lo
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            a[k] = left[i]
            i += 1
        else:
            a[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        a[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        a[k] = right[j]
        j += 1
        k += 1


@hpu.divide_and_conquer
def sort_in_place(a, lo, hi):
    """In place, the merge's copies allocated in a helper: functional, fanned out."""
    if hi - lo > 1:
        mid = (lo + hi) // 2
        sort_in_place(a, lo, mid)
        sort_in_place(a, mid, hi)
        _merge_back(a, lo, mid, hi)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_a_function_that_writes_its_arrays_waits_for_its_children(K):
    """The fan-out's top levels start each call on a thread and go on: a merge written
    after the calls ran while the halves were still being sorted (wrong, silently, from
    2**15 elements on).  Its Python copy waits for its children first (with_barriers)."""
    x = np.random.default_rng(K).integers(-10**6, 10**6, 200_001)
    run = sort_in_place.run(x, 0, x.size, device="cpu", K=K)
    assert run.K == K and run.cpu_tasks == 2 ** K
    assert np.array_equal(x, np.sort(x))


def test_the_waits_go_after_the_calls():
    from hpu._functional import BARRIER, with_barriers

    tree = ast.parse(textwrap.dedent("""
        @deco
        def f(a, lo, hi):
            if hi - lo > 1:
                mid = (lo + hi) // 2
                l = f(a, lo, mid)
                r, k = f(a, mid, hi)
                merge(a, lo, mid, hi)
                return l + r
            f(a, lo, lo)
            return 0
    """)).body[0]
    got = ast.unparse(with_barriers(tree, {"f"}))
    assert got == textwrap.dedent(f"""\
        def f(a, lo, hi):
            if hi - lo > 1:
                mid = (lo + hi) // 2
                l = f(a, lo, mid)
                r, k = f(a, mid, hi)
                {BARRIER}()
                merge(a, lo, mid, hi)
                return l + r
            f(a, lo, lo)
            {BARRIER}()
            return 0""")


def test_every_subtree_is_submitted_before_any_ends():
    """The subtrees are all submitted before anything waits (the next sibling's calls are
    not held back by a combine waiting for the first's), and run without the GIL."""
    from functional_examples import spin_sort

    from hpu._functional import FanOut

    x = np.arange(8)
    marks = np.zeros(8, np.int64)
    compiled = spin_sort._functional_compiled()
    fan = FanOut(spin_sort.py_func, spin_sort, compiled, spin_sort._helpers, K=3, threads=2,
                 arity=None)
    assert compiled.targetoptions["nogil"] is True
    # ~0.2 s per leaf: every submission, through three levels of Python threads, comes
    # first even on a loaded 2-core machine (5 000 000 steps, ~25 ms, once did not)
    assert fan.run((x, marks, 40_000_000), {}).tolist() == list(range(8))
    assert fan.subtrees == 8 and len(fan.spans) == 8 and np.count_nonzero(marks) == 8
    assert max(fan.submitted) < min(end for _, end in fan.spans)
    run = spin_sort.run(x, marks, 1, device="cpu", K=3)
    (leaf,) = run.levels                       # one record: the subtrees, first to last
    assert (leaf.level, leaf.phase, leaf.cpu_tasks) == (3, "leaf", 8)


@pytest.mark.parametrize("device", ["gpu", "hybrid"])
def test_other_devices_fall_back_to_the_fan_out(device):
    """A function with no device form (sort_min reads its combine's array in the return)."""
    from functional_examples import sort_min

    x = np.arange(100)[::-1].copy()
    with pytest.warns(HpuPerformanceWarning, match="allocates"):
        run = sort_min.run(x, device=device, K=2)
    assert run.value[0].tolist() == list(range(100)) and run.value[1] == 0
    assert run.K == 2 and run.cpu_tasks == 4 and run.gpu_tasks == 0
    assert len(run.fallbacks) == 1


def _sum_top(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return _sum_top(a[:m]) + _sum_top(a[m:]) + max(a[0], a[-1]) + sum(a)  # sum-here


def test_a_loop_of_its_own_runs_compiled_at_the_top_levels_or_keeps_the_function_whole():
    from functional_examples import msort_inline

    from hpu._functional import call_shape

    line = _line(msort_inline.py_func, "merge-loop")
    assert call_shape(msort_inline.py_func)[2] == (line, "for k in range(len(a))")
    assert call_shape(msort.py_func)[2] is None
    assert call_shape(_sum_top)[2] == (_line(_sum_top, "sum-here"), "sum(a)")
    x = np.random.default_rng(2).integers(0, 1000, FANOUT_MIN)
    # the merge loop is outlined (hpu._outline): the function fans out
    run = msort_inline.run(x, device="cpu")
    assert np.array_equal(run.value, np.sort(x))
    assert run.K >= 1 and run.cpu_tasks == 2 ** run.K, run.reason
    # sum(a) inside the expression that recurses cannot be: one call, the line named
    whole = hpu.divide_and_conquer(_sum_top)
    got = whole.run(x, device="cpu")
    assert got.value.tolist() == _sum_top(x).tolist()
    assert got.K == 0 and got.cpu_tasks == 1
    assert f"line {_line(_sum_top, 'sum-here')}" in got.reason and "helper" in got.reason
    forced = whole.run(x[:64], device="cpu", K=2)
    assert forced.cpu_tasks == 4 and forced.value.tolist() == _sum_top(x[:64]).tolist()
    # a loop around the self-calls (msort4's) is the divide step: it fans out
    assert call_shape(FANOUT_REFERENCES["msort4"][0].py_func)[2] is None


# ---------------------------------------------------------------- lists in, lists out

from functional_examples import LIST_REFERENCES  # noqa: E402

from hpu._errors import HpuPerformanceWarning  # noqa: E402


def _run_quietly(f, xs, device, **opts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)   # gpu/hybrid: on the CPU
        return f.run(xs, device=device, **opts)


#: int and float lists of the two sorts with device forms: one kind each in the default run
#: (each kind compiles the form on the CPU and the device again), both in ``pytest -m slow``
@pytest.mark.parametrize("name, floats", [
    ("qsort", False), ("lsort", True), ("chunk_max", False), ("chunk_max", True),
    pytest.param("qsort", True, marks=pytest.mark.slow),
    pytest.param("lsort", False, marks=pytest.mark.slow)])
@settings(COMPILES, max_examples=10)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=80),
       device=st.sampled_from(["cpu", "gpu", "hybrid"]))
def test_list_functions_match_plain_python(name, floats, xs, device):
    f, plain = LIST_REFERENCES[name]
    xs = [float(v) for v in xs] if floats else xs
    keep = list(xs)
    want = plain(xs)
    assert f.py_func(list(xs)) == want
    run = _run_quietly(f, xs, device)
    assert run.value == want and type(run.value) is type(want)
    if isinstance(want, list):                               # items as plain Python's
        assert [type(v) for v in run.value] == [type(v) for v in want]
    assert xs == keep                                        # the caller's list untouched
    assert f.sequential(list(xs)) == want
    if name in ("lsort", "qsort"):  # their in-place forms, on every device
        # (test_functional_dps.py, test_functional_partition.py)
        assert run.fallbacks == [] and run.reason is None
    else:
        assert run.K == 0 and "builds Python lists" in run.reason


@pytest.mark.parametrize("name", sorted(LIST_REFERENCES))
@pytest.mark.parametrize("n", [1, 2, 7, 1001])
def test_list_function_sizes(name, n):
    f, plain = LIST_REFERENCES[name]
    xs = [(i * 7919) % 211 - 100 for i in range(n)]
    assert _run_quietly(f, xs, "cpu").value == plain(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)  # the default device: hybrid
        assert f(list(xs)) == plain(xs)


def test_a_list_function_is_compiled_not_run_as_python():
    from functional_examples import qsort

    xs = [5, 3, 9, 1]
    qsort.run(xs, device="cpu")
    assert qsort._compiled is not None and qsort._compiled.signatures   # Numba compiled it
    assert qsort._lists


def test_a_mixed_list_is_passed_as_numpy_infers():
    from functional_examples import qsort

    got = qsort.run([1, 2.5, 0, True], device="cpu").value
    assert got == [0.0, 1.0, 1.0, 2.5] and all(type(v) is float for v in got)


@pytest.mark.parametrize("xs, warns", [([], False), ([[2, 1], [0]], True),
                                       (["b", "a"], True)])
def test_a_list_numba_cannot_type_goes_to_the_plain_function(xs, warns):
    from functional_examples import qsort

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run = qsort.run(xs, device="cpu")
    assert run.value == qsort.py_func(xs)
    assert "the plain Python function runs" in run.reason
    told = [w for w in seen if issubclass(w.category, HpuPerformanceWarning)]
    assert bool(told) == warns and bool(run.fallbacks) == warns
    assert qsort.sequential(xs) == qsort.py_func(xs)


def test_numbas_reflected_list_notice_is_not_shown():
    from numba.core.errors import NumbaPendingDeprecationWarning

    from functional_examples import lsort

    top = hpu.divide_and_conquer(lsort.py_func)      # a new object: compiled in this test
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert top.run([4, 2, 3, 1], device="cpu").value == [1, 2, 3, 4]
        assert top.sequential([4.0, 2.0]) == [2.0, 4.0]
    assert not [w for w in seen if issubclass(w.category, NumbaPendingDeprecationWarning)]


def test_lists_and_numpy_arrays_together_get_arrays():
    from functional_examples import msort4

    assert not msort4._lists                # it makes NumPy arrays: lists become arrays
    got = msort4.run([4, 1, 3, 2, 0], device="cpu").value
    assert isinstance(got, np.ndarray) and got.tolist() == [0, 1, 2, 3, 4]


def test_list_functions_keep_one_call_unless_K_is_given():
    from hpu._functional import fanout_levels

    K, reason = fanout_levels(1 << 20, 2, 2.0, 4, lists=True)
    assert K == 0 and "builds Python lists" in reason
    assert fanout_levels(1 << 20, 2, 2.0, 4, K=2, lists=True)[0] == 2
    from functional_examples import lsort

    xs = [(i * 7919) % 100003 for i in range(5000)]
    run = lsort.run(xs, device="cpu", K=2)           # given: the fan-out takes lists too
    assert run.value == sorted(xs) and run.K == 2 and run.cpu_tasks == 4


def test_one_self_call_in_a_loop_is_a_call_per_child():
    from functional_examples import chunk_max

    assert chunk_max.run([3, 9, 2, 7, 1], device="cpu").value == 9


# ---------------------------------------------------------------- lists written in place

@settings(COMPILES, max_examples=10)
@given(xs=st.lists(st.integers(-10**6, 10**6), max_size=80), floats=st.booleans(),
       device=st.sampled_from(["cpu", "gpu", "hybrid"]))
def test_a_list_written_in_place_is_sorted_as_plain_python_sorts_it(xs, floats, device):
    from functional_examples import merge_sort_in_place as f

    xs = [float(v) for v in xs] if floats else xs
    want = list(xs)
    assert f.py_func(want) is None
    got = list(xs)
    run = _run_quietly(f, got, device)
    assert got == want and run.value is None
    assert [type(v) for v in got] == [type(v) for v in want]
    if xs:      # the copy-halves form (hpu._copy_halves): breadth-first, written back
        assert run.reason is None and run.plan is not None and not run.fallbacks
    again = list(xs)
    f.sequential(again)
    assert again == want


def test_a_numpy_array_still_runs_breadth_first():
    from functional_examples import negate_then_check as f

    x = np.arange(1, 9)
    run = f.run(x, 0, 8, device="cpu")
    assert x.tolist() == [-v for v in range(1, 9)] and "was given a list" not in (run.reason or "")


def test_an_error_puts_the_callers_list_back():
    from functional_examples import negate_then_check as f

    xs = list(range(1, 20))
    plain = list(xs)
    with pytest.raises(ZeroDivisionError):
        f.py_func(plain, 0, len(plain))
    for device in ("cpu", "gpu"):
        with pytest.raises(ZeroDivisionError), warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            f.run(xs, 0, len(xs), device=device)
        assert xs == list(range(1, 20))              # as it was, not half negated
    with pytest.raises(ZeroDivisionError):
        f.sequential(xs, 0, len(xs))
    assert xs == list(range(1, 20))
    ok = [1, 2, 3]
    f.run(ok, 0, 3, device="cpu")
    assert ok == [-1, -2, -3]                        # the writes reach the caller's list


def test_a_written_list_numba_cannot_take_goes_to_the_plain_function():
    from functional_examples import merge_sort_in_place as f

    mixed = [3, 1.5, 2]
    with pytest.warns(HpuPerformanceWarning, match="several number types"):
        run = f.run(mixed, device="cpu")
    assert mixed == [1.5, 2, 3] and type(mixed[1]) is int     # plain Python's own result
    assert "plain Python function runs" in run.reason and run.fallbacks
    empty = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")                          # an empty list: no warning
        assert f.run(empty, device="cpu").fallbacks == []
    assert empty == []


# ---------------------------------------------------------------- runaways

RUNAWAY_CHILD = """
import json, sys, threading, warnings
if {small!r}:
    threading.stack_size(256 * 1024)    # new threads' stacks: 256 KiB (main: ulimit -s)
import numpy as np
sys.path.insert(0, {tests!r})
warnings.simplefilter("ignore")
import functional_examples as fe
out = []
for name, arg, how in [("runaway_sort", np.arange(10), "run"),
                       ("runaway_sort", np.arange(10), "sequential"),
                       ("runaway_sort", np.arange(1 << 16), "fan-out"),
                       ("runaway_qsort", [3, 1, 2], "run"),
                       ("runaway_qsort", [2, 1, 1], "gpu")]:
    f = getattr(fe, name)
    try:
        if how == "sequential":
            f.sequential(arg)
        elif how == "fan-out":
            f.run(arg, device="cpu", K=2)
        else:
            f.run(arg, device="cpu" if how == "run" else "gpu")
        out.append([name, how, None, ""])
    except RecursionError as e:
        out.append([name, how, type(e).__name__, str(e)])
print(json.dumps(out))
"""


@pytest.mark.parametrize("stacks", ["default", "small"])
def test_a_runaway_raises_a_recursion_error_naming_the_line_never_crashes(stacks):
    """Compiled recursion has no interpreter to stop it: before the depth guard these
    killed the process (exit 139).  In a child, so that a regression fails here.
    ``small``: a machine whose stacks are small (1 MiB main, 256 KiB for new threads;
    one GPU machine's were too small for the guard's depth): compiled recursion runs on
    threads whose stack hpu sizes (``hpu._functional.STACK_BYTES``)."""
    import json
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))

    def small_stack():
        import resource

        resource.setrlimit(resource.RLIMIT_STACK, (1 << 20, resource.getrlimit(
            resource.RLIMIT_STACK)[1]))

    child = subprocess.run([sys.executable, "-c", RUNAWAY_CHILD.format(
                            tests=here, small=stacks == "small")],
                           capture_output=True, text=True, timeout=600,
                           preexec_fn=small_stack if stacks == "small" else None)
    assert child.returncode == 0, child.stderr[-2000:]
    results = json.loads(child.stdout.strip().splitlines()[-1])
    assert len(results) == 5
    import functional_examples as fe

    for name, how, kind, text in results:
        f = getattr(fe, name)
        assert kind == "HpuRecursionError", (name, how, kind)
        src = inspect.getsourcelines(f.py_func)
        call_line = next(src[1] + i for i, t in enumerate(src[0]) if "# LINE_RUNAWAY" in t)
        assert text.startswith(f"{inspect.getsourcefile(f.py_func)}:{src[1] + 1}: {name}()")
        assert f"recursive calls at line {call_line}" in text, text


def test_boundscheck_reaches_the_functional_path():
    import functional_examples as fe

    f = hpu.divide_and_conquer(boundscheck=True)(fe._sort_off_by_one)
    x = np.array([1, 2, 3, 4, 0])       # the left side runs out first: left[len(left)]
    keep = x.copy()
    with pytest.raises(IndexError):
        fe._sort_off_by_one(x)          # plain Python
    line = _line_of(fe.merge_off_by_one, "left[i] <= right[j]")
    where = f"{fe.__file__}:{line}: in merge_off_by_one(): left[i]: index "
    with pytest.raises(IndexError, match=re.escape(where)):    # the user's line (was none)
        f.run(x, device="cpu")
    with pytest.raises(IndexError, match=re.escape(where)):
        f.sequential(x)
    assert np.array_equal(x, keep)
    # descending keys: the right side always runs out first, and no index is out of range
    assert f.run(np.array([5, 4, 1]), device="cpu").value.tolist() == [1, 4, 5]


def test_what_numba_cannot_compile_runs_as_plain_python_and_says_where():
    from functional_examples import heap_merge_sort as f

    src, first = inspect.getsourcelines(f.py_func)
    line = first + next(i for i, t in enumerate(src) if "# LINE_HEAPQ" in t)
    xs = [5, 3, 9, 1, 7, 2]
    with pytest.warns(HpuPerformanceWarning, match="Numba cannot compile heap_merge_sort"):
        run = f.run(list(xs), device="cpu")
    assert run.value == sorted(xs) and run.reason in run.fallbacks
    assert f"{inspect.getsourcefile(f.py_func)}:{line}: " in run.reason
    assert "heapq" in run.reason
    assert f.sequential(list(xs)) == sorted(xs)
    assert f._not_compiled is not None                   # decided once, not per call
    with pytest.warns(HpuPerformanceWarning):
        assert f([4, 4, 1]) == [1, 4, 4]


def test_a_list_function_given_an_array_says_to_give_it_a_list():
    """A mergesort written for lists (``return arr`` at the base, ``result = []`` merged)
    given an array: Python's answer (a list of NumPy's numbers), and the reason says the
    list it takes compiled; given that list, it runs compiled."""
    from dps_examples import sort_lists

    f = hpu.divide_and_conquer(sort_lists)
    x = np.array([5, 3, 9, 1, 7, 2])
    with pytest.warns(HpuPerformanceWarning, match=r"give it a list, `sort_lists\(x.tolist"):
        run = f.run(x, device="cpu")
    assert run.value == sorted(x.tolist()) and type(run.value[0]) is np.int64
    assert "returns an array in one place" in run.reason
    later = f.run(x.tolist(), device="cpu")
    assert later.value == sorted(x.tolist()) and not later.fallbacks


# ---------------------------------------------------------------- memory=True

def test_the_run_reports_the_memory_it_allocates_at_its_peak():
    """At the root's merge a functional mergesort holds its two halves and the merged
    array: twice the input, on one core and fanned out alike (what glibc keeps after a
    free is resident memory, not allocation: bench/bench_functional.py)."""
    x = np.random.default_rng(3).integers(0, 1 << 30, 1 << 18).astype(np.int64)
    msort.run(x, device="cpu", K=2)                        # compiled: not in the figure
    for K in (0, 2):
        run = msort.run(x, device="cpu", K=K, memory=True)
        assert np.array_equal(run.value, np.sort(x))
        assert 1.9 * x.nbytes < run.peak_memory < 2.3 * x.nbytes, (K, run.peak_memory)
    assert msort.run(x[:10], device="cpu").peak_memory is None          # not asked
    run = msort.options(device="cpu", memory=True).run(x)
    assert 1.9 * x.nbytes < run.peak_memory < 2.3 * x.nbytes
    with pytest.raises(TypeError, match="memory='yes' must be True"):
        msort.run(x, memory="yes")


def test_memory_leaves_the_callers_own_tracing_on():
    import tracemalloc

    x = np.arange(1 << 12)
    msort.run(x, device="cpu")
    tracemalloc.start()
    try:
        run = msort.run(x, device="cpu", memory=True)
        assert tracemalloc.is_tracing() and run.peak_memory >= x.nbytes
    finally:
        tracemalloc.stop()
    assert not tracemalloc.is_tracing()
    msort.run(x, device="cpu", memory=True)
    assert not tracemalloc.is_tracing()                   # hpu's own tracing stopped


@hpu.divide_and_conquer
def sorted_with_a_later_helper(a):
    if len(a) < 2:
        return a
    mid = len(a) // 2
    return merge_defined_later(sorted_with_a_later_helper(a[:mid]),
                               sorted_with_a_later_helper(a[mid:]))


def merge_defined_later(l, r):
    out = np.empty(len(l) + len(r), l.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(r) or (i < len(l) and l[i] <= r[j]):
            out[k] = l[i]
            i += 1
        else:
            out[k] = r[j]
            j += 1
    return out


def test_a_helper_defined_after_the_function_is_read_at_the_first_call():
    """Guide §8: helpers may follow the function.  Whether one allocates (a functional
    function, `return a` of its slice allowed) is known once it exists."""
    x = np.random.default_rng(3).integers(-50, 50, 301)
    got = sorted_with_a_later_helper.options(device="cpu")(x)
    assert np.array_equal(got, np.sort(x)) and sorted_with_a_later_helper._functional


def test_a_refused_function_is_refused_at_decoration_not_taken_for_a_later_helper():
    def loop_of_views(a):
        if len(a) <= 1:
            return 0
        s = 0
        for part in (a[:1], a[1:]):
            s += loop_of_views(part)
            s = max(s, len(hex(loop_of_views(part))))   # a string: refused
        return s

    with pytest.raises(TranslationError):
        hpu.divide_and_conquer(loop_of_views)


def gfg_merge_sort(arr):
    if len(arr) > 1:                   # the implicit return below is the base case
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        gfg_merge_sort(L)
        gfg_merge_sort(R)
        i = j = k = 0
        while i < len(L) and j < len(R):
            if L[i] <= R[j]:
                arr[k] = L[i]
                i += 1
            else:
                arr[k] = R[j]
                j += 1
            k += 1
        while i < len(L):
            arr[k] = L[i]
            i += 1
            k += 1
        while j < len(R):
            arr[k] = R[j]
            j += 1
            k += 1


def test_recursion_inside_an_if_with_copies_and_no_return_is_accepted():
    """The GeeksforGeeks mergesort, on NumPy arrays (``.copy()`` of each half): its base
    case is the `if`'s fall-through."""
    f = hpu.divide_and_conquer(gfg_merge_sort)
    for n in (0, 1, 2, 17, 1000):
        x = np.random.default_rng(n).integers(-99, 99, n)
        want = np.sort(x)
        assert f.options(device="cpu")(x) is None and np.array_equal(x, want), n


def always_recursing(a):
    m = len(a) // 2
    always_recursing(a[:m].copy())
    always_recursing(a[m:].copy())


def test_a_function_every_path_of_which_recurses_has_no_base_case():
    with pytest.raises(TranslationError, match="without a base case"):
        hpu.divide_and_conquer(always_recursing)


def test_numba_failing_on_one_kind_of_argument_does_not_stop_it_compiling_another():
    """Numba compiles a version per kind of arguments: an array it cannot take for the list
    quicksort (plain Python then) leaves its lists compiled."""
    import warnings

    from functional_examples import qsort

    f = hpu.divide_and_conquer(qsort.py_func)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = f.run(np.array([3, 1, 2]), device="cpu")
        later = f.run([3, 1, 2, 7, 5], device="cpu")
    assert "Numba cannot compile" in first.reason
    assert later.value == [1, 2, 3, 5, 7] and "Numba cannot compile" not in (later.reason or "")


def to_ints(a, d):
    """Each key converted (``int``), the merge dividing by ``d``: Python's errors."""
    if len(a) <= 1:
        out = np.empty(len(a), np.int64)
        for i in range(len(a)):
            out[i] = int(a[i])  # LINE_INT
        return out
    m = len(a) // 2
    left = to_ints(a[:m], d)
    right = to_ints(a[m:], d)
    res = np.empty(len(left) + len(right), np.int64)
    res[:len(left)] = left
    res[len(left):] = right
    res[0] = res[0] // d  # LINE_DIV
    return res


def store_float(a):
    """A float stored into an int array: NaN is NumPy's ValueError."""
    if len(a) <= 1:
        out = np.zeros(len(a), np.int32)
        for i in range(len(a)):
            out[i] = a[i] * 2.0  # LINE_STORE
        return out
    m = len(a) // 2
    left = store_float(a[:m])
    right = store_float(a[m:])
    return np.concatenate((left, right))


def test_pythons_errors_name_the_users_line_on_the_compiled_path():
    """Compiled by Numba as written, a function still raises what Python raises, at the
    user's line: ``// 0`` (Numba's message names no line), ``int(nan)`` and a NaN stored
    into an int array (Numba gives INT64_MIN silently)."""
    f = hpu.divide_and_conquer(to_ints)
    g = hpu.divide_and_conquer(store_float)
    here = __file__
    x = np.array([1.5, -2.5, 3.0, 7.9])
    assert f.run(x, 1, device="cpu").value.tolist() == to_ints(x, 1).tolist() == [1, -2, 3, 7]
    for run in (lambda: f.run(x, 0, device="cpu"), lambda: f.sequential(x, 0)):
        with pytest.raises(ZeroDivisionError, match=re.escape(
                f"{here}:{_line_of(to_ints, 'LINE_DIV')}: res[0] // d: ")):
            run()
    bad = np.array([1.5, np.nan, 3.0])
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        to_ints(bad, 1)
    for run in (lambda: f.run(bad, 1, device="cpu"), lambda: f.sequential(bad, 1)):
        with pytest.raises(ValueError, match=re.escape(
                f"{here}:{_line_of(to_ints, 'LINE_INT')}: int(a[i]): cannot convert float "
                "NaN to integer")):
            run()
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        store_float(bad)
    with pytest.raises(ValueError, match=re.escape(
            f"{here}:{_line_of(store_float, 'LINE_STORE')}: out[i]: cannot convert float NaN")):
        g.run(bad, device="cpu")
    assert g.run(x, device="cpu").value.tolist() == store_float(x).tolist()


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(lines) if text in s)


_IMPORTED = '''
import numpy as np
import hpu


def merge(left, right):
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
def msort(a):
    if len(a) <= 1:
        return a.copy()
    return merge(msort(a[:len(a) // 2]), msort(a[len(a) // 2:]))


x = np.random.default_rng(0).integers(0, 1000, 50_000)
FANNED = msort.run(x, device="cpu")
SMALL = msort.options(device="cpu")(np.array([3, 1, 2]))
OK = bool((FANNED.value == np.sort(x)).all()) and SMALL.tolist() == [1, 2, 3]
'''


def test_a_call_while_its_module_is_imported_does_not_hang(tmp_path):
    """A module that calls its functional function at its top level, imported: Numba
    compiles on hpu's threads (a big stack, the fan-out) and looked up the function's module
    by importing it -- which waits for the import the main thread is in the middle of."""
    import subprocess
    import sys

    (tmp_path / "calls_at_import.py").write_text(_IMPORTED)
    code = ("import calls_at_import as m; "
            "print(m.OK, m.FANNED.K, m.FANNED.cpu_tasks)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    ok, K, subtrees = out.stdout.split()
    assert ok == "True" and int(K) >= 1 and int(subtrees) > 1, out.stdout


def merge_tail_too_long(left, right):
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    out[k:k + len(left) - i] = left[i:]
    out[k + len(left) - i:] = right[max(j - 1, 0):]  # LINE_TAIL: one too many when j > 0
    return out


def sort_tail_too_long(a):
    if len(a) <= 1:
        return a.copy()
    return merge_tail_too_long(sort_tail_too_long(a[:len(a) // 2]),
                               sort_tail_too_long(a[len(a) // 2:]))


def test_a_slice_assignment_of_another_length_names_the_line_on_the_compiled_path():
    """NumPy's ValueError for a slice assignment's lengths, with the user's line, on the
    function compiled as written (Numba's own message names no line) as on the device."""
    f = hpu.divide_and_conquer(sort_tail_too_long)
    x = np.array([5, 3, 9, 1, 7, 2, 8, 6, 4, 0])
    with pytest.raises(ValueError) as plain:
        sort_tail_too_long(x)
    where = (f"{__file__}:{_line_of(merge_tail_too_long, 'LINE_TAIL')}: in "
             "merge_tail_too_long(): out[k + len(left) - i:] = right[max(j - 1, 0):]: ")
    for run in (lambda: f.run(x, device="cpu"), lambda: f.sequential(x)):
        with pytest.raises(ValueError) as got:
            run()
        assert str(got.value) == where + str(plain.value)


def list_total(lst):
    if not lst:
        return 0
    if len(lst) == 1:
        return lst[0]
    mid = len(lst) // 2
    return list_total(lst[:mid]) + list_total(lst[mid:])


def test_an_empty_list_gives_the_plain_functions_answer():
    """An empty list has no dtype but NumPy's guess (float64), which made ``return 0`` a
    0.0 on every path; the plain function runs instead, and says so."""
    f = hpu.divide_and_conquer(list_total)
    assert type(f([])) is int and f([]) == 0
    for device in ("cpu", "gpu", "hybrid"):
        run = f.run([], device=device)
        assert type(run.value) is int and run.value == 0 and "empty list" in run.reason
    assert f([1, 2, 3]) == 6 and type(f([1, 2, 3])) is int


# ---------------------------------------------------------------- found by a sweep (2026-11-27)

@hpu.divide_and_conquer
def _and_qsort(arr):
    return arr and _and_qsort([x for x in arr[1:] if x < arr[0]]) + arr[:1] + _and_qsort(
        [x for x in arr[1:] if x >= arr[0]])


@hpu.divide_and_conquer
def _partition_in_place(arr, lo, hi):
    if hi - lo <= 1:
        return
    p = arr[lo]
    seg = arr[lo:hi]
    less = [x for x in seg if x < p]
    eq = [x for x in seg if x == p]
    more = [x for x in seg if x > p]
    arr[lo:hi] = less + eq + more
    _partition_in_place(arr, lo, lo + len(less))
    _partition_in_place(arr, lo + len(less) + len(eq), hi)


@hpu.divide_and_conquer
def _numba_crashes(arr):
    if len(arr) <= 1:
        return arr[:]
    mid = len(arr) // 2
    result = _numba_crashes(arr[:mid])
    result += [x * 2 for x in _numba_crashes(arr[mid:])]
    return result


@pytest.mark.parametrize("K", [1, 2, 3])
def test_subtrees_of_empty_lists_answer_as_python(K):
    """With K, a level-K call on an empty list (which Numba cannot type) raised
    "cannot compute fingerprint of empty list": it runs as the plain function."""
    for data in ([3, 1, 2], [2, 2, 1, 3, 3, 0], list(range(40, 0, -3))):
        for f in (one_line_qsort, _and_qsort):
            assert f.run(list(data), device="cpu", K=K).value == sorted(data)


def test_a_function_writing_its_list_does_not_fan_out():
    """Subtrees on threads each wrote the whole reflected list back: a wrong order, or a
    crash at 12 000 keys.  Such a function runs as one compiled call, and says why."""
    import random

    r = random.Random(1)
    data = [r.randint(-1000, 1000) for _ in range(12_000)]
    a = list(data)
    run = _partition_in_place.run(a, 0, len(a), device="cpu", K=2)
    assert a == sorted(data) and run.K == 0
    assert "writes into its list argument (line" in run.reason


def test_a_crash_inside_numbas_compiler_runs_the_plain_function():
    for x in (np.array([5, 3]), np.array([5.0, 3.0]), np.array([5, 3, 8, 1])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = _numba_crashes.run(x.copy(), device="cpu")
        want = _numba_crashes.py_func(x.copy())
        assert np.array_equal(run.value, want) and run.value.dtype == want.dtype
    assert "Numba's compiler failed (AttributeError" in _numba_crashes._not_compiled


@hpu.divide_and_conquer
def _tuple_qsort(arr):
    if len(arr) <= 1:
        return arr
    pivot = arr[0]
    return _tuple_qsort([x for x in arr[1:] if x < pivot]) + [pivot] + _tuple_qsort(
        [x for x in arr[1:] if x >= pivot])


def test_hpus_own_plain_runs_recurse_as_deep_as_the_plain_function():
    """A list of tuples is given to the plain function.  Its recursion went through the
    decorated object (two frames a level, and on Python 3.12 a C-level call each, which
    its C recursion limit counts: RecursionError at ~1000 calls where the undecorated
    function returns); it now calls a copy of the function that calls itself."""
    import sys

    n = int(sys.getrecursionlimit() * 0.6)
    data = [(i,) for i in range(n)]            # sorted: n calls deep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = _tuple_qsort.run(list(data), device="cpu")
    assert run.value == data and "plain Python function" in (run.reason or "")


def _nonneg(x):
    if x < 0:
        raise ValueError("negative value")
    return x


@hpu.divide_and_conquer
def _checked_concat(arr):
    if len(arr) == 1:
        return [100 // arr[0]]
    mid = len(arr) // 2
    return _checked_concat(arr[:mid]) + [_nonneg(x) for x in arr[mid:]] + _checked_concat(
        arr[mid:])


@pytest.mark.parametrize("K", [0, 1, 2])
def test_the_fan_outs_error_is_the_one_python_meets_first(K):
    """Python evaluates the left call before the comprehension; the fan-out's top levels
    ran the comprehension while the left call still ran, and raised its ValueError."""
    for data in ([5, 0, 7, -3], [0, -1], [4, -2, 1, 3]):
        try:
            _checked_concat.py_func(list(data))
        except Exception as err:  # noqa: BLE001
            want = type(err)
        with pytest.raises(want):
            _checked_concat.run(list(data), device="cpu", K=K)
    assert _checked_concat.run([4, 2, 1, 3], device="cpu", K=2).value == [25, 2, 50, 1, 3, 100, 3, 33]


@hpu.divide_and_conquer
def _float_list_sum(xs):
    if len(xs) <= 4:
        return sum(xs)
    m = len(xs) // 2
    return _float_list_sum(xs[:m]) + _float_list_sum(xs[m:]) + sum([x * 0.5 for x in xs[:3]])


_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.0, -0.0, 0.1, 1e16, -1e16, 1e308, -1e308]))


@settings(max_examples=60, deadline=None)
@given(xs=st.lists(_FLOATS, min_size=1, max_size=40))
def test_sum_of_a_float_list_is_this_pythons(xs):
    """Python 3.12 sums a list of floats with Neumaier's compensation, Numba plainly: the
    last digits differed (2448.05 against 2448.0499999999997).  Equal here on 3.11 and
    3.12, NaNs and signed zeros included."""
    import math

    want = _float_list_sum.py_func(list(xs))
    run = _float_list_sum.run(list(xs), device="cpu")
    got = run.value
    assert run.fallbacks == [] and "Numba cannot compile" not in (run.reason or ""), run.reason
    assert (math.isnan(want) and math.isnan(got)) or (
        got == want and math.copysign(1, got) == math.copysign(1, want)), (got, want)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="Python sums floats plainly before 3.12")
@settings(max_examples=300, deadline=None)
@given(xs=st.lists(_FLOATS, min_size=1, max_size=12))
def test_the_compensated_sum_is_cpythons(xs):
    import math

    from hpu._checked_ops import _neumaier

    want, got = sum(xs), _neumaier(xs)
    assert (math.isnan(want) and math.isnan(got)) or (
        got == want and math.copysign(1, got) == math.copysign(1, want)), (got, want)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_the_top_levels_wrap_int64_sums_as_the_plain_function_does(K):
    from functional_examples import sort_sumsq

    f = hpu.divide_and_conquer(sort_sumsq)
    a = np.random.default_rng(K).integers(-20, 20, 257) * 150_000_000 + 3_000_000_000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # NumPy's overflow warnings, in plain Python
        want = sort_sumsq(a.copy())
        got = f.run(a, device="cpu", K=K).value
    assert np.array_equal(got[0], want[0])
    assert got[1] == want[1] and -2**63 <= got[1] < 2**63


# ---------------------------------------------------------------- pieces joined by `+`

def rev_copy(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return rev_copy(a[m:]) + rev_copy(a[:m])


def rev_bare(a):
    if len(a) <= 1:
        return a
    m = len(a) // 2
    return rev_bare(a[m:]) + rev_bare(a[:m])


def doubled_left(a):
    if len(a) <= 1:
        return a[:]
    m = len(a) // 2
    left = doubled_left(a[:m])
    right = doubled_left(a[m:])
    return left * 2 + right


def fib_like(n):
    if n < 2:
        return n
    return fib_like(n - 1) + fib_like(n - 2)


JOINED = {f.__name__: f for f in (rev_copy, rev_bare, doubled_left)}
_JOINED_DECORATED: dict = {}


@pytest.mark.parametrize("name", sorted(JOINED))
@pytest.mark.parametrize("device, kw", [("cpu", {}), ("gpu", {}),
                                        ("hybrid", {"alpha": 0.5, "y": 2})])
@settings(COMPILES, max_examples=5)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=200))
def test_pieces_of_a_list_joined_by_plus_are_concatenated_as_python_does(name, device, kw, xs):
    """``rev(a[m:]) + rev(a[:m])`` on a list concatenates; converted to an array it added
    element-wise and returned ``array([15])`` for ``[1, 2, 3, 4, 5]``.  A function that
    returns pieces of its argument and joins them with ``+``/``*`` keeps the caller's
    lists as lists (``return a``, ``a[:]``, ``a.copy()`` alike); an array still adds."""
    if name not in _JOINED_DECORATED:       # (one compiled function per name)
        _JOINED_DECORATED[name] = hpu.divide_and_conquer(JOINED[name])
    f = _JOINED_DECORATED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        got = f.run(list(xs), device=device, **kw).value
        assert type(got) is list and got == f.py_func(list(xs))
        a = np.array(xs, dtype=np.int64)
        assert np.array_equal(f.run(a.copy(), device=device, **kw).value, f.py_func(a.copy()))


def test_a_number_returned_and_added_is_not_a_piece():
    """``fib(n)``'s ``return n`` is a number (never sliced or measured): breadth-first."""
    f = hpu.divide_and_conquer(fib_like)
    assert f._functional is None and f(20) == 6765


def swap_then_sort(a):
    """Writes into its argument (a swap), then raises where a key is -999."""
    if len(a) <= 1:
        return a.copy()
    a[0], a[-1] = a[-1], a[0]
    m = len(a) // 2
    left = swap_then_sort(a[:m])
    right = swap_then_sort(a[m:])
    out = np.concatenate((left, right))
    if out.min() == -999:
        raise ValueError("found -999")
    return out


@pytest.mark.parametrize("device, kw", [("cpu", {}), ("gpu", {}),
                                        ("hybrid", {"alpha": 0.5, "y": 2})])
@pytest.mark.parametrize("n", [7, 100_003])
def test_a_function_that_writes_its_argument_puts_it_back_on_an_error(device, kw, n):
    """Guide §9: after an error the caller's arrays and lists are as they were.  A
    functional function that writes into its argument left its swaps behind (58 338 of
    100 003 elements changed); the call now keeps a copy of what it writes."""
    f = _swap_then_sort()
    x = np.arange(n, dtype=np.int64)[::-1].copy()
    x[n // 3] = -999
    for given in (x, x.tolist()):
        before = list(given)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            with pytest.raises(ValueError, match="found -999"):
                f.run(given, device=device, **kw)
        assert list(given) == before


def _swap_then_sort(made=[]):  # noqa: B006 - one decorated function for the tests
    if not made:
        made.append(hpu.divide_and_conquer(swap_then_sort))
    return made[0]


@pytest.mark.parametrize("device, kw", [("cpu", {}), ("gpu", {}),
                                        ("hybrid", {"alpha": 0.5, "y": 2})])
def test_an_empty_list_runs_the_plain_function_and_the_plan_says_so(device, kw):
    """An empty list has no dtype: the plain function answers (``[]`` from ``a.copy()``,
    where converting it made ``array([], dtype=float64)``), and the plan says what runs."""
    from functional_examples import msort as fmsort

    run = fmsort.run([], device=device, **kw)
    assert run.value == [] and type(run.value) is list and run.device == "python"
    plan = fmsort.plan([], device=device, **kw)
    assert plan.device == "python" and "an empty list" in plan.reason


# ------------------------------------------------------------------ slices with a step
def strided_sum(a):
    if len(a) <= 2:
        return a.sum()
    return strided_sum(a[::2]) + strided_sum(a[1::2])


def bit_reversal(a):
    if len(a) <= 1:
        return a.copy()
    return np.concatenate([bit_reversal(a[::2]), bit_reversal(a[1::2])])


def fft(x):
    n = len(x)
    if n == 1:
        return x.astype(np.complex128)
    even = fft(x[0::2])
    odd = fft(x[1::2])
    t = np.exp(-2j * np.pi * np.arange(n // 2) / n) * odd
    return np.concatenate([even + t, even - t])


def stores_every_other(a, lo, hi):
    if hi - lo <= 2:
        return 0
    m = (lo + hi) // 2
    a[lo:hi:2] = 0
    return stores_every_other(a, lo, m) + stores_every_other(a, m, hi)


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
@settings(COMPILES, max_examples=10)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=300),
       floats=st.booleans())
def test_slices_with_a_step_run_compiled_as_written(device, xs, floats):
    """``f(a[::2]) + f(a[1::2])`` and a bit-reversal permutation joined by
    ``np.concatenate([...])`` (a list, as users write it): Numba's strided views, compiled as
    written on the CPU, the plain function's answer exactly; asked for the device, the
    warning says why it stays on the CPU."""
    a = np.array(xs, dtype=np.float64 if floats else np.int64)
    before = a.copy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = hpu.divide_and_conquer(strided_sum).options(device=device).run(a)
        p = hpu.divide_and_conquer(bit_reversal).options(device=device).run(a)
    assert s.value == strided_sum(a) and type(s.value) in (int, float)
    assert p.value.dtype == a.dtype and np.array_equal(p.value, bit_reversal(a))
    assert np.array_equal(a, before)
    assert s.gpu_tasks == 0 and p.gpu_tasks == 0 and s.device != "python" != p.device
    if device != "cpu" and len(xs) > 2:
        said = " ".join(str(w.message) for w in caught)
        assert "takes a slice with a step" in said and "a[::2]" in said, said


def test_the_recursive_fft_runs_compiled():
    """The textbook radix-2 FFT (``x[0::2]``, complex twiddles, ``np.concatenate`` of a
    list): compiled, not the plain function; equal to NumPy's FFT to rounding (its complex
    products are Numba's, not NumPy's SIMD loops: guide §9, "Result types")."""
    x = np.random.default_rng(5).standard_normal(1024)
    run = hpu.divide_and_conquer(fft).run(x)
    assert run.device != "python", run.reason
    assert run.value.dtype == np.complex128
    assert np.allclose(run.value, fft(x), rtol=0, atol=1e-12)
    assert np.allclose(run.value, np.fft.fft(x), rtol=0, atol=1e-9)


def test_a_store_through_a_slice_with_a_step_alone_is_refused_with_the_loop():
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(stores_every_other)
    text = str(info.value)
    assert "a[lo:hi:2]" in text and "for i in range(lo, hi, 2)" in text, text


# ------------------------------------------------------------------ module constants
import sys as _sys  # noqa: E402 - read by max_or_sys as users write it (`sys.maxsize`)


def max_or_sys(a, lo, hi):
    if lo >= hi:
        return -_sys.maxsize - 1
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return max(max_or_sys(a, lo, mid), max_or_sys(a, mid, hi))


def min_or_iinfo(a, lo, hi):
    if lo >= hi:
        return np.iinfo(np.int64).max
    if hi - lo == 1:
        return a[lo] + np.finfo(np.float64).eps * 0
    mid = (lo + hi) // 2
    return min(min_or_iinfo(a, lo, mid), min_or_iinfo(a, mid, hi))


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_module_constants_read_by_attribute_are_their_numbers(device):
    """``sys.maxsize`` and ``np.iinfo(np.int64).max`` / ``np.finfo(...).eps`` as sentinels:
    the numbers they are, on every path, the device's included; an empty array gives the
    sentinel as Python does (an int)."""
    f = hpu.divide_and_conquer(max_or_sys).options(device=device)
    g = hpu.divide_and_conquer(min_or_iinfo).options(device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        for n in (0, 1, 5, 4000):
            x = np.random.default_rng(n).integers(-10**6, 10**6, n)
            run = f.run(x, 0, n)
            assert run.value == max_or_sys(x, 0, n) and type(run.value) is int
            if device == "gpu" and n == 4000:
                assert run.gpu_tasks > 0, run.reason
            xf = x.astype(np.float64)
            got, want = g(xf, 0, n), min_or_iinfo(xf, 0, n)
            assert got == want, (n, got, want)
            assert type(got) is (int if n == 0 else float), (n, got)


# ------------------------------------------------------------------ return sorted(...)
def hybrid_sort(xs):
    if len(xs) <= 16:
        return sorted(xs)
    m = len(xs) // 2
    left, right = hybrid_sort(xs[:m]), hybrid_sort(xs[m:])
    out = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@settings(COMPILES, max_examples=10)
@given(xs=st.lists(st.integers(-10**6, 10**6), max_size=300), as_array=st.booleans())
def test_a_base_case_returning_sorted_runs_as_written(device, xs, as_array):
    """``return sorted(xs)`` for a small list (a hybrid sort's base case) makes a list, as a
    comprehension does: the function runs compiled as written, a list out, Python's."""
    given = np.array(xs, dtype=np.int64) if as_array else list(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        got = hpu.divide_and_conquer(hybrid_sort).options(device=device)(given)
    assert isinstance(got, list) and got == sorted(xs) == hybrid_sort(given)


@pytest.mark.parametrize("call, words", [
    (lambda f, x: f(x, 99), "too many positional arguments"),
    (lambda f, x: f(), "missing a required argument: 'a'"),
    (lambda f, x: f(b=x), "got an unexpected keyword argument 'b'"),
    (lambda f, x: f(x, a=x), "multiple values for argument 'a'"),
])
def test_a_call_python_refuses_is_refused_on_every_entry(call, words):
    """Arguments Python refuses are refused as a TypeError on every entry: the compiled
    functional call dropped an extra positional argument (`msort(x, 99)` sorted x), and
    named what was wrong in Numba's words ("some keyword arguments unexpected")."""
    x = np.arange(5)
    with pytest.raises(TypeError):
        call(msort.py_func, x)
    for entry in (msort, msort.run, msort.sequential, msort.plan,
                  msort.options(device="gpu")):
        with pytest.raises(TypeError) as err:
            call(entry, x)
        assert str(err.value) == f"msort(): {words}; it takes (a)"


def _merge_popping(left, right):
    result = []
    while left and right:
        result.append((left if left[0] <= right[0] else right).pop(0))
    return result + left + right


def merge_sort_popping(collection):
    """TheAlgorithms/Python's sorts/merge_sort.py, as written there."""
    if len(collection) <= 1:
        return collection
    mid_index = len(collection) // 2
    return _merge_popping(merge_sort_popping(collection[:mid_index]),
                          merge_sort_popping(collection[mid_index:]))


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_merge_that_pops_from_its_halves_runs_on_every_device(device):
    """Its in-place form's helper holds `(left if ... else right).pop(0)`, which the
    breadth-first levels cannot run: found only at the first call, the TranslationError
    reached the caller, naming hpu's `left__o`.  Now that form is no form (said in the
    fallback, in the user's words), and the list runs as written, Python's answer."""
    f = hpu.divide_and_conquer(merge_sort_popping)
    rng = np.random.default_rng(11)
    for n in (0, 1, 2, 7, 1001, 5000):
        for xs in ([int(v) for v in rng.integers(-99, 99, n)], [float(v) for v in rng.random(n)]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = f.options(device=device).run(list(xs))
            assert run.value == merge_sort_popping(list(xs)) and type(run.value) is list
            assert not any("__" in why for why in run.fallbacks), run.fallbacks
