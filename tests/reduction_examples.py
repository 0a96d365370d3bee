"""Divide and conquer with whole-array reductions in the base case or the combine, as people
write them (hpu/_reductions.py); plain functions, decorated by the tests."""
import numpy as np


def sum_method(a):
    if len(a) <= 8:
        return a.sum()
    m = len(a) // 2
    return sum_method(a[:m]) + sum_method(a[m:])


def sum_np(a):
    if len(a) <= 5:
        return np.sum(a)
    mid = len(a) // 2
    left = sum_np(a[:mid])
    right = sum_np(a[mid:])
    return left + right


def sum_builtin(a):
    if len(a) <= 3:
        return sum(a)
    m = len(a) // 2
    return sum_builtin(a[:m]) + sum_builtin(a[m:])


def max_np(a):
    if len(a) <= 5:
        return a.max()
    m = len(a) // 2
    return max(max_np(a[:m]), max_np(a[m:]))


def min_builtin(a):
    if len(a) <= 4:
        return min(a)
    m = len(a) // 2
    return min(min_builtin(a[:m]), min_builtin(a[m:]))


def lohi_max(a, lo, hi):
    if hi - lo <= 6:
        return np.max(a[lo:hi])
    mid = (lo + hi) // 2
    return max(lohi_max(a, lo, mid), lohi_max(a, mid, hi))


def prod_mod(a):
    if len(a) <= 4:
        return np.prod(a) % 1000003
    m = len(a) // 2
    return prod_mod(a[:m]) * prod_mod(a[m:]) % 1000003


def spread(v):
    return v.max() - v.min()


def widest_block(a):
    """(largest max - min of a block of at most 7, total): a helper's reductions, a tuple."""
    if len(a) <= 7:
        return spread(a), sum(a, 0)
    m = len(a) // 2
    w1, s1 = widest_block(a[:m])
    w2, s2 = widest_block(a[m:])
    return max(w1, w2), s1 + s2


def bump(v):
    v[0] += 100
    return 0


def bumped_sum(a):
    """The helper writes, then the sum reads: Python's order within one statement."""
    if len(a) <= 4:
        return bump(a) + a.sum()
    m = len(a) // 2
    return bumped_sum(a[:m]) + bumped_sum(a[m:])


def halves_max_gap(a):
    """Reductions in the combine, over the two halves' slices; the empty sum of the base
    case is 0 of the array's kind (int or float), as NumPy's."""
    if len(a) <= 2:
        return np.sum(a[:0])
    m = len(a) // 2
    g = max(halves_max_gap(a[:m]), halves_max_gap(a[m:]))
    return max(g, np.max(a[m:]) - np.min(a[:m]))


def empty_block_max(a):
    """np.max of an empty slice at length 3: NumPy's ValueError."""
    if len(a) <= 4:
        if len(a) == 3:
            return np.max(a[3:])
        return 0
    m = len(a) // 2
    return empty_block_max(a[:m]) + empty_block_max(a[m:])


def empty_builtin_min(a):
    if len(a) <= 4:
        return min(a[len(a):]) if len(a) == 2 else 1
    m = len(a) // 2
    return empty_builtin_min(a[:m]) + empty_builtin_min(a[m:])


#: name -> (function, the smallest length it takes, the argument tuple for an array)
INT_EXAMPLES = {
    "sum_method": (sum_method, 0, lambda x: (x,)),
    "sum_np": (sum_np, 0, lambda x: (x,)),
    "sum_builtin": (sum_builtin, 0, lambda x: (x,)),
    "max_np": (max_np, 1, lambda x: (x,)),
    "min_builtin": (min_builtin, 1, lambda x: (x,)),
    "lohi_max": (lohi_max, 1, lambda x: (x, 0, len(x))),
    "prod_mod": (prod_mod, 0, lambda x: (x,)),
    "widest_block": (widest_block, 1, lambda x: (x,)),
    "bumped_sum": (bumped_sum, 1, lambda x: (x,)),
    "halves_max_gap": (halves_max_gap, 0, lambda x: (x,)),
}
def count_positive(a):
    if len(a) <= 16:
        return np.sum(a > 0)
    m = len(a) // 2
    return count_positive(a[:m]) + count_positive(a[m:])


def sum_squares(a, lo, hi):
    if hi - lo <= 8:
        return (a[lo:hi] * a[lo:hi]).sum()
    mid = (lo + hi) // 2
    return sum_squares(a, lo, mid) + sum_squares(a, mid, hi)


def largest_distance(a, t):
    """max |a[i] - t|: an element-wise argument with a scalar parameter."""
    if len(a) <= 5:
        return np.max(np.abs(a - t))
    m = len(a) // 2
    return max(largest_distance(a[:m], t), largest_distance(a[m:], t))


INT_EXAMPLES.update({
    "count_positive": (count_positive, 0, lambda x: (x,)),
    "sum_squares": (sum_squares, 0, lambda x: (x, 0, len(x))),
    "largest_distance": (largest_distance, 1, lambda x: (x, 3)),
})

