"""Slice-form mergesorts that copy their halves before recursing on the copies, as Python
tutorials write them, for the copy-halves form (hpu._copy_halves): each a plain function;
the tests decorate them.  ``CARVED`` have the form, ``KEPT`` do not (the reason each
gives); ``SHORT`` has it, but its merge stops early, which only a run can tell."""
import numpy as np


def tutorial(arr):
    """The tutorials' mergesort, with NumPy's .copy() where a list's slice copies."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        tutorial(L)
        tutorial(R)
        i = j = k = 0
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


def count_inversions(a):
    """Sorts ``a`` and returns its inversions: np.copy, a tuple assignment, n = len(a),
    ``k = k + 1``, the base case returning first."""
    n = len(a)
    if n < 2:
        return 0
    half = n // 2
    left, right = np.copy(a[:half]), np.copy(a[half:n])
    inv = count_inversions(left) + count_inversions(right)
    i = 0
    j = 0
    k = 0
    while k < n:
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            a[k] = left[i]
            i = i + 1
        else:
            a[k] = right[j]
            inv += len(left) - i
            j = j + 1
        k = k + 1
    return inv


def descending(x):
    """Sorted largest first, the halves split at (n + 1) // 2, np.array copies."""
    if len(x) <= 1:
        return
    m = (len(x) + 1) // 2
    first = np.array(x[0:m])
    second = np.array(x[m:])
    descending(first)
    descending(second)
    p = q = 0
    out = 0
    while p < len(first) or q < len(second):
        if q == len(second) or (p < len(first) and first[p] >= second[q]):
            x[out] = first[p]
            p += 1
        else:
            x[out] = second[q]
            q += 1
        out += 1


def no_tails(arr):
    """Its merge forgets the loops that copy what is left: elements stay unwritten."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        no_tails(L)
        no_tails(R)
        i = j = k = 0
        while i < len(L) and j < len(R):
            if L[i] <= R[j]:
                arr[k] = L[i]
                i += 1
            else:
                arr[k] = R[j]
                j += 1
            k += 1


def reads_arr(arr):
    """Reads arr's elements after its calls (arr[k] + 0): the copies must come first."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        reads_arr(L)
        reads_arr(R)
        i = j = k = 0
        while i < len(L) and j < len(R):
            if L[i] <= R[j]:
                arr[k] = L[i] + arr[k] * 0
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


def two_indices(arr):
    """Writes arr at i + j, not at one counter."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        two_indices(L)
        two_indices(R)
        i = j = 0
        while i < len(L) or j < len(R):
            if j == len(R) or (i < len(L) and L[i] <= R[j]):
                arr[i + j] = L[i]
                i += 1
            else:
                arr[i + j] = R[j]
                j += 1


def third(arr):
    """Split at len // 3: not the halves."""
    if len(arr) > 1:
        mid = len(arr) // 3 + 1
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        third(L)
        third(R)
        k = 0
        i = j = 0
        while i < len(L) or j < len(R):
            if j == len(R) or (i < len(L) and L[i] <= R[j]):
                arr[k] = L[i]
                i += 1
            else:
                arr[k] = R[j]
                j += 1
            k += 1


CARVED = {f.__name__: f for f in (tutorial, count_inversions, descending)}
SHORT = {"no_tails": no_tails}
KEPT = {"reads_arr": ("reads arr after its calls", reads_arr),
        "third": ("not len\\(arr\\) // 2", third)}
CARVED["two_indices"] = two_indices


def loop_over_k(a):
    """The merge as a loop over every position, ``range(len(a))``."""
    if len(a) > 1:
        mid = len(a) // 2
        left = a[:mid].copy()
        right = a[mid:].copy()
        loop_over_k(left)
        loop_over_k(right)
        i = j = 0
        for k in range(len(a)):
            if j >= len(right) or (i < len(left) and left[i] <= right[j]):
                a[k] = left[i]
                i += 1
            else:
                a[k] = right[j]
                j += 1


def loop_skips(a):
    """Its loop over every position writes only where the left half wins."""
    if len(a) > 1:
        mid = len(a) // 2
        left = a[:mid].copy()
        right = a[mid:].copy()
        loop_skips(left)
        loop_skips(right)
        i = j = 0
        for k in range(len(a)):
            if j >= len(right) or (i < len(left) and left[i] <= right[j]):
                a[k] = left[i]
                i += 1
            else:
                j += 1


CARVED["loop_over_k"] = loop_over_k
SHORT["loop_skips"] = loop_skips


def for_lists(arr):
    """The tutorials' mergesort exactly, for lists: a list's slices are copies."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid]
        R = arr[mid:]
        for_lists(L)
        for_lists(R)
        i = j = k = 0
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


def for_lists_short(arr):
    """For lists, its merge forgetting the tail loops."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid]
        R = arr[mid:]
        for_lists_short(L)
        for_lists_short(R)
        i = j = k = 0
        while i < len(L) and j < len(R):
            if L[i] <= R[j]:
                arr[k] = L[i]
                i += 1
            else:
                arr[k] = R[j]
                j += 1
            k += 1


