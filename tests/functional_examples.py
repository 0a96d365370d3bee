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