def mean_of_means(a):
    """Means of halves weighted back together; an empty half's mean is nan."""
    if len(a) <= 4:
        return a.mean()
    m = len(a) // 2
    return (mean_of_means(a[:m]) * m + mean_of_means(a[m:]) * (len(a) - m)) / len(a)


def empty_mean(a):
    if len(a) <= 3:
        return np.mean(a[len(a):])
    m = len(a) // 2
    return max(empty_mean(a[:m]), empty_mean(a[m:]))


INT_EXAMPLES.update({"mean_of_means": (mean_of_means, 1, lambda x: (x,))})

def flat_blocks(a):
    """A reduction in the first guard's test: computed before it, every time it is tested."""
    if a.max() == a.min():
        return 0
    if len(a) <= 2:
        return 1
    m = len(a) // 2
    return flat_blocks(a[:m]) + flat_blocks(a[m:])


def second_guard(a):
    """A reduction in the second guard's test: never of the empty array the first catches."""
    if len(a) == 0:
        return 0
    if max(a) == min(a):
        return 1
    m = len(a) // 2
    return second_guard(a[:m]) + second_guard(a[m:])


INT_EXAMPLES.update({"flat_blocks": (flat_blocks, 1, lambda x: (x,)),
                     "second_guard": (second_guard, 0, lambda x: (x,))})

def first_top(a, lo, hi):
    """argmax of each block, the best of two kept (the first on ties): the index of the
    first largest element, or of the first NaN, as np.argmax gives for the whole array."""
    if hi - lo <= 6:
        return lo + np.argmax(a[lo:hi])
    mid = (lo + hi) // 2
    i = first_top(a, lo, mid)
    j = first_top(a, mid, hi)
    if a[i] != a[i] or (a[j] == a[j] and a[i] >= a[j]):
        return i
    return j


def low_index(a):
    if len(a) <= 5:
        return a.argmin()
    m = len(a) // 2
    i = low_index(a[:m])
    j = low_index(a[m:]) + m
    return i if a[i] <= a[j] else j


def any_zero_block(a):
    """How many blocks of at most 4 hold a zero, and whether all are non-zero."""
    if len(a) <= 4:
        return int(np.any(a == 0)), all(a)
    m = len(a) // 2
    c1, b1 = any_zero_block(a[:m])
    c2, b2 = any_zero_block(a[m:])
    return c1 + c2, b1 and b2


INT_EXAMPLES.update({"first_top": (first_top, 1, lambda x: (x, 0, len(x))),
                     "low_index": (low_index, 1, lambda x: (x,)),
                     "any_zero_block": (any_zero_block, 1, lambda x: (x,))})

def elif_guard(a):
    """A reduction in an elif guard: computed only when the first guard fails."""
    if len(a) <= 1:
        return 0
    elif a.max() == a.min():
        return 1
    m = len(a) // 2
    return elif_guard(a[:m]) + elif_guard(a[m:])


def calls_then_sum(a):
    """The recursive calls and a reduction in one return: the calls first, as Python."""
    if len(a) <= 2:
        return a.sum()
    m = len(a) // 2
    return calls_then_sum(a[:m]) + calls_then_sum(a[m:]) + a.sum()


def best_of_three(a):
    if len(a) <= 2:
        return a[0]
    m = len(a) // 2
    return max(best_of_three(a[:m]), best_of_three(a[m:]), a[:m].max() + a[m:].min())


INT_EXAMPLES.update({"elif_guard": (elif_guard, 1, lambda x: (x,)),
                     "calls_then_sum": (calls_then_sum, 1, lambda x: (x,)),
                     "best_of_three": (best_of_three, 1, lambda x: (x,))})

def dot_gen(a, b):
    """A generator expression summed: the dot product as people write it in Python."""
    if len(a) <= 8:
        return sum(a[i] * b[i] for i in range(len(a)))
    m = len(a) // 2
    return dot_gen(a[:m], b[:m]) + dot_gen(a[m:], b[m:])


def positives_gen(a):
    """sum(1 for x in a if x > 0) and any(...): the generator's names do not leak (x)."""
    if len(a) <= 6:
        x = 0
        c = sum(1 for x in a if x > 0)
        return c + 100 * any(v < -40 for v in a[1:]) + x
    m = len(a) // 2
    return positives_gen(a[:m]) + positives_gen(a[m:])


INT_EXAMPLES.update({"dot_gen": (dot_gen, 0, lambda x: (x, x[::-1].copy())),
                     "positives_gen": (positives_gen, 0, lambda x: (x,))})

def dot_np(a, b, lo, hi):
    """np.dot of two arrays' slices: their lengths checked as NumPy checks them."""
    if hi - lo <= 8:
        return np.dot(a[lo:hi], b[lo:hi])
    mid = (lo + hi) // 2
    return dot_np(a, b, lo, mid) + dot_np(a, b, mid, hi)


def above_first(a):
    """np.max(a - a[:1]): a one-element slice broadcast against the block, as NumPy does."""
    if len(a) <= 5:
        return np.max(a - a[:1]) + np.sum(np.abs(a[1:] - a[:-1]))
    m = len(a) // 2
    return max(above_first(a[:m]), above_first(a[m:]))


