"""hpu._outline: a function's own loops run compiled in the fan-out's top levels, so that
a function with its merge written inline uses every core -- with the plain function's
answers, errors at the user's line, and the shapes it cannot outline left as they were."""
from __future__ import annotations

import ast
import fractions
import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from outline_examples import (DECORATED, copy_halves_sort, inline_merge, maybe_unbound,
                              read_in_one_branch, sum_returned)

from hpu._functional import FANOUT_MIN
from hpu._outline import OutlinedCall, outline_loops

COMPILES = settings.get_profile("hpu-compiles")


def _outlined(fn):
    return outline_loops(fn, {fn.__name__})


# ------------------------------------------------------------------ what is outlined
def test_the_three_merge_loops_become_calls_that_hand_back_their_counters():
    got = _outlined(copy_halves_sort)     # (loop0: the base case's insertion sort)
    assert sorted(got.helpers) == [f"hpu_loop{k}_copy_halves_sort" for k in range(4)]
    text = ast.unparse(got.tree)
    assert "while" not in text
    assert "i, j = hpu_loop1_copy_halves_sort(" in text
    # each helper is the user's statement, at the user's line, returning what is read after
    h = got.helpers["hpu_loop1_copy_halves_sort"]
    tree = h.__hpu_tree__[0]
    lines, start = inspect.getsourcelines(copy_halves_sort)
    first = start + next(i for i, t in enumerate(lines) if "while i < len(L) and" in t)
    assert tree.body[0].lineno == first
    assert ast.unparse(tree.body[-1]) == "return (i, j)"


def test_a_base_case_loop_and_a_looping_builtin_are_outlined():
    got = _outlined(inline_merge)
    nodes = list(ast.walk(got.tree))
    assert not any(isinstance(n, (ast.For, ast.While)) for n in nodes)
    assert not any(isinstance(n, ast.Name) and n.id == "sum" for n in nodes)
    assert "total, = hpu_loop2_inline_merge(out)" in ast.unparse(got.tree)
    # the merge's counters are not read after it: nothing handed back
    assert "    hpu_loop1_inline_merge(out, j, left, i, right)" in ast.unparse(got.tree)


def test_a_returned_reduction_is_outlined_and_a_recursing_loop_is_left():
    got = _outlined(sum_returned)
    text = ast.unparse(got.tree)
    assert "return hpu_loop0_sum_returned(a)" in text
    # it makes the recursive calls (over the children the list named, written out)
    assert "for p in (a[:m], a[m:]):" in text and "total += sum_returned(p)" in text


@pytest.mark.parametrize("fn", [maybe_unbound, read_in_one_branch])
def test_a_name_not_assigned_on_every_path_keeps_the_function_as_written(fn):
    assert _outlined(fn) is None


def test_a_loop_that_leaves_its_statement_is_not_outlined():
    def breaks(a):
        if len(a) <= 1:
            return a.copy()
        m = len(a) // 2
        out = np.concatenate((breaks(a[:m]), breaks(a[m:])))
        for i in range(len(out)):
            if out[i] < 0:
                return out
        return out

    assert _outlined(breaks) is None


def _fraction_sum(k):
    out = 0
    for i in range(k):
        out += fractions.Fraction(i, 1).numerator
    return (out,)


def test_a_helper_numba_cannot_compile_runs_as_the_python_statement():
    import numba

    def count(d, k):
        for key in d:
            k += d[key]
        return (k,)

    call = OutlinedCall(count, numba.njit)      # a dict Numba cannot type: Python, this call
    assert call({"a": 1, "b": 2}, 0) == (3,)
    assert call._disp is None and not call._python
    call = OutlinedCall(_fraction_sum, numba.njit)  # typed, but not compilable: Python from now
    assert call(4) == (6,)
    assert call._python


# ------------------------------------------------------------------ answers, every core
def _plain_sorted(xs, dtype):
    x = np.asarray(xs, dtype=dtype)
    copy_halves_sort(x)
    return x


@settings(COMPILES, max_examples=15)
@given(xs=st.lists(st.integers(-40, 40), max_size=90), K=st.integers(1, 3),
       dtype=st.sampled_from([np.int64, np.float64]))
def test_copy_halves_sort_fanned_out_matches_the_plain_function(xs, K, dtype):
    f = DECORATED["copy_halves_sort"]
    x = np.asarray(xs, dtype=dtype)
    run = f.run(x, device="cpu", K=K)
    assert run.value is None
    assert np.array_equal(x, _plain_sorted(xs, dtype))
    assert run.K == K


def test_copy_halves_sort_uses_every_core_by_default():
    f = DECORATED["copy_halves_sort"]
    n = 2 * FANOUT_MIN + 3
    x = np.random.default_rng(5).integers(-1000, 1000, n)
    want = np.sort(x)
    run = f.run(x, device="cpu")
    assert np.array_equal(x, want)
    assert run.K >= 1 and "own loop" not in run.reason, run.reason
    assert run.cpu_tasks == 2 ** run.K                # the subtrees, compiled
    calls = f._outlined[1].values()                  # and the loops of the top levels
    assert calls and all(c._disp is not None and not c._python for c in calls)


@settings(COMPILES, max_examples=10)
@given(xs=st.lists(st.integers(-40, 40), max_size=70), K=st.integers(1, 3))
def test_inline_merge_fanned_out_matches_the_plain_function(xs, K):
    f = DECORATED["inline_merge"]
    x = np.asarray(xs, dtype=np.float64)
    keep = x.copy()
    want = inline_merge(x.copy())
    got = f.run(x, device="cpu", K=K).value
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    assert np.array_equal(x, keep)


def test_an_error_in_an_outlined_loop_names_the_users_line():
    f = DECORATED["divides_in_merge"]
    x = np.arange(14, dtype=np.int64)           # len 14 at the root: 14 - 7 != 0; 7 below
    lines, start = inspect.getsourcelines(divides_in_merge_fn())
    line = start + next(i for i, t in enumerate(lines) if "divides-here" in t)
    with pytest.raises(ZeroDivisionError, match=rf"outline_examples.py:{line}:"):
        f.run(x, device="cpu", K=2)


def divides_in_merge_fn():
    from outline_examples import divides_in_merge
    return divides_in_merge


@pytest.mark.parametrize("K", [1, 2, 3])
def test_a_loop_given_an_empty_list_runs_as_python_that_time(K):
    import hpu
    from outline_examples import comp_sum

    f = hpu.divide_and_conquer(comp_sum)
    for x in (-np.arange(1.0, 8.0), np.arange(-3.0, 12.0)):
        assert f.run(x, device="cpu", K=K).value == pytest.approx(comp_sum(x))
