"""hpu._comprehensions: list comprehensions given to Numba as loops.

The rewritten functions are run here as plain Python against the functions as written
(the rewrite must mean the same thing in Python before it can mean it in Numba), then
through hpu, where Numba compiles them; on Python 3.12+ the second half is the regression
test of the Numba defect the module describes (an exception lost after a comprehension)."""
from __future__ import annotations

import ast
import inspect
import textwrap
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from functional_examples import one_line_qsort
from hpu._comprehensions import AFFECTED, comprehensions_as_loops, inlined_comprehension_line

ints = st.lists(st.integers(-20, 20), max_size=12)


def rewritten(fn, expect_loops=None):
    """``fn`` with its comprehensions as loops, compiled from its source in its globals."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    tree.decorator_list = []
    made = comprehensions_as_loops(tree)
    if expect_loops is not None:
        assert made == expect_loops, ast.unparse(tree)
    space: dict = {}
    exec(compile(ast.Module([tree], []), "<rewritten>", "exec"), fn.__globals__, space)
    return space[fn.__name__], tree


def same(fn, *args, loops=None):
    new, tree = rewritten(fn, loops)
    want = got = None
    try:
        want = ("value", fn(*args))
    except Exception as err:  # noqa: BLE001 - compared below
        want = ("raised", type(err))
    try:
        got = ("value", new(*args))
    except Exception as err:  # noqa: BLE001
        got = ("raised", type(err))
    assert got == want, ast.unparse(tree)
    return tree


# ------------------------------------------------------------------ shapes people write

def filtered(a):
    p = a[0] if a else 0
    left = [x for x in a if x < p]
    right = [x for x in a if x >= p if x != 3]
    return left + right


def two_loops(a):
    return [x * y for x in a for y in a[:3] if x != y]


def nested(a):
    return [[y + x for y in a[:2]] for x in a if x > 0]


def tuples(a):
    return [i * x for i, x in enumerate(a)] + [x - y for x, y in zip(a, a[1:])]


def shadowing(a):
    x = 100
    got = [x for x in a]
    return got + [x]            # x is still 100: a comprehension's variable does not leak


def same_name_iterated(x):
    return [x + 1 for x in x]   # the first iterable is read in the enclosing scope


def in_tests_and_loops(a):
    out = 0
    if len([x for x in a if x > 0]) > 2:
        out += 1
    for v in [x * 2 for x in a]:
        out += v
    out += sum([x for x in a])
    return out


def conditional_return(a):
    return a if len(a) <= 1 else [x for x in a if x > a[0]] + [x for x in a if x <= a[0]]


def conditional_inside(a):
    return len(a) > 2 and [x for x in a if x > 0] or [0]


def in_while(a):
    n = 0
    while [x for x in a[n:] if x > 0] and n < 5:
        n += 1
    return n


@pytest.mark.parametrize("fn, loops", [(filtered, 2), (two_loops, 1), (nested, 2), (tuples, 2),
                                       (shadowing, 1), (same_name_iterated, 1),
                                       (in_tests_and_loops, 3), (conditional_return, 2),
                                       (conditional_inside, 0), (in_while, 0)])
@settings(max_examples=40, deadline=None)
@given(a=ints)
def test_the_loops_mean_what_the_comprehensions_meant(fn, loops, a):
    same(fn, list(a), loops=loops)


def test_the_left_overs_stay_comprehensions():
    for fn in (conditional_inside, in_while):
        _, tree = rewritten(fn, 0)
        assert any(isinstance(n, ast.ListComp) for n in ast.walk(tree))
    for fn in (filtered, nested, conditional_return, in_tests_and_loops):
        _, tree = rewritten(fn)
        assert not any(isinstance(n, ast.ListComp) for n in ast.walk(tree)), ast.unparse(tree)


def test_an_unbound_variable_after_a_comprehension_stays_unbound():
    def leaks(a):
        got = [x for x in a]
        return got, x  # noqa: F821 - Python raises NameError here

    tree = same(leaks, [1, 2])
    assert "hpu__cv" in ast.unparse(tree)


def test_calls_happen_in_pythons_order():
    """The calls a statement makes before a comprehension are made before it still: a
    recursion that changes what the comprehension reads gives Python's answer."""
    log = []

    def note(tag, v):
        log.append(tag)
        return v

    def order(a):
        return note("left", a[:1]) + [note("comp", x) for x in a] + note("right", a[-1:])

    def mutates(a):
        return [a.pop()] + [x for x in a] + [len(a)]

    order.__globals__["note"] = note
    try:
        for fn, arg in [(order, [1, 2, 3]), (mutates, [4, 5, 6])]:
            log.clear()
            want = fn(list(arg))
            want_log = list(log)
            log.clear()
            new, _ = rewritten(fn)
            assert new(list(arg)) == want and log == want_log
            if fn is order:
                assert want_log == ["left", "comp", "comp", "comp", "right"]
            else:
                assert want == [6, 4, 5, 2]
    finally:
        del order.__globals__["note"]


