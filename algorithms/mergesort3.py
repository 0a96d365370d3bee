"""Three-way mergesort: a = 3 recursive calls on uneven thirds, a three-way merge.

What it computes
    ``mergesort3(a, tmp, lo, hi)`` sorts ``a[lo:hi]`` in place, stably, using
    ``tmp[lo:hi]`` as scratch.  A range of n keys splits at
    ``lo + n // 3`` and ``lo + 2 * n // 3``, so when 3 does not divide n the
    thirds differ by one (n = 13 gives sizes 4, 4, 5; n = 14 gives 4, 5, 5).  ``merge3`` merges the three sorted runs into ``tmp`` in one pass,
    taking the key of the leftmost run on ties (which makes the sort stable),
    and copies the result back.

    ``sort3(x)`` returns a stable sorted copy with NaNs last, exactly what
    ``np.sort(x, kind="stable")`` returns (see :mod:`algorithms.mergesort`).

    It exists to exercise a branching factor above two with uneven splits; for
    speed prefer :func:`algorithms.mergesort.sort`.

Recurrence
    a = 3, b = 3, f(n) = n.  Ranges of at most 12 keys are insertion-sorted.

Reference
    ``np.sort(x, kind="stable")``, compared bit for bit.
"""
from __future__ import annotations

import numpy as np

import hpu

from algorithms._inputs import as_sortable, nans_last
from algorithms._registry import Algorithm, register
from algorithms.mergesort import _sort_prepared, insertion_sort

__all__ = ["merge3", "mergesort3", "sort3"]


def merge3(a, tmp, lo, m1, m2, hi):
    """Merge the sorted runs ``a[lo:m1]``, ``a[m1:m2]``, ``a[m2:hi]`` in place, stably."""
    i = lo
    j = m1
    k = m2
    out = lo
    while out < hi:
        # take from the first run whose head is not larger than the others'
        # heads; an exhausted run is never chosen
        pick = 0
        if i < m1:
            pick = 1
        if j < m2 and (pick == 0 or a[j] < a[i]):
            pick = 2
        if k < hi:
            if pick == 0:
                pick = 3
            elif pick == 1 and a[k] < a[i]:
                pick = 3
            elif pick == 2 and a[k] < a[j]:
                pick = 3
        if pick == 1:
            tmp[out] = a[i]
            i += 1
        elif pick == 2:
            tmp[out] = a[j]
            j += 1
        else:
            tmp[out] = a[k]
            k += 1
        out += 1
    for t in range(lo, hi):
        a[t] = tmp[t]


#: the wrapper's arrays are private copies: no snapshot of them (hpu._snapshot)
_PRIVATE = {"keep_inputs": False}


@hpu.divide_and_conquer(b=3, cost="n", span=("lo", "hi"))
def mergesort3(a, tmp, lo, hi):
    """Sort ``a[lo:hi]`` in place, stably, by three-way mergesort."""
    if hi - lo <= 12:
        insertion_sort(a, lo, hi)
        return
    n = hi - lo
    m1 = lo + n // 3
    m2 = lo + 2 * n // 3
    mergesort3(a, tmp, lo, m1)
    mergesort3(a, tmp, m1, m2)
    mergesort3(a, tmp, m2, hi)
    merge3(a, tmp, lo, m1, m2, hi)


def sort3(x, *, return_run=False, **run_options):
    """Return a stable sorted copy of ``x`` (NaNs last) made by ``mergesort3``.

    Same contract as :func:`algorithms.mergesort.sort`: any supported dtype,
    ``x`` unmodified, ``run_options`` to ``mergesort3.run``, and
    ``return_run=True`` giving ``(sorted_copy, run)``.
    """
    a = as_sortable(x, "sort3")
    a, n_keys = nans_last(a)
    run = None
    if n_keys > 1:
        run = mergesort3.run(a, np.empty_like(a), 0, n_keys, **{**_PRIVATE, **run_options})
    return (a, run) if return_run else a


register(Algorithm("mergesort3", "mergesort3 (a=3, b=3, f(n)=n)", mergesort3, _sort_prepared,
                   "np.sort(kind='stable')"))
