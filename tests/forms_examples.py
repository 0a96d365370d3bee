"""Divide-and-conquer functions written the ways textbooks write them (issue 10).

Each is decorated as a user would and checked, by ``tests/test_forms.py``,
against its own ``.py_func`` on every device.  None is in the canonical
statement form that :func:`hpu._frontend.parse` recognised before
:mod:`hpu._normalise`: the calls sit inside expressions, inside an ``if``
block, in the ``else`` of the base case, in a conditional expression or in a
loop over a constant range.
"""
from __future__ import annotations

import hpu

WAYS = 4            # a module constant bounding a loop of calls


def cross_sum(a, lo, mid, hi):
    """Largest sum of a[i:j] with i < mid <= j (the maximum subarray's crossing part)."""
    best_left = a[mid - 1]
    s = 0
    for i in range(mid - 1, lo - 1, -1):
        s += a[i]
        if s > best_left:
            best_left = s
    best_right = a[mid]
    s = 0
    for j in range(mid, hi):
        s += a[j]
        if s > best_right:
            best_right = s
    return best_left + best_right


def merge(a, tmp, lo, mid, hi):
    i = lo
    j = mid
    for k in range(lo, hi):
        if j >= hi or (i < mid and a[i] <= a[j]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    for k in range(lo, hi):
        a[k] = tmp[k]


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def total(a, lo, hi):
    """The sum: calls inside the return's expression."""
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return total(a, lo, mid) + total(a, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def largest(a, lo, hi):
    """The maximum: calls as arguments of max, base case in if / else."""
    if hi - lo == 1:
        return a[lo]
    else:
        mid = (lo + hi) // 2
        return max(largest(a, lo, mid), largest(a, mid, hi))


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def count_positive(a, lo, hi):
    """How many elements are > 0: a local before the guard, used after the calls."""
    n = hi - lo
    if n == 1:
        return 1 if a[lo] > 0 else 0
    mid = lo + n // 2
    c = count_positive(a, lo, mid)
    c += count_positive(a, mid, hi)
    return c + 0 * n


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def best_sum(a, lo, hi):
    """Maximum subarray sum: best = max(f(l), f(r), cross) with a helper among the calls."""
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    best = max(best_sum(a, lo, mid), best_sum(a, mid, hi), cross_sum(a, lo, mid, hi))
    return best


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def max_subarray(a, lo, hi):
    """Maximum subarray as a 4-tuple (best, prefix, suffix, total), recursion in an if block."""
    if hi - lo > 1:
        mid = (lo + hi) // 2
        b1, p1, s1, t1 = max_subarray(a, lo, mid)
        b2, p2, s2, t2 = max_subarray(a, mid, hi)
        return max(b1, b2, s1 + p2), max(p1, t1 + p2), max(s2, s1 + t2), t1 + t2
    return a[lo], a[lo], a[lo], a[lo]


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def is_sorted(a, lo, hi):
    """A bool result; the second call sits after `and` (the function writes no array)."""
    if hi - lo <= 1:
        return True
    mid = (lo + hi) // 2
    return is_sorted(a, lo, mid) and is_sorted(a, mid, hi) and a[mid - 1] <= a[mid]


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def mergesort(a, tmp, lo, hi):
    """Mergesort with the calls in an `if` block and no else: the base case does nothing."""
    if hi - lo > 1:
        mid = (lo + hi) // 2
        mergesort(a, tmp, lo, mid)
        mergesort(a, tmp, mid, hi)
        merge(a, tmp, lo, mid, hi)


@hpu.divide_and_conquer(b=4, cost="1", span=("lo", "hi"))
def total4(a, lo, hi):
    """A 4-way sum: a loop of calls over a constant range, arguments using the loop variable."""
    if hi - lo < WAYS:
        s = 0
        for k in range(lo, hi):
            s += a[k]
        return s
    q = (hi - lo) // WAYS
    s = 0
    for i in range(WAYS):
        start = lo + i * q
        stop = start + q if i < WAYS - 1 else hi
        s += total4(a, start, stop)
    return s


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def span_min(a, lo, hi):
    """The minimum: the base case as a conditional expression, a call inside an if test."""
    mid = (lo + hi) // 2
    if hi - lo == 1:
        return a[lo]
    m = span_min(a, lo, mid)
    if span_min(a, mid, hi) < m:
        return span_min_right(a, mid, hi)
    return m


def span_min_right(a, lo, hi):
    m = a[lo]
    for i in range(lo, hi):
        if a[i] < m:
            m = a[i]
    return m


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def total_ternary(a, lo, hi):
    """The base case written as a conditional expression in the return."""
    mid = (lo + hi) // 2
    return a[lo] if hi - lo == 1 else total_ternary(a, lo, mid) + total_ternary(a, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def count_desc(a, lo, hi):
    """`if not base: ... else: return v`, and s += f(...)."""
    if not hi - lo <= 1:
        mid = (lo + hi) // 2
        s = count_desc(a, lo, mid)
        s += count_desc(a, mid, hi)
        if a[mid - 1] > a[mid]:
            s += 1
        return s
    else:
        return 0


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def min_max(a, lo, hi):
    """(smallest, largest); the two-element base case picks its tuple with a conditional
    expression, and the one-element case is a guard ending in if/else returns."""
    if hi - lo == 1:
        if a[lo] < 0:
            return a[lo], a[lo]
        else:
            return a[lo], a[lo]
    if hi - lo == 2:
        return (a[lo], a[lo + 1]) if a[lo] < a[lo + 1] else (a[lo + 1], a[lo])
    mid = (lo + hi) // 2
    lmin, lmax = min_max(a, lo, mid)
    rmin, rmax = min_max(a, mid, hi)
    return min(lmin, rmin), max(lmax, rmax)
