"""Small divide-and-conquer functions used by the decorator, driver and codegen tests.

Each exercises one part of the accepted shape: array mutation with helpers,
scalar / tuple / bool / float results, uneven splits with a = 3, 4 and 8, an
extra scalar passed through, assignments before the guard, several guards,
a divide that writes arrays (quicksort's partition), returns inside loops.
``REFERENCES`` maps each to an independent NumPy / plain-Python answer.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

import hpu

CUTOFF = 8          # module constants are copied into the generated module
SCALE = 0.5


# ---------------------------------------------------------------- helpers

def insertion_sort(a, lo, hi):
    for i in range(lo + 1, hi):
        v = a[i]
        j = i
        while j > lo and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v


def merge(a, tmp, lo, mid, hi):
    """Merge sorted a[lo:mid] and a[mid:hi] through tmp."""
    i = lo
    j = mid
    k = lo
    while i < mid and j < hi:
        if a[j] < a[i]:
            tmp[k] = a[j]
            j += 1
        else:
            tmp[k] = a[i]
            i += 1
        k += 1
    while i < mid:
        tmp[k] = a[i]
        i += 1
        k += 1
    for t in range(lo, k):
        a[t] = tmp[t]


def partition(a, lo, hi):
    """Lomuto partition around the middle element; returns the pivot's final index."""
    mid = (lo + hi) // 2
    v = a[mid]
    a[mid] = a[hi - 1]
    a[hi - 1] = v
    store = lo
    for i in range(lo, hi - 1):
        if a[i] < v:
            w = a[i]
            a[i] = a[store]
            a[store] = w
            store += 1
    a[hi - 1] = a[store]
    a[store] = v
    return store


def mark(visits, i):
    visits[i] += 1


# ---------------------------------------------------------------- functions

