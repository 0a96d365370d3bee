"""Stable mergesort: the paper's running example (004 §6), written as a user would.

What it computes
    ``mergesort(a, tmp, lo, hi)`` sorts ``a[lo:hi]`` in place, stably, using
    ``tmp[lo:hi]`` as scratch; ``sort(x)`` returns a stable sorted copy of a 1-D
    array of any supported dtype with NaNs last, exactly as
    ``np.sort(x, kind="stable")`` orders it.

Recurrence
    a = 2 (read from the two recursive calls), b = 2, f(n) = n (the merge).
    Ranges of at most 16 keys are sorted by insertion sort in the base case: it
    is stable, does far less bookkeeping than two more levels of recursion, and
    leaves the result bit-for-bit what a pure mergesort gives (a stable sort of
    a range has exactly one answer).

Reference
    ``np.sort(x, kind="stable")``, compared bit for bit (so the relative order
    of -0.0 and 0.0, and of NaNs with different payloads, is checked too).

Why NaNs are handled outside the recursion: every comparison with NaN is
false, so a comparison sort cannot place them.  ``sort`` moves them to the end
first with a stable NumPy partition, which is exactly where NumPy puts them, and
sorts the NaN-free prefix; -0.0 and 0.0 compare equal, so stability keeps them
in input order, as NumPy's stable sort does.
"""
from __future__ import annotations

import numpy as np

import hpu

from algorithms._inputs import as_sortable, nans_last
from algorithms._registry import Algorithm, Prepared, array_diff, register

__all__ = ["insertion_sort", "merge", "mergesort", "sort"]


def insertion_sort(a, lo, hi):
    """Sort ``a[lo:hi]`` in place, stably (a key moves left only past larger keys)."""
    for i in range(lo + 1, hi):
        v = a[i]
        j = i
        while j > lo and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v


def merge(a, tmp, lo, mid, hi):
    """Merge the sorted runs ``a[lo:mid]`` and ``a[mid:hi]`` in place, stably.

    Keys go to ``tmp`` in merged order and are copied back; what is left of
    the right run when the left one runs out is already in place.  On ties the
    left run's key goes first, which is what makes the sort stable.  (Copying
    only the left run out and merging back into ``a`` moves fewer keys, but
    measured slower under Numba.)
    """
    if mid <= lo or mid >= hi or a[mid - 1] <= a[mid]:
        return  # one run empty, or the runs are already in order
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


#: the wrapper's arrays are private copies: no snapshot of them (hpu._snapshot)
_PRIVATE = {"keep_inputs": False}


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def mergesort(a, tmp, lo, hi):
    """Sort ``a[lo:hi]`` in place, stably; ``tmp`` is scratch of the same length."""
    if hi - lo <= 16:
        insertion_sort(a, lo, hi)
        return
    mid = (lo + hi) // 2
    mergesort(a, tmp, lo, mid)
    mergesort(a, tmp, mid, hi)
    merge(a, tmp, lo, mid, hi)


def sort(x, *, return_run=False, **run_options):
    """Return a stable sorted copy of the 1-D array ``x``; ``x`` is not modified.

    Any of int8…int64, uint8…uint64, float32, float64; NaNs go last, as
    ``np.sort`` puts them.  ``run_options`` (``device``, ``alpha``, ``y``, ...)
    go to ``mergesort.run``.  With ``return_run=True`` the result is
    ``(sorted_copy, run)``, where ``run`` is the :class:`hpu.Run` report
    (``None`` when there was nothing to sort: fewer than two non-NaN keys).
    """
    a = as_sortable(x, "sort")
    a, n_keys = nans_last(a)
    run = None
    if n_keys > 1:
        run = mergesort.run(a, np.empty_like(a), 0, n_keys, **{**_PRIVATE, **run_options})
    return (a, run) if return_run else a


def _sort_prepared(x):
    def fresh(x):
        a = x.copy()
        return a, np.empty_like(a), 0, a.size

    return Prepared(fresh, lambda args, value: args[0], lambda x: np.sort(x, kind="stable"),
                    array_diff,
                    (("numpy", "np.sort(kind='stable')", lambda x: np.sort(x, kind="stable")),
                     ("numpy_default", "np.sort (default kind)", np.sort)))


register(Algorithm("mergesort", "mergesort (a=2, b=2, f(n)=n)", mergesort, _sort_prepared,
                   "np.sort(kind='stable')"))
