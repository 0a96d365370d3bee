"""The scratch form (hpu._scratch_form): an index-form recursion that allocates its merge
buffer runs breadth-first on every device, each allocation a part of one buffer per site,
with the plain function's answer and the caller's array as Python leaves it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpu
import scratch_examples as ex
from hpu._functional import _numpy_names
from hpu._scratch_form import NotScratch, rewrite_scratch

COMPILES = settings(deadline=None, max_examples=4,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
PATHS = [("cpu", {}), ("gpu", {}), ("hybrid", {"alpha": 0.5, "y": 2}),
         ("hybrid", {"alpha": 0.0, "y": 1}), ("hybrid", {})]
_DECORATED: dict = {}


def decorated(name):
    if name not in _DECORATED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn = ex.CARVED.get(name) or ex.KEPT[name][1]
            _DECORATED[name] = hpu.divide_and_conquer(fn)
    return _DECORATED[name]


def check(name, x, device, kw):
    ref = x.copy()
    hi = x.size - 1 if name in ex.CLOSED else x.size
    want = ex.CARVED[name](ref, 0, hi)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = decorated(name).run(x, 0, hi, device=device, **kw)
    assert np.array_equal(x, ref), (name, device, kw)
    assert run.value == want and type(run.value) is type(want) or (
        isinstance(want, np.generic) and run.value == want), (run.value, want)
    return run


@pytest.mark.parametrize("name", sorted(ex.CARVED))
def test_the_form_is_found(name):
    assert decorated(name)._scratch_form is not None


@pytest.mark.parametrize("name", sorted(ex.KEPT))
def test_other_shapes_keep_their_path_and_say_why(name):
    why, fn = ex.KEPT[name]
    with pytest.raises(NotScratch, match=why):
        rewrite_scratch(fn, _numpy_names(fn.__globals__))
    assert decorated(name)._scratch_form is None
    x = np.random.default_rng(1).integers(-99, 99, 300)
    ref = x.copy()
    fn(ref, 0, ref.size - 1)
    decorated(name).run(x, 0, x.size - 1, device="cpu")
    assert np.array_equal(x, ref)


@pytest.mark.parametrize("device, kw", PATHS, ids=str)
@COMPILES
@given(values=st.lists(st.integers(-10**6, 10**6), min_size=0, max_size=3000),
       name=st.sampled_from(["msort_copies", "count_inv", "merge_sort_clrs",
                             "merge_sort_gfg"]))
def test_every_path_gives_the_plain_answer(device, kw, values, name):
    check(name, np.asarray(values, np.int64), device, kw)


@pytest.mark.parametrize("name", sorted(ex.CARVED))
def test_sizes_up_to_the_devices(name):
    for n in (0, 1, 2, 3, 17, 50_001):
        x = np.random.default_rng(n).integers(-10**6, 10**6, n)
        if name in ("sorted_sum", "msort_float_buffer", "merge_sort_inf"):  # (float64)
            x = x.astype(np.float64)
        for device, kw in (("gpu", {}), ("hybrid", {"alpha": 0.5, "y": 2})):
            run = check(name, x.copy(), device, kw)
            if n >= 17:
                assert run.gpu_tasks >= 1, (name, n, device)


def test_the_buffers_are_not_snapshot_and_a_discrete_device_leaves_them_there(discrete):
    """hpu's buffers are dead after each task: the call's snapshot copies the caller's array
    and not them (hpu._snapshot.Snapshot.dead: the run's peak is the snapshot and one
    buffer per site, 3x the input here, where it was 5x), and a device with its own memory
    does not download them -- the answer is the plain function's on every path."""
    f = decorated("msort_copies")
    dc, form = f._scratch_form
    assert dc._dead == {p for p in dc._signature.parameters if p.startswith("hpu_scr")}
    assert len(dc._dead) == len(form.dtypes) == 2
    x = np.random.default_rng(4).integers(-10**6, 10**6, 50_001)
    for device, kw in (("gpu", {}), ("hybrid", {"alpha": 0.5, "y": 2})):
        run = check("msort_copies", x.copy(), device, kw)
        assert run.gpu_tasks >= 1 and run.fallbacks == []
    assert discrete and all(not b._written or not set(b._written) & dc._dead
                            for b in discrete)
    y = x.copy()
    f.run(y, 0, y.size, device="cpu")               # (compiled)
    peak = f.run(y, 0, y.size, device="cpu", memory=True).peak_memory
    # the snapshot of `a` (1x) and the two buffers, one per site, each as long as `a`
    assert peak <= 3.05 * x.nbytes + 65536, peak / x.nbytes