@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def mergesort(a, tmp, lo, hi):
    """In place; a = 2; a base case that does work; a carried name (mid)."""
    if hi - lo <= CUTOFF:
        insertion_sort(a, lo, hi)
        return
    mid = (lo + hi) // 2
    mergesort(a, tmp, lo, mid)
    mergesort(a, tmp, mid, hi)
    merge(a, tmp, lo, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def dsum(a, lo, hi):
    """Scalar result; an assignment before two guards; empty ranges allowed."""
    n = hi - lo
    if n <= 0:
        return 0
    if n == 1:
        return a[lo]
    mid = lo + n // 2
    s1 = dsum(a, lo, mid)
    s2 = dsum(a, mid, hi)
    return s1 + s2


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def maxsub(a, lo, hi):
    """4-tuple result (total, best prefix, best suffix, best) of a non-empty range."""
    if hi - lo <= 1:
        v = a[lo]
        return v, v, v, v
    mid = (lo + hi) // 2
    lt, lp, ls, lb = maxsub(a, lo, mid)
    rt, rp, rs, rb = maxsub(a, mid, hi)
    return lt + rt, max(lp, lt + rp), max(rs, ls + rt), max(max(lb, rb), ls + rp)


@hpu.divide_and_conquer(b=3, cost="1", span=("lo", "hi"))
def sum3(a, lo, hi):
    """a = 3 on uneven thirds, float accumulation, a helper-free combine."""
    if hi - lo <= 2:
        s = 0.0
        for i in range(lo, hi):
            s += a[i]
        return s
    m1 = lo + (hi - lo) // 3
    m2 = lo + 2 * (hi - lo) // 3
    x = sum3(a, lo, m1)
    y = sum3(a, m1, m2)
    z = sum3(a, m2, hi)
    return x + y + z


@hpu.divide_and_conquer(b=4, cost="1", span=("lo", "hi"))
def max4(a, lo, hi):
    """a = 4 on uneven quarters; float result; math in the combine."""
    if hi - lo <= 3:
        best = -math.inf
        for i in range(lo, hi):
            if a[i] > best:
                best = a[i] * 1.0
        return best
    q = (hi - lo) // 4
    r1 = max4(a, lo, lo + q)
    r2 = max4(a, lo + q, lo + 2 * q)
    r3 = max4(a, lo + 2 * q, lo + 3 * q)
    r4 = max4(a, lo + 3 * q, hi)
    return max(max(r1, r2), max(r3, r4))


@hpu.divide_and_conquer(b=8, cost="1", span=("lo", "hi"))
def count8(a, lo, hi, threshold):
    """a = 8; an extra scalar (threshold) passed through unchanged; int result."""
    if hi - lo < 8:
        c = 0
        for i in range(lo, hi):
            if a[i] > threshold:
                c += 1
        return c
    step = (hi - lo) // 8
    c0 = count8(a, lo, lo + step, threshold)
    c1 = count8(a, lo + step, lo + 2 * step, threshold)
    c2 = count8(a, lo + 2 * step, lo + 3 * step, threshold)
    c3 = count8(a, lo + 3 * step, lo + 4 * step, threshold)
    c4 = count8(a, lo + 4 * step, lo + 5 * step, threshold)
    c5 = count8(a, lo + 5 * step, lo + 6 * step, threshold)
    c6 = count8(a, lo + 6 * step, lo + 7 * step, threshold)
    c7 = count8(a, lo + 7 * step, hi, threshold)
    return c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7


@hpu.divide_and_conquer(span=("lo", "hi"))
def is_sorted(a, lo, hi):
    """bool result; the combine reads the divide's mid and the array."""
    if hi - lo <= 1:
        return True
    mid = (lo + hi) // 2
    left = is_sorted(a, lo, mid)
    right = is_sorted(a, mid, hi)
    return left and right and a[mid - 1] <= a[mid]


@hpu.divide_and_conquer(span=("lo", "hi"))
def sumsq(a, lo, hi, scale):
    """float result with a float scalar passed through by keyword; keyword recursive calls."""
    if hi - lo <= 4:
        s = 0.0
        for i in range(lo, hi):
            s += scale * a[i] * a[i]
        return s
    mid = (lo + hi) // 2
    left = sumsq(a, lo=lo, hi=mid, scale=scale)
    right = sumsq(a, mid, hi, scale=scale)
    return left + right


@hpu.divide_and_conquer(span=("lo", "hi"))
def find_first(a, lo, hi, x):
    """Returns inside loops (guard) and after an if (combine): -1 when absent."""
    if hi - lo <= 5:
        i = lo
        while i < hi:
            if a[i] == x:
                return i
            i += 1
        return -1
    mid = (lo + hi) // 2
    left = find_first(a, lo, mid, x)
    right = find_first(a, mid, hi, x)
    if left >= 0:
        return left
    for k in range(1):
        if right >= 0:
            return right
    return -1


@hpu.divide_and_conquer(span=("lo", "hi"))
def quicksort(a, lo, hi):
    """A divide that writes the array (partition) and carries its result."""
    if hi - lo <= 1:
        return
    p = partition(a, lo, hi)
    quicksort(a, lo, p)
    quicksort(a, p + 1, hi)


@hpu.divide_and_conquer(span=("lo", "hi"))
def visit_count(visits, lo, hi):
    """Counts how often each internal node's divide runs: visits[mid] += 1 (must be 1)."""
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    mark(visits, mid)
    visit_count(visits, lo, mid)
    visit_count(visits, mid, hi)


# ---------------------------------------------------------------- references

def ref_maxsub(x):
    """(total, best prefix, best suffix, best) of a non-empty sequence, by direct scans."""
    vals = [v.item() if hasattr(v, "item") else v for v in x]
    total = sum(vals)
    prefix = max(itertools.accumulate(vals))
    suffix = max(itertools.accumulate(reversed(vals)))
    best = cur = vals[0]
    for v in vals[1:]:
        cur = max(v, cur + v)
        best = max(best, cur)
    return total, prefix, suffix, best


def ref_find_first(x, v):
    hits = np.flatnonzero(np.asarray(x) == v)
    return int(hits[0]) if hits.size else -1