INT_EXAMPLES.update({"dot_np": (dot_np, 0, lambda x: (x, x[::-1].copy(), 0, len(x))),
                     "above_first": (above_first, 1, lambda x: (x,))})

def gen_max(a, lo, hi):
    """max() of a generator over a range: the textbook base case."""
    if hi - lo <= 5:
        return max(a[i] for i in range(lo, hi))
    mid = (lo + hi) // 2
    return max(gen_max(a, lo, mid), gen_max(a, mid, hi))


def gen_min_sq(a):
    """min() of a generator over a slice's elements, an expression of each."""
    if len(a) <= 7:
        return min(v * v - 3 for v in a[:])
    m = len(a) // 2
    left = gen_min_sq(a[:m])
    right = gen_min_sq(a[m:])
    return left if left < right else right


def empty_gen_max(a):
    """max() of a generator over an empty range at length 2: Python's ValueError."""
    if len(a) <= 3:
        return max(a[i] for i in range(2, len(a))) if len(a) == 2 else 0
    m = len(a) // 2
    return empty_gen_max(a[:m]) + empty_gen_max(a[m:])


INT_EXAMPLES.update({"gen_max": (gen_max, 1, lambda x: (x, 0, len(x))),
                     "gen_min_sq": (gen_min_sq, 1, lambda x: (x,))})

def filtered_max(a, lo, hi):
    """max() of a generator with an if, and a default for a block where nothing passes."""
    if hi - lo <= 6:
        return max((a[i] for i in range(lo, hi) if a[i] % 3 != 0), default=-1000)
    mid = (lo + hi) // 2
    return max(filtered_max(a, lo, mid), filtered_max(a, mid, hi))


def argmax_by_key(a, lo, hi):
    """The index of the first largest element: max(range(...), key=lambda i: a[i])."""
    if hi - lo <= 5:
        return max(range(lo, hi), key=lambda i: a[i])
    mid = (lo + hi) // 2
    left = argmax_by_key(a, lo, mid)
    right = argmax_by_key(a, mid, hi)
    return left if a[left] >= a[right] else right


def _distance_to_seven(v):
    return abs(v - 7)


def closest_to_seven(a):
    """min() of an array with key= a helper, max() of a slice with default= an element."""
    if len(a) <= 4:
        near = min(a, key=_distance_to_seven)
        return near + max(a[1:], default=a[0]) - max(a, key=abs)
    m = len(a) // 2
    return closest_to_seven(a[:m]) + closest_to_seven(a[m:])


def closest_pair_gap(a):
    """min() of a generator of two fors (every pair of a block), with a default."""
    if len(a) <= 5:
        return min((abs(a[i] - a[j]) for i in range(len(a)) for j in range(i + 1, len(a))),
                   default=10 ** 6)
    m = len(a) // 2
    return min(closest_pair_gap(a[:m]), closest_pair_gap(a[m:]), abs(a[m] - a[m - 1]))


def empty_filtered_max(a):
    """max() of a generator whose if passes nothing, no default: Python's ValueError."""
    if len(a) <= 3:
        return max(v for v in a if v > 10 ** 9)
    m = len(a) // 2
    return empty_filtered_max(a[:m]) + empty_filtered_max(a[m:])


INT_EXAMPLES.update({"filtered_max": (filtered_max, 1, lambda x: (x, 0, len(x))),
                     "argmax_by_key": (argmax_by_key, 1, lambda x: (x, 0, len(x))),
                     "closest_to_seven": (closest_to_seven, 1, lambda x: (x,)),
                     "closest_pair_gap": (closest_pair_gap, 1, lambda x: (x,))})

#: the examples whose answer NaN changes (NumPy's and Python's rules differ)
NAN_EXAMPLES = ("sum_method", "max_np", "min_builtin", "lohi_max", "halves_max_gap",
                "count_positive", "largest_distance", "mean_of_means", "first_top",
                "any_zero_block", "gen_max", "gen_min_sq", "argmax_by_key", "closest_to_seven")
# (not closest_pair_gap: on floats its int default comes back as the float Numba's typing
# unifies the two to -- equal, but a float; guide §9)


def empty_argmax(a):
    if len(a) <= 4:
        if len(a) == 3:
            return a[3:].argmax()
        return 0
    m = len(a) // 2
    return empty_argmax(a[:m]) + empty_argmax(a[m:])


def misaligned_dot(a):
    """np.dot of 3 and 4 elements at length 5: NumPy's ValueError."""
    if len(a) <= 5:
        if len(a) == 5:
            return np.dot(a[:3], a[1:])
        return 0
    m = len(a) // 2
    return misaligned_dot(a[:m]) + misaligned_dot(a[m:])


def unbroadcast(a):
    if len(a) <= 5:
        if len(a) == 5:
            return np.sum(a[:2] + a[2:])
        return 0
    m = len(a) // 2
    return unbroadcast(a[:m]) + unbroadcast(a[m:])
