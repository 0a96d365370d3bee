"""hpu._normalise: the forms people write become the canonical shape, in Python's order.

The functions are in this file (hpu reads their source); each test looks at the
spec :func:`hpu._frontend.parse` makes of them — the calls in left-to-right
order, the children's arguments, the user's line numbers — and, where the
order is visible in the result, runs them against plain Python.
"""
from __future__ import annotations

import ast
import math
import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from hpu._frontend import parse
from hpu._normalise import TEMP_PREFIX

K = 3
COMPILES = settings.get_profile("hpu-compiles")


def _line(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return next(start + i for i, t in enumerate(lines) if marker in t)


def diff(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return diff(a, mid, hi) - 2 * diff(a, lo, mid)  # calls


def three(a, lo, hi):
    if hi - lo < K:
        return 0
    q = (hi - lo) // K
    s = 0
    for i in range(K):
        s = s * 10 + three(a, lo + i * q, lo + (i + 1) * q)
    return s + i


def nested_ifs(a, lo, hi):
    if hi - lo == 0:
        return 0
    elif hi - lo == 1:
        return a[lo]
    else:
        mid = (lo + hi) // 2
        return nested_ifs(a, lo, mid) + nested_ifs(a, mid, hi)


def pure_read_first(a, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    return a[mid] + pure_read_first(a, lo, mid) + pure_read_first(a, mid, hi)


def falls_through(a, lo, hi):
    s = 0
    if hi - lo > 1:
        mid = (lo + hi) // 2
        s = falls_through(a, lo, mid) + falls_through(a, mid, hi)
    else:
        s = a[lo]
    return s


def float_mix(a, lo, hi):
    if hi - lo <= 1:
        return a[lo]
    mid = (lo + hi) // 2
    x = float_mix(a, lo, mid) + float_mix(a, mid, hi)
    return round(x / 3, 2)  # OpenCL: round with digits


def parts_sum(a):
    if len(a) <= 1:
        return a[0] if len(a) == 1 else 0
    m = len(a) // 2
    total = 0
    for part in (a[:m], a[m:]):   # a loop over the children, as written
        total += parts_sum(part)
    return total


def pairs_sum(a, lo, hi):
    if hi - lo <= 1:
        return a[lo] if hi > lo else 0
    mid = (lo + hi) // 2
    s = 0
    for l, h in [(lo, mid), (mid, hi)]:
        s = 2 * s + pairs_sum(a, l, h)
    return s + h


def parts_reassigned(a):
    if len(a) <= 1:
        return 0
    m = len(a) // 2
    s = 0
    for part in (a[:m], a[m:]):
        s += parts_reassigned(part)
        m = 1                         # the values would read the new m
    return s


def test_a_loop_over_written_out_values_is_unrolled_before_the_views():
    spec = parse(parts_sum)
    assert spec.a == 2 and len(spec.calls) == 2
    spec = parse(pairs_sum)
    assert spec.a == 2
    assert hpu.divide_and_conquer(pairs_sum)._functional is None   # the [...] is no list
    assert [(ast.unparse(c.args[1]), ast.unparse(c.args[2])) for c in spec.calls] == [
        ("lo", "mid"), ("mid", "hi")]
    assert any(ast.unparse(s) == "h = hi" for s in spec.combine)  # its last value, kept
    with pytest.raises(hpu.TranslationError, match="reads 'm', which the loop's body assigns"):
        hpu.divide_and_conquer(parts_reassigned)


@pytest.mark.parametrize("fn, args", [(parts_sum, lambda x: (x,)),
                                      (pairs_sum, lambda x: (x, 0, len(x)))],
                         ids=["views", "lo-hi"])
def test_a_loop_over_the_children_computes_what_python_computes(fn, args):
    f = hpu.divide_and_conquer(fn)
    for n in (0, 1, 2, 9, 700):
        x = np.random.default_rng(n).integers(-9, 9, n)
        if n or fn is parts_sum:
            assert f.run(*args(x), device="cpu").value == fn(*args(x)), (fn.__name__, n)


def total_to(a, lo=0, hi=None):
    if hi is None:
        hi = len(a)   # root default
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return total_to(a, lo, mid) + total_to(a, mid, hi)


def total_to_left(a, lo=0, hi=None):
    if hi is None:
        hi = len(a)
    if hi - lo <= 1:
        return a[lo]
    mid = (lo + hi) // 2
    return total_to_left(a[:mid]) + total_to_left(a, mid, hi)   # hi left to its default


def test_a_none_default_computed_first_is_the_roots_and_computed_at_the_call():
    spec = parse(total_to)
    assert spec.root_defaults == (("hi", "len(a)", _line(total_to, "# root default")),)
    assert "hi is None" not in ast.unparse(spec.tree)
    f = hpu.divide_and_conquer(total_to)
    for n in (1, 2, 9, 700):
        x = np.random.default_rng(n).integers(-9, 9, n)
        for kw in ({"device": "cpu"}, {"device": "hybrid", "alpha": 0.5, "y": 1}):
            assert f.run(x, **kw).value == total_to(x) == f.run(x, 0, n, **kw).value
            assert f.run(x, hi=n // 2 + 1, **kw).value == total_to(x, 0, n // 2 + 1)
    with pytest.raises(TypeError, match="parameter 'a' received int 5"):   # a, checked first
        f(5)
    assert f.run([3, 1, 2], device="cpu").value == 6      # len() of the array it became
    with pytest.raises(hpu.TranslationError, match="a recursive call without 'hi'"):
        hpu.divide_and_conquer(total_to_left)


def test_calls_in_an_expression_are_hoisted_left_to_right():
    spec = parse(diff)
    line = _line(diff, "# calls")
    assert spec.a == 2
    assert [c.lineno for c in spec.calls] == [line, line]
    assert [ast.unparse(c.args[1]) for c in spec.calls] == ["mid", "lo"]  # Python's order
    assert [c.targets for c in spec.calls] == [(f"{TEMP_PREFIX}0",), (f"{TEMP_PREFIX}1",)]
    assert spec.combine[-1].lineno == line


def test_a_constant_loop_is_unrolled_with_the_variable_substituted():
    spec = parse(three)
    assert spec.a == K
    assert [ast.unparse(c.args[1]) for c in spec.calls] == [f"lo + {i} * q" for i in range(K)]
    assert any(isinstance(s, ast.Assign) and ast.unparse(s) == f"i = {K - 1}"
               for s in spec.combine)  # the loop variable keeps its last value


def test_elif_chains_and_fall_through_blocks_become_guards():
    spec = parse(nested_ifs)
    assert spec.a == 2 and sum(isinstance(s, ast.If) for s in spec.check) == 2
    spec = parse(falls_through)
    assert spec.a == 2
    guard = [s for s in spec.check if isinstance(s, ast.If)][0]
    assert ast.unparse(guard.test) == "not hi - lo > 1"
    assert ast.unparse(guard.body[-1]) == "return s"  # the statements after the if, copied


@pytest.mark.parametrize("fn", [diff, three, nested_ifs, pure_read_first, falls_through])
@pytest.mark.parametrize("kw", [{"device": "cpu"}, {"device": "gpu"},
                                {"device": "hybrid", "alpha": 0.5, "y": 2}],
                         ids=["cpu", "gpu", "hybrid"])
def test_the_normalised_function_computes_what_python_computes(fn, kw):
    f = hpu.divide_and_conquer(fn)
    for n in (1, 2, 9, 700):
        x = np.random.default_rng(n).integers(-9, 9, n)
        assert f.run(x, 0, n, **kw).value == fn(x, 0, n), (fn.__name__, n)


def test_a_read_before_the_calls_is_fine_when_nothing_writes_arrays():
    spec = parse(pure_read_first)
    assert spec.reordered and spec.reordered[0][1] == "a[mid]"
    hpu.divide_and_conquer(pure_read_first)  # resolve accepts it: the calls write nothing


def test_an_opencl_refusal_in_the_combine_names_the_users_line_not_a_generated_file():
    # what OpenCL C cannot say runs on the CPU, recorded with the user's line
    f = hpu.divide_and_conquer(float_mix)
    x = np.arange(64, dtype=np.float64)
    want = float_mix(x, 0, 64)
    assert f.run(x, 0, 64, device="cpu").value == pytest.approx(want)
    with pytest.warns(hpu.HpuPerformanceWarning, match="cannot run on the OpenCL device"):
        run = f.run(x, 0, 64, device="gpu")
    assert run.value == pytest.approx(want) and run.gpu_tasks == 0
    (why,) = run.fallbacks
    assert f"{__file__}:{_line(float_mix, '# OpenCL')}:" in why, why
    assert "generated" not in why
    plan = f.plan(x, 0, 64, device="gpu")        # the plan says what the run does
    assert plan.reason == why and plan.gpu_work_fraction == 0


def early_exit(a, lo, hi):
    if hi - lo <= 1:
        return a[lo]
    mid = (lo + hi) // 2
    left = early_exit(a, lo, mid)
    if left > 5:
        return left
    return left + early_exit(a, mid, hi)  # skipped when left > 5


def test_a_call_after_an_early_return_is_conditional():
    spec = parse(early_exit)
    assert [line for line, _ in spec.conditional] == [_line(early_exit, "# skipped")]
    f = hpu.divide_and_conquer(early_exit)  # writes no array: the extra call changes nothing
    x = np.random.default_rng(3).integers(-9, 9, 301)
    assert f.run(x, 0, 301, device="gpu").value == early_exit(x, 0, 301)


def moving_bounds(a, lo, hi):
    if hi - lo < 3:
        return hi - lo
    q = (hi - lo) // 3
    t = 0
    start = lo
    for i in range(3):
        stop = start + q if i < 2 else hi
        t = 2 * t + moving_bounds(a, start, stop)
        start = stop
    return t


def test_pure_scalar_updates_between_calls_are_substituted_in_order():
    spec = parse(moving_bounds)
    assert spec.a == 3
    f = hpu.divide_and_conquer(moving_bounds)
    for n in (1, 5, 100, 999):
        x = np.zeros(n, np.int64)
        assert f.run(x, 0, n, device="cpu").value == moving_bounds(x, 0, n)


# ---------------------------------------------------------------- a tuple result in one name
def min_max_pair(a):
    n = len(a)
    if n == 1:
        return (a[0], a[0])
    if n == 2:
        return (min(a[0], a[1]), max(a[0], a[1]))
    m = n // 2
    left = min_max_pair(a[:m]); right = min_max_pair(a[m:])
    return (min(left[0], right[0]), max(left[-1], right[1]))


def best_of_halves(a, lo, hi):
    """(value, index) of the first largest; the right half's tuple returned whole."""
    if hi - lo == 1:
        return a[lo], lo
    mid = (lo + hi) // 2
    l = best_of_halves(a, lo, mid)
    r = best_of_halves(a, mid, hi)
    if l[0] >= r[0]:
        return l
    v, i = r
    return v, i


def tuple_index_computed(a):
    n = len(a)
    if n == 1:
        return a[0], a[0]
    m = n // 2
    left = tuple_index_computed(a[:m])
    right = tuple_index_computed(a[m:])
    return left[n % 2], right[0]


@pytest.mark.opencl
@pytest.mark.parametrize("kw", [{"device": "cpu"}, {"device": "gpu"},
                                {"device": "hybrid", "alpha": 0.5, "y": 2},
                                {"device": "hybrid", "alpha": 0.0, "y": 1}],
                         ids=["cpu", "gpu", "hybrid-half", "hybrid-device"])
@settings(COMPILES, max_examples=6)
@given(x=st.lists(st.integers(-40, 40), min_size=1, max_size=300))
def test_a_tuple_result_held_in_one_name_is_unpacked(kw, x):
    """``left = f(...)`` then ``left[0]``, ``left[-1]``, ``return l``, ``v, i = r``: the
    call's values in names of their own, the answers Python's, on every path."""
    a = np.array(x, dtype=np.int64)
    for fn, args in ((min_max_pair, (a,)), (best_of_halves, (a, 0, len(a)))):
        f = hpu.divide_and_conquer(fn)
        assert f.options(**kw)(*args) == fn(*args), (fn.__name__, kw)


def pair_of(l1, h1, l2, h2):
    if l1 <= l2:
        return l1, max(h1, h2)
    return l2, max(h1, h2)


def min_max_by_helper(a, lo, hi):
    """The combine a helper whose every return is a pair, its call returned as it is."""
    if hi - lo == 1:
        return pair_of(a[lo], a[lo], a[lo], a[lo])
    mid = (lo + hi) // 2
    l1, h1 = min_max_by_helper(a, lo, mid)
    l2, h2 = min_max_by_helper(a, mid, hi)
    if l1 == l2:
        return pair_of(l2, h2, l1, h1)
    return pair_of(l1, h1, l2, h2)


@pytest.mark.opencl
@pytest.mark.parametrize("kw", [{"device": "cpu"}, {"device": "gpu"},
                                {"device": "hybrid", "alpha": 0.5, "y": 2}],
                         ids=["cpu", "gpu", "hybrid-half"])
@settings(COMPILES, max_examples=4)
@given(x=st.lists(st.integers(-40, 40), min_size=1, max_size=300))
def test_a_helpers_tuple_returned_as_it_is_is_written_out(kw, x):
    """``return pair_of(...)``, the helper returning ``lo, hi`` on every path: the tuple is
    written out (``ret__0t0, ret__0t1 = pair_of(...)``), where it was refused as "returns
    that disagree" (every path returns a pair)."""
    a = np.array(x, dtype=np.int64)
    f = _MIN_MAX_BY_HELPER
    assert f.options(**kw)(a, 0, len(a)) == min_max_by_helper(a, 0, len(a))


_MIN_MAX_BY_HELPER = hpu.divide_and_conquer(min_max_by_helper)


def test_a_tuple_name_used_otherwise_keeps_the_refusal_with_its_fix():
    with pytest.raises(hpu.TranslationError) as info:
        hpu.divide_and_conquer(tuple_index_computed)
    msg = str(info.value)
    assert "a tuple result assigned to one name" in msg and "x0, x1 =" in msg, msg
    assert info.value.lineno == _line(tuple_index_computed, "left = tuple_index_computed")


def test_the_unpacked_names_are_the_calls_targets():
    spec = parse(min_max_pair)
    assert [[t for t in c.targets] for c in spec.calls] == [["left__t0", "left__t1"],
                                                            ["right__t0", "right__t1"]]


# ---------------------------------------------------------------- call statements in a loop
def quarter_sort(a, lo, hi):
    """Four calls in a loop, each bound computed into a name first; returns nothing."""
    if hi - lo < 4:
        for i in range(lo + 1, hi):
            v = a[i]
            j = i - 1
            while j >= lo and a[j] > v:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = v
        return
    q = (hi - lo) // 4
    for i in range(4):
        start = lo + i * q
        quarter_sort(a, start, start + q)
    for i in range(lo + 1, hi):          # an insertion pass over the sorted quarters
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


def test_call_statements_between_pure_updates_stay_statements():
    """(they were hoisted into temporaries, refused as `using the result of a call that
    returns nothing`)"""
    spec = parse(quarter_sort)
    assert spec.a == 4 and all(c.targets == () for c in spec.calls)
    f = hpu.divide_and_conquer(quarter_sort)
    for kw in ({"device": "cpu"}, {"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2}):
        for n in (0, 3, 4, 17, 2_000):
            x = np.random.default_rng(n).integers(-50, 50, n)
            want = x.copy()
            quarter_sort(want, 0, n)
            f.run(x, 0, n, **kw)
            assert np.array_equal(x, want), (kw, n)


def sentinel_sum(a, lo=0, hi=-1):
    """A -1 default for "the whole array", replaced before the base case."""
    if hi == -1:
        hi = len(a)
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return sentinel_sum(a, lo, mid) + sentinel_sum(a, mid, hi)


def sentinel_sum_else(a, lo, hi):
    if hi < 0:
        n = len(a) - lo
    else:
        n = hi - lo
    if n <= 1:
        return a[lo] if n == 1 else 0
    mid = lo + n // 2
    return sentinel_sum_else(a, lo, mid) + sentinel_sum_else(a, mid, lo + n)


def first_negative(a, lo, hi):
    """The children's results looped over in the combine (Python's early return)."""
    if hi - lo <= 4:
        for i in range(lo, hi):
            if a[i] < 0:
                return i
        return -1
    mid = (lo + hi) // 2
    left = first_negative(a, lo, mid)
    right = first_negative(a, mid, hi)
    for cand in (left, right):
        if cand != -1:
            return cand
    return -1


def _best_of(x, y, z):
    best = x
    for v in (y, z, -1):
        if v > best:
            best = v
    return best


def max_of_three(a, lo, hi):
    """A loop over values in a helper, with a constant among them."""
    if hi - lo <= 2:
        return a[lo] if a[lo] > a[hi - 1] else a[hi - 1]
    mid = (lo + hi) // 2
    return _best_of(max_of_three(a, lo, mid), max_of_three(a, mid, hi), a[mid])


def loop_with_break(a, lo, hi):
    if hi - lo <= 1:
        return a[lo]
    mid = (lo + hi) // 2
    left = loop_with_break(a, lo, mid)
    right = loop_with_break(a, mid, hi)
    s = 0
    for v in (left, right):
        if v < 0:
            break
        s += v
    return s


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@settings(max_examples=6, deadline=None)
@given(xs=st.lists(st.integers(-20, 20), min_size=1, max_size=300))
def test_prefix_ifs_and_loops_over_values_run_as_python(device, xs):
    """``if hi == -1: hi = len(a)`` before the guard (a value: it was refused as an `if`
    before the guards) and ``for cand in (left, right):`` in the combine or a helper (the
    assignments Python makes: it was refused as a loop over a tuple)."""
    import warnings

    a = np.array(xs, dtype=np.int64)
    n = len(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn, args in ((sentinel_sum, (a,)), (sentinel_sum_else, (a, 0, -1)),
                         (first_negative, (a, 0, n)), (max_of_three, (a, 0, n))):
            f = hpu.divide_and_conquer(fn)
            assert f.options(device=device)(*args) == fn(*args), fn.__name__


def test_a_loop_over_values_that_breaks_is_still_refused():
    with pytest.raises(hpu.TranslationError, match=r"for \.\.\. in \(left, right\)"):
        hpu.divide_and_conquer(loop_with_break)


def _unrolled(src):
    from hpu._normalise import unroll_value_loops

    tree = ast.parse(src).body[0]
    unroll_value_loops(tree, tree.name)
    return ast.unparse(tree)


def test_a_loop_over_arrays_reads_each_one_itself_where_the_target_is_the_bodys_only():
    """``for part in (w, x)``: the body with ``w``, then with ``x`` -- no alias of an array,
    which a device form's views cannot be; where the target is read after the loop (or
    assigned in the body), Python's assignments, ``part = w``, are written as they are."""
    body = _unrolled("def f(w, x, out):\n    m = 0\n    for part in (w, x):\n"
                     "        for v in part:\n            out[m] = v\n            m += 1\n"
                     "    return m\n")
    assert "part" not in body and body.count("for v in w") == 1 == body.count("for v in x")
    kept = _unrolled("def f(w, x):\n    s = 0\n    for part in (w, x):\n"
                     "        s += len(part)\n    return s + len(part)\n")
    assert kept.count("part = w") == 1 and kept.count("part = x") == 1
    assigned = _unrolled("def f(w, x):\n    s = 0\n    for part in (w, x):\n"
                         "        part = part + 1\n        s += part\n    return s\n")
    assert assigned.count("part = w") == 1 and assigned.count("part = part + 1") == 2


def quickselect_branches(a, lo, hi, k):
    if lo == hi:
        return a[lo]
    p = (lo + hi) // 2
    if k == p:
        return a[p]
    elif k < p:
        return quickselect_branches(a, lo, p - 1, k)
    else:
        return quickselect_branches(a, p + 1, hi, k)


def test_one_call_down_each_branch_is_refused_as_a_loop_not_as_both_branches():
    """(the message said "recursion in both branches: write the base case as a guard",
    which, done, gave the real reason)"""
    with pytest.raises(hpu.TranslationError, match=r"(?s)a single recursive call.*Write it "
                                                   r"as a loop") as err:
        hpu.divide_and_conquer(quickselect_branches)
    assert "both branches" not in str(err.value)


def _p_merge_search(x, t, p, r):
    low = p
    high = max(p, r + 1)
    while low < high:
        mid = (low + high) // 2
        if x <= t[mid]:
            high = mid
        else:
            low = mid + 1
    return high


def p_merge(t, p1, r1, p2, r2, a, p3):
    """CLRS's P-MERGE (3rd ed., ch. 27) as printed: the exchange before the base case."""
    n1 = r1 - p1 + 1
    n2 = r2 - p2 + 1
    if n1 < n2:
        p1, p2 = p2, p1
        r1, r2 = r2, r1
        n1, n2 = n2, n1
    if n1 == 0:
        return
    q1 = (p1 + r1) // 2
    q2 = _p_merge_search(t[q1], t, p2, r2)
    q3 = p3 + (q1 - p1) + (q2 - p2)
    a[q3] = t[q1]
    p_merge(t, p1, q1 - 1, p2, q2 - 1, a, p3)
    p_merge(t, q1 + 1, r1, q2, r2, a, q3 + 1)


@pytest.mark.parametrize("kw", [{"device": "cpu"}, {"device": "gpu"},
                                {"device": "hybrid", "alpha": 0.5, "y": 2}],
                         ids=["cpu", "gpu", "hybrid-half"])
@settings(COMPILES, max_examples=4)
@given(xs=st.lists(st.integers(-50, 50), min_size=0, max_size=400), cut=st.integers(0, 400))
def test_an_exchange_before_the_base_case_runs_as_python(kw, xs, cut):
    """``if n1 < n2: p1, p2 = p2, p1; ...`` before ``if n1 == 0: return`` was refused, with
    advice (move it after the guard) that changes the result; each assignment is now made
    where the test, evaluated once first, holds."""
    cut = min(cut, len(xs))
    t = np.array(sorted(xs[:cut]) + sorted(xs[cut:]), dtype=np.int64)
    want = np.zeros(len(t), np.int64)
    p_merge(t, 0, cut - 1, cut, len(t) - 1, want, 0)
    got = np.zeros(len(t), np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _P_MERGE.options(**kw)(t, 0, cut - 1, cut, len(t) - 1, got, 0)
    assert np.array_equal(got, want) and np.array_equal(want, np.sort(t))


_P_MERGE = hpu.divide_and_conquer(b=2, cost="1")(p_merge)


def naive_power(x, n):
    if n == 0:
        return 1
    if n % 2 == 0:
        return naive_power(x, n // 2) * naive_power(x, n // 2)
    else:
        return x * naive_power(x, n // 2) * naive_power(x, n // 2)


def naive_power_elif(x, n):
    if n == 0:
        return 1.0
    elif n % 2 == 0:
        half = naive_power_elif(x, n // 2)
        other = naive_power_elif(x, n // 2)
        return half * other
    return x * naive_power_elif(x, n // 2) * naive_power_elif(x, n // 2)


def sum_or_swap(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    m = (lo + hi) // 2
    if a[lo] > 0:
        return sum_or_swap(a, lo, m) + sum_or_swap(a, m, hi)
    return sum_or_swap(a, m, hi) - 2 * sum_or_swap(a, lo, m)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_recursion_returned_from_both_branches_is_a_conditional_expression(device):
    """The textbook power by halves (two calls in each branch of an if, or an `if ...: return`
    followed by a return) and a combine chosen by a test: read as `return A if c else B`,
    the plain function's answer on every path (past int64: Python's int, exactly)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        p = hpu.divide_and_conquer(naive_power).options(device=device)
        q = hpu.divide_and_conquer(naive_power_elif).options(device=device)
        for x, n in ((3, 0), (3, 13), (-2, 31), (2, 70), (2.5, 7)):
            assert p(x, n) == naive_power(x, n) and type(p(x, n)) is type(naive_power(x, n))
            assert q(x, n) == naive_power_elif(x, n)
        f = hpu.divide_and_conquer(sum_or_swap).options(device=device)
        for size in (1, 2, 7, 3000):
            a = np.random.default_rng(size).integers(-50, 50, size)
            assert f(a, 0, size) == sum_or_swap(a, 0, size)


def both_branches_loop(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    m = (lo + hi) // 2
    if a[lo] > 0:
        s = 0
        for i in range(2):
            s += i
        return both_branches_loop(a, lo, m) + both_branches_loop(a, m, hi) + s
    else:
        return both_branches_loop(a, lo, m) - both_branches_loop(a, m, hi)


def test_branches_that_are_more_than_one_expression_stay_refused():
    with pytest.raises(hpu.TranslationError, match="recursion in both branches"):
        hpu.divide_and_conquer(both_branches_loop)


def other_calls_each(x, n):
    if n <= 1:
        return 1
    if n % 2 == 0:
        return other_calls_each(x, n // 2) * other_calls_each(x, n // 2)
    else:
        return x * other_calls_each(x, n - 1) * other_calls_each(x, 1)


def test_branches_calling_with_other_arguments_are_refused_with_the_rewrite():
    """Read as a conditional expression, every task would make both branches' calls
    (``n - 1`` under an even ``n`` too): the tree of one grows under the other's."""
    with pytest.raises(hpu.TranslationError, match="other calls in each") as err:
        hpu.divide_and_conquer(other_calls_each)
    assert "Make the calls once before the `if`" in str(err.value)


# ------------------------------------------- children named in a list, or looped by a generator

def max_parts_named(a):
    if len(a) <= 4:
        return max(a)
    t = len(a) // 3
    parts = [a[:t], a[t:2 * t], a[2 * t:]]
    best = -math.inf
    for p in parts:
        best = max(best, max_parts_named(p))
    return best


def max_parts_generator(a):
    if len(a) <= 4:
        return max(a)
    t = len(a) // 3
    parts = (a[:t], a[t:2 * t], a[2 * t:])
    return max(max_parts_generator(p) for p in parts)


def min_spans_generator(a, lo, hi):
    if hi - lo <= 3:
        return min(a[lo:hi])
    m = (lo + hi) // 2
    return min([min_spans_generator(a, s, e) for s, e in ((lo, m), (m, hi))])


def max_thirds_range(a, lo, hi):
    if hi - lo <= 4:
        return max(a[lo:hi])
    s = (hi - lo) // 3
    return max(max_thirds_range(a, lo + i * s, lo + (i + 1) * s if i < 2 else hi)
               for i in range(3))


def sum_appended(a):
    if len(a) <= 2:
        return a.sum()
    results = []
    for part in (a[:len(a) // 2], a[len(a) // 2:]):
        results.append(sum_appended(part))
    return results[0] + results[1]


def sum_comprehended(a):
    if len(a) <= 2:
        return a.sum()
    h = len(a) // 2
    results = [sum_comprehended(p) for p in (a[:h], a[h:])]
    return sum(results)


def max_listed(a, lo, hi):
    if hi - lo <= 2:
        return max(a[lo:hi])
    m = (lo + hi) // 2
    subs = [max_listed(a, lo, m), max_listed(a, m, hi)]
    left, right = subs
    best = max(subs)
    for v in subs:
        best = max(best, v + 0 * len(subs))
    return max(best, left, right, subs[-1])


def sum_parts_named(a, lo, hi):
    if hi - lo <= 4:
        return sum(a[lo:hi])
    step = (hi - lo) // 4
    bounds = [(lo, lo + step), (lo + step, lo + 2 * step), (lo + 2 * step, lo + 3 * step),
              (lo + 3 * step, hi)]
    total = 0
    for s, e in bounds:
        total += sum_parts_named(a, s, e)
    return total


def _rewritten(src):
    from hpu._normalise import inline_literal_iterables, minmax_of_literal_generators

    tree = ast.parse(src).body[0]
    inline_literal_iterables(tree)
    minmax_of_literal_generators(tree, {})
    return ast.unparse(tree)


def test_named_children_and_generators_over_them_become_the_calls_written_out():
    got = _rewritten(inspect.getsource(max_parts_generator))
    assert "parts =" not in got and ("max(max_parts_generator(a[:t]), max_parts_generator("
                                   "a[t:2 * t]), max_parts_generator(a[2 * t:]))") in got
    got = _rewritten(inspect.getsource(max_parts_named))
    assert "parts =" not in got and "for p in (a[:t], a[t:2 * t], a[2 * t:])" in got
    one = _rewritten("def f(a):\n    if len(a) < 2:\n        return 0\n"
                     "    return min(f(p) for p in (a[1:],))\n")
    assert "return f(a[1:])" in one
    got = _rewritten(inspect.getsource(max_thirds_range))
    assert "for i in" not in got and got.count("max_thirds_range(a, lo + 1 * s") == 1
    # a range of another length than written out, or of a local name: left as written
    assert "for i in range(n)" in _rewritten(
        "def f(a, n):\n    if len(a) < 2:\n        return 0\n"
        "    return max(f(a[i:]) for i in range(n))\n")


def _listed(src):
    from hpu._normalise import results_list_as_names

    tree = ast.parse(src).body[0]
    from hpu._normalise import minmax_of_literal_generators
    minmax_of_literal_generators(tree, {})
    results_list_as_names(tree, {})
    return ast.unparse(tree)


def test_the_childrens_results_in_a_list_become_a_name_each():
    got = _listed(inspect.getsource(sum_appended))
    assert "results = " not in got and "results_0 = sum_appended(a[:len(a) // 2])" in got
    assert "return results_0 + results_1" in got
    got = _listed(inspect.getsource(sum_comprehended))
    assert "return 0 + results_0 + results_1" in got
    got = _listed(inspect.getsource(max_listed))
    assert "left, right = (subs_0, subs_1)" in got and "best = max(subs_0, subs_1)" in got
    assert "for v in (subs_0, subs_1)" in got and "v + 0 * 2" in got and "subs_1)" in got


@pytest.mark.parametrize("src", [
    # appended to again, or under a condition: the count is not known before the run
    "def f(a):\n    if len(a) < 2:\n        return 0\n    rs = [f(a[:1]), f(a[1:])]\n"
    "    rs.append(1)\n    return sum(rs)\n",
    # read by index past its end, or by a name: as Python reads it
    "def f(a):\n    if len(a) < 2:\n        return 0\n    rs = [f(a[:1]), f(a[1:])]\n"
    "    return rs[2]\n",
    "def f(a, i):\n    if len(a) < 2:\n        return 0\n    rs = [f(a[:1], i), f(a[1:], i)]\n"
    "    return rs[i]\n",
    # a sum of three: Python 3.12 adds floats with a compensation no `+` chain has
    "def f(a):\n    if len(a) < 3:\n        return 0\n"
    "    rs = [f(a[:1]), f(a[1:2]), f(a[2:])]\n    return sum(rs)\n",
])
def test_a_list_of_results_read_otherwise_stays_a_list(src):
    assert "rs = [" in _listed(src)


@pytest.mark.parametrize("src, kept", [
    # the list read otherwise: it is a list, as written
    ("def f(a):\n    if len(a) < 2:\n        return 0\n    ps = [a[:1], a[1:]]\n"
     "    s = len(ps)\n    for p in ps:\n        s += f(p)\n    return s\n", "ps = [a[:1], a[1:]]"),
    # a value reads a name assigned after the list: evaluated later, it would differ
    ("def f(a, m):\n    if len(a) < 2:\n        return 0\n    ps = [a[:m], a[m:]]\n"
     "    m = 1\n    s = 0\n    for p in ps:\n        s += f(p, m)\n    return s\n", "ps = [a[:m], a[m:]]"),
    # an element read (a recursive call may write it first), a call of the user's
    ("def f(a):\n    if len(a) < 2:\n        return 0\n    ps = [a[0], a[1]]\n"
     "    return max(f(a[1:]) + p for p in ps)\n", "ps = [a[0], a[1]]"),
    ("def f(a):\n    if len(a) < 2:\n        return 0\n"
     "    return max(f(p) for p in (g(a), a[1:]))\n", "max((f(p) for p in (g(a), a[1:])))"),
    # a filter, or key=: not the builtin's plain comparisons of the values written out
    ("def f(a):\n    if len(a) < 2:\n        return 0\n"
     "    return max(f(p) for p in (a[:1], a[1:]) if len(p))\n", "if len(p)"),
    ("def f(a):\n    if len(a) < 2:\n        return 0\n"
     "    return max((f(p) for p in (a[:1], a[1:])), key=abs)\n", "key=abs"),
])
def test_named_children_are_left_as_written_where_that_would_change_the_program(src, kept):
    assert kept in _rewritten(src)


def test_a_module_max_that_is_not_the_builtin_is_left_alone():
    from hpu._normalise import minmax_of_literal_generators

    tree = ast.parse("def f(a):\n    if len(a) < 2:\n        return 0\n"
                     "    return max(f(p) for p in (a[:1], a[1:]))\n").body[0]
    minmax_of_literal_generators(tree, {"max": lambda it: 0})
    assert "for p in" in ast.unparse(tree)


@pytest.mark.opencl
@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2)])
@settings(COMPILES, max_examples=5)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=400))
def test_children_looped_by_name_or_generator_give_the_plain_answer_on_every_path(
        device, alpha, y, xs):
    """The children's calls counted at decoration (the device ran them: gpu tasks), the
    plain function's answer on every path."""
    a = np.array(xs, dtype=np.int64)
    opts = {"device": device} if alpha is None else {"device": device, "alpha": alpha, "y": y}
    cases = ((max_parts_named, (a,)), (max_parts_generator, (a,)),
             (min_spans_generator, (a, 0, len(a))), (sum_parts_named, (a, 0, len(a))),
             (max_thirds_range, (a, 0, len(a))), (sum_appended, (a,)),
             (sum_comprehended, (a,)), (max_listed, (a, 0, len(a))))
    for fn, args in cases:
        f = _DECORATED.setdefault(fn.__name__, hpu.divide_and_conquer(fn))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            run = f.run(*args, **opts)
        assert run.value == fn(*args) and run.fallbacks == [], (fn.__name__, run.fallbacks)
        if device == "gpu" and len(a) >= 64:
            assert run.gpu_tasks > 0, fn.__name__


_DECORATED: dict = {}


# Python's types given as dtypes (hpu._normalise.builtin_dtypes_as_numpy)

def sort_astype_float(a):
    if len(a) <= 1:
        return a.astype(float)
    m = len(a) // 2
    left = sort_astype_float(a[:m])
    right = sort_astype_float(a[m:])
    out = np.empty(len(left) + len(right), dtype=float)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


def negatives_counted(a):
    if len(a) <= 4:
        c = np.zeros(1, dtype=int)
        flags = np.zeros(len(a), bool)
        for i in range(len(a)):
            flags[i] = a[i] < 0
            if flags[i]:
                c[0] += 1
        return c[0]
    m = len(a) // 2
    return negatives_counted(a[:m]) + negatives_counted(a[m:])


def float_shadowed(a):
    float = np.float32          # noqa: A001 - the user's own name: left as written
    return a.astype(float)


def test_pythons_types_given_as_dtypes_are_written_as_numpys():
    from hpu._normalise import builtin_dtypes_as_numpy

    for fn, want in ((sort_astype_float, ["a.astype(np.float64)",
                                          "np.empty(len(left) + len(right), dtype=np.float64)"]),
                     (negatives_counted, ["np.zeros(1, dtype=np.int64)",
                                          "np.zeros(len(a), np.bool_)"]),
                     (float_shadowed, ["a.astype(float)"])):
        tree = ast.parse(inspect.getsource(fn)).body[0]
        builtin_dtypes_as_numpy(tree, fn.__globals__)
        text = ast.unparse(tree)
        assert all(w in text for w in want), text
    assert np.dtype(int) == np.int64 and np.dtype(float) == np.float64


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
@settings(COMPILES, max_examples=5)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=200))
def test_pythons_types_as_dtypes_compile_and_run_on_the_device(device, xs):
    """``a.astype(float)``, ``dtype=float``, ``dtype=int``, ``bool``: Numba refuses
    Python's types there, so these ran as plain Python; now compiled, the sort on the
    device, the plain function's answer on every path."""
    a = np.array(xs, dtype=np.int32)
    f = _DECORATED.setdefault("sort_astype_float", hpu.divide_and_conquer(sort_astype_float))
    run = f.run(a, device=device)
    want = sort_astype_float(a.copy())
    assert run.value.dtype == want.dtype and np.array_equal(run.value, want)
    assert run.fallbacks == [], run.fallbacks
    if device == "gpu" and len(a) > 2:
        assert run.gpu_tasks > 0
    g = _DECORATED.setdefault("negatives_counted", hpu.divide_and_conquer(negatives_counted))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = g.run(a, device="cpu")
    assert run.value == negatives_counted(a) and run.plan is not None    # compiled, not Python
    assert not [w for w in caught if "Numba cannot compile" in str(w.message)]


# reversed(range(...)) counted down (hpu._normalise.reversed_ranges_counted_down)

def crossing_reversed(a, lo, hi):
    """Maximum subarray, the left crossing sum over ``reversed(range(lo, mid))``."""
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    left = crossing_reversed(a, lo, mid)
    right = crossing_reversed(a, mid, hi)
    s = 0
    best_l = -math.inf
    for i in reversed(range(lo, mid)):
        s += a[i]
        best_l = max(best_l, s)
    s = 0
    best_r = -math.inf
    for i in range(mid, hi):
        s += a[i]
        best_r = max(best_r, s)
    return max(left, right, best_l + best_r)


def suffix_weighted(a):
    """A functional function (it returns a new array) reading its halves back to front."""
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    left = suffix_weighted(a[:m])
    right = suffix_weighted(a[m:])
    out = np.empty(len(a), a.dtype)
    k = 0
    for i in reversed(range(len(right))):
        out[k] = right[i]
        k += 1
    for i in reversed(range(len(left))):
        out[k] = left[i] - k
        k += 1
    return out


def test_a_reversed_range_is_counted_down():
    from hpu._normalise import reversed_ranges_counted_down

    src = ("def f(a, lo, mid, n):\n"
           "    for i in reversed(range(lo, mid)): pass\n"
           "    for j in reversed(range(n)): pass\n"
           "    for k in reversed(range(lo, mid, 2)): pass\n"
           "    for m in reversed(range(g(lo), mid)): pass\n")
    tree = ast.parse(src).body[0]
    reversed_ranges_counted_down(tree, {"g": abs})
    loops = [ast.unparse(st.iter) for st in tree.body]
    assert loops == ["range(mid - 1, lo - 1, -1)", "range(n - 1, 0 - 1, -1)",
                     "reversed(range(lo, mid, 2))", "reversed(range(g(lo), mid))"], loops
    for lo, hi in ((0, 5), (3, 3), (4, 2), (-3, 2)):
        assert list(range(hi - 1, lo - 1, -1)) == list(reversed(range(lo, hi)))
    tree = ast.parse(src).body[0]
    reversed_ranges_counted_down(tree, {"reversed": lambda r: r})     # the module's own
    assert ast.unparse(tree.body[0].iter) == "reversed(range(lo, mid))"


@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2)])
@settings(COMPILES, max_examples=5)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=200))
def test_reversed_ranges_run_compiled_and_on_the_device(device, alpha, y, xs):
    """``for i in reversed(range(lo, mid))`` was refused at decoration (and Numba refuses
    ``reversed``): counted down, the plain answer on every path."""
    a = np.array(xs, dtype=np.int64)
    opts = {"device": device} if alpha is None else {"device": device, "alpha": alpha, "y": y}
    f = _DECORATED.setdefault("crossing_reversed", hpu.divide_and_conquer(crossing_reversed))
    run = f.run(a, 0, len(a), **opts)
    assert run.value == crossing_reversed(a, 0, len(a)) and run.fallbacks == []
    g = _DECORATED.setdefault("suffix_weighted", hpu.divide_and_conquer(suffix_weighted))
    run = g.run(a, **opts)
    want = suffix_weighted(a.copy())
    assert np.array_equal(run.value, want) and run.value.dtype == want.dtype
    assert run.fallbacks == [] and run.plan is not None
    if device == "gpu" and len(a) > 2:
        assert run.gpu_tasks > 0


# nested unpacking of several calls (hpu._normalise.nested_unpacking_split)

def min_max_nested(a):
    if len(a) == 1:
        return a[0], a[0]
    m = len(a) // 2
    (lo1, hi1), (lo2, hi2) = min_max_nested(a[:m]), min_max_nested(a[m:])
    return (lo1 if lo1 < lo2 else lo2), (hi1 if hi1 > hi2 else hi2)


def count_nested_unpacked(a):
    """The device form's functional sort that counts, its halves unpacked at once."""
    if len(a) <= 1:
        return a.copy(), 0
    m = len(a) // 2
    (left, x), (right, y) = count_nested_unpacked(a[:m]), count_nested_unpacked(a[m:])
    out = np.empty(len(a), a.dtype)
    i = j = 0
    inv = 0
    for k in range(len(a)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            inv += len(left) - i
            j += 1
    return out, x + y + inv


def test_nested_unpacking_is_split_where_python_gives_the_same():
    from hpu._normalise import nested_unpacking_split

    src = ("def f(a, b):\n"
           "    (p, q), (r, s) = g(a), g(b)\n"
           "    (p, q), r = g(a), p\n"          # reads p, which the first target assigns
           "    p, q = q, p\n")                 # no nested target: as written
    tree = ast.parse(src).body[0]
    nested_unpacking_split(tree)
    assert [ast.unparse(st) for st in tree.body] == [
        "p, q = g(a)", "r, s = g(b)", "(p, q), r = (g(a), p)", "p, q = (q, p)"]


@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2)])
@settings(COMPILES, max_examples=5)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=200))
def test_nested_unpacking_of_the_calls_runs_on_every_path(device, alpha, y, xs):
    """``(lo1, hi1), (lo2, hi2) = f(a[:m]), f(a[m:])`` was refused at decoration (each call's
    tuple read as kept whole): split, the plain answer on every path, on the device."""
    a = np.array(xs, dtype=np.int64)
    opts = {"device": device} if alpha is None else {"device": device, "alpha": alpha, "y": y}
    f = _DECORATED.setdefault("min_max_nested", hpu.divide_and_conquer(min_max_nested))
    run = f.run(a, **opts)
    assert run.value == min_max_nested(a) and run.fallbacks == []
    g = _DECORATED.setdefault("count_nested_unpacked",
                              hpu.divide_and_conquer(count_nested_unpacked))
    run = g.run(a, **opts)
    want = count_nested_unpacked(a.copy())
    assert np.array_equal(run.value[0], want[0]) and run.value[1] == want[1]
    assert run.fallbacks == [] and run.plan is not None
    if device == "gpu" and len(a) > 2:
        assert run.gpu_tasks > 0


