"""The copy-halves form (hpu._copy_halves): the tutorials' mergesort, which copies its
halves and recurses on the copies, runs breadth-first on every device with one buffer --
with the plain function's answer, the caller's array as Python leaves it, and a merge that
stops early redone as written."""
from __future__ import annotations

import ast
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import copy_halves_examples as ex
import hpu
from hpu._copy_halves import CopyHalvesForm, NotCopyHalves, rewrite_copy_halves
from hpu._functional import _numpy_names

COMPILES = settings(deadline=None, max_examples=4,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
PATHS = [("cpu", {}), ("gpu", {}), ("hybrid", {"alpha": 0.5, "y": 2}),
         ("hybrid", {"alpha": 0.25, "y": 3})]
_DECORATED: dict = {}


def decorated(name):
    if name not in _DECORATED:
        fn = (ex.CARVED.get(name) or ex.WRITTEN_OUT.get(name) or ex.SHORT.get(name)
              or ex.KEPT[name][1])
        _DECORATED[name] = hpu.divide_and_conquer(fn)
    return _DECORATED[name]


def plain(name, x):
    fn = (ex.CARVED.get(name) or ex.WRITTEN_OUT.get(name) or ex.SHORT.get(name)
          or ex.KEPT[name][1])
    return fn(x)


def check(name, x, device, kw):
    ref = x.copy()
    want = plain(name, ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = decorated(name).run(x, device=device, **kw)
    assert np.array_equal(x, ref), (name, device, kw, x.size)
    assert run.value == want and type(run.value) is type(want), (run.value, want)
    return run


@pytest.mark.parametrize("name", sorted(ex.CARVED) + sorted(ex.SHORT) + sorted(ex.WRITTEN_OUT))
def test_the_form_is_found(name):
    got = decorated(name)._scratch_form
    assert got is not None and isinstance(got[1], CopyHalvesForm)


@pytest.mark.parametrize("name", sorted(ex.KEPT))
def test_other_shapes_keep_their_path_and_say_why(name):
    why, fn = ex.KEPT[name]
    with pytest.raises(NotCopyHalves, match=why):
        rewrite_copy_halves(fn, _numpy_names(fn.__globals__))
    assert decorated(name)._scratch_form is None
    x = np.random.default_rng(1).integers(-99, 99, 300)
    check(name, x, "gpu", {})


DTYPES = [np.int64, np.float64, np.int32]


@pytest.mark.parametrize("device,kw", PATHS)
@pytest.mark.parametrize("name", sorted(ex.CARVED))
@settings(COMPILES)
@given(xs=st.lists(st.integers(-30, 30), max_size=80))
def test_every_path_gives_the_plain_answer(name, device, kw, xs):
    """Each (function, path) case takes one of the dtypes, in turn across the cases (every
    dtype meets every function and every path): a dtype drawn per example compiled each
    case up to three times over, a sixth of the suite's time."""
    case = sorted(ex.CARVED).index(name) + PATHS.index((device, kw))
    check(name, np.asarray(xs, dtype=DTYPES[case % len(DTYPES)]), device, kw)


@pytest.mark.parametrize("name", sorted(ex.CARVED))
@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 4097, 50_001])
def test_sizes_with_device_tasks(name, n):
    x = np.random.default_rng(n).integers(-10**6, 10**6, n)
    run = check(name, x, "hybrid", {"alpha": 0.5, "y": 3})
    if n >= 4097:
        assert run.gpu_tasks > 0 and run.cpu_tasks > 0 and not run.fallbacks


def test_the_breadth_first_run_uses_every_core_and_one_buffer():
    x = np.random.default_rng(3).integers(-10**9, 10**9, 1 << 17).astype(np.int32)
    run = check("tutorial", x, "cpu", {})
    assert run.cpu_tasks > 1 and run.level_sizes[0] == 1 and len(run.level_sizes) > 3
    assert decorated("tutorial").options(device="cpu").plan(x).reason == run.plan.reason


@pytest.mark.parametrize("name", sorted(ex.SHORT))
@pytest.mark.parametrize("device,kw", PATHS[:3])
def test_a_merge_that_stops_early_is_redone_as_written(name, device, kw):
    x = np.random.default_rng(4).integers(-50, 50, 20_001)
    ref = x.copy()
    ex.SHORT[name](ref)
    with pytest.warns(hpu.HpuPerformanceWarning, match="as written"):
        run = decorated(name).run(x, device=device, **kw)
    assert np.array_equal(x, ref)
    assert run.fallbacks and "as written" in run.fallbacks[0]


