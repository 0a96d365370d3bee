"""The CPU's recursive solver with its base cases written out at the recursive calls.

``hpu._leaf_inline`` copies a function's leading base cases to each recursive call
statement of the compiled recursion.  Checked here: what is and is not written out (on
the AST), and that the compiled function -- ``.sequential``, and a run on the CPU whose
subtrees it solves -- gives the plain function's answers and errors on Hypothesis
inputs, for base cases written the ways people write them: several guards, assignments
before them, a base case that raises, returns a tuple or changes its parameter, calls in
a loop, calls by keyword.
"""
from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hpu
from hpu._leaf_inline import MAX_NODES, inline_leaves

COMPILES = settings.get_profile("hpu-compiles")


def _tree(src):
    return ast.parse(textwrap.dedent(src)).body[0]


def _inlined(src, arrays=("a",)):
    tree = _tree(src)
    return ast.unparse(inline_leaves(tree, tree.name, arrays))


# ------------------------------------------------------------------ the rewrite itself

def test_a_call_statement_gets_the_guard_and_the_base_case():
    out = _inlined("""
        def s(a, lo, hi):
            if hi - lo == 1:
                return a[lo]
            mid = (lo + hi) // 2
            x = s(a, lo, mid)
            y = s(a, mid, hi)
            return x + y
    """)
    assert "hpu_l0__hi = hpu__like(mid, hi)" in out
    assert "if hpu_l0__hi - hpu_l0__lo == 1:\n        x = hpu_l0__a[hpu_l0__lo]" in out
    assert "else:\n        x = s(hpu_l0__a, hpu_l0__lo, hpu_l0__hi)" in out
    assert "y = hpu_l1__a[hpu_l1__lo]" in out
    # the base case at the top stays: the function is still called on a leaf at the root
    assert out.count("return a[lo]") == 1


def test_guards_and_leading_assignments_come_along_renamed():
    out = _inlined("""
        def f(a, lo, hi):
            n = hi - lo
            if n == 0:
                return 0
            if n == 1:
                t = a[lo] * 2
                return t
            m = lo + n // 2
            return f(a, lo, m) + f(a, m, hi)
    """)
    # calls inside an expression are not statements: nothing to write out (the CPU
    # module's tree has them hoisted into `rec__k = f(...)` first)
    assert "hpu_l0__" not in out
    out = _inlined("""
        def f(a, lo, hi):
            n = hi - lo
            if n == 0:
                return 0
            if n == 1:
                t = a[lo] * 2
                return t
            m = lo + n // 2
            r = f(a, lo, m)
            return r + f(a, m, hi)
    """)
    assert "hpu_l0__n = hpu_l0__hi - hpu_l0__lo" in out
    assert "if hpu_l0__n == 0:\n        r = 0\n    elif hpu_l0__n == 1:" in out
    assert "hpu_l0__t = hpu_l0__a[hpu_l0__lo] * 2\n        r = hpu_l0__t" in out


@pytest.mark.parametrize("src", [
    # the base case reads a name the function assigns later
    """
    def f(a, lo, hi):
        if hi - lo <= 1:
            return k
        k = 1
        f(a, lo, (lo + hi) // 2)
        return k
    """,
    # a guard that calls something hpu cannot know to be pure
    """
    def f(a, lo, hi):
        if check(a, lo, hi):
            return 0
        f(a, lo, (lo + hi) // 2)
        return 1
    """,
    # a return inside a nested block of the base case
    """
    def f(a, lo, hi):
        if hi - lo <= 1:
            if lo == 0:
                return 1
            return 0
        f(a, lo, (lo + hi) // 2)
        return 1
    """,
    # no base case first
    """
    def f(a, lo, hi):
        mid = (lo + hi) // 2
        if hi - lo > 1:
            f(a, lo, mid)
    """,
    # a base case with a comprehension
    """
    def f(a, lo, hi):
        if hi - lo <= 1:
            return sum([x for x in range(lo, hi)])
        f(a, lo, (lo + hi) // 2)
        return 1
    """,
])
def test_what_is_not_written_out(src):
    tree = _tree(textwrap.dedent(src))
    assert inline_leaves(tree, "f", ("a",)) is tree


def test_calls_that_cannot_be_matched_stay():
    out = _inlined("""
        def f(a, lo, hi):
            if hi - lo <= 1:
                return 0
            f(*(a, lo, (lo + hi) // 2))
            f(a, lo, hi=hi, other=1)
            return 1
    """)
    assert "hpu_l" not in out


