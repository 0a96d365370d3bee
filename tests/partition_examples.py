"""Quicksorts as people write them -- on masks, list comprehensions, ``np.concatenate`` and
``+`` of lists -- for the partition form (hpu._functional_partition): each is a plain
function here; the tests decorate them.  ``PARTITIONS`` have a device form (``LISTED``: they
take and return lists), ``KEPT`` do not, with the reason each gives."""
import numpy as np


def quicksort(arr):
    """The quicksort of most Python tutorials."""
    if len(arr) <= 1:
        return arr
    pivot = arr[len(arr) // 2]
    left = [x for x in arr if x < pivot]
    middle = [x for x in arr if x == pivot]
    right = [x for x in arr if x > pivot]
    return quicksort(left) + middle + quicksort(right)


def quicksort_first(arr):
    """The textbook one: the first element as pivot, the rest split in two."""
    if len(arr) < 2:
        return arr
    pivot = arr[0]
    less = [i for i in arr[1:] if i <= pivot]
    greater = [i for i in arr[1:] if i > pivot]
    return quicksort_first(less) + [pivot] + quicksort_first(greater)


def qs_masks(a):
    if len(a) <= 1:
        return a.copy()
    p = a[0]
    return np.concatenate((qs_masks(a[a < p]), a[a == p], qs_masks(a[a > p])))


def qs_named(a):
    if a.size <= 1:
        return a.copy()
    pivot = a[a.size // 2]
    lo = a[a < pivot]
    eq = a[a == pivot]
    hi = a[a > pivot]
    left = qs_named(lo)
    right = qs_named(hi)
    result = np.concatenate((left, eq, right))
    return result


def qs_listcat(a):
    """``np.concatenate`` of a list, which Numba takes as a tuple (hpu writes it so)."""
    if a.size <= 1:
        return a.copy()
    pivot = a[a.size // 2]
    return np.concatenate([qs_listcat(a[a < pivot]), a[a == pivot], qs_listcat(a[a > pivot])])


def qs_desc(a):
    if len(a) <= 1:
        return a.copy()
    p = a[-1]
    return np.concatenate((qs_desc(a[a > p]), a[a == p], qs_desc(a[a < p])))


def qs_median3(a):
    """A pivot chosen by comparisons; pieces as arrays of comprehensions; an else branch."""
    n = len(a)
    if n <= 1:
        return a.copy()
    else:
        x, y, z = a[0], a[n // 2], a[n - 1]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
        if x > y:
            y = x
        smaller = np.array([v for v in a if v < y])
        same = np.array([v for v in a if v == y])
        larger = np.array([v for v in a if v > y])
        return np.concatenate((qs_median3(smaller), same, qs_median3(larger)))


def qs_unique(a):
    """Sorted distinct values: the pieces leave duplicates out."""
    if len(a) <= 1:
        return a.copy()
    p = a[len(a) // 2]
    return np.concatenate((qs_unique(a[a < p]), np.array([p]), qs_unique(a[a > p])))


def qs_rest(a):
    """The pivot taken out, ``np.append`` and a mask joined with ``~`` and ``&``."""
    if len(a) <= 1:
        return a.copy()
    rest = a[1:]
    p = a[0]
    small = rest[rest < p]
    big = rest[~(rest < p) & (rest >= p)]
    return np.append(np.append(qs_rest(small), [p]), qs_rest(big))


def qs_hstack(a):
    if len(a) == 0:
        return a[:0]
    if len(a) == 1:
        return a.copy()
    m = a[len(a) // 2]
    return np.hstack((qs_hstack(a[a < m]), a[a == m], qs_hstack(a[a > m])))


def swapping(a):
    if len(a) <= 1:
        return a.copy()
    a[0], a[-1] = a[-1], a[0]
    p = a[0]
    return np.concatenate((swapping(a[a < p]), a[a == p], swapping(a[a > p])))


def piece_read(a):
    if len(a) <= 1:
        return a.copy()
    p = a[0]
    left = a[a < p]
    k = len(left)
    return np.concatenate((piece_read(left), a[a == p], piece_read(a[a > p]))) * k


def piece_twice(a):
    if len(a) <= 1:
        return a.copy()
    p = a[0]
    left = a[a < p]
    return np.concatenate((piece_twice(left), left, piece_twice(a[a > p])))


def squares(a):
    if len(a) <= 1:
        return a.copy()
    p = a[0]
    return np.concatenate((squares(a[a < p] * 2), a[a == p], squares(a[a > p])))


def quicksort_tested_pivot(arr):
    """A list quicksort whose pivot is chosen under a test that reads the list: Python might
    not evaluate such a read, so its form keeps the bounds-checked view (not in PARTITIONS:
    only its rewrite is tested, its compile is the slow one)."""
    if len(arr) <= 1:
        return arr
    pivot = arr[0]
    if arr[0] < arr[-1]:
        pivot = arr[-1]
    left = [x for x in arr if x < pivot]
    middle = [x for x in arr if x == pivot]
    right = [x for x in arr if x > pivot]
    return quicksort_tested_pivot(left) + middle + quicksort_tested_pivot(right)


def quicksort_past_the_end(arr):
    """A mistake: the pivot read one past the end -- Python's IndexError."""
    if len(arr) <= 1:
        return arr
    pivot = arr[len(arr)]
    left = [x for x in arr if x < pivot]
    right = [x for x in arr if x >= pivot]
    return quicksort_past_the_end(left) + quicksort_past_the_end(right)


def quicksort_oneline(arr):
    """The one-line quicksort: the base case and the recursion one conditional expression."""
    return arr if len(arr) <= 1 else quicksort_oneline([x for x in arr[1:] if x < arr[0]]) \
        + [arr[0]] + quicksort_oneline([x for x in arr[1:] if x >= arr[0]])


def qs_inline_pivot(a):
    """The pivot written inside each mask: NumPy reads it once per mask."""
    if len(a) <= 1:
        return a
    return np.concatenate((qs_inline_pivot(a[a < a[0]]), a[a == a[0]],
                           qs_inline_pivot(a[a > a[0]])))


def qs_inline_middle(a):
    """A middle pivot inline, a mask of two comparisons, the rest named."""
    if a.size < 2:
        return a.copy()
    lo = a[a < a[a.size // 2]]
    mid = a[(a >= a[a.size // 2]) & ~(a > a[a.size // 2])]
    return np.concatenate((qs_inline_middle(lo), mid, qs_inline_middle(a[a > a[len(a) // 2]])))


def quicksort_appends(array):
    """The lists made before the base case, the pieces built by one loop of appends."""
    less = []
    equal = []
    greater = []
    if len(array) > 1:
        pivot = array[0]
        for x in array:
            if x < pivot:
                less.append(x)
            elif x == pivot:
                equal.append(x)
            else:
                greater.append(x)
        return quicksort_appends(less) + equal + quicksort_appends(greater)
    else:
        return array


def split_around(arr, pivot):
    """A partition helper that builds its two lists by a loop."""
    smaller, larger = [], []
    for v in arr[1:]:
        if v < pivot:
            smaller.append(v)
        else:
            larger.append(v)
    return smaller, larger


def qs_helper_lists(arr):
    if len(arr) <= 1:
        return arr
    pivot = arr[0]
    left, right = split_around(arr, pivot)
    return qs_helper_lists(left) + [pivot] + qs_helper_lists(right)


def three_ways(a, p):
    return a[a < p], a[a == p], a[a > p]


def qs_helper_masks(a):
    if len(a) <= 1:
        return a.copy()
    lo, eq, hi = three_ways(a, a[len(a) // 2])
    return np.concatenate((qs_helper_masks(lo), eq, qs_helper_masks(hi)))


def qs_appended(arr):
    """np.append of the pivot, a value."""
    if arr.size < 2:
        return arr
    pivot = arr[0]
    rest = arr[1:]
    return np.append(np.append(qs_appended(rest[rest <= pivot]), pivot),
                     qs_appended(rest[rest > pivot]))


def partition_into(arr, pivot):
    """A partition helper that fills buffers by counts and returns their filled prefixes."""
    less = np.empty(len(arr), arr.dtype)
    same = np.empty_like(arr)
    more = np.zeros(len(arr), dtype=arr.dtype)
    i = j = 0
    k = 0
    for x in arr:
        if x < pivot:
            less[i] = x
            i += 1
        elif x == pivot:
            same[j] = x
            j = j + 1
        else:
            more[k] = x
            k += 1
    return less[:i], same[:j], more[:k]


def qs_buffers(arr):
    if len(arr) <= 1:
        return arr.copy()
    pivot = arr[len(arr) // 2]
    less, same, more = partition_into(arr, pivot)
    return np.concatenate((qs_buffers(less), same, qs_buffers(more)))


def qs_buffers_inline(a):
    if len(a) < 2:
        return a.copy()
    p = a[0]
    lo = np.empty(len(a), a.dtype)
    hi = np.empty(len(a), a.dtype)
    n_lo, n_hi = 0, 0
    for v in a[1:]:
        if v <= p:
            lo[n_lo] = v
            n_lo += 1
        else:
            hi[n_hi] = v
            n_hi += 1
    return np.concatenate((qs_buffers_inline(lo[:n_lo]), a[:1], qs_buffers_inline(hi[:n_hi])))


def qs_called_test(arr):
    if len(arr) <= 1:
        return arr.copy()
    pivot = arr[0]
    left, right = [], []
    for x in arr[1:]:
        if abs(x) < abs(pivot):
            left.append(x)
        else:
            right.append(x)
    return np.concatenate((qs_called_test(np.array(left, dtype=arr.dtype)), arr[:1],
                           qs_called_test(np.array(right, dtype=arr.dtype))))


PARTITIONS = {"quicksort": quicksort, "quicksort_oneline": quicksort_oneline,
              "quicksort_first": quicksort_first,
              "qs_masks": qs_masks, "qs_named": qs_named, "qs_listcat": qs_listcat, "qs_desc": qs_desc,
              "qs_median3": qs_median3, "qs_unique": qs_unique, "qs_rest": qs_rest,
              "qs_hstack": qs_hstack, "qs_inline_pivot": qs_inline_pivot,
              "qs_inline_middle": qs_inline_middle, "quicksort_appends": quicksort_appends,
              "qs_helper_lists": qs_helper_lists, "qs_helper_masks": qs_helper_masks,
              "qs_appended": qs_appended, "qs_buffers": qs_buffers,
              "qs_buffers_inline": qs_buffers_inline}
LISTED = {"quicksort", "quicksort_first", "quicksort_oneline", "quicksort_appends",
          "qs_helper_lists"}
#: np.array of a comprehension that can be empty: float64 in Python (guide §10)
EMPTY_FLOAT = {"qs_median3"}
KEPT = {"swapping": ("it writes into an array (line", swapping),
        "piece_read": ("a piece is used outside the concatenation", piece_read),
        "piece_twice": ("not each used once", piece_twice),
        "squares": ("not a filter of a", squares),
        # a call in a branch's condition: evaluated once per list in a filter, so not one
        "qs_called_test": ("under a condition that calls or assigns (`abs(x)`)", qs_called_test)}
