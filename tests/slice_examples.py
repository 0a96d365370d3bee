"""Textbook divide and conquer written with NumPy slices, for ``tests/test_slices.py``.

Each function is written as a person would on NumPy arrays: slices in the
recursive calls, slices passed to helpers, ``len(a)``, ``a.size``,
``a.shape[0]``, negative indices inside a view, views of views, names bound to
views.  ``REFERENCES`` maps each to an independent NumPy / plain-Python answer.
(The calls are statements here: calls inside expressions are another part of
the frontend.)
"""
from __future__ import annotations

import numpy as np

import hpu

LEAF = 4


# ---------------------------------------------------------------- helpers

def seg_sum(x):
    """Sum of a whole view, by its own length."""
    s = 0
    for i in range(len(x)):
        s += x[i]
    return s


def merge_into(left, right, out):
    """Merge the sorted views ``left`` and ``right`` into ``out`` (their total length)."""
    i = 0
    j = 0
    k = 0
    while i < len(left) and j < right.size:
        if right[j] < left[i]:
            out[k] = right[j]
            j += 1
        else:
            out[k] = left[i]
            i += 1
        k += 1
    while i < left.shape[0]:
        out[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        out[k] = right[j]
        j += 1
        k += 1


def copy_all(src, dst):
    for i in range(len(src)):
        dst[i] = src[i]


def count_in(x, v):
    c = 0
    for i in range(x.size):
        if x[i] == v:
            c += 1
    return c


def head_plus_rest(z):
    """A helper passing a slice of its own view to another helper."""
    if len(z) == 0:
        return 0
    return z[0] + seg_sum(z[1:])


# ---------------------------------------------------------------- functions

@hpu.divide_and_conquer(b=2, cost="1")
def total(a):
    """Recursive sum on halves: a[:m] and a[m:]."""
    if len(a) == 0:
        return 0
    if len(a) == 1:
        return a[0]
    m = len(a) // 2
    s1 = total(a[:m])
    s2 = total(a[m:])
    return s1 + s2


@hpu.divide_and_conquer(b=2, cost="1")
def total_leaf(a):
    """Sum with a helper that measures its slice at the leaves (len of a view in a helper)."""
    if a.size <= LEAF:
        return seg_sum(a[:])
    m = a.shape[0] // 2
    s1 = total_leaf(a[:m])
    s2 = total_leaf(a[m:])
    return s1 + s2


@hpu.divide_and_conquer(b=2, cost="n")
def msort(a, tmp):
    """Mergesort on (a, tmp) slices, merging views of a into tmp, then copying back."""
    if len(a) <= 1:
        return
    m = len(a) // 2
    msort(a[:m], tmp[:m])
    msort(a[m:], tmp[m:])
    merge_into(a[:m], a[m:], tmp)
    copy_all(tmp, a)


@hpu.divide_and_conquer(b=2, cost="1")
def maximum(a):
    """Largest element (non-empty input); the base case reads a[-1] of its view."""
    if len(a) == 1:
        return a[-1]
    m = len(a) // 2
    x = maximum(a[:m])
    y = maximum(a[m:])
    return max(x, y)


@hpu.divide_and_conquer(b=2, cost="1")
def minimum_ends(a):
    """Smallest element, comparing each view's first and last elements at small sizes."""
    if len(a) <= 2:
        return min(a[0], a[-1])
    m = len(a) // 2
    left = a[:m]
    right = a[m:]
    x = minimum_ends(left)
    y = minimum_ends(right)
    return min(x, y)


@hpu.divide_and_conquer(b=2, cost="1")
def count(a, v):
    """Occurrences of v, with explicit bounds a[0:m] and a[m:len(a)] and a counting helper."""
    if len(a) <= LEAF:
        return count_in(a, v)
    m = len(a) // 2
    c1 = count(a[0:m], v)
    c2 = count(a[m:len(a)], v)
    return c1 + c2


@hpu.divide_and_conquer(b=2, cost="1")
def total_vv(a):
    """Views of views: the right half as a[1:][m - 1:], and a negative stop a[:-(n - m)]."""
    if len(a) <= 1:
        return seg_sum(a)
    m = len(a) // 2
    s1 = total_vv(a[:-(len(a) - m)])
    s2 = total_vv(a[1:][m - 1:])
    return s1 + s2


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def total_lohi(a, lo, hi):
    """Index bounds *and* a slice to a helper: a[lo:hi]."""
    if hi - lo <= LEAF:
        return seg_sum(a[lo:hi])
    mid = (lo + hi) // 2
    s1 = total_lohi(a, lo, mid)
    s2 = total_lohi(a, mid, hi)
    return s1 + s2


@hpu.divide_and_conquer(b=2, cost="1")
def total_helpers(a, pad):
    """Views through two levels of helpers; ``pad`` (zeros, never sliced here) is passed
    whole to seg_sum, whose parameter receives views elsewhere: it travels as (pad, 0, len)."""
    if len(a) <= LEAF:
        return head_plus_rest(a) + seg_sum(pad)
    m = len(a) // 2
    s1 = total_helpers(a[:m], pad)
    s2 = total_helpers(a[m:], pad)
    return s1 + s2


def merge_tails(left, right, out):
    """The two-finger merge, each tail copied by a slice assignment (NumPy's ``out[k:] =``)."""
    i = j = k = 0
    while i < len(left) and j < len(right):
        if right[j] < left[i]:
            out[k] = right[j]
            j += 1
        else:
            out[k] = left[i]
            i += 1
        k += 1
    out[k:k + len(left) - i] = left[i:]
    k += len(left) - i
    out[k:] = right[j:]


@hpu.divide_and_conquer(b=2, cost="n")
def msort_tails(a, tmp):
    """Mergesort whose merge copies its tails and the merged run back by slice assignment."""
    if len(a) <= 1:
        return
    m = len(a) // 2
    msort_tails(a[:m], tmp[:m])
    msort_tails(a[m:], tmp[m:])
    merge_tails(a[:m], a[m:], tmp)
    a[:] = tmp


@hpu.divide_and_conquer(b=2, cost="n")
def shifts(a, lo, hi):
    """Slice assignments NumPy defines with care: overlapping views of one array (either
    direction), a scalar stored in a slice, a one-element source broadcast, an empty slice."""
    if hi - lo <= 2:
        return 0
    mid = (lo + hi) // 2
    s = shifts(a, lo, mid) + shifts(a, mid, hi)
    a[lo + 1:hi] = a[lo:hi - 1]
    a[lo:mid - 1] = a[lo + 1:mid]
    a[hi - 1:hi] = lo % 7
    a[lo:lo + 1] = a[mid:mid + 1]
    a[mid + 1:hi] = a[lo:lo + 1]
    a[hi:hi] = a[lo:lo]
    return s + a[mid]


def _sorted(a):
    return np.sort(a, kind="stable")


#: name -> (function, arguments from x, reference value from x, array expected after, or None)
REFERENCES = {
    "total": (total, lambda x: (x,), lambda x: int(x.sum()), None, 0),
    "total_leaf": (total_leaf, lambda x: (x,), lambda x: int(x.sum()), None, 0),
    "msort": (msort, lambda x: (x, np.zeros_like(x)), lambda x: None, _sorted, 0),
    "maximum": (maximum, lambda x: (x,), lambda x: int(x.max()), None, 1),
    "minimum_ends": (minimum_ends, lambda x: (x,), lambda x: int(x.min()), None, 1),
    "count": (count, lambda x: (x, 3), lambda x: int((x == 3).sum()), None, 0),
    "total_vv": (total_vv, lambda x: (x,), lambda x: int(x.sum()), None, 0),
    "total_helpers": (total_helpers, lambda x: (x, np.zeros(5, dtype=x.dtype)),
                      lambda x: int(x.sum()), None, 0),
    "total_lohi": (total_lohi, lambda x: (x, 0, x.size), lambda x: int(x.sum()), None, 0),
    "msort_tails": (msort_tails, lambda x: (x, np.zeros_like(x)), lambda x: None, _sorted, 0),
}