def test_each_statement_is_at_its_users_line():
    def spread(a):
        b = [x for x in a]
        return [y * 2
                for y in b]

    _, tree = rewritten(spread)
    lines = {n.lineno for n in ast.walk(tree) if isinstance(n, ast.stmt)}
    src = textwrap.dedent(inspect.getsource(spread)).splitlines()
    assert all(1 <= ln <= len(src) for ln in lines)
    assert lines <= {1, 2, 3}


def test_the_inlined_comprehension_is_found_where_python_inlines_it():
    def has(a):
        return [x for x in a if x]

    def has_not(a):
        out = []
        for x in a:
            out.append(x)
        return out

    line = inlined_comprehension_line(has.__code__)
    if AFFECTED:
        assert line == has.__code__.co_firstlineno + 1
    else:
        assert line is None
    assert inlined_comprehension_line(has_not.__code__) is None


# ------------------------------------------------------------------ through hpu, compiled

def _raise_after(d):
    if d > 0:
        raise ValueError("raised after the comprehension")
    return d


@hpu.divide_and_conquer
def split_then_raise(arr):
    if len(arr) <= 1:
        return arr
    left = [x for x in arr if x <= arr[0]]
    _raise_after(len(arr) - 2)
    return split_then_raise(left[:1]) + split_then_raise(left[1:])


@hpu.divide_and_conquer
def guarded_comprehension(arr):
    if len(arr) <= 1:
        return arr
    m = len(arr) // 2
    return guarded_comprehension(arr[:m]) + (
        guarded_comprehension(arr[m:]) if len(arr) > 2 else [x for x in arr[m:] if x == x])


def test_an_exception_after_a_comprehension_is_raised_as_python_raises_it():
    """Numba 0.68 on Python 3.12+ returned ``left`` here as if nothing had been raised."""
    for device in ("cpu", "gpu"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ValueError, match="raised after the comprehension"):
                split_then_raise.run([3, 1, 2], device=device)
        assert split_then_raise.run([1], device="cpu").value == [1]


@settings(max_examples=25, deadline=None)
@given(a=ints)
def test_the_one_line_quicksort_is_accepted_and_sorts(a):
    run = one_line_qsort.run(list(a), device="cpu")
    assert run.value == sorted(a)
    assert "Numba cannot compile" not in (run.reason or "")


@settings(max_examples=15, deadline=None)
@given(a=ints)
def test_a_comprehension_under_a_condition_gives_pythons_answer(a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = guarded_comprehension.run(list(a), device="cpu")
    assert run.value == guarded_comprehension.py_func(list(a))
    if AFFECTED and len(a) > 1:
        assert "list comprehension evaluated only under a condition" in run.reason
        assert f"{__file__}:" in run.reason


@hpu.divide_and_conquer
def largest_positive(arr):
    if len(arr) <= 2:
        return max([x for x in arr if x > 0])
    mid = len(arr) // 2
    return max(largest_positive(arr[:mid]), largest_positive(arr[mid:]))


@hpu.divide_and_conquer
def spread(ys):
    if len(ys) <= 1:
        return ys
    m = len(ys) // 2
    return spread(ys[:m]) + spread(ys[m:]) + [100 // (y - ys[0]) for y in ys[1:]]


def test_errors_name_the_users_comprehension_and_variables():
    """``max`` of an empty list raises Python's ValueError (Numba's raised StopIteration),
    and messages show what the user wrote, not hpu's names for it."""
    with pytest.raises(ValueError) as got:
        largest_positive.run([-1, -2, 5, 7], device="cpu")
    with pytest.raises(ValueError) as want:
        largest_positive.py_func([-1, -2, 5, 7])
    assert str(got.value).endswith(str(want.value))
    assert "max([x for x in arr if x > 0])" in str(got.value) and "hpu__" not in str(got.value)
    assert largest_positive.run([3, 9, 4, 1], device="cpu").value == 9
    with pytest.raises(ZeroDivisionError) as err:
        spread.run([2, 2, 1, 5], device="cpu")
    assert "100 // (y - ys[0])" in str(err.value) and "hpu__" not in str(err.value)
