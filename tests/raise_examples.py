"""Functions that raise as people write them (tests/test_raises.py): argument checks, a
helper's check of a key, asserts, a raise in the combine, an in-place sort that writes."""
from __future__ import annotations

import hpu
from functional_examples import merge as merge_new  # the textbook merge into a new array


def check_key(v):
    if v < 0:
        raise ValueError("negative key")
    return v


@hpu.divide_and_conquer
def total(a, lo, hi):
    assert hi >= lo, "bad range"
    if hi - lo <= 4:
        s = 0
        for i in range(lo, hi):
            s += check_key(a[i])
        return s
    mid = (lo + hi) // 2
    return total(a, lo, mid) + total(a, mid, hi)


@hpu.divide_and_conquer
def amax(a, lo, hi):
    if hi <= lo:
        raise ValueError("empty range")
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return max(amax(a, lo, mid), amax(a, mid, hi))


@hpu.divide_and_conquer
def min_max(a, lo, hi):
    if hi - lo == 1:
        if a[lo] > 10**6:
            raise OverflowError
        return a[lo], a[lo]
    mid = (lo + hi) // 2
    l1, h1 = min_max(a, lo, mid)
    l2, h2 = min_max(a, mid, hi)
    if h1 - l2 > 1_500_000:
        raise ArithmeticError("spread", 1_500_000)
    return min(l1, l2), max(h1, h2)


def merge(a, tmp, lo, mid, hi):
    i, j = lo, mid
    for k in range(lo, hi):
        if j >= hi or (i < mid and a[i] <= a[j]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    for k in range(lo, hi):
        assert tmp[k] == tmp[k], "NaN key"
        a[k] = tmp[k]


@hpu.divide_and_conquer
def msort(a, tmp, lo, hi):
    if hi < lo:
        raise IndexError("hi < lo")
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    msort(a, tmp, lo, mid)
    msort(a, tmp, mid, hi)
    merge(a, tmp, lo, mid, hi)


@hpu.divide_and_conquer
def fsort(a):
    if len(a) <= 1:
        if len(a) == 1 and a[0] != a[0]:
            raise ValueError("NaN in fsort")
        return a.copy()
    m = len(a) // 2
    return merge_new(fsort(a[:m]), fsort(a[m:]))


def all_positive(a, lo, hi):
    """``and`` of the calls: Python never makes the right call once the left is False, so
    its ValueError (a zero key) is not raised."""
    if hi - lo == 1:
        if a[lo] == 0:
            raise ValueError("zero key")
        return a[lo] > 0
    mid = (lo + hi) // 2
    return all_positive(a, lo, mid) and all_positive(a, mid, hi)


def first_positive(a, lo, hi):
    """A conditional expression: the right half only when the left has none."""
    if hi - lo == 1:
        if a[lo] == 0:
            raise ValueError("zero key")
        return a[lo] if a[lo] > 0 else -1
    mid = (lo + hi) // 2
    left = first_positive(a, lo, mid)
    return left if left > 0 else first_positive(a, mid, hi)
