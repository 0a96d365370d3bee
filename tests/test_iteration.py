"""``for v in a``, ``enumerate(a)``, ``zip(a, b)`` over arrays and views (hpu/_iteration.py):
the plain function's answer on every path, Hypothesis choosing the data."""
from __future__ import annotations

import ast
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from hpu._iteration import array_loops_indexed

COMPILES = settings.get_profile("hpu-compiles")
PATHS = [("cpu", None, None), ("gpu", None, None), ("hybrid", 0.5, 2), ("hybrid", 0.0, 1)]


def majority(a):
    """The divide-and-conquer majority vote: a candidate of each half, counted over the
    whole slice by walking its elements."""
    if len(a) == 1:
        return a[0]
    m = len(a) // 2
    left = majority(a[:m])
    right = majority(a[m:])
    if left == right:
        return left
    lc = 0
    rc = 0
    for v in a:
        if v == left:
            lc += 1
        if v == right:
            rc += 1
    if lc > len(a) // 2:
        return left
    if rc > len(a) // 2:
        return right
    return -1


def first_best(a, base):
    """enumerate with a start: the index (from base) of the first largest element."""
    if len(a) <= 6:
        best = base
        top = a[0]
        for i, v in enumerate(a, base):
            if v > top:
                best = i
                top = v
        return best
    m = len(a) // 2
    return max(first_best(a[:m], base), first_best(a[m:], base + m))


def dot(a, b):
    if len(a) <= 8:
        s = 0
        for x, y in zip(a, b):
            s += x * y
        return s
    m = len(a) // 2
    return dot(a[:m], b[:m]) + dot(a[m:], b[m:])


def positives(a, lo, hi):
    """A slice iterated (bound once), a break."""
    if hi - lo <= 5:
        c = 0
        for v in a[lo:hi]:
            if v > 0:
                c += 1
            if v == 99:
                break
        return c
    mid = (lo + hi) // 2
    return positives(a, lo, mid) + positives(a, mid, hi)


def running(a):
    """The body writes elements the loop has not reached: read changed, as NumPy's
    iterator reads them."""
    if len(a) <= 4:
        t = 0
        for v in a:
            t += v
            if len(a) > 1:
                a[len(a) - 1] = t
        return t
    m = len(a) // 2
    return running(a[:m]) + running(a[m:])


def first_negative_blocks(a):
    """for-else (a nested loop's break is its own) and while-else: blocks with no negative
    element count 1."""
    if len(a) <= 6:
        c = 0
        for v in a:
            for k in range(3):
                if k == 1:
                    break
            if v < 0:
                break
        else:
            c += 1
        i = 0
        while i < len(a):
            if a[i] == 7:
                break
            i += 1
        else:
            c += 10
        return c
    m = len(a) // 2
    return first_negative_blocks(a[:m]) + first_negative_blocks(a[m:])


EXAMPLES = {
    "first_negative_blocks": (first_negative_blocks, lambda x: (x,)),
    "majority": (majority, lambda x: (x,)),
    "first_best": (first_best, lambda x: (x, 0)),
    "dot": (dot, lambda x: (x, x[::-1].copy())),
    "positives": (positives, lambda x: (x, 0, len(x))),
    "running": (running, lambda x: (x,)),
}
_DECORATED: dict = {}


def _check(name, x):
    fn, args = EXAMPLES[name]
    xp = x.copy()
    want = fn(*args(xp))
    if name not in _DECORATED:
        _DECORATED[name] = hpu.divide_and_conquer(fn)
    for device, alpha, y in PATHS:
        xd = x.copy()
        opts = {"device": device}
        if device == "hybrid":
            opts.update(alpha=alpha, y=y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            got = _DECORATED[name].options(**opts)(*args(xd))
        assert got == want, (name, device, alpha, y, x.size, got, want)
        assert np.array_equal(xd, xp), (name, device)


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(EXAMPLES))
@settings(COMPILES, max_examples=5)
@given(data=st.data())
def test_every_path_matches_the_plain_function(name, data):
    n = data.draw(st.one_of(st.integers(1, 9), st.integers(1, 300)), label="n")
    values = st.integers(0, 2) if name == "majority" else st.integers(-20, 20)
    x = np.array(data.draw(st.lists(values, min_size=n, max_size=n), label="x"),
                 dtype=np.int64)
    _check(name, x)


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_sizes(name, n):
    x = np.random.default_rng(n).integers(-3, 100, n).astype(np.int64)
    _check(name, x)


def _rewritten(src, arrays, shadowed=frozenset()):
    tree = ast.parse(src).body[0]
    count = array_loops_indexed(tree, arrays, shadowed)
    return count, ast.unparse(tree)


def test_what_is_rewritten_and_what_is_left():
    count, text = _rewritten("def f(a, b):\n    for i, v in enumerate(a[1:], len(b)):\n"
                             "        b[0] = v\n", {"a", "b"})
    assert count == 1 and "hpu_seq0 = a[1:]" in text and "hpu_start0 = len(b)" in text
    assert "i = hpu_k0 + hpu_start0" in text and "v = hpu_seq0[hpu_k0]" in text
    count, text = _rewritten("def f(a, b):\n    for x, y in zip(a, b):\n        pass\n",
                             {"a", "b"})
    assert count == 1 and "range(min(len(a), len(b)))" in text
    # the body rebinds the array; a range; the module's own zip; a 2-D unpacking
    for src, shadowed in (("def f(a):\n    for v in a:\n        a = 1\n", ()),
                          ("def f(a):\n    for v in range(3):\n        pass\n", ()),
                          ("def f(a, b):\n    for x, y in zip(a, b):\n        pass\n",
                           {"zip"}),
                          ("def f(a):\n    for x, y in a:\n        pass\n", ())):
        count, _ = _rewritten(src, {"a", "b"}, frozenset(shadowed))
        assert count == 0, src
