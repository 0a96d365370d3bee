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


def has_pair(a, lo, hi):
    """A for ... else that assigns its flag on each way out: at the break, and in the else."""
    if hi - lo <= 8:
        for i in range(lo, hi - 1):
            if a[i] == a[i + 1]:
                found = True
                break
        else:
            found = False
        return found
    mid = (lo + hi) // 2
    return has_pair(a, lo, mid) or has_pair(a, mid, hi)


def unset_at_break(a, lo, hi):
    """The else assigns, the break does not: Python raises where a block breaks."""
    if hi - lo <= 8:
        for i in range(lo, hi - 1):
            if a[i] == a[i + 1]:
                break
        else:
            found = 0
        return found  # break-here
    mid = (lo + hi) // 2
    return unset_at_break(a, lo, mid) + unset_at_break(a, mid, hi)