def test_an_error_in_the_merge_names_the_users_line():
    import inspect

    def bad(arr):
        if len(arr) > 1:
            mid = len(arr) // 2
            L = arr[:mid].copy()
            R = arr[mid:].copy()
            bad(L)
            bad(R)
            k = 0
            for i in range(len(L)):
                arr[k] = L[i] // (len(arr) - 5)  # here
                k += 1
            for j in range(len(R)):
                arr[k] = R[j]
                k += 1

    lines, start = inspect.getsourcelines(bad)
    line = start + next(i for i, t in enumerate(lines) if "# here" in t)
    f = hpu.divide_and_conquer(bad)
    assert isinstance(f._scratch_form[1], CopyHalvesForm)
    for device in ("cpu", "gpu"):
        x = np.arange(40)
        with pytest.raises(ZeroDivisionError, match=rf"test_copy_halves.py:{line}:"):
            f.run(x, device=device)


@pytest.mark.parametrize("name,marks", [("with_helper", False), ("two_indices", True),
                                        ("inversions_helper", True), ("twice_written", True)])
def test_a_merge_in_a_helper_or_at_any_index_is_read_as_the_functions_own(name, marks):
    """The helper is written out in the function (its names renamed apart); stores at one
    counter are checked by the counter, others by marks."""
    fn = ex.CARVED.get(name) or ex.WRITTEN_OUT[name]
    form = rewrite_copy_halves(fn, _numpy_names(fn.__globals__))
    assert form.marks is marks
    source = ast.unparse(form.fn.__hpu_tree__[0])
    assert ("merge" not in source.replace(f"_{name}", "").split("def ", 1)[1].split("(")[0]
            and "(arr, L, R)" not in source)
    if marks:
        assert "hpu_m[" in source and len(form.buffers({form.array: np.arange(5)})) == 3


@pytest.mark.parametrize("device,kw", [PATHS[0], PATHS[2]])
@pytest.mark.parametrize("name", sorted(ex.WRITTEN_OUT))
@settings(COMPILES)
@given(xs=st.lists(st.integers(-30, 30), max_size=80))
def test_merges_in_helpers_give_the_plain_answer(name, device, kw, xs):
    check(name, np.asarray(xs, dtype=np.int64), device, kw)


@pytest.mark.parametrize("name", sorted(ex.WRITTEN_OUT))
def test_merges_in_helpers_at_sizes_with_device_tasks(name):
    for n in (0, 1, 2, 3, 4097):
        x = np.random.default_rng(n).integers(-10**6, 10**6, n)
        run = check(name, x, "hybrid", {"alpha": 0.5, "y": 3})
        if n >= 4097:
            assert run.gpu_tasks > 0 and run.cpu_tasks > 0 and not run.fallbacks


def test_an_error_in_a_helper_merge_names_the_helpers_line():
    import inspect

    lines, start = inspect.getsourcelines(ex.merge_dividing)
    line = start + next(i for i, t in enumerate(lines) if "# here" in t)
    f = hpu.divide_and_conquer(ex.dividing)
    assert isinstance(f._scratch_form[1], CopyHalvesForm)
    for device in ("cpu", "gpu"):
        x = np.arange(40)
        with pytest.raises(ZeroDivisionError, match=rf"copy_halves_examples.py:{line}:"):
            f.run(x, device=device)


# ------------------------------------------------------------------ lists, whose slices copy
_LISTED = {f.__name__: hpu.divide_and_conquer(f)
           for f in (ex.for_lists, ex.for_lists_short, ex.list_helper)}


def check_list(name, xs, device, kw):
    fn = getattr(ex, name)
    want = list(xs)
    fn(want)
    got = list(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = _LISTED[name].run(got, device=device, **kw)
    assert got == want and [type(v) for v in got] == [type(v) for v in want]
    return run


@pytest.mark.parametrize("device,kw", PATHS)
@settings(COMPILES)
@given(xs=st.one_of(st.lists(st.integers(-30, 30), max_size=80),
                    st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=80)))
@pytest.mark.parametrize("name", ["for_lists", "list_helper"])
def test_a_list_runs_the_form_and_gets_its_elements_back(name, device, kw, xs):
    run = check_list(name, xs, device, kw)
    if len(xs) > 1:
        assert run.cpu_tasks + run.gpu_tasks >= 1 and not run.fallbacks


