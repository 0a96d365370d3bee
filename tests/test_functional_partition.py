"""The partition form (hpu._functional_partition): quicksorts written on masks, list
comprehensions, ``np.concatenate`` and ``+`` of lists run breadth-first on the CPU's
threads, the device and both, with the plain function's answer -- or, where a task's
pieces are not as long as its input (NaN keys, pieces that leave values out), redone on
the CPU as written and recorded."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpu
import partition_examples as ex
from hpu._functional_dps import NotRewritable, rewrite
from hpu._functional_partition import PIECES_LENGTH

COMPILES = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                         HealthCheck.function_scoped_fixture])
PATHS = [("gpu", None, None), ("hybrid", 0.0, 1), ("hybrid", 0.5, 2), ("hybrid", 1.0, 2),
         ("hybrid", 0.25, 3), ("hybrid", None, None)]
_DECORATED: dict = {}


def decorated(name):
    if name not in _DECORATED:
        fn = ex.PARTITIONS.get(name) or ex.KEPT[name][1]
        _DECORATED[name] = hpu.divide_and_conquer(fn)
    return _DECORATED[name]


def options(device, alpha, y):
    return {"device": device, **({} if alpha is None else {"alpha": alpha, "y": y})}


def same(got, want):
    if isinstance(want, list):
        return type(got) is list and len(got) == len(want) and all(
            type(g) is type(w) and g == w for g, w in zip(got, want))
    return (isinstance(got, np.ndarray) and got.dtype == want.dtype
            and np.array_equal(got, want, equal_nan=True)
            and np.array_equal(np.signbit(got), np.signbit(want)))


def argument(name, x):
    return x.tolist() if name in ex.LISTED else x


def plain(name, x):
    f = ex.PARTITIONS[name]
    if isinstance(x, list):
        return f(list(x))
    want = f(x.copy())
    if name in ex.EMPTY_FLOAT:
        # Python's np.array([]) of an empty comprehension is float64 and promotes the
        # concatenation; Numba's typing, and hpu's every path, keep the elements' type
        want = want.astype(x.dtype)
    return want


def run_checked(name, x, **opts):
    """The run, with the input as it was after it; the plain function's answer."""
    keep = list(x) if isinstance(x, list) else x.copy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = decorated(name).run(x, **opts)
    assert (x == keep) if isinstance(x, list) else np.array_equal(x, keep, equal_nan=True)
    return run, [str(w.message) for w in caught]


def ints(min_size=1, max_size=200, lo=-50, hi=50):
    return st.lists(st.integers(lo, hi), min_size=min_size, max_size=max_size)


# ------------------------------------------------------------ the rewrite, run as Python
@pytest.mark.parametrize("name", sorted(ex.PARTITIONS))
@settings(deadline=None, max_examples=60)
@given(values=ints())
def test_the_partition_form_run_as_python_is_the_function(name, values):
    """The rewritten function, run by Python on the buffer (the input in its first half):
    the plain function's result there -- or, where a task's pieces are not as long as its
    input (duplicates that qs_unique leaves out), the flag, and never a wrong answer."""
    rw = rewrite(decorated(name))
    assert rw.partition and rw.scalars == 0
    x = np.asarray(values, np.int64)
    want = np.asarray(plain(name, argument(name, x)))
    work = np.full(2 * x.size, -7, np.int64)
    work[:x.size] = x
    flag = np.array([0, 4, 0], np.int64)
    rw.fn(work, 0, x.size, 0, flag)
    if flag[0] == 0:
        assert np.array_equal(work[:x.size], want) and np.array_equal(work[x.size:], want)
    else:
        assert flag[0] == PIECES_LENGTH and want.size != x.size


# ------------------------------------------------------------ every path
@pytest.mark.parametrize("device, alpha, y", PATHS, ids=str)
@settings(COMPILES, max_examples=4)
@given(values=ints(max_size=400, lo=-10**6, hi=10**6), name=st.sampled_from(
    ["qs_masks", "qs_median3"]))
def test_every_path_gives_the_plain_answer(device, alpha, y, values, name):
    x = argument(name, np.asarray(values, np.int64))
    run, _ = run_checked(name, x, **options(device, alpha, y))
    assert same(run.value, plain(name, x)) and run.fallbacks == [], run.fallbacks
    if device == "gpu":
        assert run.gpu_tasks >= 1


#: compiled on the devices here: each form's compiled code stays in the test worker for the
#: rest of its run (Numba frees none), so the others are run as Python above, not compiled;
#: two of these only in the full run (``pytest -m slow``)
COMPILED = ["quicksort", "qs_masks", "qs_median3", "qs_inline_pivot", "quicksort_appends",
            "qs_helper_masks", "qs_buffers",
            *(pytest.param(n, marks=pytest.mark.slow)
              for n in ["qs_named", "qs_rest", "qs_inline_middle", "qs_helper_lists",
                        "qs_appended", "qs_buffers_inline"])]


