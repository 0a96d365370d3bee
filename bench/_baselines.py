"""Hand-written Numba mergesorts that hpu's generated CPU code is measured against.

Both are what a user who knows Numba would write by hand to sort on every core:
sort chunks of ``CHUNK`` keys sequentially, one chunk per ``prange``
iteration, then merge level by level bottom-up, each level a ``prange`` over
its independent merges.  The top levels have fewer merges than cores, exactly
as in hpu's breadth-first execution.

``breadth_first_mergesort``
    the tuned one: bottom-up chunk sorts and merges that ping-pong between the
    array and the scratch buffer, so no merge copies back.
``breadth_first_same_merge``
    the same level structure built from ``algorithms.mergesort``'s own helpers
    (``insertion_sort`` below 17 keys, ``merge`` with its copy back), the
    chunks sorted by the same recursion compiled by Numba.  It does exactly the
    work hpu does, so hpu's time over its time is hpu's own overhead
    (parameter arrays, generated kernels, the cut-off level).

Every function here is stable and sorts in place; the caller supplies the
scratch buffer so that allocation is not timed.
"""
from __future__ import annotations

import numba
import numpy as np

from algorithms import mergesort as _user

__all__ = ["CHUNK", "breadth_first_mergesort", "breadth_first_same_merge"]

#: keys per sequentially sorted chunk: 64 KiB of int32, comfortably inside L2
CHUNK = 1 << 14
#: runs this short are insertion-sorted inside a chunk
_RUN = 16


@numba.njit(cache=True, nogil=True)
def _insertion_sort(a, lo, hi):
    for i in range(lo + 1, hi):
        v = a[i]
        j = i
        while j > lo and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v


@numba.njit(cache=True, nogil=True)
def _merge_into(src, dst, lo, mid, hi):
    """Merge ``src[lo:mid]`` and ``src[mid:hi]`` into ``dst[lo:hi]``, stably."""
    i = lo
    j = mid
    k = lo
    while i < mid and j < hi:
        if src[j] < src[i]:
            dst[k] = src[j]
            j += 1
        else:
            dst[k] = src[i]
            i += 1
        k += 1
    while i < mid:
        dst[k] = src[i]
        i += 1
        k += 1
    while j < hi:
        dst[k] = src[j]
        j += 1
        k += 1


@numba.njit(cache=True, nogil=True)
def _sort_chunk(a, tmp, lo, hi):
    """Sequential bottom-up mergesort of ``a[lo:hi]``; the result ends in ``a``."""
    for s in range(lo, hi, _RUN):
        _insertion_sort(a, s, min(s + _RUN, hi))
    src, dst = a, tmp
    passes = 0
    width = _RUN
    while width < hi - lo:
        for s in range(lo, hi, 2 * width):
            mid = min(s + width, hi)
            _merge_into(src, dst, s, mid, min(s + 2 * width, hi))
        src, dst = dst, src
        passes += 1
        width *= 2
    if passes % 2 == 1:  # an odd number of passes left the result in tmp
        a[lo:hi] = tmp[lo:hi]


@numba.njit(cache=True, parallel=True)
def _sort_chunks(a, tmp, chunk, into_tmp):
    n = a.size
    for c in numba.prange((n + chunk - 1) // chunk):
        lo = c * chunk
        hi = min(lo + chunk, n)
        _sort_chunk(a, tmp, lo, hi)
        if into_tmp:
            tmp[lo:hi] = a[lo:hi]


@numba.njit(cache=True, parallel=True)
def _merge_level(src, dst, width):
    n = src.size
    for m in numba.prange((n + 2 * width - 1) // (2 * width)):
        lo = m * 2 * width
        mid = min(lo + width, n)
        hi = min(lo + 2 * width, n)
        _merge_into(src, dst, lo, mid, hi)


def breadth_first_mergesort(a, tmp, chunk=CHUNK):
    """Sort the 1-D array ``a`` in place, stably, on all Numba threads.

    ``tmp`` is scratch of the same shape and dtype.  The number of merge levels
    is known in advance, so the chunks are copied to ``tmp`` first when that
    number is odd: the last level then writes into ``a``, with no copy back.
    """
    n = a.size
    levels = 0
    width = chunk
    while width < n:
        levels += 1
        width *= 2
    _sort_chunks(a, tmp, chunk, levels % 2 == 1)
    src, dst = (tmp, a) if levels % 2 == 1 else (a, tmp)
    width = chunk
    while width < n:
        _merge_level(src, dst, width)
        src, dst = dst, src
        width *= 2
    assert src is a
    return a


# ------------------------------------------- the same work as hpu, by hand

_user_insertion_sort = numba.njit(nogil=True)(_user.insertion_sort)
_user_merge = numba.njit(nogil=True)(_user.merge)


@numba.njit(nogil=True)
def _user_recursion(a, tmp, lo, hi):
    """``algorithms.mergesort.mergesort``'s body, compiled as plain Numba."""
    if hi - lo <= 16:
        _user_insertion_sort(a, lo, hi)
        return
    mid = (lo + hi) // 2
    _user_recursion(a, tmp, lo, mid)
    _user_recursion(a, tmp, mid, hi)
    _user_merge(a, tmp, lo, mid, hi)


@numba.njit(parallel=True)
def _same_chunks(a, tmp, chunk):
    n = a.size
    for c in numba.prange((n + chunk - 1) // chunk):
        _user_recursion(a, tmp, c * chunk, min(c * chunk + chunk, n))


@numba.njit(parallel=True)
def _same_level(a, tmp, width):
    n = a.size
    for m in numba.prange((n + 2 * width - 1) // (2 * width)):
        lo = m * 2 * width
        _user_merge(a, tmp, lo, min(lo + width, n), min(lo + 2 * width, n))


def breadth_first_same_merge(a, tmp, chunk=CHUNK):
    """Sort ``a`` in place with ``algorithms.mergesort``'s helpers, level by level."""
    _same_chunks(a, tmp, chunk)
    width = chunk
    while width < a.size:
        _same_level(a, tmp, width)
        width *= 2
    return a


def warm_up(dtype=np.int32):
    """Compile both baselines for ``dtype`` on a tiny input."""
    for sort in (breadth_first_mergesort, breadth_first_same_merge):
        x = np.arange(3 * CHUNK, 0, -1).astype(dtype)
        sort(x, np.empty_like(x))
        assert (x[1:] >= x[:-1]).all()
