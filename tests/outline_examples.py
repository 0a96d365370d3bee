"""Functions whose own loops the fan-out's top levels run compiled (hpu._outline): the
commonest Python mergesort (copies of its halves, merged back by three while loops), a
functional one that merges inline, and shapes the outlining must leave alone."""
import numpy as np

import hpu


def copy_halves_sort(arr):
    """The tutorials' mergesort, merging at ``i + j``, with an insertion sort at 8 elements,
    which reads ``arr`` (so the copy-halves form does not take it: it fans out)."""
    if len(arr) <= 8:
        for i in range(1, len(arr)):
            v = arr[i]
            j = i - 1
            while j >= 0 and arr[j] > v:
                arr[j + 1] = arr[j]
                j -= 1
            arr[j + 1] = v
    else:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        copy_halves_sort(L)
        copy_halves_sort(R)
        i = j = 0
        while i < len(L) and j < len(R):
            if L[i] <= R[j]:
                arr[i + j] = L[i]
                i += 1
            else:
                arr[i + j] = R[j]
                j += 1
        while i < len(L):
            arr[i + j] = L[i]
            i += 1
        while j < len(R):
            arr[i + j] = R[j]
            j += 1


def inline_merge(a):
    """A new sorted array and the sum of its elements (a looping builtin in the combine)."""
    if len(a) <= 4:
        out = a.copy()
        for i in range(1, len(out)):            # an insertion sort in the base case
            x = out[i]
            j = i - 1
            while j >= 0 and out[j] > x:
                out[j + 1] = out[j]
                j -= 1
            out[j + 1] = x
        return out, float(np.sum(out))
    m = len(a) // 2
    left, s1 = inline_merge(a[:m])
    right, s2 = inline_merge(a[m:])
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    total = sum(out)
    return out, total


def divides_in_merge(arr):
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        divides_in_merge(L)
        divides_in_merge(R)
        k = 0
        for i in range(len(L)):
            arr[k] = L[i] // (len(arr) - 7)  # divides-here
            k += 1
        for j in range(len(R)):
            arr[k] = R[j]
            k += 1


def maybe_unbound(a):
    """``last`` is assigned only inside the loop, and read after it."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    left = maybe_unbound(a[:m])
    right = maybe_unbound(a[m:])
    for i in range(len(left)):
        last = left[i]
    out = np.concatenate((left, right))
    out[0] = last
    return out


def read_in_one_branch(a, flag):
    """``x`` exists only where ``flag`` holds: its loop cannot be handed it."""
    if len(a) <= 1:
        return a.copy()
    if flag:
        x = 1
    m = len(a) // 2
    left = read_in_one_branch(a[:m], flag)
    right = read_in_one_branch(a[m:], flag)
    out = np.concatenate((left, right))
    for i in range(len(out)):
        if flag:
            out[i] += x
    return out


def sum_returned(a):
    if len(a) <= 2:
        return sum(a)
    m = len(a) // 2
    parts = [a[:m], a[m:]]
    total = 0.0
    for p in parts:                     # a loop that recurses: left as written
        total += sum_returned(p)
    return total + np.zeros(1)[0]


DECORATED = {f.__name__: hpu.divide_and_conquer(f)
             for f in (copy_halves_sort, inline_merge, divides_in_merge)}


def comp_sum(a):
    """A comprehension that may come out empty, summed: an empty list Numba cannot type."""
    if len(a) < 4:
        return sum(a)
    mid = len(a) // 2
    x = comp_sum(a[:mid])
    y = comp_sum(a[mid:])
    sq = [v * 2 for v in a if v > 0]
    return x + y + sum(sq) - sum(a) + np.zeros(1)[0]