def test_a_large_base_case_stays_a_call():
    body = "\n".join(f"        x{i} = a[lo] + {i}" for i in range(MAX_NODES // 5))
    out = _inlined(f"""
def f(a, lo, hi):
    if hi - lo <= 1:
{body}
        return x0
    r = f(a, lo, (lo + hi) // 2)
    return r
""")
    assert "hpu_l" not in out


# ------------------------------------------------------------------ the compiled answers

@hpu.divide_and_conquer
def two_guards(a, lo, hi):
    n = hi - lo
    if n == 0:
        return 0.0
    if n == 1:
        v = a[lo]
        v = v * 2 - 1          # the base case changes its own name
        return v
    mid = lo + n // 3 + 1
    left = two_guards(a, lo, mid)
    right = two_guards(a, mid, hi)
    return left * 0.5 + right


@hpu.divide_and_conquer
def pair_result(a, lo, hi):
    if hi - lo <= 2:
        lo2 = lo               # a base case that writes the parameter it reads
        best = a[lo2]
        for i in range(lo2 + 1, hi):
            best = max(best, a[i])
        return best, hi - lo
    mid = (lo + hi) // 2
    m1, c1 = pair_result(a, lo, mid)
    m2, c2 = pair_result(a, mid, hi)
    return max(m1, m2), c1 + c2


@hpu.divide_and_conquer
def in_a_loop(a, lo, hi):
    if hi - lo <= 1:
        if hi > lo:
            a[lo] = a[lo] * 3  # in place: a leaf writes its element
        return
    step = (hi - lo + 2) // 3
    for t in range(3):
        in_a_loop(a, min(lo + t * step, hi), min(lo + (t + 1) * step, hi))


@hpu.divide_and_conquer
def by_keyword(a, lo, hi):
    if hi - lo < 2:
        if hi - lo == 1:
            a[lo] = -a[lo]
        return
    mid = (lo + hi) // 2
    by_keyword(a, hi=mid, lo=lo)
    by_keyword(a, mid, hi=hi)


def _floats(min_size=1):
    n = st.one_of(st.integers(min_size, 9), st.integers(min_size, 3000))
    return hnp.arrays(np.float64, n, elements=st.floats(-1e6, 1e6))


@COMPILES
@given(_floats())
def test_two_guards_as_plain(x):
    want = two_guards.py_func(x.copy(), 0, len(x))
    assert two_guards.sequential(x.copy(), 0, len(x)) == want
    assert two_guards.run(x.copy(), 0, len(x), device="cpu").value == want


@COMPILES
@given(_floats())
def test_a_tuple_base_case_as_plain(x):
    want = pair_result.py_func(x.copy(), 0, len(x))
    assert pair_result.sequential(x.copy(), 0, len(x)) == want
    assert tuple(pair_result.run(x.copy(), 0, len(x), device="cpu").value) == want


@COMPILES
@given(_floats())
def test_in_place_leaves_in_a_loop_and_by_keyword(x):
    for f in (in_a_loop, by_keyword):
        want = x.copy()
        f.py_func(want, 0, len(want))
        got = x.copy()
        f.sequential(got, 0, len(got))
        assert np.array_equal(got, want)
        got = x.copy()
        f.run(got, 0, len(got), device="cpu")
        assert np.array_equal(got, want)


def test_the_compiled_recursion_has_its_leaves_written_out():
    x = np.arange(10.0)
    two_guards.run(x, 0, len(x), device="cpu")
    program = next(iter(two_guards._programs.values()))
    assert "hpu_l0__n == 0" in program.source


@hpu.divide_and_conquer
def raises_at_a_leaf(a, lo, hi):
    if hi - lo == 1:
        if a[lo] < 0:
            raise ValueError("a negative key")
        return a[lo]
    mid = (lo + hi) // 2
    left = raises_at_a_leaf(a, lo, mid)
    right = raises_at_a_leaf(a, mid, hi)
    return left + right


def test_a_base_case_that_raises_raises_as_the_call_did():
    x = np.arange(1.0, 101.0)
    x[57] = -1
    with pytest.raises(ValueError, match="a negative key") as plain:
        raises_at_a_leaf.py_func(x, 0, len(x))
    with pytest.raises(ValueError, match="a negative key") as compiled:
        raises_at_a_leaf.sequential(x, 0, len(x))
    assert str(compiled.value) == str(plain.value)
    x[57] = 1
    assert raises_at_a_leaf.sequential(x, 0, len(x)) == raises_at_a_leaf.py_func(x, 0, len(x))


@hpu.divide_and_conquer
def runaway(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    left = runaway(a, lo, hi)          # never smaller: no base case is ever reached
    right = runaway(a, lo, hi)
    return left + right


def test_a_runaway_recursion_still_stops_with_the_recursion_error():
    with pytest.raises(RecursionError, match="runaway"):
        runaway.sequential(np.arange(4.0), 0, 4)