@pytest.mark.parametrize("name", ["msort_copies", "merge_sort_clrs"])
@pytest.mark.parametrize("device, kw, keep, copies", [
    ("cpu", {}, True, False), ("gpu", {}, False, False),
    ("hybrid", {"alpha": 0.5, "y": 2}, False, False), ("gpu", {}, True, True),
    ("hybrid", {"alpha": 0.5, "y": 2}, False, True)], ids=str)
def test_the_plan_predicts_the_peak_memory_the_run_measures(name, device, kw, keep, copies,
                                                            request):
    """Issue 17: "the plan predicts the peak memory and the run reports it" -- for the
    scratch form a sum of what hpu allocates, each size known before the run
    (hpu._scratch_form.predicted_peak): within 2 % here (the level arrays it leaves out);
    the test allows 5 %.  On a device that shares the host's memory and, with forced
    copies, on one with its own (``copies``), with and without the call's snapshot; a
    half-open span (msort_copies) and closed ranges without one (CLRS)."""
    if copies:
        request.getfixturevalue("discrete")
    f = decorated(name)
    x = np.random.default_rng(9).random(50_001)
    hi = x.size - 1 if name in ex.CLOSED else x.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f.run(x.copy(), 0, hi, device=device, keep_inputs=keep, **kw)    # (compiled)
        y = x.copy()
        plan = f.plan(y, 0, hi, device=device, keep_inputs=keep, **kw)
        run = f.run(y, 0, hi, device=device, keep_inputs=keep, memory=True, **kw)
    assert np.array_equal(y, np.sort(x)) and run.plan == plan
    assert plan.peak_memory >= 2 * x.nbytes and "scratch buffers" in plan.memory_basis
    assert (run.gpu_tasks > 0) == (device != "cpu")
    assert abs(run.peak_memory / plan.peak_memory - 1) <= 0.05, (run.peak_memory, plan)


def test_the_plan_is_breadth_first_and_the_buffers_per_site():
    f = decorated("msort_copies")
    x = np.arange(1 << 16)[::-1].copy()
    plan = f.plan(x, 0, x.size, device="hybrid", alpha=0.5, y=2)
    assert plan.cutoff_level >= 2 and plan.uses_device
    dc, form = f._scratch_form
    assert form.bounds == ("lo", "hi") and form.dtypes == ("a", "a")   # left, right
    bufs = form.buffers({"a": x, "lo": 0, "hi": x.size})
    assert [b.dtype for b in bufs] == [x.dtype] * 2 and all(b.size == x.size for b in bufs)
    # a root outside the array: no buffers, the function runs as written
    assert form.buffers({"a": x, "lo": 0, "hi": x.size + 1}) is None
    assert form.buffers({"a": x, "lo": 5, "hi": 4}) is None
    # closed ranges: the task's part is [p, r + 1), the root's r at most len - 1
    clrs = decorated("merge_sort_clrs")._scratch_form[1]
    assert clrs.extra == 1 and clrs.dtypes == ("A", "A")
    assert clrs.buffers({"A": x, "p": 0, "r": x.size - 1}) is not None
    assert clrs.buffers({"A": x, "p": 0, "r": x.size}) is None
    assert clrs.buffers({"A": x, "p": 0, "r": -1}) is not None       # empty: p > r


def test_an_error_names_the_users_line():
    x = np.arange(40, dtype=np.int64)[::-1].copy()
    keep = x.copy()
    with pytest.raises(ZeroDivisionError, match=r"scratch_div\.py|test_scratch_form\.py:\d+: "):
        _divides.run(x, 0, x.size, device="gpu")
    assert np.array_equal(x, keep)