def test_a_large_list_runs_breadth_first_on_the_device():
    xs = [int(v) for v in np.random.default_rng(7).integers(-10**12, 10**12, 30_001)]
    run = check_list("for_lists", xs, "hybrid", {"alpha": 0.5, "y": 3})
    assert run.gpu_tasks > 0 and run.cpu_tasks > 0


@pytest.mark.parametrize("xs", [[1, 2.5, -3], [2**70, 1, 0], [True, False], []],
                         ids=["mixed", "big-ints", "bools", "empty"])
def test_lists_the_form_cannot_hold_run_as_written(xs):
    run = check_list("for_lists", xs, "gpu", {})
    assert run.gpu_tasks == 0
    if len(xs) > 1:
        assert run.fallbacks


def test_a_list_whose_merge_stops_early_is_redone_as_written():
    xs = [int(v) for v in np.random.default_rng(8).integers(-50, 50, 5_001)]
    run = check_list("for_lists_short", xs, "gpu", {})   # (its warning is checked above)
    assert any("unwritten" in f and "as written" in f for f in run.fallbacks)


@pytest.mark.parametrize("device,kw", PATHS[:3])
@pytest.mark.parametrize("xs", [[3, 1, 2], [2.5, -1.0, 7.25, 0.0], [5, 2.5, 1], []],
                         ids=["ints", "floats", "mixed", "empty"])
def test_the_array_form_given_a_list_writes_the_list(device, kw, xs):
    """``.copy()`` copies a list too: the function sorts the caller's list in place."""
    want = list(xs)
    ex.tutorial(want)
    got = list(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = decorated("tutorial").run(got, device=device, **kw)
    assert got == want and [type(v) for v in got] == [type(v) for v in want]
    assert run.value is None


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_tuple_which_cannot_be_written_raises_as_python_does(device):
    data = (5, 3, 9, 1, 1, 8, 2)
    with pytest.raises(AttributeError) as plain:
        ex.tutorial(data)
    with pytest.raises(AttributeError) as got:
        decorated("tutorial").run(data, device=device)
    assert str(got.value) == str(plain.value) and data == (5, 3, 9, 1, 1, 8, 2)


@pytest.mark.parametrize("name", ["through_alias", "through_view"])
def test_writes_through_another_name_wait_for_the_children_in_the_fan_out(name):
    """Not the form (``arr`` is passed on, or sliced): the fan-out, which must see the write
    into the argument through ``out = arr`` or ``v = arr[0:n]`` and wait for the children's
    subtrees before the merge (it did not, and merged halves not yet sorted)."""
    from hpu._functional import FANOUT_MIN

    fn = getattr(ex, name)
    f = hpu.divide_and_conquer(fn)
    x = np.random.default_rng(2).integers(0, 100, FANOUT_MIN + 7_000)
    want = x.copy()
    fn(want)
    run = f.run(x, device="cpu")
    assert np.array_equal(x, want)
    assert run.K > 0 or "thread" in run.reason


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_list_index_past_the_end_raises_as_python_does(device):
    f = hpu.divide_and_conquer(ex.list_past_the_end)
    xs = [5, 3, 9, 1, 1, 8, 2, 7, 4]
    with pytest.raises(IndexError):
        ex.list_past_the_end(list(xs))
    got = list(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(IndexError):
            f.run(got, device=device)


@pytest.mark.parametrize("device, kw, keep", [("cpu", {}, True), ("gpu", {}, False),
                                              ("hybrid", {"alpha": 0.5, "y": 2}, True)])
def test_the_plan_predicts_the_forms_peak_memory(device, kw, keep):
    """``f.plan(x)`` of the tutorials' mergesort raised KeyError 'arr__o' (the form's
    views were not expanded); it predicts the run's peak: the buffers, the snapshot, the
    device's copies and the array as it was (the form keeps it for a merge that leaves
    elements unwritten) -- within 2 % here, the test allows 5 %."""
    f = decorated("tutorial")
    x = np.random.default_rng(8).random(50_001)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f.run(x.copy(), device=device, keep_inputs=keep, **kw)       # (compiled)
        y = x.copy()
        plan = f.plan(y, device=device, keep_inputs=keep, **kw)
        run = f.run(y, device=device, keep_inputs=keep, memory=True, **kw)
    assert np.array_equal(y, np.sort(x)) and run.plan == plan
    assert "the array as it was" in plan.memory_basis
    assert abs(run.peak_memory / plan.peak_memory - 1) <= 0.05, (run.peak_memory, plan)
