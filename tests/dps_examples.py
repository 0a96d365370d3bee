"""Functional functions as people write them, for the device form (hpu._functional_dps):
each is a plain function here; the tests decorate them.  ``REWRITTEN`` have a device form,
``KEPT`` do not (and say why)."""
import math

import numpy as np

from functional_examples import merge  # noqa: F401 - the textbook two-finger merge


def merge_desc(left, right):
    result = np.zeros(len(right) + len(left), dtype=left.dtype)
    i = 0
    j = 0
    for k in range(len(result)):
        if j >= len(right) or (i < len(left) and left[i] >= right[j]):
            result[k] = left[i]
            i += 1
        else:
            result[k] = right[j]
            j += 1
    return result


def merge_float(left, right):
    """No dtype: float64, as NumPy allocates it."""
    out = np.empty(len(left) + len(right))
    i = 0
    j = 0
    while i + j < len(out):
        if j == len(right) or (i < len(left) and left[i] <= right[j]):
            out[i + j] = left[i]
            i += 1
        else:
            out[i + j] = right[j]
            j += 1
    return out


def merge_count(left, right):
    merged = np.empty(len(left) + len(right), left.dtype)
    i = j = inv = 0
    for k in range(len(merged)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            merged[k] = left[i]
            i += 1
        else:
            merged[k] = right[j]
            j += 1
            inv += len(left) - i
    return merged, inv


def sort_ifelse(a):
    if len(a) <= 1:
        return a.copy()
    else:
        mid = len(a) // 2
        return merge(sort_ifelse(a[:mid]), sort_ifelse(a[mid:]))


def sort_named(arr):
    if len(arr) < 2:
        return arr            # the input itself: a copy in the result
    half = len(arr) >> 1
    left = sort_named(arr[0:half])
    right = sort_named(arr[half:])
    return merge(left, right)


def sort_desc(a):
    """Two guards, the merge called with (right, left): positions matter."""
    if len(a) == 0:
        return a.copy()
    if len(a) == 1:
        return np.copy(a)
    m = (len(a) + 1) // 2
    first = sort_desc(a[:m])
    second = sort_desc(a[m:])
    return merge_desc(second, first)


def sort_floats(a):
    if len(a) <= 1:
        return a[:]
    m = len(a) // 2
    return merge_float(sort_floats(a[:m]), sort_floats(a[m:]))


def count_inversions(a):
    if len(a) <= 1:
        return a.copy(), 0
    m = len(a) // 2
    left, x = count_inversions(a[:m])
    right, y = count_inversions(a[m:])
    merged, z = merge_count(left, right)
    return merged, x + y + z


# ------------------------------------------------------------- no device form: the CPU

def drop_middle(a):
    """The children skip a[m]: results shorter than their slices."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge(drop_middle(a[:m]), drop_middle(a[m + 1:]))


def merge_pad(left, right):
    out = np.zeros(len(left) + len(right) + 1, left.dtype)
    for i in range(len(left)):
        out[i] = left[i]
    for j in range(len(right)):
        out[len(left) + j] = right[j]
    return out


def padded(a):
    """Each combine adds an element: longer than its slice."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge_pad(padded(a[:m]), padded(a[m:]))


def three_way(a):
    if len(a) <= 2:
        return np.sort(a)
    t = len(a) // 3
    return merge(merge(three_way(a[:t]), three_way(a[t:2 * t])), three_way(a[2 * t:]))


def merge_overrun(left, right):
    out = np.empty(len(left) + len(right), left.dtype)
    for i in range(len(left)):
        out[i] = left[i]
    for j in range(len(right)):
        out[len(left) + j] = right[j]
    out[len(out)] = 0   # LINE_OVERRUN: one past the end
    return out


def sort_overrun(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge_overrun(sort_overrun(a[:m]), sort_overrun(a[m:]))


def sort_inline(a):
    """The merge written in the function, its length named before the base case."""
    n = len(a)
    if n <= 1:
        return np.copy(a)
    mid = n // 2
    left = sort_inline(a[:mid])
    right = sort_inline(a[mid:])
    out = np.empty(n, dtype=a.dtype)
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        out[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        out[k] = right[j]
        j += 1
        k += 1
    return out


def count_inline(arr):
    """Sorted copy and inversion count, the merge inline, the count carried in."""
    if len(arr) < 2:
        return arr.copy(), 0
    m = len(arr) // 2
    l, c1 = count_inline(arr[:m])
    r, c2 = count_inline(arr[m:])
    res = np.empty(len(l) + len(r), arr.dtype)
    i = j = 0
    c = c1 + c2
    while i < len(l) or j < len(r):
        if j == len(r) or (i < len(l) and l[i] <= r[j]):
            res[i + j] = l[i]
            i += 1
        else:
            res[i + j] = r[j]
            c += len(l) - i
            j += 1
    return res, c


def sort_inline_lengths(a):
    """The merge inline with its children's lengths in names (``nl = len(left)``)."""
    if len(a) < 2:
        return a.copy()
    half = len(a) // 2
    left = sort_inline_lengths(a[:half])
    right = sort_inline_lengths(a[half:])
    res = np.empty(len(a), a.dtype)
    i = 0
    j = 0
    nl = len(left)
    nr = len(right)
    while i < nl or j < nr:
        if j >= nr or (i < nl and left[i] <= right[j]):
            res[i + j] = left[i]
            i += 1
        else:
            res[i + j] = right[j]
            j += 1
    return res


def inline_padded(a):
    n = len(a)
    if n <= 1:
        return a.copy()
    left = inline_padded(a[:n // 2])
    right = inline_padded(a[n // 2:])
    out = np.zeros(len(left) + len(right) + 1, a.dtype)     # one more: not a sort
    for k in range(len(left)):
        out[k] = left[k]
    for k in range(len(right)):
        out[len(left) + k] = right[k]
    return out


def merge_tails(left, right):
    """The textbook merge whose tails are copied by slice assignment."""
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = k = 0
    while i < len(left) and j < len(right):
        if right[j] < left[i]:
            out[k] = right[j]
            j += 1
        else:
            out[k] = left[i]
            i += 1
        k += 1
    out[k:k + len(left) - i] = left[i:]
    k += len(left) - i
    out[k:] = right[j:]
    return out


def sort_tails(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge_tails(sort_tails(a[:m]), sort_tails(a[m:]))


def count_inline_tails(arr):
    """Sorted copy and inversion count, the merge inline, whichever tail is left copied by
    a slice assignment."""
    n = len(arr)
    if n <= 1:
        return arr.copy(), 0
    mid = n // 2
    left, c1 = count_inline_tails(arr[:mid])
    right, c2 = count_inline_tails(arr[mid:])
    out = np.empty(n, dtype=arr.dtype)
    i = j = k = 0
    c = c1 + c2
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            c += len(left) - i
            j += 1
        k += 1
    if i < len(left):
        out[k:] = left[i:]
    else:
        out[k:] = right[j:]
    return out, c


def merge_early(left, right):
    """A merge that hands back one child when the other is empty."""
    if len(left) == 0:
        return right
    elif right.size == 0:
        return left
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


def sort_early(a):
    if len(a) < 2:
        return a[:]
    m = len(a) // 2
    return merge_early(sort_early(a[:m]), sort_early(a[m:]))


def merge_ifexp(left, right):
    """Early returns, and the tail left over chosen by a conditional expression."""
    if len(left) == 0:
        return right
    if len(right) == 0:
        return left
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    out[k:] = left[i:] if i < len(left) else right[j:]
    return out


def sort_ifexp(a):
    if len(a) <= 1:
        return a.copy()
    mid = len(a) // 2
    return merge_ifexp(sort_ifexp(a[:mid]), sort_ifexp(a[mid:]))


def sort_empty_base(a):
    """An empty base case beside the one-element one."""
    if len(a) == 0:
        return np.zeros(0, a.dtype)
    if len(a) == 1:
        return a.copy()
    mid = len(a) // 2
    return merge(sort_empty_base(a[:mid]), sort_empty_base(a[mid:]))


def count_empty_base(arr):
    if arr.size == 0:
        return np.empty(0, dtype=arr.dtype), 0
    if len(arr) == 1:
        return arr.copy(), 0
    half = len(arr) // 2
    left, x = count_empty_base(arr[:half])
    right, y = count_empty_base(arr[half:])
    merged, z = merge_count(left, right)
    return merged, x + y + z


def sort_empty_floats(a):
    """``np.array([])`` (float64) as the empty result, a float64 combine."""
    if len(a) < 1:
        return np.array([])
    if len(a) < 2:
        return a[:]
    m = len(a) // 2
    return merge_float(sort_empty_floats(a[:m]), sort_empty_floats(a[m:]))


def empty_not_empty(a):
    """An empty array where ``a`` need not be empty: no device form."""
    if len(a) <= 1:
        return a[:0]
    m = len(a) // 2
    return merge(empty_not_empty(a[:m]), empty_not_empty(a[m:]))


def merge_unguarded(left, right):
    """The two-finger merge without its tails: reads past the end of one child."""
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if left[i] <= right[j]:  # LINE_UNGUARDED
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


def sort_unguarded(a):
    if len(a) <= 1:
        return a.copy()
    mid = len(a) // 2
    return merge_unguarded(sort_unguarded(a[:mid]), sort_unguarded(a[mid:]))


def merge_sentinels(left, right):
    """CLRS's merge: copies of the runs, each with an infinite sentinel at its end."""
    L = np.empty(len(left) + 1)
    R = np.empty(len(right) + 1)
    L[:len(left)] = left
    R[:len(right)] = right
    L[len(left)] = np.inf
    R[len(right)] = np.inf
    out = np.empty(len(left) + len(right))
    i = j = 0
    for k in range(len(out)):
        if L[i] <= R[j]:
            out[k] = L[i]
            i += 1
        else:
            out[k] = R[j]
            j += 1
    return out


def sort_sentinels(a):
    if len(a) <= 1:
        return a.copy()
    mid = len(a) // 2
    return merge_sentinels(sort_sentinels(a[:mid]), sort_sentinels(a[mid:]))


def merge_scratch(left, right):
    """Scratch of three kinds: a copy of a run, zeros of another dtype, sized from names."""
    n1, n2 = len(left), len(right)
    held = left.copy()
    taken = np.zeros(n1 + n2, np.int64)
    out = np.empty(n1 + n2, left.dtype)
    i = j = inv = 0
    for k in range(n1 + n2):
        if j >= n2 or (i < n1 and held[i] <= right[j]):
            out[k] = held[i]
            i += 1
        else:
            out[k] = right[j]
            taken[k] = 1
            j += 1
            inv += n1 - i
    for k in range(n1 + n2):
        inv += int(taken[k]) * 0
    return out, inv


def count_scratch(a):
    if len(a) < 2:
        return a.copy(), 0
    m = len(a) // 2
    left, x = count_scratch(a[:m])
    right, y = count_scratch(a[m:])
    both, z = merge_scratch(left, right)
    return both, x + y + z


def merge_square(left, right):
    grid = np.zeros(len(left) * len(right))      # scratch hpu cannot bound by len(a)
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        grid[0] = k
    return out


def sort_square(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge_square(sort_square(a[:m]), sort_square(a[m:]))


def sort_inline_div(a):
    """A merge written inline whose arithmetic can fail: ``// 0`` where a key is 7."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    left = sort_inline_div(a[:m])
    right = sort_inline_div(a[m:])
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j] + 0 * (100 // (right[j] - 7))  # LINE_INLINE_DIV
            j += 1
    return out


def sort_float_mid(a):
    """``/`` for the middle: Python raises TypeError at the slice."""
    if len(a) <= 1:
        return a.copy()
    mid = len(a) / 2
    return merge(sort_float_mid(a[:mid]), sort_float_mid(a[mid:]))  # LINE_FLOAT_MID


def merge_writes_left(left, right):
    """Writes into a child: at the leaves, the caller's own elements (``return a``)."""
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    left[0] = out[0]
    return out


def sort_writes_child(a):
    if len(a) <= 1:
        return a
    m = len(a) // 2
    return merge_writes_left(sort_writes_child(a[:m]), sort_writes_child(a[m:]))


def sort_right_first(a):
    """The right half's call first."""
    if len(a) <= 1:
        return a.copy()
    mid = len(a) // 2
    right = sort_right_first(a[mid:])
    left = sort_right_first(a[:mid])
    return merge(left, right)


def sort_inline_n(a):
    """The merge inline, its length in a name."""
    if len(a) <= 1:
        return a[:]
    mid = len(a) // 2
    left = sort_inline_n(a[:mid])
    right = sort_inline_n(a[mid:])
    n = len(left) + len(right)
    merged = np.empty(n, dtype=left.dtype)
    i = j = 0
    for k in range(n):
        if i < len(left) and (j >= len(right) or left[i] <= right[j]):
            merged[k] = left[i]
            i += 1
        else:
            merged[k] = right[j]
            j += 1
    return merged


def sort_inline_like(a):
    """The merge inline, into ``np.empty_like(a)``."""
    if len(a) <= 1:
        return a.copy()
    mid = len(a) // 2
    left = sort_inline_like(a[:mid])
    right = sort_inline_like(a[mid:])
    out = np.empty_like(a)
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    out[k:] = left[i:] if i < len(left) else right[j:]
    return out


def sort_as_floats(a):
    """Keys of any dtype sorted as float64: ``a.astype(np.float64)`` at the leaves."""
    if len(a) <= 1:
        return a.astype(np.float64)
    mid = len(a) // 2
    return merge_sentinels(sort_as_floats(a[:mid]), sort_as_floats(a[mid:]))


def merge_positives(left, right):
    """A scratch array whose size a loop counts: known only at run time (an arena)."""
    k = 0
    for i in range(len(right)):
        if right[i] > 0:
            k += 1
    pos = np.empty(k, right.dtype)
    t = 0
    for i in range(len(right)):
        if right[i] > 0:
            pos[t] = right[i]
            t += 1
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    total = 0
    for t in range(len(pos)):
        total += int(pos[t])
    return out, total


def sort_positives(a):
    """Sorts, and sums the positive keys of every right half."""
    if len(a) <= 1:
        return a.copy(), 0
    m = len(a) // 2
    left, x = sort_positives(a[:m])
    right, y = sort_positives(a[m:])
    out, z = merge_positives(left, right)
    return out, x + y + z


def merge_short(left, right):
    """Scratch of ``len(left) - 2`` elements: negative for a left half of one (NumPy's
    ValueError, as written)."""
    tmp = np.empty(len(left) - 2)
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    if len(tmp) > 0:
        tmp[0] = 1.0
    return out


def sort_short(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge_short(sort_short(a[:m]), sort_short(a[m:]))


def merge_square_late(left, right):
    grid = np.zeros(len(left) * len(right))
    out = np.empty(len(left) + len(right), left.dtype)
    c = len(left) * 2           # not a constant: no value to return when the grid does not fit
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        grid[0] = k
    return out, c


def sort_square_late(a):
    if len(a) <= 1:
        return a.copy(), 0
    m = len(a) // 2
    left, x = sort_square_late(a[:m])
    right, y = sort_square_late(a[m:])
    out, z = merge_square_late(left, right)
    return out, x + y + z


def sort_one(a):
    """The base case a new one-element array (``np.array([a[0]])`` under ``len(a) == 1``)."""
    if len(a) == 1:
        return np.array([a[0]])
    m = len(a) // 2
    return merge_sentinels(sort_one(a[:m]), sort_one(a[m:]))


def sort_oneline(a):
    """The whole recursion one conditional expression, the base case its else."""
    return merge(sort_oneline(a[:len(a) // 2]), sort_oneline(a[len(a) // 2:])) \
        if len(a) > 1 else a.copy()


REWRITTEN = {"sort_ifelse": sort_ifelse, "sort_named": sort_named, "sort_desc": sort_desc,
             "sort_floats": sort_floats, "count_inversions": count_inversions,
             "sort_inline": sort_inline, "count_inline": count_inline,
             "sort_inline_lengths": sort_inline_lengths, "sort_tails": sort_tails,
             "count_inline_tails": count_inline_tails, "sort_early": sort_early,
             "sort_ifexp": sort_ifexp, "sort_empty_base": sort_empty_base,
             "count_empty_base": count_empty_base, "sort_empty_floats": sort_empty_floats,
             "sort_sentinels": sort_sentinels, "count_scratch": count_scratch,
             "sort_right_first": sort_right_first, "sort_inline_n": sort_inline_n,
             "sort_inline_like": sort_inline_like, "sort_as_floats": sort_as_floats,
             "sort_one": sort_one, "sort_oneline": sort_oneline}
KEPT = {"drop_middle": ("not on a[:e] and a[e:]", drop_middle),
        "padded": ("not len(left) + len(right)", padded),
        "inline_padded": ("allocates `len(left) + len(right) + 1` elements", inline_padded),
        "empty_not_empty": ("returns `a[:0]`", empty_not_empty),
        "sort_square_late": ("before 'c' has a constant value", sort_square_late),
        "sort_writes_child": ("may write into its children", sort_writes_child)}

#: combines with a scratch size known only at run time: a run-time arena each
ARENAS = {"sort_square": sort_square, "sort_positives": sort_positives, "sort_short": sort_short}


# ------------------------------------------------ combines that build their result as a list
def merge_lists(left, right):
    """The merge most Python tutorials write: a list grown by append, the tails by extend."""
    result = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    result.extend(left[i:])
    result.extend(right[j:])
    return result


def sort_lists(arr):
    if len(arr) <= 1:
        return arr
    mid = len(arr) // 2
    left = sort_lists(arr[:mid])
    right = sort_lists(arr[mid:])
    return merge_lists(left, right)


def _count_cross(p, q):
    r = []
    i = j = num_inversion = 0
    while i < len(p) and j < len(q):
        if p[i] > q[j]:
            num_inversion += len(p) - i
            r.append(q[j])
            j += 1
        else:
            r.append(p[i])
            i += 1
    if i < len(p):
        r.extend(p[i:])
    else:
        r.extend(q[j:])
    return r, num_inversion


def count_lists(arr):
    """An inversion count as a public collection of Python algorithms writes it: the halves
    named before the calls, the merge a list."""
    if len(arr) <= 1:
        return arr, 0
    mid = len(arr) // 2
    p = arr[0:mid]
    q = arr[mid:]
    a, inversion_p = count_lists(p)
    b, inversions_q = count_lists(q)
    c, cross_inversions = _count_cross(a, b)
    num_inversions = inversion_p + inversions_q + cross_inversions
    return c, num_inversions


def sort_lists_inline(arr):
    """The list merge written in the function, its tails added by += and by +."""
    if len(arr) <= 1:
        return arr
    mid = len(arr) // 2
    left = sort_lists_inline(arr[:mid])
    right = sort_lists_inline(arr[mid:])
    result = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] < right[j]:
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    result += left[i:]
    result = result + right[j:]
    return result


def merge_union(left, right):
    """Equal keys kept once: the list is shorter than the two halves together."""
    out = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] < right[j]:
            out.append(left[i])
            i += 1
        elif left[i] > right[j]:
            out.append(right[j])
            j += 1
        else:
            out.append(left[i])
            i += 1
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


def union_lists(arr):
    if len(arr) <= 1:
        return arr
    m = len(arr) // 2
    return merge_union(union_lists(arr[:m]), union_lists(arr[m:]))


def merge_last(left, right):
    """Reads its list's last element: the device form's array is not the list."""
    out = []
    for v in left:
        if not out or out[-1] != v:
            out.append(v)
    for v in right:
        out.append(v)
    return out


def last_lists(arr):
    if len(arr) <= 1:
        return arr
    m = len(arr) // 2
    return merge_last(last_lists(arr[:m]), last_lists(arr[m:]))


def sort_list_copy(arr):
    """``list(arr)`` at the leaves, the merge's tails appended in loops."""
    if len(arr) < 2:
        return list(arr)
    mid = len(arr) // 2
    left, right = sort_list_copy(arr[:mid]), sort_list_copy(arr[mid:])
    out = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    while i < len(left):
        out.append(left[i])
        i += 1
    while j < len(right):
        out.append(right[j])
        j += 1
    return out


def _signed(left, right):
    """Loops over the children's items (``for v in left``), a scalar from the list's length."""
    out = []
    for v in left:
        out.append(v)
    for v in right:
        out.append(-v)
    return out, len(out)


def signed_lists(arr):
    if len(arr) <= 1:
        return arr, 0
    mid = len(arr) // 2
    a, x = signed_lists(arr[:mid])
    b, y = signed_lists(arr[mid:])
    c, z = _signed(a, b)
    return c, x + y + z


def _merge_concat(left, right):
    """The tails added in the return: ``result + left[i:] + right[j:]``."""
    result = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] < right[j]:
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    return result + left[i:] + right[j:]


def sort_concat(arr):
    if len(arr) <= 1:
        return arr
    mid = len(arr) // 2
    return _merge_concat(sort_concat(arr[:mid]), sort_concat(arr[mid:]))


def count_concat(arr):
    """An inversion count with the merge inline, its list returned as ``out + l[i:] + r[j:]``
    beside the count."""
    if len(arr) < 2:
        return arr, 0
    m = len(arr) // 2
    left, a = count_concat(arr[:m])
    right, b = count_concat(arr[m:])
    out = []
    i = j = c = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
            c += len(left) - i
    return out + left[i:] + right[j:], a + b + c


def sort_lists_guarded(arr):
    """``if not arr: return []`` first, as many tutorials write it (Numba cannot type a bare
    ``[]``: hpu gives it ``arr[:0]``, hpu._functional._empty_lists_typed)."""
    if not arr:
        return []
    if len(arr) == 1:
        return arr
    mid = len(arr) // 2
    left = sort_lists_guarded(arr[:mid])
    right = sort_lists_guarded(arr[mid:])
    return merge_lists(left, right)


#: list in, list out: the combine's list is checked as it grows (all rewritten but last_lists)
def merge_pops(left, right):
    """The merge many tutorials print: the fronts taken off with pop(0)."""
    result = []
    while left and right:
        if left[0] <= right[0]:
            result.append(left.pop(0))
        else:
            result.append(right.pop(0))
    result.extend(left)
    result.extend(right)
    return result


def sort_pops(arr):
    if len(arr) <= 1:
        return arr
    mid = len(arr) // 2
    return merge_pops(sort_pops(arr[:mid]), sort_pops(arr[mid:]))


def merge_count_pops(left, right):
    merged = []
    c = 0
    while len(left) > 0 and len(right) > 0:
        if right[0] < left[0]:
            x = right.pop(0)
            c += len(left)
        else:
            x = left.pop(0)
        merged.append(x)
    return merged + left + right, c


def count_pops(arr):
    if len(arr) < 2:
        return arr[:], 0
    mid = len(arr) // 2
    left, a = count_pops(arr[:mid])
    right, b = count_pops(arr[mid:])
    merged, c = merge_count_pops(left, right)
    return merged, a + b + c


LISTS = {"sort_lists": sort_lists, "count_lists": count_lists,
         "sort_lists_guarded": sort_lists_guarded,
         "sort_lists_inline": sort_lists_inline, "union_lists": union_lists,
         "last_lists": last_lists, "sort_list_copy": sort_list_copy,
         "signed_lists": signed_lists, "sort_concat": sort_concat,
         "count_concat": count_concat, "sort_pops": sort_pops, "count_pops": count_pops}


# ------------------------------------------- the span form: f(arr, lo, hi) returning arrays
def msort_span(a, lo, hi):
    """The functional mergesort on index bounds, its merge written inline."""
    if hi - lo <= 1:
        return a[lo:hi].copy()
    m = (lo + hi) // 2
    l = msort_span(a, lo, m); r = msort_span(a, m, hi)
    out = np.empty(len(l) + len(r), a.dtype)
    i = j = k = 0
    while i < len(l) and j < len(r):
        if l[i] <= r[j]:
            out[k] = l[i]; i += 1
        else:
            out[k] = r[j]; j += 1
        k += 1
    while i < len(l):
        out[k] = l[i]; i += 1; k += 1
    while j < len(r):
        out[k] = r[j]; j += 1; k += 1
    return out


def count_span(arr, lo, hi):
    """The sorted array and the inversion count on [lo, hi), split at lo + (hi - lo) // 2,
    the merge a helper."""
    if hi - lo < 2:
        return arr[lo:hi].copy(), 0
    mid = lo + (hi - lo) // 2
    left, a = count_span(arr, lo, mid)
    right, b = count_span(arr, mid, hi)
    merged, c = merge_count(left, right)
    return merged, a + b + c


def desc_span(v, first, last):
    """Other names, the upper middle, an empty base case and a float result."""
    if last - first == 0:
        return np.zeros(0)
    if last - first == 1:
        return v[first:last].astype(np.float64)
    cut = (first + last + 1) // 2
    return merge_desc(desc_span(v, first, cut), desc_span(v, cut, last))


def split_after_first(a, lo, hi):
    """Not split at a midpoint: the CPU path."""
    if hi - lo <= 1:
        return a[lo:hi].copy()
    return merge_desc(split_after_first(a, lo, lo + 1), split_after_first(a, lo + 1, hi))


def span_default(a, lo=0, hi=None):
    """`hi` computed in the function: the CPU path."""
    if hi is None:
        hi = len(a)
    if hi - lo <= 1:
        return a[lo:hi].copy()
    m = (lo + hi) // 2
    return merge_desc(span_default(a, lo, m), span_default(a, m, hi))


def sort_span_inline(a, lo, hi):
    """The merge written in the function, sized ``hi - lo``: outlined on the span form's
    slice."""
    if hi - lo <= 1:
        return a[lo:hi].copy()
    mid = (lo + hi) // 2
    left = sort_span_inline(a, lo, mid)
    right = sort_span_inline(a, mid, hi)
    out = np.empty(hi - lo, a.dtype)
    i = j = 0
    for k in range(hi - lo):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


SPANS = {"msort_span": msort_span, "count_span": count_span, "desc_span": desc_span,
         "sort_span_inline": sort_span_inline}
SPANS_KEPT = {"split_after_first": ("not at a midpoint", split_after_first),
              "span_default": ("assigns its parameter hi", span_default)}


# ------------------------------------------------ k-way splits: three and four slices
def merge3(x, y, z):
    out = np.empty(len(x) + len(y) + len(z), x.dtype)
    i = j = k = 0
    for t in range(len(out)):
        pick = 0
        v = out[t]                  # (overwritten: every slot takes one key)
        if i < len(x):
            v = x[i]
            pick = 1
        if j < len(y) and (pick == 0 or y[j] < v):
            v = y[j]
            pick = 2
        if k < len(z) and (pick == 0 or z[k] < v):
            v = z[k]
            pick = 3
        out[t] = v
        if pick == 1:
            i += 1
        elif pick == 2:
            j += 1
        else:
            k += 1
    return out


def sort3(a):
    """A three-way mergesort, the right third's call written first."""
    if len(a) <= 1:
        return a.copy()
    t = (len(a) + 2) // 3
    right = sort3(a[2 * t:])
    left = sort3(a[:t])
    middle = sort3(a[t:2 * t])
    return merge3(left, middle, right)


def merge4_count(p, q, r, s):
    """The four sorted runs concatenated and sorted by insertion; the count of the pairs
    it moved past each other (inversions between the runs)."""
    n1, n2, n3 = len(p), len(q), len(r)
    out = np.zeros(n1 + n2 + n3 + len(s), p.dtype)
    for i in range(n1):
        out[i] = p[i]
    for i in range(n2):
        out[n1 + i] = q[i]
    for i in range(n3):
        out[n1 + n2 + i] = r[i]
    for i in range(len(s)):
        out[n1 + n2 + n3 + i] = s[i]
    moves = 0
    for i in range(1, len(out)):
        v = out[i]
        j = i
        while j > 0 and out[j - 1] > v:
            out[j] = out[j - 1]
            j -= 1
            moves += 1
        out[j] = v
    return out, moves


def count4(a):
    """A four-way split with a count, the quarters named by the bounds people write."""
    if len(a) < 2:
        return a.copy(), 0
    q = (len(a) + 3) // 4
    w, c1 = count4(a[:q])
    x, c2 = count4(a[q:2 * q])
    y, c3 = count4(a[2 * q:3 * q])
    z, c4 = count4(a[3 * q:])
    out, c = merge4_count(w, x, y, z)
    return out, c1 + c2 + c3 + c4 + c


def merge3_tail(x, y, z):
    out = np.empty(len(x) + len(y) + len(z), x.dtype)
    for i in range(len(x)):
        out[i] = x[i]
    for i in range(len(y)):
        out[len(x) + i] = y[i]
    for i in range(len(z)):
        out[len(x) + len(y) + i] = z[i] + 1
    return out


def cuts_out_of_order(a):
    """Odd lengths cut at n - 1 and 1: a[n - 1:1] is empty and a[1:] overlaps a[:n - 1],
    so the result is longer than the input (Python's answer, which the CPU gives)."""
    if len(a) <= 2:
        return a.copy()
    e1 = len(a) - 1 if len(a) % 2 == 1 else len(a) // 3
    e2 = 1 if len(a) % 2 == 1 else 2 * len(a) // 3
    return merge3_tail(cuts_out_of_order(a[:e1]), cuts_out_of_order(a[e1:e2]),
                       cuts_out_of_order(a[e2:]))


def thirds_overlapping(a):
    if len(a) <= 2:
        return a.copy()
    t = len(a) // 3
    return merge3(thirds_overlapping(a[:t]), thirds_overlapping(a[t:]),
                  thirds_overlapping(a[2 * t:]))


def four_nested(a):
    """Four quarters merged in pairs, then the pairs: nested calls of one merge."""
    if len(a) < 4:
        return np.sort(a)
    q = len(a) // 4
    w = four_nested(a[:q])
    x = four_nested(a[q:2 * q])
    y = four_nested(a[2 * q:3 * q])
    z = four_nested(a[3 * q:])
    return merge(merge(w, x), merge(y, z))


def merge_up(xs, ys):
    """The two-finger merge, written with a for loop over the output."""
    out = np.empty(len(xs) + len(ys), xs.dtype)
    i = j = 0
    for k in range(len(out)):
        if j == len(ys) or (i < len(xs) and xs[i] <= ys[j]):
            out[k] = xs[i]
            i += 1
        else:
            out[k] = ys[j]
            j += 1
    return out


def count_nested(a):
    """A three-way split whose count comes from the outer merge only: the inversions between
    the first two thirds' union and the last (Python's answer, whatever it means)."""
    if len(a) <= 1:
        return a.copy(), 0
    t = max(1, len(a) // 3)
    x, c1 = count_nested(a[:t])
    y, c2 = count_nested(a[t:2 * t])
    z, c3 = count_nested(a[2 * t:])
    merged, c4 = merge_count(merge_up(x, y), z)
    return merged, c1 + c2 + c3 + c4


def three_early(a):
    """Nested calls of a merge with early returns: it cannot be inlined where it is called."""
    if len(a) <= 2:
        return a.copy()
    t = len(a) // 3
    return merge_early(merge_early(three_early(a[:t]), three_early(a[t:2 * t])),
                       three_early(a[2 * t:]))


def reverse_halves(a):
    """The children joined in the other order than their slices': a reversal."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return np.concatenate((reverse_halves(a[m:]), reverse_halves(a[:m])))


def rotate_thirds(a):
    """Three children joined by np.hstack of a list, the last third first."""
    if len(a) <= 2:
        return a.copy()
    t = len(a) // 3
    x = rotate_thirds(a[:t])
    y = rotate_thirds(a[t:2 * t])
    z = rotate_thirds(a[2 * t:])
    return np.hstack([z, x, y])


def halves_appended(a):
    if len(a) < 2:
        return a[:]
    m = (len(a) + 1) // 2
    return np.append(halves_appended(a[:m]), halves_appended(a[m:]))


def sort3_inline(a):
    """A three-way mergesort whose merge is written in the function, after the calls."""
    if len(a) < 2:
        return a.copy()
    t = (len(a) + 2) // 3
    x = sort3_inline(a[:t])
    y = sort3_inline(a[t:2 * t])
    z = sort3_inline(a[2 * t:])
    out = np.empty(len(a), a.dtype)
    i = j = k = 0
    for s in range(len(a)):
        if i < len(x) and (j >= len(y) or x[i] <= y[j]) and (k >= len(z) or x[i] <= z[k]):
            out[s] = x[i]
            i += 1
        elif j < len(y) and (k >= len(z) or y[j] <= z[k]):
            out[s] = y[j]
            j += 1
        else:
            out[s] = z[k]
            k += 1
    return out


def quarters_reversed(a):
    """Four children copied by a loop over them, last first, with a count of the positive
    keys: `for part in (z, y, x, w)` in the function, after the calls."""
    n = len(a)
    if n < 2:
        return a.copy(), int(n == 1 and a[0] > 0)
    q = (n + 3) // 4
    w, c1 = quarters_reversed(a[:q])
    x, c2 = quarters_reversed(a[q:2 * q])
    y, c3 = quarters_reversed(a[2 * q:3 * q])
    z, c4 = quarters_reversed(a[3 * q:])
    res = np.zeros(len(w) + len(x) + len(y) + len(z), dtype=a.dtype)
    m = 0
    for part in (z, y, x, w):
        for v in part:
            res[m] = v
            m += 1
    return res, c1 + c2 + c3 + c4


def sort3_chained(a):
    """Nested merges written as a chain, the first before the third call: `k = merge(x, y)`,
    then `merge(k, z)`; float64 merges (no dtype) of int keys, as NumPy allocates them."""
    if len(a) < 2:
        return a.astype(np.float64)
    t = len(a) // 3 or 1
    k = merge_float(sort3_chained(a[:t]), sort3_chained(a[t:2 * t]))
    return merge_float(k, sort3_chained(a[2 * t:]))


def reverse_list(xs):
    """The children's lists joined by `+`, the right half first: a reversal of a list (of an
    array, `+` adds the halves element-wise, as NumPy does)."""
    if len(xs) <= 1:
        return xs
    m = len(xs) // 2
    return reverse_list(xs[m:]) + reverse_list(xs[:m])


def sort_joined_sorted(a):
    """The children's arrays joined, then sorted: a combine followed by more work, as
    people write a sort when the merge is NumPy's."""
    if a.size < 2:
        return a
    mid = a.size // 2
    return np.sort(np.concatenate((sort_joined_sorted(a[:mid]), sort_joined_sorted(a[mid:]))))


def sorted_list(xs):
    """The children's lists joined by `+` and sorted by `sorted()`: a mergesort that leaves
    the merge to Python."""
    if len(xs) <= 1:
        return xs
    m = len(xs) // 2
    return sorted(sorted_list(xs[:m]) + sorted_list(xs[m:]))


def sorted_list_in_place(xs):
    """The same, the joined list sorted by its own ``sort()``."""
    if len(xs) <= 1:
        return xs[:]
    m = len(xs) // 2
    left = sorted_list_in_place(xs[:m])
    right = sorted_list_in_place(xs[m:])
    res = left + right
    res.sort()
    return res


def sort_joined_then_sorted(a):
    """The children's arrays joined, then the join sorted in place."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    out = np.concatenate((sort_joined_then_sorted(a[:m]), sort_joined_then_sorted(a[m:])))
    out.sort()
    return out


KWAY = {"sort3": sort3, "count4": count4}
#: combines of nested calls, of the children's arrays joined whole by NumPy
#: (hpu._functional_dps._nested_combines), k-way combines written in the function
NESTED = {"three_way": three_way, "four_nested": four_nested, "count_nested": count_nested,
          "reverse_halves": reverse_halves, "rotate_thirds": rotate_thirds,
          "halves_appended": halves_appended, "sort3_inline": sort3_inline,
          "quarters_reversed": quarters_reversed, "sort3_chained": sort3_chained,
          "sort_joined_sorted": sort_joined_sorted,
          "sort_joined_then_sorted": sort_joined_then_sorted}
REWRITTEN.update(KWAY)
REWRITTEN.update(NESTED)
KEPT["thirds_overlapping"] = ("not on consecutive slices", thirds_overlapping)
KEPT["three_early"] = ("merge_early() cannot be inlined where it is called", three_early)



def merge_to_floats(x, y):
    out = np.empty(len(x) + len(y))     # float64, whatever the keys' dtype
    i = j = 0
    for t in range(len(out)):
        if j >= len(y) or (i < len(x) and x[i] <= y[j]):
            out[t] = x[i]
            i += 1
        else:
            out[t] = y[j]
            j += 1
    return out


def floats_from_ints(a):
    """Int keys: the base case's copy is int, the merge's float64: Python mixes them,
    Numba cannot unify the two array types."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge_to_floats(floats_from_ints(a[:m]), floats_from_ints(a[m:]))


def merge3_to_floats(x, y, z):
    X = np.empty(len(x) + 1)
    Y = np.empty(len(y) + 1)
    for i in range(len(x)):
        X[i] = x[i]
    for i in range(len(y)):
        Y[i] = y[i]
    X[len(x)] = float("inf")
    Y[len(y)] = float("inf")
    out = np.empty(len(x) + len(y) + len(z))
    i = j = k = 0
    for t in range(len(out)):
        if k < len(z) and z[k] < X[i] and z[k] < Y[j]:
            out[t] = z[k]
            k += 1
        elif X[i] <= Y[j]:
            out[t] = X[i]
            i += 1
        else:
            out[t] = Y[j]
            j += 1
    return out


def floats_from_ints3(a):
    if len(a) <= 1:
        return a.copy()
    t = (len(a) + 2) // 3
    return merge3_to_floats(floats_from_ints3(a[:t]), floats_from_ints3(a[t:2 * t]),
                            floats_from_ints3(a[2 * t:]))


def merge2_into(dst, p, q):
    i = j = 0
    for t in range(len(p) + len(q)):
        if j >= len(q) or (i < len(p) and p[i] <= q[j]):
            dst[t] = p[i]
            i += 1
        else:
            dst[t] = q[j]
            j += 1


def merge3_through_floats(x, y, z):
    tmp = np.empty(len(x) + len(y))         # NumPy's default dtype: float64
    merge2_into(tmp, x, y)
    out = np.empty(len(x) + len(y) + len(z), x.dtype)
    i = j = 0
    for t in range(len(out)):
        if j >= len(z) or (i < len(tmp) and tmp[i] <= z[j]):
            out[t] = tmp[i]
            i += 1
        else:
            out[t] = z[j]
            j += 1
    return out


def sort3_through_floats(a):
    if len(a) <= 1:
        return a.copy()
    t = (len(a) + 2) // 3
    return merge3_through_floats(sort3_through_floats(a[:t]), sort3_through_floats(a[t:2 * t]),
                                 sort3_through_floats(a[2 * t:]))


def sort_recursion_first(a):
    """The recursion in the ``if``, the base case in the ``else``."""
    if len(a) > 1:
        m = len(a) // 2
        return merge_float(sort_recursion_first(a[:m]), sort_recursion_first(a[m:]))
    else:
        return a.copy()


REWRITTEN["sort_recursion_first"] = sort_recursion_first


def sort_recursion_then_base(a):
    """The recursion in an ``if`` with no ``else``, the base case after it."""
    if len(a) > 1:
        m = len(a) // 2
        left = sort_recursion_then_base(a[:m])
        right = sort_recursion_then_base(a[m:])
        return merge_float(left, right)
    return a.copy()


REWRITTEN["sort_recursion_then_base"] = sort_recursion_then_base


def merge_joined(left, right):
    """The merge that joins what is left of each half after the merged prefix."""
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    return np.concatenate((out[:k], left[i:], right[j:]))


def sort_joined(a):
    if len(a) <= 1:
        return a
    mid = len(a) // 2
    return merge_joined(sort_joined(a[:mid]), sort_joined(a[mid:]))


def merge_count_hstack(left, right):
    out = np.empty(len(left) + len(right), dtype=left.dtype)
    i = j = k = c = 0
    while i < len(left) and j < len(right):
        if right[j] < left[i]:
            out[k] = right[j]
            c += len(left) - i
            j += 1
        else:
            out[k] = left[i]
            i += 1
        k += 1
    return np.hstack([out[0:k], left[i:], right[j:]]), c


def count_hstack(a):
    if len(a) < 2:
        return a.copy(), 0
    m = len(a) // 2
    left, x = count_hstack(a[:m])
    right, y = count_hstack(a[m:])
    merged, z = merge_count_hstack(left, right)
    return merged, x + y + z


def merge_drops(left, right):
    """A merge that forgets the right half's rest: shorter than its halves together."""
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    return np.concatenate((out[:k], left[i:]))


def sort_drops(a):
    if len(a) <= 1:
        return a.copy()
    mid = len(a) // 2
    return merge_drops(sort_drops(a[:mid]), sort_drops(a[mid:]))


REWRITTEN.update(sort_joined=sort_joined, count_hstack=count_hstack)
#: a device form whose run-time check fails on some inputs
JOINED = {"sort_drops": sort_drops}


def merge_sentinels_appended(left, right):
    """CLRS's merge with its sentinels appended by NumPy."""
    L = np.append(left, np.inf)
    R = np.concatenate((right, np.array([math.inf])))
    out = np.empty(len(left) + len(right))
    i = j = 0
    for k in range(len(out)):
        if L[i] <= R[j]:
            out[k] = L[i]
            i += 1
        else:
            out[k] = R[j]
            j += 1
    return out


def sort_sentinels_appended(a):
    if len(a) <= 1:
        return a.astype(np.float64)
    m = len(a) // 2
    return merge_sentinels_appended(sort_sentinels_appended(a[:m]),
                                    sort_sentinels_appended(a[m:]))


REWRITTEN["sort_sentinels_appended"] = sort_sentinels_appended


def sort_cutoff(a):
    """A cutoff that sorts its small slices with NumPy."""
    if len(a) <= 8:
        return np.sort(a)
    m = len(a) // 2
    return merge_float(sort_cutoff(a[:m]), sort_cutoff(a[m:]))


REWRITTEN["sort_cutoff"] = sort_cutoff


def sort_insertion_cutoff(a):
    """The textbook hybrid merge sort: small slices copied and sorted by insertion."""
    n = len(a)
    if n <= 8:
        b = a.copy()
        for i in range(1, n):
            key = b[i]
            j = i - 1
            while j >= 0 and b[j] > key:
                b[j + 1] = b[j]
                j -= 1
            b[j + 1] = key
        return b
    m = n // 2
    return merge_float(sort_insertion_cutoff(a[:m]), sort_insertion_cutoff(a[m:]))


def insertion_sorted(a):
    out = np.copy(a)
    for i in range(1, len(out)):
        key = out[i]
        j = i - 1
        while j >= 0 and out[j] > key:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = key
    return out


def count_insertion_helper(a):
    """The cutoff in a helper of its own; a count beside the sorted copy."""
    if len(a) <= 8:
        return insertion_sorted(a), 0
    m = len(a) // 2
    left, x = count_insertion_helper(a[:m])
    right, y = count_insertion_helper(a[m:])
    merged, z = merge_count(left, right)
    return merged, x + y + z


def sort_copy_sorted(a):
    """The copy sorted by ndarray.sort, NaNs last."""
    if len(a) <= 8:
        b = a.copy()
        b.sort()
        return b
    m = len(a) // 2
    return merge_float(sort_copy_sorted(a[:m]), sort_copy_sorted(a[m:]))


REWRITTEN.update(sort_insertion_cutoff=sort_insertion_cutoff,
                 count_insertion_helper=count_insertion_helper,
                 sort_copy_sorted=sort_copy_sorted)


def sort_view_worked(a):
    """``b = a[:]`` is a view: Python sorts the caller's own elements -- no device form."""
    if len(a) <= 8:
        b = a[:]
        b.sort()
        return b
    m = len(a) // 2
    return merge_float(sort_view_worked(a[:m]), sort_view_worked(a[m:]))


def sort_reread_cutoff(a):
    """The copy written while the slice is read again: the copy is the task's output region,
    apart from the slice it reads."""
    if len(a) <= 8:
        b = a.copy()
        for i in range(len(b)):
            b[i] = a[len(a) - 1 - i] * 2 + b[i]
        return b
    m = len(a) // 2
    return merge_float(sort_reread_cutoff(a[:m]), sort_reread_cutoff(a[m:]))


REWRITTEN["sort_reread_cutoff"] = sort_reread_cutoff


def sort_cutoff_inline(a):
    """The textbook hybrid merge sort written in one function: the insertion sort's ``i``
    and ``j`` are the inline merge's too (bound by the base case only where it returns)."""
    if len(a) <= 8:
        b = a.copy()
        for i in range(1, len(b)):
            v = b[i]
            j = i - 1
            while j >= 0 and b[j] > v:
                b[j + 1] = b[j]
                j -= 1
            b[j + 1] = v
        return b
    m = len(a) // 2
    left = sort_cutoff_inline(a[:m])
    right = sort_cutoff_inline(a[m:])
    out = np.empty(len(a), a.dtype)
    i = j = 0
    for k in range(len(a)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


REWRITTEN["sort_cutoff_inline"] = sort_cutoff_inline


# parameters every recursive call passes on unchanged (hpu._functional_dps._passed_on)

def sort_passed_on(a, cutoff=8, reverse=False):
    """A cutoff and a direction, passed on positionally and by keyword."""
    if len(a) <= cutoff:
        b = a.copy()
        for i in range(1, len(b)):
            v = b[i]
            j = i - 1
            while j >= 0 and ((b[j] < v) if reverse else (b[j] > v)):
                b[j + 1] = b[j]
                j -= 1
            b[j + 1] = v
        return b
    m = len(a) // 2
    left = sort_passed_on(a[:m], cutoff, reverse=reverse)
    right = sort_passed_on(a[m:], cutoff, reverse=reverse)
    out = np.empty(len(a), a.dtype)
    i = j = 0
    for k in range(len(a)):
        if j >= len(right) or (i < len(left) and (
                left[i] >= right[j] if reverse else left[i] <= right[j])):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


def merge_scaled(left, right, scale):
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] * scale <= right[j] * scale):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


def count_span_keyed(a, lo, hi, *, scale):
    """The span form with a keyword-only parameter the helper reads; a count beside."""
    if hi - lo <= 1:
        return a[lo:hi].copy(), 0
    mid = (lo + hi) // 2
    left, x = count_span_keyed(a, lo, mid, scale=scale)
    right, y = count_span_keyed(a, mid, hi, scale=scale)
    return merge_scaled(left, right, scale), x + y + 1


def sort_depth_changed(a, depth=0):
    """``depth + 1``: a parameter the calls change is not passed on unchanged."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge_float(sort_depth_changed(a[:m], depth + 1), sort_depth_changed(a[m:], depth + 1))


def sort_default_left_out(a, cutoff=1):
    """A call that leaves ``cutoff`` to its default passes 1, not the caller's value."""
    if len(a) <= cutoff:
        return np.sort(a)
    m = len(a) // 2
    return merge_float(sort_default_left_out(a[:m]), sort_default_left_out(a[m:], cutoff))


# pieces joined with element-wise arithmetic, and list merges returned as arrays

def prefix_sums(a):
    """Prefix sums: the right half's sums shifted by the left's last."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    left = prefix_sums(a[:m])
    right = prefix_sums(a[m:])
    return np.concatenate((left, right + left[-1]))


def prefix_sums_floats(a):
    if len(a) <= 1:
        return a.astype(np.float64)
    m = len(a) // 2
    left = prefix_sums_floats(a[:m])
    right = prefix_sums_floats(a[m:])
    return np.concatenate([left, left[-1] + right * 1.0])


def negated_reversal(a):
    """Each level reverses and negates: the values' signs alternate with the depth."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return np.concatenate((-negated_reversal(a[m:]), 2 * negated_reversal(a[:m]) - 1))


def halved_left(a):
    """``left * 0.5``: floats from int keys, whose levels' arrays differ in dtype."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return np.concatenate((halved_left(a[:m]) * 0.5, halved_left(a[m:])))


def merge_list_as_array(left, right):
    result = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    result.extend(left[i:])
    result.extend(right[j:])
    return np.array(result)


def sort_list_as_array(a):
    """A tutorial's list merge whose result is made an array: ``np.array(result)``."""
    if len(a) <= 1:
        return a
    m = len(a) // 2
    return merge_list_as_array(sort_list_as_array(a[:m]), sort_list_as_array(a[m:]))


def sort_list_inline_as_array(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    left = sort_list_inline_as_array(a[:m])
    right = sort_list_inline_as_array(a[m:])
    out = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return np.asarray(out)


def merge_slots(left_half, right_half):
    """A much-copied collection's merge: a list of places, ``[None] * n``, filled in order."""
    sorted_array = [None] * (len(right_half) + len(left_half))
    pointer1 = 0
    pointer2 = 0
    index = 0
    while pointer1 < len(left_half) and pointer2 < len(right_half):
        if left_half[pointer1] < right_half[pointer2]:
            sorted_array[index] = left_half[pointer1]
            pointer1 += 1
            index += 1
        else:
            sorted_array[index] = right_half[pointer2]
            pointer2 += 1
            index += 1
    while pointer1 < len(left_half):
        sorted_array[index] = left_half[pointer1]
        pointer1 += 1
        index += 1
    while pointer2 < len(right_half):
        sorted_array[index] = right_half[pointer2]
        pointer2 += 1
        index += 1
    return sorted_array


def sort_slots(array):
    if len(array) <= 1:
        return array
    middle = 0 + (len(array) - 0) // 2
    left_half = array[:middle]
    right_half = array[middle:]
    return merge_slots(sort_slots(left_half), sort_slots(right_half))


def merge_zero_slots(left, right):
    out = [0] * (len(left) + len(right))
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        out[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        out[k] = right[j]
        j += 1
        k += 1
    return out


def sort_zero_slots(a):
    if len(a) <= 1:
        return a
    m = len(a) // 2
    return merge_zero_slots(sort_zero_slots(a[:m]), sort_zero_slots(a[m:]))


def merge_slots_checked(left, right):
    """Asks whether a place is still empty: its ``None`` is one, kept as Python has it."""
    out = [None] * (len(left) + len(right))
    i = j = 0
    for k in range(len(out)):
        if j == len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    for v in out:
        if v is None:
            raise ValueError("a place left empty")
    return out


def sort_slots_checked(a):
    if len(a) <= 1:
        return a
    m = len(a) // 2
    return merge_slots_checked(sort_slots_checked(a[:m]), sort_slots_checked(a[m:]))


def merge_half_filled(left, right):
    """Fills only the larger of each pair: the other places keep the list's zeros."""
    out = [0] * (len(left) + len(right))
    for k in range(min(len(left), len(right))):
        out[2 * k] = max(left[k], right[k])
    return out


def pairs_half_filled(a):
    if len(a) <= 1:
        return a
    m = len(a) // 2
    return merge_half_filled(pairs_half_filled(a[:m]), pairs_half_filled(a[m:]))


# ------------------------------------- the children named before the calls (named slices)
def sort_slices_rebound(arr):
    """``left = arr[:mid]`` then ``left = f(left)``: the name rebound to the sorted half."""
    if len(arr) <= 1:
        return arr
    mid = len(arr) // 2
    left = arr[:mid]
    right = arr[mid:]
    left = sort_slices_rebound(left)
    right = sort_slices_rebound(right)
    return merge(left, right)


def sort_slices_returned(arr):
    """``left, right = arr[:mid], arr[mid:]``, the calls inside the return's merge."""
    if len(arr) <= 1:
        return arr.copy()
    mid = len(arr) // 2
    left, right = arr[:mid], arr[mid:]
    return merge(sort_slices_returned(left), sort_slices_returned(right))


def count_array_split(a):
    """``np.array_split(a, 2)``'s halves named, each counted and sorted."""
    if len(a) <= 1:
        return a.copy(), 0
    first, second = np.array_split(a, 2)
    left, x = count_array_split(first)
    right, y = count_array_split(second)
    merged, z = merge_count(left, right)
    return merged, x + y + z


def sort_slice_reread(arr):
    """The half's name read again after its call (its length): left as written."""
    if len(arr) <= 1:
        return arr.copy()
    mid = len(arr) // 2
    left = arr[:mid]
    sl = sort_slice_reread(left)
    sr = sort_slice_reread(arr[mid:])
    n = len(left) + len(sr)
    return merge(sl, sr[:n - len(left)])


REWRITTEN.update({"sort_slices_rebound": sort_slices_rebound,
                  "sort_slices_returned": sort_slices_returned,
                  "count_array_split": count_array_split})
KEPT["sort_slice_reread"] = ("a recursive call is not on a slice of arr", sort_slice_reread)
