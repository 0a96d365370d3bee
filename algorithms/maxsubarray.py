"""Maximum subarray sum, the divide-and-conquer way (a textbook four-value summary).

What it computes
    ``max_subarray_sum(a, lo, hi)`` (``hi - lo >= 1``) returns the 4-tuple
    ``(total, best_prefix, best_suffix, best)`` for ``a[lo:hi]``: the sum of
    the range, the largest sum of a non-empty prefix, of a non-empty suffix,
    and of any non-empty contiguous subarray.  Those four values of two
    neighbouring ranges give the four of their union in O(1):

        total  = L.total + R.total
        prefix = max(L.prefix, L.total + R.prefix)
        suffix = max(R.suffix, L.suffix + R.total)
        best   = max(L.best, R.best, L.suffix + R.prefix)

    Subarrays are non-empty, so an all-negative array's answer is its largest
    element.  An empty array has no non-empty subarray: ``max_subarray`` refuses
    it with ``ValueError``.

    ``max_subarray(x)`` returns a :class:`MaxSubarray` (the four values, named)
    for a 1-D array, computed in int64 for integer input (uint64 values must be
    below 2**63; sums that overflow int64 wrap) and in float64 for float input.
    ``x`` is not modified (nothing is: the function only reads its array).

Recurrence
    a = 2, b = 2, f(n) = 1.

Reference
    Kadane's algorithm in plain Python, with the prefix, suffix and total
    computed by direct scans.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import hpu

from algorithms._inputs import checked_array
from algorithms._registry import (Algorithm, Prepared, close, float_tolerance, register,
                                  uniform_keys)

__all__ = ["MaxSubarray", "max_subarray", "max_subarray_sum"]


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def max_subarray_sum(a, lo, hi):
    """``(total, best_prefix, best_suffix, best)`` of the non-empty range ``a[lo:hi]``."""
    if hi - lo <= 1:
        v = a[lo]
        return v, v, v, v
    mid = (lo + hi) // 2
    lt, lp, ls, lb = max_subarray_sum(a, lo, mid)
    rt, rp, rs, rb = max_subarray_sum(a, mid, hi)
    t = lt + rt
    p = max(lp, lt + rp)
    s = max(rs, ls + rt)
    m = max(max(lb, rb), ls + rp)
    return t, p, s, m


@dataclass(frozen=True)
class MaxSubarray:
    """The four sums ``max_subarray`` computes for a non-empty array."""

    total: int | float        #: sum of all elements
    best_prefix: int | float  #: largest sum of a non-empty prefix
    best_suffix: int | float  #: largest sum of a non-empty suffix
    best: int | float         #: largest sum of a non-empty contiguous subarray


def max_subarray(x, *, return_run=False, **run_options):
    """The maximum-subarray summary of the non-empty 1-D array ``x``.

    ``run_options`` go to ``max_subarray_sum.run``; with ``return_run=True`` the
    result is ``(MaxSubarray, run)`` (``run`` is ``None`` for one element).
    """
    x = checked_array(x, "max_subarray")
    if x.size == 0:
        raise ValueError(
            "max_subarray() needs at least one element: an empty array has no "
            "non-empty subarray; check len(x) > 0 before calling it"
        )
    if x.dtype.kind == "f":
        a = np.ascontiguousarray(x, dtype=np.float64)
    else:
        if x.dtype.kind == "u" and x.dtype.itemsize == 8 and int(x.max()) >= 2**63:
            raise ValueError(
                f"max_subarray() adds integers in int64, but the uint64 input holds "
                f"{int(x.max())} >= 2**63; convert it with x.astype(np.float64) "
                f"(approximate) or reduce the values"
            )
        a = np.ascontiguousarray(x, dtype=np.int64)
    if a.size == 1:
        v = a[0].item()
        result, run = MaxSubarray(v, v, v, v), None
    else:
        run = max_subarray_sum.run(a, 0, a.size, **run_options)
        result = MaxSubarray(*(_plain(v) for v in run.value))
    return (result, run) if return_run else result


def _plain(v):
    """A NumPy or Python scalar as a Python ``int`` or ``float``."""
    return v.item() if isinstance(v, np.generic) else v


def reference(a):
    """(total, best prefix, best suffix, best) of a non-empty array, from its prefix sums.

    With C the prefix sums: best prefix = max C, best suffix = total − min(0, C
    without its last), best = max over j of C_j − min(0, C_0..C_{j−1}).
    """
    c = np.cumsum(a)
    total = c[-1]
    before = np.concatenate((np.zeros(1, c.dtype), c[:-1]))  # C_{j-1}, with C_{-1} = 0
    lowest_before = np.minimum.accumulate(np.minimum(before, 0))
    return (total.item(), c.max().item(), (total - before.min()).item(),
            (c - lowest_before).max().item())


def _prepared(x):
    work = np.float64 if x.dtype.kind == "f" else np.int64
    tol = float_tolerance(x, work)

    def fresh(x):
        a = x.astype(work)
        return a, 0, a.size

    def check(got, want):
        names = ("total", "best prefix", "best suffix", "best")
        for label, g, w in zip(names, got, want):
            if not close(g, w, tol):
                return f"{label} {g!r}, expected {w!r}" + (f" within {tol:.3g}" if tol else "")
        return None

    return Prepared(fresh, lambda args, value: tuple(v.item() if hasattr(v, "item") else v
                                                     for v in value),
                    lambda x: reference(x.astype(work)), check,
                    (("numpy", "NumPy prefix sums", lambda x: reference(x.astype(work))),))


def _keys(n, dtype, seed):
    """Keys in ``[-n, n)`` for signed and float dtypes (all-positive data would make the
    answer the plain total), ``[0, 2n)`` for unsigned ones."""
    lo, hi = (0, 2) if np.dtype(dtype).kind == "u" else (-1, 1)
    return uniform_keys(lo, hi)(n, dtype, seed)


register(Algorithm("maxsubarray", "max subarray (a=2, b=2, f(n)=1)", max_subarray_sum, _prepared,
                   "prefix sums in NumPy", make_input=_keys))
