"""The merge that calibration times on both sides: one Python source, two targets.

004 §6.4 estimates γ from a one-thread merge run on the CPU and on the device,
and its footnote 6 notes that the application's own combine function serves
best.  hpu's device code is what its translator makes of Python, with Python's
semantics kept exactly (index wrap-around, 64-bit arithmetic); a hand-written
OpenCL merge would time code hpu never runs and overstate the device (on PoCL
by about 2x).  So this one function is compiled by Numba for the CPU side and
translated to OpenCL C for the device side, as every level kernel is.
"""
from __future__ import annotations

import functools

__all__ = ["merge_one", "merge_task"]


def merge_one(a, b, out, na, nb, p):
    """Merge the ``p``-th pair ``a[p*na:(p+1)*na]``, ``b[p*nb:(p+1)*nb]`` into ``out``."""
    i = p * na
    j = p * nb
    k = p * (na + nb)
    ie = i + na
    je = j + nb
    while i < ie and j < je:
        x = a[i]
        y = b[j]
        if y < x:
            out[k] = y
            j += 1
        else:
            out[k] = x
            i += 1
        k += 1
    while i < ie:
        out[k] = a[i]
        i += 1
        k += 1
    while j < je:
        out[k] = b[j]
        j += 1
        k += 1


def merge_task(t, a, b, out, na, nb, pair):
    """The device kernel's task: work-item ``t`` (only ``t == 0`` is launched) merges ``pair``."""
    merge_one(a, b, out, na, nb, pair + t)


@functools.lru_cache(maxsize=None)
def _make_sorter():
    """A mergesort decorated by hpu: what calibration runs as one task on each side.

    ``.sequential`` is the recursion compiled by Numba (one core); a ``device="gpu"``
    run with ``K=0`` is one work-item running hpu's translated iterative solver.
    The ratio of the two is γ for the code hpu actually runs (004 footnote 6).
    """
    import hpu

    def calib_sort(a, tmp, lo, hi):
        if hi - lo <= CUTOFF:
            insertion_range(a, lo, hi)
            return
        mid = (lo + hi) // 2
        calib_sort(a, tmp, lo, mid)
        calib_sort(a, tmp, mid, hi)
        merge_range(a, tmp, lo, mid, hi)

    calib_sort.__module__ = __name__
    return hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))(calib_sort)


#: Ranges this short are insertion-sorted, as hpu's shipped mergesort does: the
#: cost of a call per element dominates a recursion down to single keys (in Numba
#: far more than on a device), which would skew γ by 2x.
CUTOFF = 16


def insertion_range(a, lo, hi):
    """Insertion-sort ``a[lo:hi]``."""
    for i in range(lo + 1, hi):
        v = a[i]
        j = i
        while j > lo and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v


def merge_range(a, tmp, lo, mid, hi):
    """Merge the sorted ``a[lo:mid]`` and ``a[mid:hi]`` in place through ``tmp``.

    The merge of hpu's shipped mergesort (``algorithms.mergesort.merge``),
    written again here because hpu itself must not import ``algorithms``: runs
    already in order are left alone, and what is left of the right run is
    already in place.
    """
    if mid <= lo or mid >= hi or a[mid - 1] <= a[mid]:
        return
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