# --- assignment expressions (:=) ------------------------------------------------------------

def count_walrus(a):
    if (n := len(a)) <= 1:
        return n
    return count_walrus(a[:n // 2]) + count_walrus(a[n // 2:])


def sum_walrus(a, lo, hi):
    if (n := hi - lo) == 1:
        return a[lo]
    elif n == 0:
        return 0
    left = sum_walrus(a, lo, (mid := lo + n // 2))
    return left + 3 * sum_walrus(a, mid, hi)


def max_walrus(a):
    if len(a) == 1:
        return a[0]
    x = max_walrus(a[:(m := len(a) // 2)])
    y = max_walrus(a[m:])
    return (best := x if x > y else y) + best % 2


def quotient_walrus(a, lo, hi):
    if (n := hi - lo) == 1:
        return (q := 1000 // a[lo]) + q  # LINE_WALRUS_DIV
    mid = lo + n // 2
    return quotient_walrus(a, lo, mid) + quotient_walrus(a, mid, hi)


def test_an_assignment_expression_evaluated_first_becomes_the_assignment_before():
    from hpu._normalise import named_exprs_hoisted

    src = ("def f(a, lo, hi):\n"
           "    if (n := hi - lo) == 1:\n"
           "        return a[lo]\n"
           "    elif (h := n // 2) > 3:\n"
           "        x = g(a, lo, (m := lo + h))\n"
           "    if lo > 0 and (k := lo) > 1:\n"        # after `and`: may be skipped
           "        return k\n"
           "    y = g(a) + (t := 1)\n"                 # after a call of the user's
           "    z = t + (t := 2)\n"                    # reads t before replacing it
           "    return [v for v in a if (w := v)]\n")  # in a comprehension
    tree = ast.parse(src).body[0]
    named_exprs_hoisted(tree)
    got = ast.unparse(tree).splitlines()
    assert got[1:7] == ["    n = hi - lo", "    if n == 1:", "        return a[lo]", "    else:",
                        "        h = n // 2", "        if h > 3:"]
    assert got[7:9] == ["            m = lo + h", "            x = g(a, lo, m)"]
    for kept in ("(k := lo)", "(t := 1)", "(t := 2)", "(w := v)"):
        assert kept in ast.unparse(tree), kept
    # a block inside an `if` whose test was hoisted keeps its own (refused) ones
    inner = ast.parse("def f(a, lo):\n"
                      "    if (n := len(a)) > 1:\n"
                      "        if lo > 0 and (k := lo) > 1:\n"
                      "            return k\n"
                      "    return n\n").body[0]
    named_exprs_hoisted(inner)
    assert "n = len(a)" in ast.unparse(inner) and "(k := lo)" in ast.unparse(inner)


@pytest.mark.opencl
@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2), ("hybrid", 0.0, 1)])
@settings(COMPILES, max_examples=5)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=300))
def test_assignment_expressions_give_the_plain_answer_on_every_path(device, alpha, y, xs):
    """``if (n := len(a)) <= 1:``, ``f(a, lo, (mid := lo + n // 2))``, ``return (b := ...)
    + b``: refused at decoration before; now the assignment before the statement, on the
    breadth-first path and the device, the plain function's answers."""
    a = np.array(xs, dtype=np.int64)
    opts = {"device": device} if alpha is None else {"device": device, "alpha": alpha, "y": y}
    for fn, args, splits in ((count_walrus, (a,), True), (sum_walrus, (a, 0, len(a)), True),
                             (max_walrus, (a,), True), (sum_walrus, (a, 0, 0), False)):
        f = _DECORATED.setdefault(fn.__name__, hpu.divide_and_conquer(fn))
        run = f.run(*args, **opts)
        assert run.value == fn(*args) and run.fallbacks == [], (fn.__name__, run.fallbacks)
        if device == "gpu" and len(a) > 2 and splits:
            assert run.gpu_tasks > 0


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_an_error_in_an_assignment_expression_names_the_users_line(device):
    a = np.array([5, 7, 0, 9, 1, 3], dtype=np.int64)
    f = _DECORATED.setdefault("quotient_walrus", hpu.divide_and_conquer(quotient_walrus))
    ok = a + 1
    assert f.options(device=device)(ok, 0, 6) == quotient_walrus(ok, 0, 6)
    with pytest.raises(ZeroDivisionError) as err:
        f.options(device=device)(a, 0, 6)
    line = _line(quotient_walrus, "LINE_WALRUS_DIV")
    assert f"{__file__}:{line}:" in str(err.value) and "1000 // a[lo]" in str(err.value)


def skipped_walrus(a):
    if len(a) > 1 and (m := len(a) // 2) > 0:
        return skipped_walrus(a[:m]) + skipped_walrus(a[m:])
    return len(a)


def test_an_assignment_expression_python_may_skip_is_refused_at_its_line():
    with pytest.raises(hpu.TranslationError) as err:
        hpu.divide_and_conquer(skipped_walrus)
    msg = str(err.value)
    assert f":{_line(skipped_walrus, 'and (m :=')}:" in msg
    assert "may skip" in msg and "separate statement" in msg


# --- nested tuples as results -------------------------------------------------------------

def sum_max_count(a):
    if len(a) == 1:
        return (a[0], (a[0], 1))
    m = len(a) // 2
    s1, (mx1, c1) = sum_max_count(a[:m])
    s2, (mx2, c2) = sum_max_count(a[m:])
    return (s1 + s2, (max(mx1, mx2), c1 + c2))


def range_and_stats(a, lo, hi):
    if hi - lo == 1:
        return (a[lo], a[lo]), (a[lo], 0.5)
    m = (lo + hi) // 2
    (l1, h1), (s1, w1) = range_and_stats(a, lo, m)
    (l2, h2), (s2, w2) = range_and_stats(a, m, hi)
    return (min(l1, l2), max(h1, h2)), (s1 - s2, w1 + w2)


def nested_then_flat(a):
    if len(a) == 1:
        return a[0], (a[0], 1)
    m = len(a) // 2
    s1, (mx1, c1) = nested_then_flat(a[:m])
    s2, (mx2, c2) = nested_then_flat(a[m:])
    return s1 + s2, mx1, c1 + c2      # another nesting than the base case's


def test_nested_results_are_flattened_with_their_nesting_kept():
    from hpu._normalise import nested_results_flattened, regrouped

    src = ("def f(a):\n"
           "    if len(a) == 1:\n"
           "        return a[0], (a[0], (1, 2.0))\n"
           "    x, (y, (z, w)) = f(a[:1])\n"
           "    return f(a[1:])\n")
    tree = ast.parse(src).body[0]
    shape = nested_results_flattened(tree, "f")
    assert shape == (None, (None, (None, None)))
    assert ast.unparse(tree).splitlines()[2:4] == ["        return (a[0], a[0], 1, 2.0)",
                                                   "    x, y, z, w = f(a[:1])"]
    assert regrouped((1, 2, 3, 4.0), shape) == (1, (2, (3, 4.0)))
    assert regrouped((1, (2, (3, 4.0))), shape) == (1, (2, (3, 4.0)))   # already nested
    kept = ast.parse("def f(a):\n    r = f(a)\n    return r, (1, 2)\n").body[0]
    assert nested_results_flattened(kept, "f") is None                  # a tuple kept whole


@pytest.mark.opencl
@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2), ("hybrid", 0.0, 1)])
@settings(COMPILES, max_examples=5)
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=300))
def test_nested_tuple_results_give_the_plain_answer_on_every_path(device, alpha, y, xs):
    """``return s, (mx, c)`` with ``s1, (mx1, c1) = f(a[:m])`` was refused at decoration
    ("a tuple outside a return"): the levels hold it flat, the caller gets Python's nesting,
    from ``.run``, the call and ``.sequential``."""
    a = np.array(xs, dtype=np.int64)
    opts = {"device": device} if alpha is None else {"device": device, "alpha": alpha, "y": y}
    for fn, args in ((sum_max_count, (a,)), (range_and_stats, (a, 0, len(a)))):
        f = _DECORATED.setdefault(fn.__name__, hpu.divide_and_conquer(fn))
        want = fn(*args)
        run = f.run(*args, **opts)
        assert run.value == want and run.fallbacks == [], (fn.__name__, run.value, want)
        assert type(run.value[1]) is tuple and type(run.value[1][1]) is type(float(want[1][1])
                                                                         if fn is range_and_stats
                                                                         else int(want[1][1]))
        assert f.options(**opts)(*args) == want
        if device == "cpu":
            assert f.sequential(*args) == want
        if device == "gpu" and len(a) > 2:
            assert run.gpu_tasks > 0


def test_nested_results_of_a_bool_array_and_of_two_nestings():
    """Compiled as written (a bool array: Numba's own nested tuple) the value is not nested
    twice; results of two nestings keep the refusal, with the line."""
    f = _DECORATED.setdefault("sum_max_count", hpu.divide_and_conquer(sum_max_count))
    mask = np.array([True, False, True, True, False])
    assert f(mask) == (3, (True, 5))
    with pytest.raises(hpu.TranslationError) as err:
        hpu.divide_and_conquer(nested_then_flat)
    assert f":{_line(nested_then_flat, 'return a[0], (a[0], 1)')}:" in str(err.value)
