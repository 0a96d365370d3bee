"""Functions that read a local no statement assigned on the path taken (hpu._unbound):
Python raises UnboundLocalError there, and gives a value where the path assigns it."""
import numpy as np


def bonus_sum(a, lo, hi):
    """In place of nothing: a sum whose bonus exists only where the left half is positive."""
    if hi - lo <= 1:
        return a[lo]
    mid = (lo + hi) // 2
    left = bonus_sum(a, lo, mid)
    right = bonus_sum(a, mid, hi)
    if left > 0:
        bonus = 1
    return left + right + bonus  # unbound-here


def last_of_loop(a):
    """A new array whose first element is the left half's last positive one, assigned only
    in a loop's turns that find one."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    left = last_of_loop(a[:m])
    right = last_of_loop(a[m:])
    for t in range(len(left)):
        if left[t] > 0:
            last = left[t]
    out = np.concatenate((left, right))
    out[0] = last  # loop-here
    return out
