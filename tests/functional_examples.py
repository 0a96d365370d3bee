"""Recursive functions in the functional style most published Python uses, for
``tests/test_functional.py``: slices in, ``float("-inf")`` sentinels, ``if not arr``
for "empty", lists at the call.  Each is written as a person would; the tests compare
them with plain Python on the same input."""
from __future__ import annotations

import math

import numpy as np

import hpu


def crossing_max(left, right):
    """Best sum of a run that ends at the end of ``left`` and starts at ``right[0]``."""
    best_l = float("-inf")
    s = 0.0
    for i in range(len(left) - 1, -1, -1):
        s += left[i]
        best_l = max(best_l, s)
    best_r = float("-inf")
    s = 0.0
    for i in range(len(right)):
        s += right[i]
        best_r = max(best_r, s)
    return best_l + best_r


@hpu.divide_and_conquer
def max_subarray(a):
    """Maximum subarray sum; -inf for an empty array."""
    if not a:
        return float("-inf")
    if len(a) == 1:
        return a[0] * 1.0
    m = len(a) // 2
    return max(max_subarray(a[:m]), max_subarray(a[m:]), crossing_max(a[:m], a[m:]))


@hpu.divide_and_conquer
def list_sum(a):
    """Sum of a list: 0 when empty."""
    if not a:
        return 0.0
    if len(a) == 1:
        return a[0] * 1.0
    m = len(a) // 2
    return list_sum(a[:m]) + list_sum(a[m:])


@hpu.divide_and_conquer
def smallest(a):
    """The smallest element, math.inf for an empty array."""
    if len(a) == 0:
        return math.inf
    if len(a) == 1:
        return a[0] * 1.0
    m = len(a) // 2
    return min(smallest(a[:m]), smallest(a[m:]))


def plain_max_subarray(xs):
    best = float("-inf")
    for i in range(len(xs)):
        s = 0.0
        for j in range(i, len(xs)):
            s += xs[j]
            best = max(best, s)
    return best


REFERENCES = {
    "max_subarray": (max_subarray, plain_max_subarray),
    "list_sum": (list_sum, lambda xs: float(sum(xs))),
    "smallest": (smallest, lambda xs: float(min(xs)) if len(xs) else math.inf),
}


# ---------------------------------------------------------------- arrays allocated and returned

