"""The frontend: the shape it recognises, and every construct it refuses with file, line and fix.

Each malformed function below marks the line the error must name with a
``# refused`` comment; the test finds that line in the source and checks the
error's ``lineno``, its ``construct`` and that the message says what to write
instead.
"""
from __future__ import annotations

import ast
import inspect
import math
import warnings

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dc_examples as E
import hpu
from dc_examples import insertion_sort, partition
from hpu._frontend import check_cost, parse, resolve

TABLE = [1, 2, 3]
LIMIT = 4


# ---------------------------------------------------------------- helpers used below

def alloc_helper(a, lo):
    t = np.empty(4, np.int64)  # allocates: accepted (issue 17)
    return a[lo]


def list_helper(a, lo):
    t = [a[lo], 0]
    return t


def calls_back(a, lo, hi):
    return bad_recursion_through_helper(a, lo, hi)  # refused


def self_recursive(a, n):
    if n <= 0:
        return 0
    return self_recursive(a, n - 1)  # refused


def ping(a, n):
    return pong(a, n)


def pong(a, n):
    return ping(a, n)  # refused


def writer(a, lo):
    a[lo] = 0
    return 1


# ---------------------------------------------------------------- malformed functions

def bad_no_call(a, lo, hi):  # refused
    if hi - lo <= 1:
        return 0
    return a[lo]


def bad_call_in_loop(a, lo, hi):
    if hi - lo <= 1:
        return
    for k in range(hi - lo):  # refused
        bad_call_in_loop(a, lo + k, lo + k + 1)


def bad_children_by_length(a):
    if len(a) <= 2:
        return 0
    step = (len(a) + 3) // 4
    total = 0
    for s in range(0, len(a), step):  # refused: as many calls as len(a) / step
        total += bad_children_by_length(a[s:s + step])
    return total