# ------------------------------------------------ merges in a helper, at any index
def merge(arr, left, right):
    """The tutorials' merge helper: ``left`` and ``right`` back into ``arr``."""
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            arr[k] = left[i]
            i += 1
        else:
            arr[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        arr[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        arr[k] = right[j]
        j += 1
        k += 1


def with_helper(arr):
    """The mergesort whose merge is a helper, ``merge(arr, L, R)``."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        with_helper(L)
        with_helper(R)
        merge(arr, L, R)


def merge_counting(a, left, right):
    """Merges at ``i + j`` and returns the inversions it crossed."""
    i = j = 0
    inversions = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            a[i + j] = left[i]
            i += 1
        else:
            a[i + j] = right[j]
            j += 1
            inversions += len(left) - i
    while i < len(left):
        a[i + j] = left[i]
        i += 1
    while j < len(right):
        a[i + j] = right[j]
        j += 1
    return inversions


def inversions_helper(a):
    """Sorts ``a`` and returns its inversions, the merge a helper that counts."""
    if len(a) < 2:
        return 0
    m = len(a) // 2
    left = a[:m].copy()
    right = a[m:].copy()
    count = inversions_helper(left)
    count += inversions_helper(right)
    count += merge_counting(a, left, right)
    return count


def returned_helper(a):
    """``return merge(...)`` as its last statement, the helper returning the count."""
    if len(a) < 2:
        return 0
    m = len(a) // 2
    left = a[:m].copy()
    right = a[m:].copy()
    returned_helper(left)
    returned_helper(right)
    return merge_counting(a, left, right)


def merge_pairs(arr, left, right):
    """Merges, then writes the last element once more, from ``right``: a second counter."""
    p = 0
    q = 0
    while p < len(left) or q < len(right):
        if q == len(right) or (p < len(left) and left[p] <= right[q]):
            arr[p + q] = left[p]
            p += 1
        else:
            arr[p + q] = right[q]
            q += 1
    arr[len(arr) - 1] = max(left[len(left) - 1], right[len(right) - 1])


def twice_written(arr):
    """Writes its last element twice, at two indices: every element still written."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        twice_written(L)
        twice_written(R)
        merge_pairs(arr, L, R)


def merge_skipping(arr, left, right):
    """Forgets ``right``'s tail: elements stay unwritten."""
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            arr[i + j] = left[i]
            i += 1
        else:
            arr[i + j] = right[j]
            j += 1
    while i < len(left):
        arr[i + j] = left[i]
        i += 1


def helper_short(arr):
    """Its helper merge stops early."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        helper_short(L)
        helper_short(R)
        merge_skipping(arr, L, R)


def merge_reassigning(arr, left, right):
    """Rebinds its parameter ``left``: not written out in its caller."""
    left = left[::-1][::-1]
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            arr[k] = left[i]
            i += 1
        else:
            arr[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        arr[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        arr[k] = right[j]
        j += 1
        k += 1


def helper_rebinds(arr):
    """Its helper rebinds a parameter: the function keeps its path."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        helper_rebinds(L)
        helper_rebinds(R)
        merge_reassigning(arr, L, R)


def list_helper(arr):
    """For lists (slices copy), the merge a helper."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid]
        R = arr[mid:]
        list_helper(L)
        list_helper(R)
        merge(arr, L, R)


def merge_dividing(arr, left, right):
    """Divides by zero where ``arr`` has 5 elements."""
    i = j = 0
    while i < len(left) or j < len(right):
        if j == len(right) or (i < len(left) and left[i] <= right[j]):
            arr[i + j] = left[i] // (len(arr) - 5)  # here
            i += 1
        else:
            arr[i + j] = right[j]
            j += 1


def dividing(arr):
    """Raises in its helper merge."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        dividing(L)
        dividing(R)
        merge_dividing(arr, L, R)


#: the form too, their merges in helpers (tested on fewer paths: the form is the same)
WRITTEN_OUT = {f.__name__: f for f in (with_helper, inversions_helper, returned_helper,
                                       twice_written)}
SHORT["helper_short"] = helper_short
KEPT["helper_rebinds"] = ("reads arr after its calls", helper_rebinds)


def merge_through_alias(arr, L, R):
    """Writes ``arr`` through another name: not this form; the fan-out must wait for the
    children before it."""
    out = arr
    i = j = k = 0
    while i < len(L) and j < len(R):
        if L[i] <= R[j]:
            out[k] = L[i]
            i += 1
        else:
            out[k] = R[j]
            j += 1
        k += 1
    while i < len(L):
        out[k] = L[i]
        i += 1
        k += 1
    while j < len(R):
        out[k] = R[j]
        j += 1
        k += 1


def through_alias(arr):
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        through_alias(L)
        through_alias(R)
        merge_through_alias(arr, L, R)


def through_view(arr):
    """Writes through a view of ``arr``."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        through_view(L)
        through_view(R)
        v = arr[0:len(arr)]
        i = j = 0
        for k in range(len(v)):
            if j >= len(R) or (i < len(L) and L[i] <= R[j]):
                v[k] = L[i]
                i += 1
            else:
                v[k] = R[j]
                j += 1


def list_past_the_end(arr):
    """For lists: its merge reads ``R[j]`` with ``j == len(R)`` (``<=``): Python raises."""
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid]
        R = arr[mid:]
        list_past_the_end(L)
        list_past_the_end(R)
        i = j = k = 0
        while i < len(L) and j <= len(R):
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
