"""Inversion count by mergesort: how far an array is from sorted.

What it computes
    ``inversions(a, tmp, lo, hi)`` sorts ``a[lo:hi]`` in place, stably (as
    :mod:`algorithms.mergesort` does), and returns the number of pairs
    ``lo <= i < j < hi`` with ``a[i] > a[j]``.  The combine returns
    left + right + cross, where cross is counted while merging: whenever a key
    of the right run is taken before the ``mid - i`` keys still waiting in the
    left run, it is smaller than all of them.  Ranges of at most 16 keys are
    sorted by insertion sort, whose every shift undoes exactly one inversion.

    ``count_inversions(x)`` does this on a private copy of ``x`` (never
    modifying ``x``) and returns the count as a Python ``int``; with
    ``return_sorted=True`` it returns ``(count, sorted_copy)``.  Keys are
    ordered as ``np.sort`` orders them: NaNs after every number and equal to
    each other, -0.0 equal to 0.0.  The count is exact up to 2**63 - 1 (it
    cannot exceed n*(n-1)/2).

Recurrence
    a = 2, b = 2, f(n) = n (the counting merge).

Reference
    An independent count in the tests: brute force over all pairs for small
    arrays, and for large ones a split into halves whose cross pairs are counted
    with ``np.searchsorted`` on the sorted left half.
"""
from __future__ import annotations

import numpy as np

import hpu

from algorithms._inputs import as_sortable
from algorithms._registry import Algorithm, Prepared, array_diff, register

__all__ = ["count_inversions", "insertion_count", "inversions", "merge_count"]


def insertion_count(a, lo, hi):
    """Insertion-sort ``a[lo:hi]`` stably; return how many inversions it removed."""
    count = 0
    for i in range(lo + 1, hi):
        v = a[i]
        j = i
        while j > lo and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
            count += 1
        a[j] = v
    return count


def merge_count(a, tmp, lo, mid, hi):
    """Merge the sorted runs ``a[lo:mid]``, ``a[mid:hi]`` stably; return the cross inversions."""
    if mid <= lo or mid >= hi or a[mid - 1] <= a[mid]:
        return 0
    count = 0
    i = lo
    j = mid
    k = lo
    while i < mid and j < hi:
        if a[j] < a[i]:
            tmp[k] = a[j]
            count += mid - i
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
    return count


#: the wrapper's arrays are private copies: no snapshot of them (hpu._snapshot)
_PRIVATE = {"keep_inputs": False}


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def inversions(a, tmp, lo, hi):
    """Sort ``a[lo:hi]`` in place and return its number of inversions."""
    if hi - lo <= 16:
        return insertion_count(a, lo, hi)
    mid = (lo + hi) // 2
    left = inversions(a, tmp, lo, mid)
    right = inversions(a, tmp, mid, hi)
    cross = merge_count(a, tmp, lo, mid, hi)
    return left + right + cross


def count_inversions(x, *, return_sorted=False, return_run=False, **run_options):
    """The number of pairs ``i < j`` with ``x[i] > x[j]`` in ``np.sort``'s order.

    Returns an ``int``; ``(count, sorted_copy)`` with ``return_sorted=True``;
    and the :class:`hpu.Run` report appended as a last element with
    ``return_run=True`` (``None`` when fewer than two non-NaN keys needed no
    run).  ``run_options`` go to ``inversions.run``.  ``x`` is not modified.
    """
    a = as_sortable(x, "count_inversions")
    count = 0
    n_keys = a.size
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if nan.any():
            # a NaN is greater than every number: it forms one inversion with
            # each number after it; NaNs among themselves are equal
            count = int(np.cumsum(nan)[~nan].sum())
            a = np.concatenate((a[~nan], a[nan]))
            n_keys -= int(np.count_nonzero(nan))
    run = None
    if n_keys > 1:
        run = inversions.run(a, np.empty_like(a), 0, n_keys, **{**_PRIVATE, **run_options})
        count += int(run.value)
    result = (count, a) if return_sorted else (count,)
    if return_run:
        result += (run,)
    return result if len(result) > 1 else result[0]


def reference_count(x) -> int:
    """The number of pairs ``i < j`` with ``x[i] > x[j]``, counted with NumPy alone.

    Keys become dense ranks, padded to a power of two with a rank above all
    others (a pad after every key adds no pair); then, bottom-up, each pair of
    sorted neighbouring blocks contributes, for every key of the right block,
    the number of left-block keys greater than it, found with one global
    ``searchsorted`` (block ``r``'s keys are shifted by ``r * (n + 1)`` so the
    concatenated left blocks are one sorted array).
    """
    ranks = np.unique(np.asarray(x), return_inverse=True)[1].astype(np.int64).ravel()
    n = ranks.size
    size = 1
    while size < n:
        size *= 2
    cur = np.full(size, n, np.int64)
    cur[:n] = ranks
    total = 0
    w = 1
    while w < size:
        rows = size // (2 * w)
        pairs = cur.reshape(rows, 2, w)
        shift = (np.arange(rows, dtype=np.int64) * (n + 1))[:, None]
        left = (pairs[:, 0, :] + shift).ravel()
        right = (pairs[:, 1, :] + shift).ravel()
        not_greater = (np.searchsorted(left, right, side="right")
                       - np.repeat(np.arange(rows, dtype=np.int64) * w, w))
        total += int((w - not_greater).sum())
        cur = np.sort(pairs.reshape(rows, 2 * w), axis=1, kind="stable")
        w *= 2
    return total


def _prepared(x):
    def fresh(x):
        a = x.copy()
        return a, np.empty_like(a), 0, a.size

    def check(got, want):
        (count, keys), (want_count, want_keys) = got, want
        if int(count) != want_count:
            return f"count {int(count)}, expected {want_count}"
        diff = array_diff(keys, want_keys)
        return None if diff is None else f"the sorted keys: {diff}"

    return Prepared(fresh, lambda args, value: (value, args[0]),
                    lambda x: (reference_count(x), np.sort(x, kind="stable")), check)


register(Algorithm("inversions", "inversions (a=2, b=2, f(n)=n)", inversions, _prepared,
                   "a NumPy inversion count and np.sort(kind='stable')"))