def merge(left, right):
    """The textbook two-finger merge into a new array."""
    out = np.empty(len(left) + len(right), left.dtype)
    i = 0
    j = 0
    k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        out[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        out[k] = right[j]
        j += 1
        k += 1
    return out


@hpu.divide_and_conquer
def msort(a):
    """Sorted copy of ``a`` (the issue's example); ``a`` untouched."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge(msort(a[:m]), msort(a[m:]))


def merge_count(left, right):
    out = np.zeros(len(left) + len(right), left.dtype)
    i = 0
    j = 0
    inv = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
            inv += len(left) - i
    return out, inv


@hpu.divide_and_conquer
def sort_count(a):
    """(sorted copy, number of inversions)."""
    if len(a) <= 1:
        return a.copy(), 0
    m = len(a) // 2
    left, x = sort_count(a[:m])
    right, y = sort_count(a[m:])
    out, z = merge_count(left, right)
    return out, x + y + z


@hpu.divide_and_conquer
def best_run(a):
    """(max subarray sum, best prefix, best suffix, total) over a scratch copy; -inf empty."""
    if len(a) == 0:
        return float("-inf"), float("-inf"), float("-inf"), 0.0
    if len(a) == 1:
        b = np.empty(1, np.float64)
        b[0] = a[0]
        return b[0], b[0], b[0], b[0]
    m = len(a) // 2
    l1, l2, l3, l4 = best_run(a[:m])
    r1, r2, r3, r4 = best_run(a[m:])
    return max(l1, r1, l3 + r2), max(l2, l4 + r2), max(r3, r4 + l3), l4 + r4


def plain_inversions(xs):
    return sum(1 for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[i] > xs[j])


def plain_best_run(xs):
    n = len(xs)
    prefix = max((float(sum(xs[:k])) for k in range(1, n + 1)), default=float("-inf"))
    suffix = max((float(sum(xs[k:])) for k in range(n)), default=float("-inf"))
    return plain_max_subarray(xs), prefix, suffix, float(sum(xs))


ARRAY_REFERENCES = {
    "msort": (msort, lambda xs: (sorted(xs),)),
    "sort_count": (sort_count, lambda xs: (sorted(xs), plain_inversions(xs))),
    "best_run": (best_run, lambda xs: plain_best_run(xs)),
}


# ---------------------------------------------------------------- shapes of the fan-out

def join_prefix(left, right):
    """Prefix sums of ``left + right`` from those of each half."""
    out = np.empty(len(left) + len(right), np.float64)
    carry = 0.0
    for i in range(len(left)):
        out[i] = left[i]
        carry = left[i]
    for j in range(len(right)):
        out[len(left) + j] = right[j] + carry
    return out


@hpu.divide_and_conquer
def prefix_sums(a):
    """Running sums of a list of numbers (``left = f(...)``, then ``right = f(...)``)."""
    if len(a) == 0:
        return np.zeros(0, np.float64)
    if len(a) == 1:
        out = np.empty(1, np.float64)
        out[0] = a[0]
        return out
    m = len(a) // 2
    left = prefix_sums(a[:m])
    right = prefix_sums(a[m:])
    return join_prefix(left, right)


@hpu.divide_and_conquer
def msort4(a):
    """Four-way mergesort whose self-calls fill a list in a loop."""
    if len(a) <= 3:
        return merge(merge(a[:1], a[1:2]), a[2:])
    q = len(a) // 4
    parts = []
    for k in range(3):
        parts.append(msort4(a[k * q:(k + 1) * q]))
    parts.append(msort4(a[3 * q:]))
    return merge(merge(parts[0], parts[1]), merge(parts[2], parts[3]))


@hpu.divide_and_conquer
def checked_sort(a):
    """Sorted copy; a negative key raises ValueError in the base case that meets it."""
    if len(a) <= 1:
        if len(a) == 1 and a[0] < 0:
            raise ValueError("negative key")
        return a.copy()
    m = len(a) // 2
    return merge(checked_sort(a[:m]), checked_sort(a[m:]))


@hpu.divide_and_conquer
def sort_min(a):
    """(sorted copy, smallest key or 0): the top levels' ``out[0]`` is a NumPy scalar in
    Python, an ``int``/``float`` from Numba."""
    if len(a) <= 1:
        return a.copy(), (a[0] if len(a) else 0)
    m = len(a) // 2
    left, x = sort_min(a[:m])
    right, y = sort_min(a[m:])
    out = merge(left, right)
    return out, out[0]


def plain_prefix(xs):
    out, s = [], 0.0
    for v in xs:
        s += v
        out.append(s)
    return out


FANOUT_REFERENCES = {
    **ARRAY_REFERENCES,
    "prefix_sums": (prefix_sums, lambda xs: (plain_prefix(xs),)),
    "msort4": (msort4, lambda xs: (sorted(xs),)),
    "sort_min": (sort_min, lambda xs: (sorted(xs), min(xs) if xs else 0)),
}


def spin_leaf(a, marks, work):
    """A one-key sorted copy after ``work`` steps; its mark (``marks[0]`` of the leaf's
    slice) nonzero when done."""
    x = 1
    for _ in range(work):
        x = (x * 3 + 1) % 1000003
    marks[0] = x | 1
    return a.copy()


@hpu.divide_and_conquer
def spin_sort(a, marks, work):
    """Mergesort whose leaves take ``work`` steps each, marking their element of
    ``marks`` (sliced along with ``a``: each task writes its own part)."""
    if len(a) <= 1:
        return spin_leaf(a, marks, work)
    m = len(a) // 2
    return merge(spin_sort(a[:m], marks[:m], work), spin_sort(a[m:], marks[m:], work))


@hpu.divide_and_conquer
def msort_inline(a):
    """Mergesort with the merge written in the function itself."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    left = msort_inline(a[:m])
    right = msort_inline(a[m:])
    out = np.empty(len(a), a.dtype)
    i = j = 0
    for k in range(len(a)):  # merge-loop
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


# ---------------------------------------------------------------- lists in, lists out

@hpu.divide_and_conquer
def qsort(arr):
    """The textbook quicksort: comprehensions, lists concatenated."""
    if len(arr) <= 1:
        return arr
    pivot = arr[len(arr) // 2]
    left = [x for x in arr if x < pivot]
    middle = [x for x in arr if x == pivot]
    right = [x for x in arr if x > pivot]
    return qsort(left) + middle + qsort(right)


def merge_lists(left, right):
    result = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    result.extend(left[i:])
    result.extend(right[j:])
    return result


@hpu.divide_and_conquer
def lsort(arr):
    """Mergesort on lists: slices of the list, a helper that appends."""
    if len(arr) <= 1:
        return arr
    mid = len(arr) // 2
    return merge_lists(lsort(arr[:mid]), lsort(arr[mid:]))


@hpu.divide_and_conquer
def chunk_max(xs):
    """Largest item, over three chunks collected in a loop (one self-call, in the loop)."""
    if len(xs) <= 2:
        return max(xs)
    q = (len(xs) + 2) // 3
    best = []
    for k in range(3):
        part = xs[k * q:(k + 1) * q]
        if len(part) > 0:
            best.append(chunk_max(part))
    return max(best)


LIST_REFERENCES = {
    "qsort": (qsort, sorted),
    "lsort": (lsort, sorted),
    "chunk_max": (chunk_max, max),
}


# ---------------------------------------------------------------- lists written in place

@hpu.divide_and_conquer
def merge_sort_in_place(arr):
    """The mergesort most tutorials print: list slices (copies) sorted, merged back into
    ``arr``; on a NumPy array the slices would be views and the merge would read what it
    has just overwritten."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid]
        R = arr[mid:]
        merge_sort_in_place(L)
        merge_sort_in_place(R)
        i = j = k = 0
        while i < len(L) and j < len(R):
            if L[i] <= R[j]:
                arr[k] = L[i]
                i += 1
            else:
                arr[k] = R[j]
                j += 1
            k += 1
        while i < len(L):
            arr[k] = L[i]
            i += 1
            k += 1
        while j < len(R):
            arr[k] = R[j]
            j += 1
            k += 1


@hpu.divide_and_conquer
def negate_then_check(a, lo, hi):
    """Negates every item; the leaf that meets 13 divides by zero, after the leaves
    before it have written theirs."""
    if hi - lo == 1:
        a[lo] = -a[lo] + 0 * (1 // (a[lo] - 13))
        return
    mid = (lo + hi) // 2
    negate_then_check(a, lo, mid)
    negate_then_check(a, mid, hi)


# ---------------------------------------------------------------- runaways (subprocess tests)

@hpu.divide_and_conquer
def runaway_sort(a):
    """a[:m + 1] of two keys is both keys again: the recursion never shrinks."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge(runaway_sort(a[:m + 1]), runaway_sort(a[m:]))  # LINE_RUNAWAY


@hpu.divide_and_conquer
def runaway_qsort(arr):
    """The pivot stays in the left part: [1, 1] splits into [1, 1] and []."""
    if len(arr) <= 1:
        return arr
    left = [x for x in arr if x <= arr[0]]
    right = [x for x in arr if x > arr[0]]
    return runaway_qsort(left) + runaway_qsort(right)  # LINE_RUNAWAY_Q


def merge_off_by_one(left, right):
    """Reads left[len(left)] when the right side runs out first: plain Python raises
    IndexError there."""
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


def _sort_off_by_one(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge_off_by_one(_sort_off_by_one(a[:m]), _sort_off_by_one(a[m:]))


# ---------------------------------------------------------------- what Numba cannot compile

import heapq  # noqa: E402


@hpu.divide_and_conquer
def heap_merge_sort(arr):
    """heapq.merge: plain Python runs it, Numba does not know it."""
    if len(arr) <= 1:
        return list(arr)
    m = len(arr) // 2
    return list(heapq.merge(heap_merge_sort(arr[:m]), heap_merge_sort(arr[m:])))  # LINE_HEAPQ


@hpu.divide_and_conquer
def one_line_qsort(arr):
    """The one-line quicksort: its base case inside a conditional expression, its
    comprehensions beside its recursive calls."""
    return arr if len(arr) <= 1 else one_line_qsort(
        [x for x in arr[1:] if x < arr[0]]) + [arr[0]] + one_line_qsort(
        [x for x in arr[1:] if x >= arr[0]])


def sort_sumsq(a):
    """A sorted copy and the sum of squares, which wraps in int64 as NumPy's scalars do."""
    if len(a) <= 1:
        if len(a) == 1:
            return a.copy(), a[0] * a[0]
        return a.copy(), 0
    m = len(a) // 2
    left, s1 = sort_sumsq(a[:m])
    right, s2 = sort_sumsq(a[m:])
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out, s1 + s2
