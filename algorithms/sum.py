"""The paper's divide-and-conquer sum (004 §4.3, Algorithm 4), for any range length.

What it computes
    ``dc_sum(a, lo, hi)`` adds up ``a[lo:hi]`` (``hi - lo >= 1``) pairwise, in
    place exactly as Algorithm 4 does: each task adds its right half's sum into
    the first element of its left half, so ``a[lo]`` ends up holding the total,
    which is also returned.  Every partial sum is stored back into ``a``, so the
    arithmetic is ``a``'s own: integers wrap modulo 2**bits, float32 stays
    float32.  The same holds for the plain Python function, which is why the
    compiled runs and ``dc_sum.py_func`` agree bit for bit on every dtype.

    ``total(x)`` sums a 1-D array without modifying it and returns what
    ``np.sum(x)`` returns: int64 for signed integers and uint64 for unsigned
    ones (wrapping on overflow exactly as NumPy does, since addition modulo
    2**64 does not depend on the order), the input's float type for floats.
    An empty array sums to zero of that type.

Recurrence
    a = 2, b = 2, f(n) = 1 (one addition per task).  The paper's Algorithm 4
    assumes a power-of-two size; halving at ``(lo + hi) // 2`` handles any size.

Reference
    Integers: ``np.sum`` (exact).  Floats: pairwise summation in this order
    differs from NumPy's blocked pairwise order in the last bits, so the exact
    reference is ``dc_sum.py_func`` on the same data, and ``math.fsum`` /
    ``np.sum`` within a rounding tolerance.
"""
from __future__ import annotations

import numpy as np

import hpu

from algorithms._inputs import checked_array
from algorithms._registry import Algorithm, Prepared, close, float_tolerance, register

__all__ = ["accumulator_dtype", "dc_sum", "total"]


#: the wrapper's arrays are private copies: no snapshot of them (hpu._snapshot)
_PRIVATE = {"keep_inputs": False}


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def dc_sum(a, lo, hi):
    """Sum ``a[lo:hi]`` (at least one element) into ``a[lo]`` and return it."""
    if hi - lo <= 1:
        return a[lo]
    mid = (lo + hi) // 2
    dc_sum(a, lo, mid)
    dc_sum(a, mid, hi)
    a[lo] = a[lo] + a[mid]
    return a[lo]


def accumulator_dtype(dtype):
    """The dtype ``np.sum`` returns for an array of ``dtype``, and ``total`` adds in."""
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return np.dtype(np.int64)
    if dtype.kind == "u":
        return np.dtype(np.uint64)
    return dtype.newbyteorder("=")


def total(x, *, return_run=False, **run_options):
    """Return the sum of the 1-D array ``x`` (see the module docstring for its type).

    ``x`` is not modified: the additions happen in a private copy of
    ``np.sum``'s result dtype.  ``run_options`` go to ``dc_sum.run``; with
    ``return_run=True`` the result is ``(sum, run)`` (``run`` is ``None`` for
    fewer than two elements, which need no run).
    """
    x = checked_array(x, "total")
    acc = np.array(x, dtype=accumulator_dtype(x.dtype), order="C", copy=True)
    if acc.size == 0:
        return (acc.dtype.type(0), None) if return_run else acc.dtype.type(0)
    run = None
    if acc.size > 1:
        run = dc_sum.run(acc, 0, acc.size, **{**_PRIVATE, **run_options})
    value = acc[0]  # Algorithm 4 leaves the total in the first element
    return (value, run) if return_run else value


def _prepared(x):
    acc = accumulator_dtype(x.dtype)
    tol = float_tolerance(x, acc)

    def fresh(x):
        a = x.astype(acc)
        return a, 0, a.size

    def check(got, want):
        return None if close(got, want, tol) else (
            f"sum {got!r}, expected {want!r}" + (f" within {tol:.3g}" if tol else ""))

    return Prepared(fresh, lambda args, value: args[0][0],
                    lambda x: np.sum(x, dtype=np.float64 if acc.kind == "f" else None), check,
                    (("numpy", "np.sum", np.sum),))


register(Algorithm("sum", "sum (a=2, b=2, f(n)=1)", dc_sum, _prepared, "np.sum"))