@hpu.divide_and_conquer
def _divides(a, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    _divides(a, lo, mid)
    _divides(a, mid, hi)
    tmp = np.empty(hi - lo, a.dtype)
    for k in range(hi - lo):
        tmp[k] = a[lo + k] // (a[lo + k] - 20)
    a[lo:hi] = tmp


def test_a_buffer_the_array_cannot_hold_runs_the_function_as_written():
    """``a[lo:hi] = t`` of a float64 buffer into an int32 array: NumPy converts, the
    breadth-first path refuses such a copy (hpu._guard.check_array_fit), so the call runs
    the function as written; a float64 array takes the form."""
    f = decorated("msort_float_buffer")
    x = np.random.default_rng(3).integers(-999, 999, 5000).astype(np.int32)
    run = check("msort_float_buffer", x, "gpu", {})
    assert run.gpu_tasks == 0 and run.cpu_tasks == 1
    assert f._scratch_call((x, 0, x.size), {}) is None
    y = x.astype(np.float64)
    assert f._scratch_call((y, 0, y.size), {}) is not None
    assert check("msort_float_buffer", y, "gpu", {}).gpu_tasks >= 1


@pytest.mark.parametrize("name", ["merge_sort_gfg", "merge_sort_comp"])
@pytest.mark.parametrize("device, kw", PATHS[:3], ids=str)
@COMPILES
@given(values=st.lists(st.floats(-1e12, 1e12, allow_nan=False), max_size=300),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_lists_of_zeros_are_buffers_of_the_arrays_dtype(device, kw, values, dtype, name):
    """The tutorial's ``L = [0] * n1`` (or ``[0 for _ in range(n1)]``) filled from ``arr``:
    a part of a buffer of ``arr``'s dtype (Python's list holds the floats; compiled as
    written, Numba's held ints)."""
    check(name, np.asarray(values).astype(dtype), device, kw)
    assert decorated(name)._scratch_form[1].lists


def test_an_index_past_a_list_of_zeros_raises_as_python_does():
    f = hpu.divide_and_conquer(ex.merge_sort_past)
    assert f._scratch_form is not None and f._scratch_form[1].lists
    for device in ("cpu", "gpu"):
        x = np.arange(40.0)
        with pytest.raises(IndexError):
            ex.merge_sort_past(x.copy(), 0, 39)
        with pytest.raises(IndexError, match="scratch_examples.py"):
            f.run(x, 0, 39, device=device)


@pytest.mark.parametrize("device, kw", PATHS[:3], ids=str)
@COMPILES
@given(xs=st.one_of(st.lists(st.integers(-10**12, 10**12), min_size=1, max_size=200),
                    st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1, max_size=200)))
def test_the_tutorials_list_runs_the_form_and_gets_its_items_back(device, kw, xs):
    """``mergeSort(arr, 0, len(arr) - 1)`` on a Python list, as the tutorial calls it: the
    form on the list's items as an array, written back into the list."""
    want, got = list(xs), list(xs)
    ex.merge_sort_gfg(want, 0, len(want) - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = decorated("merge_sort_gfg").run(got, 0, len(got) - 1, device=device, **kw)
    assert got == want and [type(v) for v in got] == [type(v) for v in want]
    assert run.value is None and not run.fallbacks


@pytest.mark.parametrize("xs", [[1, 2.5, -3], [2**70, 1, 0], [True, False, True]],
                         ids=["mixed", "big-ints", "bools"])
def test_lists_an_array_cannot_give_back_run_as_written(xs):
    want, got = list(xs), list(xs)
    ex.merge_sort_gfg(want, 0, len(want) - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = decorated("merge_sort_gfg").run(got, 0, len(got) - 1, device="gpu")
    assert got == want and [type(v) for v in got] == [type(v) for v in want]
    assert run.gpu_tasks == 0


def test_a_large_list_runs_breadth_first_on_the_device():
    xs = [int(v) for v in np.random.default_rng(9).integers(-10**12, 10**12, 30_001)]
    got = list(xs)
    run = decorated("merge_sort_gfg").run(got, 0, len(got) - 1, device="hybrid", alpha=0.5,
                                          y=2)
    assert got == sorted(xs) and run.gpu_tasks > 0 and run.cpu_tasks > 0


@pytest.mark.parametrize("device, kw", PATHS[:3], ids=str)
@COMPILES
@given(values=st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=0, max_size=3000))
def test_clrs_sentinel_buffers_are_carved_with_their_slot(device, kw, values):
    """CLRS's MERGE as printed (``L = np.empty(n1 + 1)``, ``L[n1] = inf``): each buffer's
    part has one more element, carved from slots twice as wide; it ran on the CPU only."""
    run = check("merge_sort_inf", np.asarray(values, np.float64), device, kw)
    form = decorated("merge_sort_inf")._scratch_form[1]
    assert form.pads == (1, 1) and form.extra == 1
    assert run.device == device


def test_int_keys_the_sentinel_buffer_cannot_hold_say_so():
    """CLRS's float64 sentinel buffers on int keys keep the CPU path; the reason was the
    device form's ("splits at q + 1, not at a midpoint"), which holds for float keys too,
    where the function runs on the device: it now names the buffer's dtype."""
    f = decorated("merge_sort_inf")
    x = np.random.default_rng(1).integers(0, 1000, 5001)
    ref = x.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = f.run(x, 0, x.size - 1, device="gpu")
    ex.CARVED["merge_sort_inf"](ref, 0, ref.size - 1)
    assert np.array_equal(x, ref) and run.gpu_tasks == 0
    assert "cannot give these arrays their values back exactly" in " ".join(run.fallbacks)
