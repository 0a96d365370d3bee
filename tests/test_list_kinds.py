"""hpu._list_kinds: a list made as ``[0] * n`` holds the floats stored into it, as Python's
does -- compiled where its values come from the parameters, else the plain function runs
(never Numba's silent truncation)."""
from __future__ import annotations

import ast
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import hpu
import list_kinds_examples as ex
from hpu._list_kinds import lists_keep_kinds

COMPILES = settings(deadline=None, max_examples=5,
                    suppress_health_check=[HealthCheck.too_slow])
PATHS = [("cpu", {}), ("gpu", {}), ("hybrid", {"alpha": 0.5, "y": 2}), (None, {})]
SORT = hpu.divide_and_conquer(ex.merge_sort)
SORT_COMP = hpu.divide_and_conquer(ex.merge_sort_comp)
HALVES = hpu.divide_and_conquer(ex.halves_total)
APPENDED = hpu.divide_and_conquer(ex.appended)
SCRATCH = hpu.divide_and_conquer(ex.sort_with_scratch)


def _run(f, device, kw, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f.run(*args, **({"device": device} if device else {}), **kw)


def test_lists_of_zeros_take_the_kind_of_the_parameters_stored_into_them():
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(ex.merge))).body[0]
    glb = {}
    assert lists_keep_kinds(tree, glb) == 2
    text = ast.unparse(tree)
    assert "L = [hpu__zero_as(0, arr)] * n1" in text
    assert "L[i] = arr[l + i]" in text and "arr[k] = hpu__kept(arr, L[i])" in text
    assert set(glb) == {"hpu__zero_as", "hpu__kept"}
    tree = ast.parse(textwrap.dedent(inspect.getsource(ex.halves_total))).body[0]
    lists_keep_kinds(tree, {})
    assert "parts[0] = hpu__kept(parts, a[lo] / 2)" in ast.unparse(tree)


@pytest.mark.parametrize("device,kw", PATHS)
@settings(COMPILES)
@given(xs=st.lists(st.floats(-1e9, 1e9, allow_nan=False), max_size=60),
       dtype=st.sampled_from([np.float64, np.float32, np.int64]))
def test_the_tutorials_mergesort_sorts_floats_as_python_does(device, kw, xs, dtype):
    for f, plain in ((SORT, ex.merge_sort), (SORT_COMP, ex.merge_sort_comp)):
        x = np.asarray(xs).astype(dtype)
        want = x.copy()
        plain(want, 0, len(want) - 1)
        _run(f, device, kw, x, 0, len(x) - 1)
        assert np.array_equal(x, want), (plain.__name__, x, want)


def test_a_large_float_sort_stays_compiled_and_fans_out():
    """Its lists never cross between the Python top levels and the compiled subtrees (an
    array in, nothing returned): it fans out over the cores, as one with np.empty does."""
    import numba

    from hpu._functional import FANOUT_MIN

    x = np.random.default_rng(5).standard_normal(max(FANOUT_MIN, 1 << 16) + 1)
    want = np.sort(x)
    run = _run(SORT, "cpu", {}, x, 0, len(x) - 1)
    assert np.array_equal(x, want)
    assert not any("plain" in f for f in run.fallbacks)
    if numba.get_num_threads() > 1:
        assert run.K > 0 and run.cpu_tasks > 1, run.reason


@pytest.mark.parametrize("f,plain", [(HALVES, ex.halves_total), (APPENDED, ex.appended)],
                         ids=["stored", "appended"])
@pytest.mark.parametrize("device,kw", PATHS[:2])
def test_floats_computed_into_an_int_list_run_the_plain_function(f, plain, device, kw):
    x = np.array([3.0, 1.5, -2.25, 7.0, 0.5])
    want = plain(x, 0, len(x))
    run = _run(f, device, kw, x, 0, len(x))
    assert run.value == want and type(run.value) is type(want)
    ints = np.array([3, 1, 4, 1, 5])
    assert _run(f, device, kw, ints, 0, 5).value == plain(ints, 0, 5)


@pytest.mark.parametrize("device,kw", PATHS)
@settings(COMPILES)
@given(xs=st.lists(st.one_of(st.integers(-10**6, 10**6), st.floats(-1e9, 1e9, allow_nan=False)),
                   max_size=40),
       as_array=st.booleans())
@example(xs=[2.5, -1.25, 3.75, 0.5, 1.0], as_array=False)
@example(xs=[2.5, -1.25, 3.75, 0.5, 1.0], as_array=True)
def test_floats_through_the_callers_list_of_zeros_stay_floats(device, kw, xs, as_array):
    """The caller's scratch ``[0] * n``: Numba types it a list of ints, and the floats of
    ``a`` stored into it were truncated (a float sort came back as ints); Python's list
    holds them.  ``a`` as a list or an array; ``tmp`` as Python leaves it."""
    a = np.array(xs, dtype=np.float64) if as_array else list(xs)
    want_a, want_tmp = list(a), [0] * len(xs)
    _plain_sort(want_a, want_tmp, 0, len(xs))
    tmp = [0] * len(xs)
    _run(SCRATCH, device, kw, a, tmp, 0, len(xs))
    assert list(a) == want_a
    if not as_array:
        assert [type(v) for v in a] == [type(v) for v in want_a]
    assert tmp == want_tmp and [type(v) for v in tmp] == [type(v) for v in want_tmp]


def test_ints_through_the_callers_list_of_zeros_stay_compiled():
    """An int sort through ``[0] * n`` holds ints: nothing to refuse, it runs compiled."""
    xs = [5, -3, 9, 0, 2, 2, -7]
    tmp = [0] * len(xs)
    run = _run(SCRATCH, "cpu", {}, xs, tmp, 0, len(xs))
    assert xs == sorted([5, -3, 9, 0, 2, 2, -7]) and run.device == "cpu"
    assert not any("plain Python function" in f for f in run.fallbacks), run.fallbacks
    assert "plain Python" not in (run.reason or "")


def _plain_sort(a, tmp, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    _plain_sort(a, tmp, lo, mid)
    _plain_sort(a, tmp, mid, hi)
    ex.merge_through(a, tmp, lo, mid, hi)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_list_of_zeros_accumulated_with_plus_equals_holds_floats(device):
    """`out[i + j] += A[i] * B[j]` into `[0] * n` (Karatsuba on coefficient lists): the
    list was Numba's list of ints, and float coefficients came back truncated, silently
    (17649 for 17649.69...).  Made of the parameters' kind, and a `+=` of something else
    (`acc[0] += a[lo] / 4`) runs the plain function."""
    f = hpu.divide_and_conquer(ex.karatsuba)
    rng = np.random.default_rng(8)
    for n in (1, 2, 3, 8, 64):
        for make in (lambda: [float(v) for v in rng.normal(0, 100, n)],
                     lambda: [int(v) for v in rng.integers(-9, 9, n)]):
            a, b = make(), make()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = f.options(device=device)(list(a), list(b))
            want = ex.karatsuba(list(a), list(b))
            assert got == want and [type(v) for v in got] == [type(v) for v in want]
    g = hpu.divide_and_conquer(ex.halves_accumulated)
    x = np.array([3.0, 1.5, -2.25, 7.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert g.options(device=device)(x, 0, 5) == ex.halves_accumulated(x, 0, 5)
        ints = np.array([3, 1, 4, 1, 5])      # `acc[1] /= 8` of int keys: floats too
        assert g.options(device=device)(ints, 0, 5) == ex.halves_accumulated(ints, 0, 5)
