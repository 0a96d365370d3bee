"""Functions whose lists are made of int constants (``[0] * n``) and filled with what may be
floats, as tutorials write them (hpu._list_kinds): each a plain function; the tests decorate
them."""


def merge(arr, l, m, r):
    """The tutorials' merge of arr[l..m] and arr[m+1..r], through lists of zeros."""
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


def merge_sort(arr, l, r):
    """The tutorials' mergesort on a closed range [l, r]."""
    if l < r:
        m = l + (r - l) // 2
        merge_sort(arr, l, m)
        merge_sort(arr, m + 1, r)
        merge(arr, l, m, r)


def halves_total(a, lo, hi):
    """Sums halves of each element through a list of zeros: computed floats."""
    if hi - lo == 1:
        parts = [0] * 2
        parts[0] = a[lo] / 2
        parts[1] = a[lo] - parts[0]
        return parts[0] + parts[1]
    mid = (lo + hi) // 2
    return halves_total(a, lo, mid) + halves_total(a, mid, hi)


def appended(a, lo, hi):
    """Appends a float to a list made of an int constant."""
    if hi - lo == 1:
        seen = [0]
        seen.append(a[lo] * 0.5)
        return seen[1] + seen[0]
    mid = (lo + hi) // 2
    return appended(a, lo, mid) + appended(a, mid, hi)


def merge_comp(arr, l, m, r):
    """The merge with its lists made by comprehensions, and a running count past them."""
    L = [0 for _ in range(m - l + 1)]
    R = [0 for _ in range(r - m)]
    for i in range(len(L)):
        L[i] = arr[l + i]
    for j in range(len(R)):
        R[j] = arr[m + 1 + j]
    i = j = 0
    k = l
    while i < len(L) and j < len(R):
        if L[i] <= R[j]:
            arr[k] = L[i]
            i += 1
        else:
            arr[k] = R[j]
            j += 1
        k += 1
    while i < len(L):
        arr[k] = L[i]
        i += 1
        k += 1
    while j < len(R):
        arr[k] = R[j]
        j += 1
        k += 1


def merge_sort_comp(arr, l, r):
    if l < r:
        m = l + (r - l) // 2
        merge_sort_comp(arr, l, m)
        merge_sort_comp(arr, m + 1, r)
        merge_comp(arr, l, m, r)


def merge_through(a, tmp, lo, mid, hi):
    """A merge into the caller's scratch ``tmp`` and back (the homework's in-place sort)."""
    i, j = lo, mid
    for k in range(lo, hi):
        if i < mid and (j >= hi or a[i] <= a[j]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    for k in range(lo, hi):
        a[k] = tmp[k]


def sort_with_scratch(a, tmp, lo, hi):
    """Sorts ``a[lo:hi]`` through ``tmp``; called as ``sort_with_scratch(xs, [0] * n, 0, n)``."""
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    sort_with_scratch(a, tmp, lo, mid)
    sort_with_scratch(a, tmp, mid, hi)
    merge_through(a, tmp, lo, mid, hi)


def _poly_add(p, q):
    out = [0] * max(len(p), len(q))
    for i in range(len(p)):
        out[i] += p[i]
    for i in range(len(q)):
        out[i] += q[i]
    return out


def _poly_shift(p, k):
    return [0] * k + p


def karatsuba(A, B):
    """Karatsuba on coefficient lists, a list of zeros accumulated with `+=`."""
    n = len(A)
    if n <= 2:
        out = [0] * (2 * n - 1)
        for i in range(n):
            for j in range(n):
                out[i + j] += A[i] * B[j]
        return out
    h = n // 2
    z0 = karatsuba(A[:h], B[:h])
    z2 = karatsuba(A[h:], B[h:])
    z1 = karatsuba(_poly_add(A[:h], A[h:]), _poly_add(B[:h], B[h:]))
    mid = _poly_add(z1, [-c for c in _poly_add(z0, z2)])
    return _poly_add(_poly_add(z0, _poly_shift(mid, h)), _poly_shift(z2, 2 * h))


def halves_accumulated(a, lo, hi):
    """Accumulates a computed float into a list of zeros with `+=`."""
    if hi - lo == 1:
        acc = [0] * 2
        acc[0] += a[lo] / 4
        acc[1] += a[lo]
        acc[1] /= 8
        return acc[0] + acc[1]
    mid = (lo + hi) // 2
    return halves_accumulated(a, lo, mid) + halves_accumulated(a, mid, hi)