def bad_call_in_condition(a, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    s = bad_call_in_condition(a, lo, mid)
    if a[mid] > 0:      # (a test of names, `mid > lo`, is accepted: _guarded_value_calls)
        s += bad_call_in_condition(a, mid, hi)  # refused
    return s


def bad_both_branches(a, lo, hi):
    if hi - lo > 2:  # refused
        mid = (lo + hi) // 2
        bad_both_branches(a, lo, mid)
        bad_both_branches(a, mid, hi)
    else:
        bad_both_branches(a, lo, lo)
        bad_both_branches(a, hi, hi)


def bad_call_in_return(a, lo, hi):
    if hi - lo <= 1:
        return a[lo] > 0
    mid = (lo + hi) // 2
    a[mid] = a[mid]
    return bad_call_in_return(a, lo, mid) or bad_call_in_return(a, mid, hi)  # refused


def bad_reordered_read(a, lo, hi):
    if hi - lo <= 1:
        return a[lo]
    mid = (lo + hi) // 2
    a[mid] = a[mid]
    return a[lo] + bad_reordered_read(a, lo, mid) + bad_reordered_read(a, mid, hi)  # refused


def bad_same_call(a, lo, hi):
    """Stooge sort: its first and last calls are the same, and order-dependent."""
    if hi - lo <= 2:
        if hi - lo == 2 and a[lo] > a[lo + 1]:
            a[lo], a[lo + 1] = a[lo + 1], a[lo]
        return
    t = (hi - lo) // 3
    bad_same_call(a, lo, hi - t)
    bad_same_call(a, lo + t, hi)
    bad_same_call(a, lo, hi - t)  # refused


def bad_loop_exit(a, lo, hi):
    if hi - lo <= 4:
        return 0
    s = 0
    for i in range(4):
        if s > 10:
            break  # refused
        s += bad_loop_exit(a, lo + i, hi)
    return s


def bad_array_reassigned(a, tmp, lo, hi):
    if hi - lo <= 1:
        return
    tmp[lo] = a[lo]
    a = tmp  # refused
    mid = (lo + hi) // 2
    bad_array_reassigned(a, tmp, lo, mid)
    bad_array_reassigned(a, tmp, mid, hi)


def bad_array_moved(a, tmp, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    tmp[lo] = a[lo]
    bad_array_moved(tmp, a, lo, mid)  # refused
    bad_array_moved(a, tmp, mid, hi)


def bad_arity(a, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    bad_arity(a, lo, mid)
    bad_arity(a, mid)  # refused


def bad_with(a, lo, hi):
    if hi - lo <= 1:
        return
    with open("x"):  # refused
        pass
    bad_with(a, lo, hi)
    bad_with(a, lo, hi)


def bad_try(a, lo, hi):
    if hi - lo <= 1:
        return
    try:  # refused
        mid = (lo + hi) // 2
    except ValueError:
        mid = lo
    bad_try(a, lo, mid)
    bad_try(a, mid, hi)


def bad_import(a, lo, hi):
    if hi - lo <= 1:
        return
    import os  # refused
    bad_import(a, lo, hi)
    bad_import(a, lo, hi)


def bad_global(a, lo, hi):
    global LIMIT  # refused
    if hi - lo <= 1:
        return
    bad_global(a, lo, hi)
    bad_global(a, lo, hi)


def bad_print(a, lo, hi):
    if hi - lo <= 1:
        print(lo)  # refused
        return
    mid = (lo + hi) // 2
    bad_print(a, lo, mid)
    bad_print(a, mid, hi)


def bad_raise(a, lo, hi):
    if hi < lo:
        raise ValueError("hi < lo") from None  # refused: a chained exception
    if hi - lo <= 1:
        return
    bad_raise(a, lo, hi)
    bad_raise(a, lo, hi)


def bad_allocating_helper(a, lo, hi):
    if hi - lo <= 1:
        return alloc_helper(a, lo)
    mid = (lo + hi) // 2
    x = bad_allocating_helper(a, lo, mid)
    y = bad_allocating_helper(a, mid, hi)
    return x + y


def list_by_helper(a, lo, hi):
    if hi - lo <= 1:
        return list_helper(a, lo)
    mid = (lo + hi) // 2
    x = list_by_helper(a, lo, mid)
    y = list_by_helper(a, mid, hi)
    return x + y


def bad_recursion_through_helper(a, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    x = bad_recursion_through_helper(a, lo, mid)
    y = bad_recursion_through_helper(a, mid, hi)
    return x + y + calls_back(a, lo, hi)


def bad_recursive_helper(a, lo, hi):
    if hi - lo <= 1:
        return self_recursive(a, 3)
    mid = (lo + hi) // 2
    x = bad_recursive_helper(a, lo, mid)
    y = bad_recursive_helper(a, mid, hi)
    return x + y


def bad_mutual_helpers(a, lo, hi):
    if hi - lo <= 1:
        return ping(a, 3)
    mid = (lo + hi) // 2
    x = bad_mutual_helpers(a, lo, mid)
    y = bad_mutual_helpers(a, mid, hi)
    return x + y


def bad_generator(a, lo, hi):  # refused
    if hi - lo <= 1:
        yield a[lo]
        return
    mid = (lo + hi) // 2
    bad_generator(a, lo, mid)
    bad_generator(a, mid, hi)


def bad_nine_calls(a, lo, hi):
    if hi - lo <= 9:
        return
    s = (hi - lo) // 9
    bad_nine_calls(a, lo, lo + s)  # refused
    bad_nine_calls(a, lo + s, lo + 2 * s)
    bad_nine_calls(a, lo + 2 * s, lo + 3 * s)
    bad_nine_calls(a, lo + 3 * s, lo + 4 * s)
    bad_nine_calls(a, lo + 4 * s, lo + 5 * s)
    bad_nine_calls(a, lo + 5 * s, lo + 6 * s)
    bad_nine_calls(a, lo + 6 * s, lo + 7 * s)
    bad_nine_calls(a, lo + 7 * s, lo + 8 * s)
    bad_nine_calls(a, lo + 8 * s, hi)


def bad_single_call(a, lo, hi):
    if hi - lo <= 1:
        return
    bad_single_call(a, lo + 1, hi)  # refused


def bad_between_calls(a, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    bad_between_calls(a, lo, mid)
    a[mid] = 0  # refused
    bad_between_calls(a, mid, hi)


def bad_no_base_case(a, lo, hi):  # refused
    mid = (lo + hi) // 2
    bad_no_base_case(a, lo, mid)
    bad_no_base_case(a, mid, hi)


def bad_arg_between_calls(a, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    left = bad_arg_between_calls(a, lo, mid)
    m2 = mid + left
    return left + bad_arg_between_calls(a, m2, hi)  # refused


def bad_slice(a, lo, hi):
    if hi - lo <= 1:
        return
    a[lo:hi:2] = 0  # refused (a[lo:hi] is a view, accepted: tests/test_slices.py)
    mid = (lo + hi) // 2
    bad_slice(a, lo, mid)
    bad_slice(a, mid, hi)


def bad_string(a, lo, hi):
    if hi - lo <= 1:
        return
    mode = "fast"  # refused
    mid = (lo + hi) // 2
    bad_string(a, lo, mid)
    bad_string(a, mid, hi)


def bad_keyword_to_helper(a, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    x = bad_keyword_to_helper(a, lo, mid)
    y = bad_keyword_to_helper(a, mid, hi)
    return x + y + writer(a, start=lo)  # refused: writer has no parameter `start`


def bad_array_in_call_arg(a, lo, hi):
    if hi - lo <= 1:
        return
    bad_array_in_call_arg(a, lo, a[lo])  # refused
    bad_array_in_call_arg(a, lo, hi)


def bad_dependent_calls(a, lo, hi):
    if hi - lo <= 1:
        return 1
    x = bad_dependent_calls(a, lo, hi - 1)
    y = bad_dependent_calls(a, lo, x)  # refused
    return y


def bad_returns_disagree(a, lo, hi):
    if hi - lo <= 1:
        return  # refused
    mid = (lo + hi) // 2
    x = bad_returns_disagree(a, lo, mid)
    y = bad_returns_disagree(a, mid, hi)
    return x


def bad_tuple_to_one_name(a, lo, hi):
    if hi - lo <= 1:
        return a[lo], a[lo]
    mid = (lo + hi) // 2
    left = bad_tuple_to_one_name(a, lo, mid)  # refused
    r0, r1 = bad_tuple_to_one_name(a, mid, hi)
    return left[hi % 2], r1          # an index computed at run time: not unpacked


def bad_write_before_guard(a, lo, hi):
    a[lo] = 0  # refused
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    bad_write_before_guard(a, lo, mid)
    bad_write_before_guard(a, mid, hi)


def bad_impure_guard(a, lo, hi):
    if writer(a, lo) > hi - lo:  # refused
        return
    mid = (lo + hi) // 2
    bad_impure_guard(a, lo, mid)
    bad_impure_guard(a, mid, hi)


def bad_dunder(a, lo, hi):
    if hi - lo <= 1:
        return
    x__y = lo  # refused
    bad_dunder(a, lo, x__y)
    bad_dunder(a, lo, hi)


def bad_global_list(a, lo, hi):
    if hi - lo <= 1:
        return TABLE[0]  # refused
    mid = (lo + hi) // 2
    x = bad_global_list(a, lo, mid)
    y = bad_global_list(a, mid, hi)
    return x + y


def sum_through_a_nested_def(a, k):
    def weight(x):
        return x * k
    if len(a) == 1:
        return weight(a[0])
    m = len(a) // 2
    return sum_through_a_nested_def(a[:m], k) + sum_through_a_nested_def(a[m:], k)


def max_through_a_lambda(a, lo, hi):
    better = lambda i, j: i if a[i] >= a[j] else j  # noqa: E731
    if hi - lo == 1:
        return lo
    m = (lo + hi) // 2
    return better(max_through_a_lambda(a, lo, m), max_through_a_lambda(a, m, hi))


def divides_in_a_nested_def(a):
    def part(v):
        return v // 0
    if len(a) == 1:
        return part(a[0])
    m = len(a) // 2
    return divides_in_a_nested_def(a[:m]) + divides_in_a_nested_def(a[m:])


def bad_attribute(a, lo, hi):
    if hi - lo <= 1:
        return
    n = a.ndim  # refused (a.size is the length, accepted: tests/test_slices.py)
    bad_attribute(a, lo, n)
    bad_attribute(a, lo, hi)


def bad_guard_without_return(a, lo, hi):
    if hi - lo <= 1:
        if lo == 0:
            return
        lo = 0  # refused
    mid = (lo + hi) // 2
    bad_guard_without_return(a, lo, mid)
    bad_guard_without_return(a, mid, hi)


def bad_np_alloc_in_function(a, lo, hi):
    if hi - lo <= 1:
        return
    t = np.zeros(hi - lo)  # allocates: accepted (issue 17)
    mid = (lo + hi) // 2
    bad_np_alloc_in_function(a, lo, mid)
    bad_np_alloc_in_function(a, mid, hi)


MALFORMED = [
    (bad_no_call, "without a recursive call"),
    (bad_call_in_loop, "a loop of recursive calls over a non-constant range"),
    # the user's expression in the reason, not hpu's name for a slice's length (a__n)
    (bad_children_by_length, "(`len(a)` in `range(0, len(a), step)` is not an int literal"),
    (bad_call_in_condition, "inside a condition"),
    (bad_both_branches, "recursion in both branches of an if"),
    (bad_call_in_return, "a recursive call that Python may skip"),
    (bad_reordered_read, "reading arrays or calling a helper before a recursive call"),
    (bad_same_call, "two recursive calls with the same arguments"),
    (bad_loop_exit, "break, continue or return in a loop of recursive calls"),
    (bad_array_reassigned, "reassigning the array parameter"),
    (bad_array_moved, "as the array parameter 'a'"),
    (bad_arity, "recursive call that does not pass each parameter once"),
    (bad_with, "with"),
    (bad_try, "try"),
    (bad_import, "import"),
    (bad_global, "global"),
    (bad_print, "print"),
    (bad_raise, "chains exceptions"),
    (bad_recursion_through_helper, "recursion through a helper"),
    (bad_recursive_helper, "a helper that calls itself"),
    (bad_mutual_helpers, "recursion among helpers"),
    (bad_generator, "generator"),
    (bad_nine_calls, "9 recursive calls"),
    (bad_single_call, "a single recursive call"),
    (bad_between_calls, "an array store before a recursive call"),
    (bad_no_base_case, "without a base case"),
    (bad_arg_between_calls, "argument computed between calls"),
    (bad_slice, "with a step"),
    (bad_string, "str constant"),
    (bad_keyword_to_helper, "keyword arguments"),
    (bad_array_in_call_arg, "reading an array in a recursive call"),
    (bad_dependent_calls, "depend on each other"),
    (bad_returns_disagree, "returns that disagree"),
    (bad_tuple_to_one_name, "tuple result assigned to one name"),
    (bad_write_before_guard, "writing an array before the base-case guard"),
    (bad_impure_guard, "writes to arrays, in a base-case test"),
    (bad_dunder, "x__y"),
    (bad_global_list, "(a list)"),
    (bad_attribute, "attribute"),
    (bad_guard_without_return, "guard that does not end in return"),
]


#: where the marker is when the error points into a helper
MARKER_IN = {
    "bad_recursion_through_helper": calls_back, "bad_recursive_helper": self_recursive,
    "bad_mutual_helpers": pong,
}


def _marked(fn) -> tuple[str, int]:
    """(file, line) of the `# refused` comment in fn, or in the helper the error is in."""
    f = MARKER_IN.get(fn.__name__, fn)
    lines, start = inspect.getsourcelines(f)
    for i, line in enumerate(lines):
        if "# refused" in line:
            return inspect.getsourcefile(f), start + i
    raise AssertionError(f"no '# refused' marker for {fn.__name__}")


@pytest.mark.parametrize("fn, construct", MALFORMED, ids=[f.__name__ for f, _ in MALFORMED])
def test_malformed_functions_are_refused_with_line_construct_and_fix(fn, construct):
    filename, line = _marked(fn)
    with pytest.raises(hpu.TranslationError) as info:
        hpu.divide_and_conquer(fn)
    err = info.value
    assert err.lineno == line, (str(err), line)
    assert err.filename == filename
    text = str(err)
    assert construct in text, text
    assert text.startswith(f"{filename}:{line}: ")
    assert "not supported" in text
    assert err.hint, "the error must say what to write instead"
    assert err.construct


@pytest.mark.parametrize("fn", [bad_allocating_helper, bad_np_alloc_in_function])
def test_allocation_in_the_function_or_a_helper_is_accepted(fn):
    """Issue 17 turned these two refusals into functional functions (hpu._functional):
    decorated, and run on the CPU with plain Python's answer."""
    f = hpu.divide_and_conquer(fn)
    assert f._functional is not None
    a = np.arange(9, dtype=np.int64)
    assert f.options(device="cpu")(a.copy(), 0, 9) == fn(a.copy(), 0, 9)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_function_defined_inside_runs_compiled_as_written(device):
    """A nested def (a closure over a parameter) and a lambda the function calls: Numba
    compiles them where they do not escape, so the function runs so, on the CPU, with
    Python's answer and the reason naming the definition -- it was refused at decoration."""
    x = np.random.default_rng(3).integers(-100, 100, 40_001)
    f = hpu.divide_and_conquer(sum_through_a_nested_def)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        run = f.run(x, 3, device=device)
    assert run.value == sum_through_a_nested_def(x, 3) and run.gpu_tasks == 0
    assert "compiled by Numba" in run.reason
    if device != "cpu":         # asked for the device: the fallback says why, and warns
        assert len(run.fallbacks) == 1 and "def weight" in run.fallbacks[0]
        assert any("defines a function inside" in str(m.message) for m in w)
    g = hpu.divide_and_conquer(max_through_a_lambda)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        run = g.run(x, 0, len(x), device=device)
    assert run.value == max_through_a_lambda(x, 0, len(x)) and run.gpu_tasks == 0
    assert "compiled by Numba" in run.reason


def test_an_error_in_a_function_defined_inside_names_its_line():
    f = hpu.divide_and_conquer(divides_in_a_nested_def)
    x = np.arange(8)
    keep = x.copy()
    line = divides_in_a_nested_def.__code__.co_firstlineno + 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        with pytest.raises(ZeroDivisionError, match=rf"test_frontend.py:{line}: v // 0"):
            f(x)
    assert np.array_equal(x, keep)


def test_a_lambda_is_refused():
    with pytest.raises(hpu.TranslationError, match="lambda"):
        hpu.divide_and_conquer(lambda a, lo, hi: None)


class Holder:
    def method(self, a, lo, hi):
        if hi - lo <= 1:
            return
        self.method(a, lo, hi)
        self.method(a, lo, hi)


def test_methods_closures_and_non_functions_are_refused():
    with pytest.raises(hpu.TranslationError, match="method"):
        hpu.divide_and_conquer(Holder.method)
    with pytest.raises(hpu.TranslationError, match="method"):
        hpu.divide_and_conquer(Holder().method)
    k = 3

    def closure(a, lo, hi):
        if hi - lo <= k:
            return
        closure(a, lo, hi)
        closure(a, lo, hi)

    with pytest.raises(hpu.TranslationError, match="closure"):
        hpu.divide_and_conquer(closure)
    with pytest.raises(hpu.TranslationError, match="plain Python functions"):
        hpu.divide_and_conquer(math.floor)
    with pytest.raises(hpu.TranslationError, match="Numba"):
        hpu.divide_and_conquer(numba.njit(E.insertion_sort))


def test_a_function_without_source_is_refused():
    ns = {}
    exec("def f(a, lo, hi):\n    if hi - lo <= 1:\n        return\n    f(a, lo, hi)\n"
         "    f(a, lo, hi)\n", ns)
    with pytest.raises(hpu.TranslationError, match="without source") as info:
        hpu.divide_and_conquer(ns["f"])
    assert "inspect.getsource" in str(info.value)


def test_double_decoration_is_refused_with_the_fix():
    with pytest.raises(hpu.TranslationError, match="twice") as info:
        hpu.divide_and_conquer(E.mergesort)
    assert "py_func" in str(info.value)


# ---------------------------------------------------------------- what parse records

def test_parse_mergesort():
    spec = parse(E.mergesort.py_func, b=2, cost="n", span=("lo", "hi"))
    assert spec.name == "mergesort" and spec.params == ("a", "tmp", "lo", "hi")
    assert spec.a == 2 and spec.result_arity == 0
    assert spec.passthrough == {"a", "tmp"} and spec.indexed == set()
    assert spec.carried == ("mid",)
    assert [ast.unparse(e) for e in spec.calls[0].args] == ["a", "tmp", "lo", "mid"]
    assert [ast.unparse(e) for e in spec.calls[1].args] == ["a", "tmp", "mid", "hi"]
    assert all(c.targets == () for c in spec.calls)
    lines, start = inspect.getsourcelines(E.mergesort.py_func)
    assert spec.lineno == start + next(i for i, ln in enumerate(lines) if ln.startswith("def"))
    assert spec.calls[0].lineno == start + next(i for i, ln in enumerate(lines)
                                                if "mergesort(a, tmp, lo, mid)" in ln)
    assert [type(s).__name__ for s in spec.check] == ["If"]
    assert [ast.unparse(s) for s in spec.divide] == ["mid = (lo + hi) // 2"]
    assert [ast.unparse(s) for s in spec.combine] == ["merge(a, tmp, lo, mid, hi)"]


def test_parse_records_prefix_guards_results_and_passthrough():
    spec = E.dsum.spec
    assert [type(s).__name__ for s in spec.check] == ["Assign", "If", "If"]
    assert spec.result_arity == 1 and spec.result_names == ("s1", "s2")
    assert spec.carried == () and spec.passthrough == {"a"}
    assert E.maxsub.spec.result_arity == 4
    assert E.maxsub.spec.result_names[:4] == ("lt", "lp", "ls", "lb")
    assert E.count8.spec.a == 8 and E.count8.spec.passthrough == {"a", "threshold"}
    assert E.sumsq.spec.passthrough == {"a", "scale"}  # keyword calls mapped to positions
    assert E.is_sorted.spec.carried == ("mid",)
    assert E.quicksort.spec.carried == () and E.quicksort.spec.divide
    assert E.sum3.spec.b == 3 and E.max4.spec.b == 4


def test_resolve_finds_helpers_constants_modules_and_written_arrays():
    cl = resolve(E.mergesort.py_func, E.mergesort.spec)
    assert {h.name for h in cl.helpers} == {"insertion_sort", "merge"}
    assert dict(cl.constants) == {"CUTOFF": 8}
    assert cl.written == {"a", "tmp"}
    merge = next(h for h in cl.helpers if h.name == "merge")
    assert merge.writes == {0, 1} and "doc" not in merge.source.lower().split("def")[0]
    assert resolve(E.maxsub.py_func, E.maxsub.spec).written == frozenset()
    assert dict(resolve(E.max4.py_func, E.max4.spec).modules) == {"math": "math"}
    assert resolve(E.visit_count.py_func, E.visit_count.spec).written == {"visits"}


@hpu.divide_and_conquer
def uses_later_helper(a, lo, hi):
    if hi - lo <= 1:
        return later_helper(a, lo)
    mid = (lo + hi) // 2
    x = uses_later_helper(a, lo, mid)
    y = uses_later_helper(a, mid, hi)
    return x + y


def later_helper(a, i):
    return 2 * a[i]


def test_helpers_defined_after_the_function_are_found_at_the_first_call():
    x = np.arange(1, 40)
    assert uses_later_helper(x, 0, len(x)) == 2 * int(x.sum())


@pytest.mark.parametrize("cost, norm", [("1", "1"), ("n", "n"), ("n  log n", "n log n"),
                                        ("n^2", "n^2"), ("n**1.5", "n^1.5")])
def test_cost_strings(cost, norm):
    assert check_cost(cost) == norm


@pytest.mark.parametrize("kwargs, exc, text", [
    ({"cost": "n^"}, ValueError, "cost="),
    ({"cost": 2}, TypeError, "cost="),
    ({"b": 1}, ValueError, "b=1"),
    ({"b": "2"}, ValueError, "b="),
    ({"span": ("lo", "top")}, ValueError, "'top'"),
    ({"span": "lo"}, TypeError, "span="),
])
def test_bad_options_are_refused(kwargs, exc, text):
    with pytest.raises(exc, match=text.replace("(", r"\(").replace("^", r"\^")):
        hpu.divide_and_conquer(**kwargs)(E.merge)


def test_a_helper_that_builds_a_list_makes_the_function_functional():
    """Once refused ("a list literal"): a list built in a helper is functional style
    (hpu._functional), compiled by Numba as written; the list comes back as plain Python's."""
    f = hpu.divide_and_conquer(list_by_helper)
    a = np.array([4, 7, 1])
    assert f._functional is not None
    assert f.run(a, 0, 3, device="cpu").value == list_by_helper(a, 0, 3) == [4, 0, 7, 0, 1, 0]


def binary_search(a, x, lo, hi):
    if lo > hi:
        return -1
    mid = (lo + hi) // 2
    if a[mid] == x:
        return mid
    if a[mid] < x:
        return binary_search(a, x, mid + 1, hi)
    return binary_search(a, x, lo, mid - 1)


def test_one_call_on_every_path_is_refused_as_a_loop():
    """A binary search calls itself in two branches, once per path: not a division into
    subproblems.  The refusal says so (it said to assign the calls to names, a rewrite that
    is refused too)."""
    with pytest.raises(hpu.TranslationError) as info:
        hpu.divide_and_conquer(binary_search)
    text = str(info.value)
    assert "a single recursive call" in text and "at most one recursive call" in text, text
    assert "binary search" in text and "while lo <= hi" in text


def _through_helper(a):
    if len(a) <= 1:
        return a[0] if len(a) else 0
    return _sum_via(a)


def _sum_via(a):
    m = len(a) // 2
    return _through_helper(a[:m]) + _through_helper(a[m:])


def test_recursion_through_a_helper_is_named_as_such():
    import numpy as np

    import hpu

    with pytest.raises(hpu.TranslationError, match=r"calls itself only through "
                                                   r"_through_helper\(\)"):
        hpu.divide_and_conquer(_sum_via)(np.arange(10))


# ------------------------------------------- a helper called with keyword arguments

def merge_counting(a, tmp, lo, mid, hi, start=0):
    inv = start
    i, j, k = lo, mid, lo
    while i < mid and j < hi:
        if a[i] <= a[j]:
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            inv += mid - i
            j += 1
        k += 1
    while i < mid:
        tmp[k] = a[i]
        i += 1
        k += 1
    while j < hi:
        tmp[k] = a[j]
        j += 1
        k += 1
    for t in range(lo, hi):
        a[t] = tmp[t]
    return inv


def count_by_keywords(a, tmp, lo, hi):
    if hi - lo < 2:
        return 0
    mid = (lo + hi) // 2
    x = count_by_keywords(a, tmp, lo, mid)
    y = count_by_keywords(a, tmp, mid, hi)
    return x + y + merge_counting(a, tmp, lo=lo, hi=hi, mid=mid)


def count_by_bad_keyword(a, tmp, lo, hi):
    if hi - lo < 2:
        return 0
    mid = (lo + hi) // 2
    x = count_by_bad_keyword(a, tmp, lo, mid)
    y = count_by_bad_keyword(a, tmp, mid, hi)
    return x + y + merge_counting(a, tmp, lo, mid, hi, begin=0)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_helper_called_with_keywords_takes_them_by_position(device):
    """``merge(a, tmp, lo=lo, hi=hi, mid=mid)`` binds as Python binds it (any order, a
    left-out parameter its default); it was refused as "keyword arguments"."""
    import warnings

    f = hpu.divide_and_conquer(count_by_keywords)
    x = np.random.default_rng(5).integers(0, 50, 3001)
    plain_a = x.copy()
    want = _plain_count(plain_a)
    a = x.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = f.options(device=device)(a, np.zeros_like(a), 0, len(a))
    assert got == want and np.array_equal(a, plain_a)


def _plain_count(a):
    tmp = np.zeros_like(a)

    def go(lo, hi):
        if hi - lo < 2:
            return 0
        mid = (lo + hi) // 2
        return go(lo, mid) + go(mid, hi) + merge_counting(a, tmp, lo, mid, hi)
    return go(0, len(a))


def test_a_keyword_the_helper_does_not_have_is_still_refused_with_its_line():
    with pytest.raises(hpu.TranslationError, match="keyword arguments"):
        hpu.divide_and_conquer(count_by_bad_keyword)


def sum_with_missing_helper(a, lo, hi):
    if hi - lo == 1:
        if a[lo] < 0:
            return clamp_not_defined_anywhere(a[lo])  # noqa: F821 - the name under test
        return a[lo]
    mid = (lo + hi) // 2
    return sum_with_missing_helper(a, lo, mid) + sum_with_missing_helper(a, mid, hi)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_name_defined_nowhere_is_a_name_error_at_the_users_line(device):
    """Python raises NameError for a name that is not defined: hpu's refusal of it is one
    too (``except NameError`` catches it), with the user's line."""
    f = hpu.divide_and_conquer(sum_with_missing_helper)
    with pytest.raises(NameError) as err:
        f.run(np.array([1, -2, 3]), 0, 3, device=device)
    assert isinstance(err.value, hpu.TranslationError)
    assert "clamp_not_defined_anywhere" in str(err.value) and __file__ in str(err.value)


def halves_sum(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return halves_sum(a, lo, mid) + halves_sum(a, mid, hi)


def test_a_float_bound_from_the_caller_is_named_in_the_refusal():
    """``hi=5.0`` makes the midpoint a float and ``lo=0.0`` an index one: Python raises
    IndexError at ``a[lo]``; so does hpu, which runs the plain function where the recursion
    changes a parameter's type, warning with what the caller passed, not only the parameter
    the float reached."""
    f = hpu.divide_and_conquer(halves_sum)
    a = np.arange(5)
    with pytest.warns(hpu.HpuPerformanceWarning, match=r"the call passed hi=5\.0: a float"):
        with pytest.raises(IndexError):
            f(a, 0, 5.0)
    with pytest.warns(hpu.HpuPerformanceWarning, match=r"lo is a float at this call, and an "
                                                       r"array index must be an int"):
        with pytest.raises(IndexError):
            f(a, 0.0, 5)
    assert f(a, 0, 5) == 10


def trapezoid(c, x0, x1, depth):
    if depth == 0:
        return (x1 - x0) * (c[0] + c[0] * x1) / 2
    m = (x0 + x1) / 2
    return trapezoid(c, x0, m, depth - 1) + trapezoid(c, m, x1, depth - 1)


def test_int_bounds_halved_with_a_slash_run_as_python_and_say_to_pass_floats():
    """``trapezoid(c, 0, 1, 2)``: the children get float midpoints, which one level array
    of the caller's int cannot hold.  Python runs it as written, so the plain function
    answers (exactly: an int at the root stays one), warned with the fix -- pass the bound
    as a float when it is a number on a line -- and the plan says so; with floats it runs
    compiled."""
    f = hpu.divide_and_conquer(trapezoid)
    c = np.array([1.0])
    with pytest.warns(hpu.HpuPerformanceWarning, match=r"top-level call passed an int there"):
        run = f.run(c, 0, 1, 2)
    assert run.value == trapezoid(c, 0, 1, 2) and run.device == "python"
    assert "pass it as a float at the top-level call too (x1=1.0)" in run.reason
    assert f.plan(c, 0, 1, 2).reason == run.reason.rpartition("; the plain")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert f(c, 0, 1, 0) == trapezoid(c, 0, 1, 0)      # the root a leaf: Python's value
        assert f.sequential(c, 0, 1, 2) == trapezoid(c, 0, 1, 2)
        run = f.run(c, 0.0, 1.0, 2)
    assert run.value == trapezoid(c, 0, 1, 2) and run.device != "python"


def sorts_through_a_nested_def(a):
    def rec(x):
        if len(x) <= 1:
            return x
        m = len(x) // 2
        return rec(x[:m]) + rec(x[m:])
    return rec(a)


def half_through_other(a):
    if len(a) <= 1:
        return sum(a)
    m = len(a) // 2
    return other_half(a[:m]) + half_through_other(a[m:])


def other_half(a):
    if len(a) <= 1:
        return sum(a)
    m = len(a) // 2
    return half_through_other(a[:m]) + other_half(a[m:])


def test_a_nested_def_and_mutual_recursion_are_refused_at_decoration_in_their_words():
    """Each was refused in another's words: the nested def deferred as a helper defined
    later, then refused at the call for slicing; mutual recursion as a loop."""
    with pytest.raises(hpu.TranslationError, match="a nested function definition") as err:
        hpu.divide_and_conquer(sorts_through_a_nested_def)
    assert err.value.lineno == sorts_through_a_nested_def.__code__.co_firstlineno + 1
    with pytest.raises(hpu.TranslationError, match=r"calls other_half\(\), which calls "
                                                   r"half_through_other back \(mutual"):
        hpu.divide_and_conquer(half_through_other)


def power_in_branches(x, n):
    if n == 0:
        return 1
    if n % 2 == 0:
        return power_in_branches(x, n // 2) * power_in_branches(x, n // 2)
    return x * power_in_branches(x, n // 2) * power_in_branches(x, n // 2)


def power_by_other_calls(x, n):
    if n == 0:
        return 1
    if n % 2 == 0:
        return power_by_other_calls(x, n // 2) * power_by_other_calls(x, n // 2)
    return x * power_by_other_calls(x, n - 1) * power_by_other_calls(x, 0)


def power_named_once(x, n):
    if n == 0:
        return 1
    s1 = power_named_once(x, n // 2)
    s2 = power_named_once(x, n // 2)
    if n % 2 == 0:
        return s1 * s2
    return x * s1 * s2


def test_calls_in_a_return_inside_an_if_are_named_as_a_condition_with_advice_that_works():
    """The refusal said "inside a return: assign each call's result to a name", and the
    rewrite it asked for was refused in turn ("inside a condition"); it now names the
    condition, and its advice (the calls once, before the if) runs.  Branches making the
    same calls need no advice: they run as written (the calls made once)."""
    with pytest.raises(hpu.TranslationError, match="a recursive call inside a condition") as err:
        hpu.divide_and_conquer(power_by_other_calls)
    assert "make them once before the `if`" in str(err.value)
    f = hpu.divide_and_conquer(power_named_once)
    assert f(3, 13) == 3 ** 13 == power_in_branches(3, 13)
    assert f.run(3, 13, device="cpu").value == 3 ** 13
    g = hpu.divide_and_conquer(power_in_branches)
    assert g(3, 13) == 3 ** 13 and g.run(3, 13, device="cpu").level_sizes[:3] == (1, 2, 4)


def quicksort_guarded(a, lo, hi):
    i, j = lo, hi
    pivot = a[(lo + hi) // 2]
    while i <= j:
        while a[i] < pivot:
            i += 1
        while a[j] > pivot:
            j -= 1
        if i <= j:
            a[i], a[j] = a[j], a[i]
            i += 1
            j -= 1
    if lo < j:
        quicksort_guarded(a, lo, j)
    if i < hi:
        quicksort_guarded(a, i, hi)


def quicksort_as_advised(a, lo, hi):
    if not (lo < hi):
        return
    i, j = lo, hi
    pivot = a[(lo + hi) // 2]
    while i <= j:
        while a[i] < pivot:
            i += 1
        while a[j] > pivot:
            j -= 1
        if i <= j:
            a[i], a[j] = a[j], a[i]
            i += 1
            j -= 1
    quicksort_as_advised(a, lo, j)
    quicksort_as_advised(a, i, hi)


def guarded_sum(a, lo, hi):
    """A call made when a test holds, its value added under the same test."""
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    s = 0
    if mid > lo:
        s += guarded_sum(a, lo, mid)
    if hi > mid:
        s += guarded_sum(a, mid, hi)
    return s


def guarded_max(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    best = -math.inf
    if mid > lo:
        best = max(best, guarded_max(a, lo, mid))
    if hi > mid:
        best = max(best, guarded_max(a, mid, hi))
    return best


def guarded_pairs(a, lo, hi):
    if hi - lo == 1:
        return a[lo], 1
    mid = (lo + hi) // 2
    s1, c1 = 0, 0
    s2, c2 = 0, 0
    if mid - lo >= 1:
        s1, c1 = guarded_pairs(a, lo, mid)
    if hi - mid >= 1:
        s2, c2 = guarded_pairs(a, mid, hi)
    return s1 - 2 * s2, c1 + c2


def guarded_all_positive(a, lo, hi):
    if hi - lo == 1:
        return a[lo] > 0
    mid = (lo + hi) // 2
    ok = True
    if mid > lo:
        ok = ok and guarded_all_positive(a, lo, mid)  # refused
    if hi > mid:
        ok = ok and guarded_all_positive(a, mid, hi)
    return ok


def counting_quicksort(a, lo, hi):
    """Lomuto's quicksort counting its comparisons: it writes the array, and each call is
    made only when its part has two keys or more."""
    if hi - lo <= 1:
        return 0
    p = a[hi - 1]
    i = lo
    for j in range(lo, hi - 1):
        if a[j] < p:
            a[i], a[j] = a[j], a[i]
            i += 1
    a[i], a[hi - 1] = a[hi - 1], a[i]
    c = hi - lo - 1
    if i - lo > 1:
        c += counting_quicksort(a, lo, i)
    if hi - i - 1 > 1:
        c += counting_quicksort(a, i + 1, hi)
    return c


@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2), ("hybrid", 0.0, 1)])
@settings(deadline=None, max_examples=6, suppress_health_check=[HealthCheck.too_slow])
@given(xs=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=400))
def test_calls_whose_values_are_used_when_a_test_holds_run_on_every_path(device, alpha, y,
                                                                         xs):
    """``if mid > lo: s += f(a, lo, mid)``, ``best = max(best, f(...))``, ``s1, c1 =
    f(...)`` under a test, and a quicksort that writes its array and counts: every call
    made, its test passed as a flag, the skipped one's stand-in never read
    (hpu._frontend._guarded_value_calls): Python's answers, and the array Python leaves."""
    a = np.array(xs, dtype=np.int64)
    opts = {"device": device} if alpha is None else {"device": device, "alpha": alpha, "y": y}
    for fn in (guarded_sum, guarded_max, guarded_pairs):
        f = _GUARDED.setdefault(fn.__name__, hpu.divide_and_conquer(fn))
        run = f.run(a, 0, len(a), **opts)
        assert run.value == fn(a, 0, len(a)) and run.fallbacks == [], fn.__name__
        if device == "gpu" and len(a) > 2:
            assert run.gpu_tasks > 0
    f = _GUARDED.setdefault("counting_quicksort", hpu.divide_and_conquer(counting_quicksort))
    mine, theirs = a.copy(), a.copy()
    assert f.run(mine, 0, len(a), **opts).value == counting_quicksort(theirs, 0, len(a))
    assert np.array_equal(mine, theirs)
    if device == "cpu":
        assert f.sequential(a.copy(), 0, len(a)) == counting_quicksort(a.copy(), 0, len(a))


_GUARDED: dict = {}


def guarded_on_a_result(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    left = guarded_on_a_result(a, lo, mid)
    right = 0
    if left < 5:
        right = guarded_on_a_result(a, mid, hi)
    return left + right


def guarded_on_the_sum(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    s = 0
    if mid > lo:
        s += guarded_on_the_sum(a, lo, mid)
    if s < 100:
        s += guarded_on_the_sum(a, mid, hi)
    return s


@pytest.mark.parametrize("fn", [guarded_on_a_result, guarded_on_the_sum])
def test_a_call_guarded_by_an_earlier_calls_value_keeps_the_refusal(fn):
    """A test reading what a call returned (``if left < 5:``, ``if s < 100:`` after ``s +=
    f(...)``) needs that call first: the calls cannot run side by side, and the refusal
    (with its advice) is the one for a call inside a condition, not one about hpu's flag."""
    with pytest.raises(hpu.TranslationError, match="a recursive call inside a condition"):
        hpu.divide_and_conquer(fn)


def test_a_call_guarded_by_its_own_test_gets_the_base_case_as_advice():
    """Where the skipped call's stand-in could change the result's type (``ok = ok and
    f(...)``: `ok` may be a bool or not) the function is refused, the advice its test as
    the base case; the competitive programmer's quicksort as advised runs, and sorts."""
    with pytest.raises(hpu.TranslationError, match="inside a condition") as err:
        hpu.divide_and_conquer(guarded_all_positive)
    assert "make the test the function's base case" in str(err.value), err.value
    lines, start = inspect.getsourcelines(guarded_all_positive)
    assert err.value.lineno == start + next(i for i, t in enumerate(lines) if "# refused" in t)
    f = hpu.divide_and_conquer(quicksort_as_advised)
    x = np.random.default_rng(3).integers(-99, 99, 500)
    y = x.copy()
    f.run(y, 0, len(y) - 1, device="cpu")
    assert y.tolist() == sorted(x.tolist())


def quicksort_tested_on_a_key(a, lo, hi):
    if hi - lo > 1:
        p = partition(a, lo, hi)
        quicksort_tested_on_a_key(a, lo, p)
        if a[p] >= 0:
            quicksort_tested_on_a_key(a, p + 1, hi)  # refused


def quicksort_guarded_defaults(a, lo=0, hi=None, cut=4):
    """Guarded calls with a None default computed first and a cutoff passed on by default
    (half-open ranges, the shared examples' partition and insertion sort)."""
    if hi is None:
        hi = len(a)
    if hi - lo < cut:
        insertion_sort(a, lo, hi)
        return
    p = partition(a, lo, hi)
    if p - lo > 1:
        quicksort_guarded_defaults(a, lo, p)
    if hi - p > 2:
        quicksort_guarded_defaults(a, p + 1, hi)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_guarded_calls_keep_the_parameters_defaults(device):
    """`hi=None` computed at the root and `cut=4` passed on by each call, beside the flag."""
    f = hpu.divide_and_conquer(quicksort_guarded_defaults)
    x = np.random.default_rng(5).integers(-999, 999, 5000)
    y = x.copy()
    assert f.run(y, device=device).value is None and np.array_equal(y, np.sort(x))
    y = x.copy()
    f.sequential(y)
    assert np.array_equal(y, np.sort(x))


def test_a_guarded_calls_test_reading_an_array_is_refused_as_written():
    """The test becomes the call's flag, computed with the children's parameters before
    any child runs: one reading an array would read it before the first call sorted it, so
    it is refused -- naming the test as written, not hpu's flag."""
    with pytest.raises(hpu.TranslationError) as err:
        hpu.divide_and_conquer(quicksort_tested_on_a_key)
    text = str(err.value)
    assert "`a[p] >= 0`, the test of a call made only when it holds" in text, text
    assert "1 if" not in text and "hpu_go" not in text, text
    lines, start = inspect.getsourcelines(quicksort_tested_on_a_key)
    assert err.value.lineno == start + next(i for i, t in enumerate(lines) if "# refused" in t)


@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2)])
@settings(deadline=None, max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(xs=st.lists(st.integers(-50, 50), min_size=1, max_size=300), big=st.booleans())
def test_calls_made_when_a_test_holds_run_with_the_test_passed_as_a_flag(device, alpha, y,
                                                                        xs, big):
    """The competitive programmer's quicksort (`if lo < j: qsort(a, lo, j)`), a procedure:
    each call is made, its test passed as a flag the callee reads first (a skipped call is a
    base case that does nothing, hpu._frontend._guarded_calls): sorted on every path, as
    Python sorts, sizes past the device's threshold too."""
    f = hpu.divide_and_conquer(quicksort_guarded)
    assert f._parse().params[-1] == "hpu_go"
    x = np.array(xs * (400 if big else 1), dtype=np.int64)
    want = x.copy()
    quicksort_guarded(want, 0, len(want) - 1)
    opts = {"device": device} if alpha is None else {"device": device, "alpha": alpha, "y": y}
    got = x.copy()
    run = f.run(got, 0, len(got) - 1, **opts)
    assert run.value is None and np.array_equal(got, want) and run.fallbacks == []
    if device == "gpu" and big:
        assert run.gpu_tasks >= 2
    seq = x.copy()
    f.sequential(seq, 0, len(seq) - 1)
    assert np.array_equal(seq, want)


def max_of_nonempty_parts(a):
    if len(a) == 1:
        return a[0]
    m = len(a) // 2
    return max(max_of_nonempty_parts(p) for p in (a[:m], a[m:]) if len(p) > 0)


def sum_of_nonempty_thirds(a):
    if len(a) <= 1:
        return a[0] if len(a) else 0
    t = len(a) // 3 + 1
    s = 0
    for p in (a[:t], a[t:2 * t], a[2 * t:]):
        if len(p) > 0:
            s += sum_of_nonempty_thirds(p)
    return s


def sum_of_thirds_as_advised(a):
    if len(a) == 0:
        return 0
    if len(a) == 1:
        return a[0]
    t = len(a) // 3 + 1
    s = 0
    for p in (a[:t], a[t:2 * t], a[2 * t:]):
        s += sum_of_thirds_as_advised(p)
    return s


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_filter_over_the_children_whose_values_are_added_runs(device):
    """``for p in (a[:t], ...): if len(p) > 0: s += f(p)``: each call made, the test its
    flag (hpu._frontend._guarded_value_calls), Python's sum on every path."""
    f = _GUARDED.setdefault("sum_of_nonempty_thirds",
                            hpu.divide_and_conquer(sum_of_nonempty_thirds))
    for n in (0, 1, 2, 5, 3000):
        x = np.random.default_rng(n).integers(-99, 99, n)
        run = f.run(x, device=device)
        assert run.value == sum_of_nonempty_thirds(x) and run.fallbacks == []


@pytest.mark.parametrize("fn", [max_of_nonempty_parts])
def test_a_call_filtered_by_a_test_gets_the_neutral_base_case_as_advice(fn):
    """A filter over the children (`if len(p) > 0: s += f(p)`, a generator's `if`): the
    advice is the test as a base case returning what changes nothing, the calls made
    always -- not the guard-first advice, which the function already follows; the advised
    function runs and gives the plain answer."""
    with pytest.raises(hpu.TranslationError, match="inside a condition") as err:
        hpu.divide_and_conquer(fn)
    text = str(err.value)
    assert "call made only when a test holds" in text and "return 0` for a sum" in text, text
    assert "make them once before the `if`" not in text
    f = hpu.divide_and_conquer(sum_of_thirds_as_advised)
    x = np.random.default_rng(8).integers(-99, 99, 301)
    assert f.run(x, device="cpu").value == sum_of_nonempty_thirds(x) == int(x.sum())


CUT = 8


def sum_by_default_cut(a, cut=CUT):
    if len(a) <= cut:
        s = 0
        for v in a:
            s += v
        return s
    m = len(a) // 2
    return sum_by_default_cut(a[:m]) + sum_by_default_cut(a[m:])


def sum_of_range_by_default_cut(a, lo, hi, cut=4):
    if hi - lo <= cut:
        s = 0
        for i in range(lo, hi):
            s += a[i]
        return s
    mid = (lo + hi) // 2
    return sum_of_range_by_default_cut(a, lo, mid) + sum_of_range_by_default_cut(a, mid, hi)


def scaled_without_scale(a, scale):
    if len(a) <= 1:
        return a[0] * scale
    m = len(a) // 2
    return scaled_without_scale(a[:m]) + scaled_without_scale(a[m:])


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_recursive_call_may_leave_out_a_parameter_whose_default_is_a_number(device):
    """`def f(a, cut=CUT)` called back as `f(a[:m])`: Python passes the default (bound when
    the function was defined); it was refused, naming hpu's hidden a__o, a__n.  A root
    call may pass another cut, its children take the default, as in Python."""
    x = np.random.default_rng(5).integers(-9, 9, 1001)
    for fn, args in [(sum_by_default_cut, (x,)), (sum_by_default_cut, (x, 3)),
                     (sum_of_range_by_default_cut, (x, 0, 1001)),
                     (sum_of_range_by_default_cut, (x, 0, 1001, 2))]:
        f = hpu.divide_and_conquer(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            assert f.options(device=device).run(*args).value == fn(*args) == x.sum()
    with pytest.raises(hpu.TranslationError, match=r"does not pass each parameter") as err:
        hpu.divide_and_conquer(scaled_without_scale)
    assert "takes (a, scale)" in str(err.value) and "a__o" not in str(err.value)


def height(a, lo, hi):
    if lo >= hi:
        return 0
    mid = (lo + hi) // 2
    return 1 + max(height(a, lo, mid), height(a, mid + 1, hi))


def test_a_list_the_function_only_passes_down_is_taken():
    """A list for a parameter the function never indexes (it only passes it down): Python
    runs it; hpu asked for np.asarray.  It is converted as an indexed list is: nothing
    reads its items."""
    f = hpu.divide_and_conquer(height)
    x = [5, 3, 8, 1, 9, 2, 7]
    assert f(x, 0, len(x) - 1) == height(list(x), 0, len(x) - 1) == 3
    assert f.run(x, 0, len(x) - 1, device="cpu").value == 3
    assert x == [5, 3, 8, 1, 9, 2, 7]


def nested_tuples(a):
    """Results of two nestings (``(x, (y, c))`` and ``(s, m, c)``): still refused (one
    nesting is accepted: tests/test_normalise.py)."""
    if len(a) == 1:
        return (a[0], (a[0], 1))
    m = len(a) // 2
    x, (y, c) = nested_tuples(a[:m])
    u, (v, d) = nested_tuples(a[m:])
    return x + u, max(y, v), c + d


def test_a_refusal_quotes_a_views_subscript_as_written():
    """The subset's refusals come after slices became views: ``a[0]`` of the slice parameter
    is quoted as written, not as hpu's view (``a[a__o]``)."""
    with pytest.raises(hpu.TranslationError) as err:
        hpu.divide_and_conquer(nested_tuples)
    assert "`(a[0], 1)` outside a return" in str(err.value) and "__" not in str(err.value)


def split_sum(a):
    if len(a) <= 2:
        return a.sum()
    left, right = np.array_split(a, 2)
    return split_sum(left) + split_sum(right)


def split_max(a):
    if len(a) <= 3:
        return np.max(a)
    best = a[0]
    for part in np.array_split(a, 3):
        best = max(best, split_max(part))
    return best


def split_self(a):
    if len(a) <= 1:
        return a[0] * 2 if len(a) else 0
    a, b = np.array_split(a, 2)  # refused
    return split_self(a) + split_self(b) * 3


@pytest.mark.parametrize("device, alpha, y", [("cpu", None, None), ("gpu", None, None),
                                              ("hybrid", 0.5, 2)])
@settings(deadline=None, max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(xs=st.lists(st.integers(-50, 50), min_size=1, max_size=300), big=st.booleans())
def test_numpys_array_split_parts_are_the_slices_they_are(device, alpha, y, xs, big):
    """``l, r = np.array_split(a, 2)`` and ``for part in np.array_split(a, 3)``: NumPy's
    parts (the first ``n % k`` one longer) as slices, so the function splits as with
    ``a[:m], a[m:]`` and runs on the device; each answer is the plain function's."""
    a = np.array(xs * (40 if big else 1), dtype=np.int64)
    opts = {"device": device} | ({"alpha": alpha, "y": y} if alpha is not None else {})
    for fn in (split_sum, split_max):
        run = hpu.divide_and_conquer(fn).options(**opts).run(a)
        assert run.value == fn(a.copy()), fn.__name__
        assert not run.fallbacks, run.fallbacks
        if big and device != "cpu" and len(a) >= 400:
            assert run.gpu_tasks > 0, fn.__name__


def split_by_count(a, k):
    if len(a) <= 1:
        return a.sum()
    l, r = np.array_split(a, k)
    return split_by_count(l, k) + split_by_count(r, k)  # refused


def test_array_split_into_a_variable_count_is_left_as_written():
    """Only a name split into a literal number of parts is written as slices; otherwise
    the call stays NumPy's, and a part passed down is not a slice of the array: refused
    at the call."""
    with pytest.raises(hpu.TranslationError) as err:
        hpu.divide_and_conquer(split_by_count)
    assert err.value.lineno == _marked(split_by_count)[1], str(err.value)


def test_the_array_split_into_itself_is_refused_quoting_the_part_as_written():
    """``a, b = np.array_split(a, 2)`` rebinds the array parameter to a view, which hpu
    refuses (every task gets its parameters' values): the message quotes NumPy's part."""
    with pytest.raises(hpu.TranslationError) as err:
        hpu.divide_and_conquer(split_self)
    text = str(err.value)
    assert err.value.lineno == _marked(split_self)[1], text
    assert "np.array_split(a, 2)[0]" in text and "len(a) % 2" not in text, text
