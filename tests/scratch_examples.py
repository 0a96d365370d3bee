"""Index-form recursions that allocate their merge buffers, as people write them, for the
scratch form (hpu._scratch_form): each a plain function; the tests decorate them.
``CARVED`` have the form, ``KEPT`` do not, with the reason each gives."""
import numpy as np


def msort_tmp(a, lo, hi):
    """The buffer of the whole range, copied back by a slice assignment."""
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    msort_tmp(a, lo, mid)
    msort_tmp(a, mid, hi)
    tmp = np.empty(hi - lo, a.dtype)
    i, j = lo, mid
    for k in range(hi - lo):
        if j >= hi or (i < mid and a[i] <= a[j]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    a[lo:hi] = tmp


def msort_copies(a, lo, hi):
    """The halves copied out (``.copy()``, ``np.copy``), merged back into ``a``."""
    if hi - lo < 2:
        return
    mid = (lo + hi) // 2
    msort_copies(a, lo, mid)
    msort_copies(a, mid, hi)
    left = a[lo:mid].copy()
    right = np.copy(a[mid:hi])
    i = j = 0
    k = lo
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            a[k] = left[i]
            i += 1
        else:
            a[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        a[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        a[k] = right[j]
        j += 1
        k += 1


def count_inv(a, lo, hi):
    """Inversions, the calls inside an expression, a zeroed buffer, the overflow-safe midpoint."""
    if hi - lo <= 1:
        return 0
    mid = lo + (hi - lo) // 2
    c = count_inv(a, lo, mid) + count_inv(a, mid, hi)
    tmp = np.zeros(hi - lo, dtype=a.dtype)
    i, j, k = lo, mid, 0
    while i < mid and j < hi:
        if a[i] <= a[j]:
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
            c += mid - i
        k += 1
    while i < mid:
        tmp[k] = a[i]
        i += 1
        k += 1
    while j < hi:
        tmp[k] = a[j]
        j += 1
        k += 1
    for t in range(hi - lo):
        a[lo + t] = tmp[t]
    return c


def sorted_sum(a, lo, hi):
    """Inside ``if``, NumPy's default float64 buffer, the right half past the midpoint."""
    if hi - lo > 1:
        mid = (lo + hi) >> 1
        s = sorted_sum(a, lo, mid) + sorted_sum(a, mid, hi)
        buf = np.empty(hi - lo)
        for k in range(hi - lo):
            buf[k] = a[lo + k]
        for k in range(hi - lo):
            s += buf[k] * 0.5
        return s
    return a[lo] * 1.0 if hi - lo == 1 else 0.0


# -- not the form (the function keeps its path, compiled as written)
def alloc_first(a, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    tmp = np.empty(hi - lo, a.dtype)
    alloc_first(a, lo, mid)
    alloc_first(a, mid, hi)
    for k in range(hi - lo):
        tmp[k] = a[lo + k]
    a[lo:hi] = tmp


def one_more(a, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    one_more(a, lo, mid)
    one_more(a, mid, hi)
    tmp = np.empty(hi - lo + 1, a.dtype)
    for k in range(hi - lo):
        tmp[k] = a[lo + k]
    a[lo:hi] = tmp[:hi - lo]


def overlapping(a, lo, hi):
    if hi - lo <= 2:
        return
    mid = (lo + hi) // 2
    overlapping(a, lo, mid + 1)
    overlapping(a, mid, hi)
    tmp = np.empty(hi - lo, a.dtype)
    for k in range(hi - lo):
        tmp[k] = a[lo + k]
    a[lo:hi] = tmp


CARVED = {"msort_tmp": msort_tmp, "msort_copies": msort_copies, "count_inv": count_inv,
          "sorted_sum": sorted_sum}
KEPT = {"alloc_first": ("before its last recursive call", alloc_first),
        "one_more": ("not sized by a part of", one_more),
        "overlapping": ("bounds overlap", overlapping)}


def merge_clrs(A, p, q, r):
    """CLRS's MERGE on closed ranges, the halves copied out in a helper."""
    L = A[p:q + 1].copy()
    R = A[q + 1:r + 1].copy()
    i = j = 0
    k = p
    while i < len(L) and j < len(R):
        if L[i] <= R[j]:
            A[k] = L[i]
            i += 1
        else:
            A[k] = R[j]
            j += 1
        k += 1
    while i < len(L):
        A[k] = L[i]
        i += 1
        k += 1
    while j < len(R):
        A[k] = R[j]
        j += 1
        k += 1


def merge_sort_clrs(A, p, r):
    """CLRS's MERGE-SORT: called as ``merge_sort_clrs(A, 0, len(A) - 1)``."""
    if p < r:
        q = (p + r) // 2
        merge_sort_clrs(A, p, q)
        merge_sort_clrs(A, q + 1, r)
        merge_clrs(A, p, q, r)


def merge_half_open(a, lo, mid, hi):
    tmp = np.empty(hi - lo, a.dtype)
    i, j = lo, mid
    for k in range(hi - lo):
        if j >= hi or (i < mid and a[i] <= a[j]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    for k in range(hi - lo):
        a[lo + k] = tmp[k]


def msort_helper(a, lo, hi):
    """The buffer allocated in the merge helper."""
    if hi - lo > 1:
        mid = (lo + hi) // 2
        msort_helper(a, lo, mid)
        msort_helper(a, mid, hi)
        merge_half_open(a, lo, mid, hi)


def overlapping_closed(a, lo, hi):
    """Closed ranges that share the midpoint: (lo, mid) and (mid, hi)."""
    if hi - lo < 2:
        return
    mid = (lo + hi) // 2
    overlapping_closed(a, lo, mid)
    overlapping_closed(a, mid, hi)
    tmp = a[lo:hi + 1].copy()
    for k in range(hi + 1 - lo):
        a[lo + k] = tmp[k]


CARVED.update({"merge_sort_clrs": merge_sort_clrs, "msort_helper": msort_helper})
KEPT["overlapping_closed"] = ("is not sized by a part of", overlapping_closed)
#: called on closed ranges: (A, 0, len(A) - 1)
CLOSED = {"merge_sort_clrs", "merge_sort_inf"}


def msort_float_buffer(a, lo, hi):
    """A float64 buffer (NumPy's default) copied back into ``a``: NumPy converts."""
    if hi - lo < 2:
        return
    m = (lo + hi) // 2
    msort_float_buffer(a, lo, m)
    msort_float_buffer(a, m, hi)
    t = np.zeros(hi - lo)
    i, j = lo, m
    for k in range(hi - lo):
        if j >= hi or (i < m and a[i] <= a[j]):
            t[k] = a[i]
            i += 1
        else:
            t[k] = a[j]
            j += 1
    a[lo:hi] = t


CARVED["msort_float_buffer"] = msort_float_buffer


def merge_gfg(arr, l, m, r):
    """The most-read tutorial's merge: its sizes named first, lists of zeros."""
    n1 = m - l + 1
    n2 = r - m
    L = [0] * (n1)
    R = [0] * (n2)
    for i in range(0, n1):
        L[i] = arr[l + i]
    for j in range(0, n2):
        R[j] = arr[m + 1 + j]
    i = 0
    j = 0
    k = l
    while i < n1 and j < n2:
        if L[i] <= R[j]:
            arr[k] = L[i]
            i += 1
        else:
            arr[k] = R[j]
            j += 1
        k += 1
    while i < n1:
        arr[k] = L[i]
        i += 1
        k += 1
    while j < n2:
        arr[k] = R[j]
        j += 1
        k += 1


def merge_sort_gfg(arr, l, r):
    """The most-read tutorial's mergeSort(arr, l, r), called with r = len(arr) - 1."""
    if l < r:
        m = l + (r - l) // 2
        merge_sort_gfg(arr, l, m)
        merge_sort_gfg(arr, m + 1, r)
        merge_gfg(arr, l, m, r)


def merge_named(a, lo, mid, hi):
    """A merge whose buffer's size is named first: ``n = hi - lo``."""
    n = hi - lo
    tmp = np.empty(n, a.dtype)
    i, j = lo, mid
    for k in range(n):
        if j >= hi or (i < mid and a[i] <= a[j]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    for k in range(n):
        a[lo + k] = tmp[k]


def msort_named(a, lo, hi):
    if hi - lo > 1:
        mid = (lo + hi) // 2
        msort_named(a, lo, mid)
        msort_named(a, mid, hi)
        merge_named(a, lo, mid, hi)


def merge_gfg_past(arr, l, m, r):
    """Reads one element past its list when the right run is longer than one."""
    n1 = m - l + 1
    n2 = r - m
    L = [0] * n1
    R = [0] * n2
    for i in range(n1):
        L[i] = arr[l + i]
    for j in range(n2):
        R[j] = arr[m + 1 + j]
    k = l
    for i in range(n1):
        arr[k] = L[i]
        k += 1
    for j in range(n2):
        arr[k] = R[j] + R[n2] * 0
        k += 1


def merge_sort_past(arr, l, r):
    if l < r:
        m = l + (r - l) // 2
        merge_sort_past(arr, l, m)
        merge_sort_past(arr, m + 1, r)
        merge_gfg_past(arr, l, m, r)


def merge_comp(arr, l, m, r):
    """The tutorial's merge with its lists made by comprehensions."""
    n1 = m - l + 1
    n2 = r - m
    L = [0 for _ in range(n1)]
    R = [0 for _ in range(n2)]
    for i in range(n1):
        L[i] = arr[l + i]
    for j in range(n2):
        R[j] = arr[m + 1 + j]
    i = j = 0
    k = l
    while i < n1 and j < n2:
        if L[i] <= R[j]:
            arr[k] = L[i]
            i += 1
        else:
            arr[k] = R[j]
            j += 1
        k += 1
    while i < n1:
        arr[k] = L[i]
        i += 1
        k += 1
    while j < n2:
        arr[k] = R[j]
        j += 1
        k += 1


def merge_sort_comp(arr, l, r):
    if l < r:
        m = (l + r) // 2
        merge_sort_comp(arr, l, m)
        merge_sort_comp(arr, m + 1, r)
        merge_comp(arr, l, m, r)


CARVED.update(merge_sort_gfg=merge_sort_gfg, msort_named=msort_named,
              merge_sort_comp=merge_sort_comp)
CLOSED.add("merge_sort_comp")
CLOSED.add("merge_sort_gfg")


def merge_inf(A, p, q, r):
    """CLRS's MERGE as printed: sentinel slots, L[n1] = R[n2] = infinity."""
    n1 = q - p + 1
    n2 = r - q
    L = np.empty(n1 + 1)
    R = np.empty(n2 + 1)
    for i in range(n1):
        L[i] = A[p + i]
    for j in range(n2):
        R[j] = A[q + 1 + j]
    L[n1] = np.inf
    R[n2] = np.inf
    i = 0
    j = 0
    for k in range(p, r + 1):
        if L[i] <= R[j]:
            A[k] = L[i]
            i = i + 1
        else:
            A[k] = R[j]
            j = j + 1


def merge_sort_inf(A, p, r):
    """CLRS's MERGE-SORT with the sentinel merge, on float keys."""
    if p < r:
        q = (p + r) // 2
        merge_sort_inf(A, p, q)
        merge_sort_inf(A, q + 1, r)
        merge_inf(A, p, q, r)


def merge_whole(a, lo, mid, hi):
    n = hi - lo
    t = np.empty(n + 1)             # a sentinel slot beside the whole range, not a call's part
    for i in range(n):
        t[i] = a[lo + i]
    t[n] = np.inf
    i, j = 0, mid - lo
    for k in range(lo, hi):
        if j >= n or (i < mid - lo and t[i] <= t[j]):
            a[k] = t[i]
            i += 1
        else:
            a[k] = t[j]
            j += 1


def pad_whole(a, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    pad_whole(a, lo, mid)
    pad_whole(a, mid, hi)
    merge_whole(a, lo, mid, hi)


CARVED["merge_sort_inf"] = merge_sort_inf
KEPT["pad_whole"] = ("not as long as a recursive call's part", pad_whole)