@pytest.mark.parametrize("name", COMPILED)
def test_every_example_at_sizes_up_to_the_devices(name):
    """Sizes 1, 2, 3, 17 and 70 001 (one test per function: its form compiles once)."""
    for n in (1, 2, 3, 17, 70_001):
        rng = np.random.default_rng(n)
        x = argument(name, (rng.permutation(n) - n // 3).astype(np.int64))  # distinct values
        want = plain(name, x)
        for opts in ({"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2}):
            run, _ = run_checked(name, x, **opts)
            assert same(run.value, want) and run.fallbacks == [], (name, n, opts,
                                                                   run.fallbacks)
            assert run.gpu_tasks >= 1 or (n == 1 and opts["device"] == "hybrid")  # (K = 0)


def test_lists_in_lists_out_on_every_device():
    x = np.random.default_rng(1).integers(-99, 99, 3000).tolist()
    for device in ("cpu", "gpu", "hybrid"):
        run, _ = run_checked("quicksort", list(x), device=device)
        assert same(run.value, sorted(x)), device
        assert run.fallbacks == []


def test_floats_with_signed_zeros_keep_the_plain_order():
    """``-0.0 == 0.0``: the equal piece keeps them in the order the input has them, as the
    filters do; the form's filters keep order, so the signs land where Python's do."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=20_001)
    x[::5] = 0.0
    x[2::5] = -0.0
    for name in ("qs_masks", "qs_desc"):
        for device, alpha, y in PATHS[:3]:
            run, _ = run_checked(name, x, **options(device, alpha, y))
            assert same(run.value, plain(name, x)) and run.fallbacks == [], (name, device)


@pytest.mark.parametrize("device, alpha, y", PATHS[:3], ids=str)
def test_a_nan_key_redoes_the_call_on_the_cpu(device, alpha, y):
    """NaN passes no comparison: the pieces are shorter than the input together, so the
    task sets the flag, and the call is redone on the CPU -- NaN dropped, as Python does."""
    x = np.random.default_rng(3).normal(size=5000)
    x[1234] = np.nan
    run, caught = run_checked("qs_masks", x, **options(device, alpha, y))
    want = plain("qs_masks", x)
    assert same(run.value, want) and want.size == x.size - 1
    assert len(run.fallbacks) == 1 and "pieces of another length" in run.fallbacks[0]
    assert any("pieces of another length" in m for m in caught)


def test_pieces_that_leave_values_out_redo_the_call_and_distinct_values_stay_on_the_device():
    rng = np.random.default_rng(4)
    dup = rng.integers(0, 50, 3000)
    run, _ = run_checked("qs_unique", dup, device="gpu")
    assert same(run.value, np.unique(dup)) and "pieces of another length" in run.fallbacks[0]
    distinct = rng.permutation(3000)
    run, _ = run_checked("qs_unique", distinct, device="gpu")
    assert same(run.value, np.arange(3000)) and run.fallbacks == [] and run.gpu_tasks >= 1


def test_the_one_line_quicksort_runs_on_the_device():
    """``return arr if len(arr) <= 1 else f([...]) + [arr[0]] + f([...])``: the conditional
    expression read as the base case's guard and the recursion."""
    x = np.random.default_rng(12).integers(-50, 50, 3000).tolist()
    run, _ = run_checked("quicksort_oneline", x, device="gpu")
    assert same(run.value, plain("quicksort_oneline", x)) and run.fallbacks == []
    assert run.gpu_tasks >= 1


def test_a_device_with_its_own_memory(discrete):
    x = np.random.default_rng(5).integers(-10**6, 10**6, 100_001)
    for alpha, y in ((0.25, 3), (0.5, 2), (0.0, 3)):
        run, _ = run_checked("qs_masks", x, device="hybrid", alpha=alpha, y=y)
        assert same(run.value, np.sort(x)) and run.fallbacks == [] and run.gpu_tasks > 0
    assert discrete


def test_a_concatenate_of_a_list_runs_compiled_on_the_cpu_and_on_the_device():
    """``np.concatenate([...])`` of a list (Numba takes a tuple; hpu writes it as one): on
    the CPU compiled, without a warning or a fallback, as its plan says; on the device the
    partition form."""
    f = hpu.divide_and_conquer(ex.qs_listcat)
    x = np.random.default_rng(9).integers(0, 1000, 5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", hpu.HpuPerformanceWarning)
        plan = f.plan(x, device="cpu")
        run = f.run(x, device="cpu")
    assert same(run.value, np.sort(x)) and run.fallbacks == [] and run.gpu_tasks == 0
    assert plan.K == run.K and plan.device == run.device != "python"
    run, _ = run_checked("qs_listcat", x, device="gpu")
    assert same(run.value, np.sort(x)) and run.fallbacks == [] and run.gpu_tasks >= 1


def test_the_plan_is_the_runs():
    f = decorated("qs_masks")
    x = np.random.default_rng(6).integers(0, 10**6, 50_000)
    plan = f.plan(x, device="hybrid", alpha=0.5, y=2)
    run = f.run(x, device="hybrid", alpha=0.5, y=2)
    assert same(run.value, np.sort(x))
    assert (plan.split_alpha, plan.transfer_level) == (0.5, 2)
    assert plan.cutoff_level == run.K and plan.n == x.size


def test_an_error_in_the_function_is_the_one_python_raises():
    """The function's own exception, at its line, on every path: here every element is a
    pivot once, and the pivot 13 divides by zero."""
    f = hpu.divide_and_conquer(_divides)
    x = np.random.default_rng(8).permutation(5000)
    with pytest.raises(ZeroDivisionError):
        _divides(x.copy())
    for device, alpha, y in (("cpu", None, None), *PATHS[:3]):
        with pytest.raises(ZeroDivisionError, match=r"test_functional_partition\.py:\d+"):
            f.run(x.copy(), **options(device, alpha, y))


def _divides(a):
    if len(a) == 0:
        return a.copy()
    p = a[len(a) // 2]
    k = 100 // (int(p) - 13)            # noqa: F841 - the error is the point
    return np.concatenate((_divides(a[a < p]), a[a == p], _divides(a[a > p])))


def test_a_list_functions_form_tests_its_own_indices_or_keeps_the_checked_view():
    """On lists the form reads the buffer directly and tests the user's own ``arr[i]``
    before its statement; a read Python might skip (in an ``if`` test) keeps the view."""
    assert rewrite(decorated("quicksort")).checks_itself
    viewed = hpu.divide_and_conquer(ex.quicksort_tested_pivot)
    rw = rewrite(viewed)
    assert rw.partition and not rw.checks_itself
    for values in ([3, 1, 2], [5, 5, 1, 9, 0, 5], list(range(40, 0, -1)), [7]):
        x = np.asarray(values, np.int64)
        work = np.concatenate([x, np.full(x.size, -7)])
        flag = np.array([0, 4, 0], np.int64)
        rw.fn(work, 0, x.size, 0, flag)
        assert flag[0] == 0 and list(work[:x.size]) == sorted(values)


def _added(a):
    if len(a) <= 1:
        return a.copy()
    p = a[0]
    return _added(a[a < p]) + a[a == p] + _added(a[a > p])     # adds, does not join


def test_plus_of_arrays_is_not_a_concatenation_and_a_list_result_needs_a_list():
    """``+`` joins lists but adds arrays: mask pieces joined by ``+`` have no form; and a
    function of list pieces returns a list even when given an array, so an array argument
    keeps the CPU path (as written), where the form would return an array."""
    with pytest.raises(NotRewritable, match="adds them element by element"):
        rewrite(hpu.divide_and_conquer(_added))
    assert rewrite(decorated("quicksort")).returns_list
    assert not rewrite(decorated("qs_masks")).returns_list
    x = np.array([3, 1, 2, 3, 0])
    with pytest.warns(hpu.HpuPerformanceWarning):
        run = decorated("quicksort").run(x, device="gpu")
    assert run.value == ex.quicksort(x.copy()) and type(run.value) is list


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_list_index_out_of_range_is_pythons_index_error(device):
    f = hpu.divide_and_conquer(ex.quicksort_past_the_end)
    with pytest.raises(IndexError, match=r"partition_examples\.py:\d+.*list index out of range"):
        f.run(list(range(100, 0, -1)), device=device)


# ------------------------------------------------------------ kept, and why
@pytest.mark.parametrize("name", sorted(ex.KEPT))
def test_a_function_without_a_partition_form_answers_on_the_cpu_and_says_why(name):
    why, fn = ex.KEPT[name]
    f = decorated(name)
    with pytest.raises(NotRewritable, match=re.escape(why)):
        rewrite(f)
    x = np.random.default_rng(7).integers(0, 100, 57)
    want = fn(x.copy())
    got_x = x.copy()
    with pytest.warns(hpu.HpuPerformanceWarning, match="device form"):
        run = f.run(got_x, device="gpu")
    assert same(run.value, want) and run.gpu_tasks == 0 and why in run.fallbacks[0]


def test_a_slice_recursion_keeps_the_slice_forms_reason():
    """A mergesort whose calls take slices is not a partition: where it has no device form
    the reason is the slice form's, not the partition form's."""
    with pytest.raises(NotRewritable) as err:
        rewrite(hpu.divide_and_conquer(_uneven_halves))
    assert "piece" not in str(err.value) and "filter" not in str(err.value)


def _uneven_halves(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 3
    return np.concatenate((_uneven_halves(a[:m]), _uneven_halves(a[m + 1:])))   # drops a[m]
