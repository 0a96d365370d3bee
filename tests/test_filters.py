"""hpu._filters: loops of appends and partition helpers read as the filters they build."""
from __future__ import annotations

import ast
import sys
import textwrap

import numpy as np

from hpu._filters import (appends_as_filters, buffers_as_filters, inlined_helpers,
                          sunk_list_inits)


def body(src: str) -> list:
    return ast.parse(textwrap.dedent(src)).body


def text(stmts) -> str:
    return "\n".join(ast.unparse(s) for s in stmts)


def test_a_loop_of_appends_is_one_comprehension_per_list():
    got = appends_as_filters(body("""
        l, m, r = [], [], []
        for x in arr[1:]:
            if x < p:
                l.append(x)
            elif x == p:
                m.append(x)
            else:
                r.append(x)
        return f(l) + m + f(r)
    """))
    assert text(got).splitlines() == [
        "l = [x for x in arr[1:] if x < p]",
        "m = [x for x in arr[1:] if not x < p and x == p]",
        "r = [x for x in arr[1:] if not x < p and (not x == p)]",
        "return f(l) + m + f(r)"]


def test_the_filters_keep_the_loops_lists_element_for_element():
    """NaN takes the else branch in the loop and in the filter alike."""
    src = body("""
        l, r = [], []
        for x in arr:
            if x < p:
                l.append(x)
            else:
                r.append(x)
    """)
    ints = list(np.random.default_rng(1).integers(0, 9, 50))
    for arr in ([3.0, float("nan"), 1.0, 5.0, 3.0], ints):
        for p in (3.0, float("nan"), 4):
            loop, comp = {"arr": arr, "p": p}, {"arr": arr, "p": p}
            exec(compile(ast.Module(src, []), "<loop>", "exec"), loop)
            exec(compile(ast.Module(appends_as_filters(src), []), "<comp>", "exec"), comp)
            assert [str(v) for v in loop["l"]] == [str(v) for v in comp["l"]]
            assert [str(v) for v in loop["r"]] == [str(v) for v in comp["r"]]


def test_loops_that_are_not_filters_are_left_as_written():
    for src in ("""
        l = []
        for x in arr:
            if x < p:
                l.append(x + 1)
    """, """
        l = []
        n = len(l)
        for x in arr:
            if x < p:
                l.append(x)
    """, """
        l = []
        for x in arr:
            if x < p:
                l.append(x)
            else:
                l.append(x)
    """, """
        for x in arr:
            if x < p:
                l.append(x)
    """, """
        l = []
        for x in arr:
            if x < p:
                l.append(x)
        last = x
    """):
        stmts = body(src)
        assert text(appends_as_filters(stmts)) == text(stmts)


def test_lists_made_before_the_base_case_move_after_it():
    got = sunk_list_inits(body("""
        less = []
        more = []
        if len(a) <= 1:
            return a
        pivot = a[0]
    """), "f")
    assert text(got).splitlines()[:2] == ["if len(a) <= 1:", "    return a"]
    assert text(got).splitlines()[2:4] == ["less = []", "more = []"]
    kept = body("""
        less = []
        if len(less) > 3:
            return a
    """)
    assert text(sunk_list_inits(kept, "f")) == text(kept)


def split(arr, pivot):
    small, big = [], []
    for v in arr:
        if v < pivot:
            small.append(v)
        else:
            big.append(v)
    return small, big


def renames(arr, p):
    arr = arr[1:]
    return arr[arr < p]


THRESHOLD = 3


def reads_a_global(arr):
    return arr[arr < THRESHOLD]


def test_a_partition_helper_is_inlined_with_its_lists_named_as_the_callers():
    glb = sys.modules[__name__].__dict__
    caller = ast.parse("def f(a):\n    lo, hi = split(a, a[0])").body[0]
    got = inlined_helpers(caller.body, glb, __file__, "f", caller)
    src = text(got)
    assert "hpu_h0_pivot = a[0]" in src and "for hpu_h0_v in a:" in src
    assert "lo.append(hpu_h0_v)" in src and "hi.append(hpu_h0_v)" in src
    assert "split(" not in src


def test_helpers_that_cannot_be_inlined_as_written_stay_calls():
    glb = sys.modules[__name__].__dict__
    for src in ("def f(a):\n    lo = renames(a, 3)",                # reassigns a parameter
                "def f(a, THRESHOLD):\n    lo = reads_a_global(a)",  # the caller hides a global
                "def f(a):\n    a = split(a, 2)",                    # the target is an argument
                "def f(a):\n    lo, hi = np.split(a, 2)"):           # not the file's function
        caller = ast.parse(src).body[0]
        assert text(inlined_helpers(caller.body, {**glb, "np": np}, __file__, "f", caller)) \
            == text(caller.body)
    caller = ast.parse("def f(a):\n    lo, hi = split(a, 2)").body[0]
    assert "split(" in text(inlined_helpers(caller.body, glb, "/elsewhere.py", "f", caller))


def test_buffers_filled_by_counts_are_filters_and_their_prefixes_the_pieces():
    got = buffers_as_filters(body("""
        less = np.empty(len(arr), arr.dtype)
        more = np.empty_like(arr)
        i = j = 0
        for x in arr[1:]:
            if x < p:
                less[i] = x
                i += 1
            else:
                more[j] = x
                j = j + 1
        lo = less[:i]
        return f(lo) + f(more[0:j])
    """), {"np"})
    assert text(got).splitlines() == [
        "lo = np.array([x for x in arr[1:] if x < p])",
        "more = np.array([x for x in arr[1:] if not x < p])",
        "return f(lo) + f(more)"]


def test_buffers_that_are_not_filters_are_left_as_written():
    for src in ("""
        less = np.empty(len(arr))                 # float64: not the keys' dtype
        i = 0
        for x in arr:
            if x < p:
                less[i] = x
                i += 1
        return less[:i]
    """, """
        less = np.empty(len(arr), arr.dtype)
        i = 0
        for x in arr:
            if x < p:
                less[i] = x
                i += 1
        return less[:i], less[0]                  # read beyond its prefix
    """, """
        less = np.empty(len(arr) // 2, arr.dtype)  # maybe too short: Python's IndexError
        i = 0
        for x in arr:
            if x < p:
                less[i] = x
                i += 1
        return less[:i]
    """, """
        less = np.empty(len(arr), arr.dtype)
        i = 0
        for x in arr:
            if x < p:
                less[i] = x
                i += 1
        return less[:i], i                        # the count read
    """):
        stmts = body(src)
        assert text(buffers_as_filters(stmts, {"np"})) == text(stmts)
