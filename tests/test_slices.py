"""NumPy slices and lengths (hpu._views): every path gives .py_func's answer, refusals point
at the user's line.

Functions written with ``f(a[:m])``, ``f(a[m:])``, ``a[lo:hi]`` to helpers,
``len(a)``/``a.size``/``a.shape[0]``, ``a[-1]`` inside a view, views of views
and names bound to views (``tests/slice_examples.py``) run on ``.sequential``,
``device="cpu"``, ``"gpu"`` and ``"hybrid"`` at several (α, y), including
α = 0 (every task of the transfer level, its leaves and combines, on the
device), against the original function on the same input, Hypothesis choosing
the data and the sizes (0, 1, 2, odd, and sizes where the device gets work).
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import slice_examples
from slice_examples import REFERENCES, msort, total

import hpu
from hpu import TranslationError

COMPILES = settings.get_profile("hpu-compiles")

#: (device, alpha, y): the CPU alone, the device alone, and hybrid splits that put
#: leaves and combines on the device (alpha = 0 hands the whole level y over).
PATHS = [("cpu", None, None), ("gpu", None, None), ("hybrid", 0.5, 2), ("hybrid", 0.0, 1),
         ("hybrid", 0.25, 4), ("hybrid", 1.0, 3)]


def _options(device, alpha, y):
    opts = {"device": device}
    if device == "hybrid":
        opts.update(alpha=alpha, y=y)
    return opts


def _check_all_paths(name, x):
    """Run ``name`` on copies of ``x`` on every path; compare value and arrays with .py_func."""
    f, args, ref, after, _ = REFERENCES[name]
    xp = x.copy()
    want = f.py_func(*args(xp))
    assert want == ref(x)                          # the example itself is right
    if after is not None:
        assert np.array_equal(xp, after(x))
    xs = x.copy()
    assert f.sequential(*args(xs)) == want
    assert np.array_equal(xs, xp)
    for device, alpha, y in PATHS:
        xd = x.copy()
        run = f.run(*args(xd), **_options(device, alpha, y))
        assert run.value == want, (name, device, alpha, y, x.size)
        assert np.array_equal(xd, xp), (name, device, alpha, y, x.size)


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(REFERENCES))
@settings(COMPILES, max_examples=6)
@given(data=st.data())
def test_every_path_matches_py_func(name, data):
    low = REFERENCES[name][4]
    n = data.draw(st.one_of(st.integers(low, 3), st.integers(low, 300)), label="n")
    x = np.array(data.draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n), label="x"),
                 dtype=np.int64)
    _check_all_paths(name, x)


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("n", [1, 2, 3, 17, 4097])
def test_sizes(name, n):
    """Length 1, 2, odd, and large enough that the device's share has many tasks."""
    x = np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int64)
    _check_all_paths(name, x)


@pytest.mark.opencl
@pytest.mark.parametrize("name", [k for k, v in REFERENCES.items() if v[4] == 0])
def test_empty(name):
    _check_all_paths(name, np.zeros(0, dtype=np.int64))


@pytest.mark.opencl
@settings(COMPILES, max_examples=4)
@given(x=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=200))
def test_mergesort_on_views_floats(x):
    """Another dtype through the same views: float64 keys and scratch."""
    a = np.array(x, dtype=np.float64)
    for device, alpha, y in PATHS:
        b = a.copy()
        msort.run(b, np.zeros_like(b), **_options(device, alpha, y))
        assert np.array_equal(b, np.sort(a, kind="stable"))


def test_hidden_parameters_are_recorded():
    """The spec records which hidden scalars bound which array (for transfers and the split)."""
    assert total.spec.params == ("a", "a__o", "a__n")
    assert total.spec.views == (("a", "a__o", "a__n"),)
    assert msort.spec.views == (("a", "a__o", "a__n"), ("tmp", "tmp__o", "tmp__n"))
    assert {"a__o", "a__n"} <= set(total.spec.params) - set(total.spec.passthrough)


def test_model_n_is_the_view_length():
    x = np.arange(1000, dtype=np.int64)
    values = total._check_args((x,), {})
    assert values == {"a": x, "a__o": 0, "a__n": 1000}
    plan = total.options(machine=hpu.model.Machine(p=2, g=64, gamma=0.1)).plan(x)
    assert plan.n == 1000


def test_scalar_for_a_sliced_parameter_is_refused():
    with pytest.raises(TypeError, match="parameter 'a' received int 5.*indexes it as an array"):
        total(5)
    total_vv = REFERENCES["total_vv"][0]           # slices a but never indexes it itself
    with pytest.raises(TypeError, match="parameter 'a' received int 5.*slices it as an array"):
        total_vv(5)


# ---------------------------------------------------------------- refusals

def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(lines) if text in s)


def _refused(fn, text, *match):
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(b=2, cost="1")(fn)
    err = info.value
    assert err.filename == __file__
    assert err.lineno == _line_of(fn, text), str(err)
    for m in match:
        assert m in str(err), str(err)
    return err


def half(n):
    return n // 2


def step_sum(a):
    if len(a) <= 1:
        return 0
    s1 = step_sum(a[::2])
    s2 = step_sum(a[1::2])
    return s1 + s2


def step_zero(a, lo, hi):
    if hi - lo <= 1:
        return 0
    a[lo + 1:hi:2] = 0  # marker
    mid = (lo + hi) // 2
    return step_zero(a, lo, mid) + step_zero(a, mid, hi)


def test_a_slice_with_a_step_read_runs_as_numba_compiles_it():
    """Read, a strided view is NumPy's (compiled as written, on the CPU): the plain answer."""
    a = np.arange(37)
    run = hpu.divide_and_conquer(step_sum).options(device="cpu").run(a)
    assert run.value == step_sum(a) == 0 and run.device != "python"
    b = np.arange(1, 38)
    assert hpu.divide_and_conquer(step_sum)(b) == step_sum(b)


def test_a_store_through_a_step_slice_is_refused():
    _refused(step_zero, "# marker", "with a step", "range(lo + 1, hi, 2)")


def slice_scalar(a):
    if len(a) <= 1:
        return 0
    k = len(a)
    s1 = slice_scalar(k[1:])  # marker
    s2 = slice_scalar(a[1:])
    return s1 + s2


def test_slicing_a_non_parameter_is_refused():
    _refused(slice_scalar, "# marker", "slicing 'k'", "not an array parameter")


def returns_view(a):
    if len(a) <= 1:
        return a[:1]  # marker
    m = len(a) // 2
    s1 = returns_view(a[:m])
    s2 = returns_view(a[m:])
    return s1


def test_returning_a_view_is_refused():
    _refused(returns_view, "# marker", "the view `a[:1]` used here")


def rebinds_param(a):
    if len(a) <= 1:
        return 0
    a = a[1:]  # marker
    s1 = rebinds_param(a)
    s2 = rebinds_param(a)
    return s1 + s2


def test_reassigning_a_parameter_to_a_view_is_refused():
    _refused(rebinds_param, "# marker", "reassigning the array parameter 'a' to a view",
             "a_part = a[1:]")


def view_then_number(a):
    if len(a) <= 1:
        return 0
    m = len(a) // 2
    left = a[:m]
    s1 = view_then_number(left)
    s2 = view_then_number(a[m:])
    left = 3  # marker
    return s1 + s2 + left


def test_a_view_name_reused_for_a_number_is_refused():
    _refused(view_then_number, "# marker", "assigning something other than a view to 'left'")


def helper_in_bound(a):
    if len(a) <= 1:
        return 0
    s1 = helper_in_bound(a[:half(len(a))])  # marker
    s2 = helper_in_bound(a[half(len(a)):])
    return s1 + s2


def test_helper_call_in_a_slice_bound_is_refused():
    _refused(helper_in_bound, "# marker", "a helper call in a slice bound",
             "Compute it into a name")


def second_axis(a):
    if a.shape[1] <= 1:  # marker
        return 0
    s1 = second_axis(a[:1])
    s2 = second_axis(a[1:])
    return s1 + s2


def test_second_axis_is_refused():
    _refused(second_axis, "# marker", "hpu arrays are 1-D")


def view_in_arithmetic(a):
    if len(a) <= 1:
        return 0
    m = len(a) // 2
    s1 = view_in_arithmetic(a[:m])
    s2 = view_in_arithmetic(a[m:])
    return s1 + s2 + a  # marker


def test_a_view_used_as_a_value_is_refused():
    _refused(view_in_arithmetic, "# marker", "the view `a` used as a value")


def positives_by_where(a):
    if len(a) <= 4:
        return int(np.sum(np.where(a > 0, 1, 0)))  # where-marker
    m = len(a) // 2
    return positives_by_where(a[:m]) + positives_by_where(a[m:])


def median_of_medians(a, lo, hi):
    if hi - lo <= 8:
        return np.median(a[lo:hi])  # median-marker
    m = (lo + hi) // 2
    return max(median_of_medians(a, lo, m), median_of_medians(a, m, hi))


def _spread(v):
    return float(np.ptp(v))  # ptp-marker


def widest(a):
    if len(a) <= 8:
        return _spread(a)
    m = len(a) // 2
    return max(widest(a[:m]), widest(a[m:]))


@pytest.mark.parametrize("fn, marker, call", [
    (positives_by_where, "# where-marker", "np.where(a > 0, 1, 0)"),
    (median_of_medians, "# median-marker", "np.median(a[lo:hi])"),
    (widest, None, "np.ptp(v)"),
])
def test_a_library_function_of_a_view_runs_as_written(fn, marker, call):
    """np.where / np.median / np.ptp of a view (in the function or a helper): hpu has no
    loop for them, Numba compiles them as written -- so the function is accepted at
    decoration and runs compiled as written on the CPU, with Python's answer on every
    device (it was refused, with the rewrite `b = a.copy()` that does the same)."""
    dc = hpu.divide_and_conquer(fn)
    assert repr(dc).endswith(": functional>")
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 9, 1001, 40_000):
        x = rng.integers(-50, 50, n).astype(np.float64)
        args = (x, 0, n) if fn is median_of_medians else (x,)
        want = fn(*(v.copy() if isinstance(v, np.ndarray) else v for v in args))
        for device in ("cpu", "gpu", "hybrid"):
            given = tuple(v.copy() if isinstance(v, np.ndarray) else v for v in args)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = dc.options(device=device).run(*given)
            # a NumPy float64 comes back as Numba boxes it, a float (guide §10)
            kind = float if isinstance(want, np.float64) else type(want)
            assert run.value == want and isinstance(run.value, kind), (n, device)
            assert np.array_equal(given[0], x)
            if device != "cpu" and n >= 40_000:
                said = " ".join(run.fallbacks)
                assert call in said, said
                assert "hpu_" not in said, said
                if marker is not None:
                    assert f"line {_line_of(fn, marker)}" in said, said


# ---------------------------------------------------------------- transfers

def _halves(n, y):
    """The views of level y when every task splits a[:len//2], a[len//2:] (base cases kept)."""
    out = [(0, n)]
    for _ in range(y):
        out = [part for lo, hi in out for part in
               ([(lo, lo + (hi - lo) // 2), (lo + (hi - lo) // 2, hi)] if hi - lo > 1
                else [(lo, hi)])]
    return out


@pytest.mark.opencl
@pytest.mark.parametrize("alpha, y", [(0.5, 3), (0.25, 2), (0.0, 1)])
def test_a_discrete_device_gets_exactly_its_views(discrete, alpha, y):
    """Without span=, the device's tasks' views bound what goes over and comes back."""
    x = np.random.default_rng(5).integers(-10**6, 10**6, 20_001).astype(np.int64)
    a, tmp = x.copy(), np.zeros_like(x)
    run = msort.run(a, tmp, device="hybrid", alpha=alpha, y=y)
    assert np.array_equal(a, np.sort(x, kind="stable"))
    assert len(discrete) == 1 and run.fallbacks == [] and run.gpu_tasks > 0
    views = _halves(x.size, y)
    s = min(len(views), int(np.ceil(alpha * len(views) - 1e-12)))
    lo, hi = views[s][0], views[-1][1]
    back = {t.direction: t.bytes for t in run.transfers}["device->host"]
    assert back == 2 * (hi - lo) * x.itemsize    # a and tmp, nothing else (no results)
    assert hi == x.size and (lo == 0) == (alpha == 0.0)


def two_arrays_one_name(a, b):
    if len(a) <= 1:
        return 0
    m = len(a) // 2
    part = a[:m]
    if m > 2:
        part = b[:m]  # marker
    s1 = two_arrays_one_name(part, b)
    s2 = two_arrays_one_name(a[m:], b)
    return s1 + s2


def test_one_name_for_views_of_two_arrays_is_refused():
    _refused(two_arrays_one_name, "# marker", "the view 'part' of two different arrays")


def shape_whole(a):
    if len(a) <= 1:
        return 0
    n = a.shape  # marker
    s1 = shape_whole(a[:1])
    s2 = shape_whole(a[1:])
    return s1 + s2


def test_the_whole_shape_is_refused():
    _refused(shape_whole, "# marker", "`a.shape` as a whole", "len(")


def with_default(x, k=0):
    return x[k]


def calls_with_default(a):
    if len(a) <= 1:
        return with_default(a[:1])
    s1 = calls_with_default(a[:1])
    s2 = calls_with_default(a[1:])
    return s1 + s2


def test_a_default_after_a_view_parameter_is_kept():
    f = hpu.divide_and_conquer(b=2, cost="1")(calls_with_default)
    x = np.arange(5, 12, dtype=np.int64)
    assert f.sequential(x) == f.py_func(x) == int(x.sum())


def view_with_default(k, x=None):
    return x[k]


def calls_view_with_default(a):
    if len(a) <= 1:
        return view_with_default(0, a[:1])
    s1 = calls_view_with_default(a[:1])
    s2 = calls_view_with_default(a[1:])
    return s1 + s2


def test_a_default_on_a_view_parameter_is_refused():
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(b=2, cost="1")(calls_view_with_default)
    assert info.value.filename == __file__
    assert info.value.lineno == inspect.getsourcelines(view_with_default)[1]
    assert "a default value for the view parameter 'x'" in str(info.value)


def test_messages_give_a_views_length_as_len_of_it():
    """An error's expression shows ``len(left)``, not the hidden ``left__n`` it became."""
    import ast

    from hpu._views import display

    assert display(ast.parse("inv // (left__n - 1)", mode="eval").body) == \
        "inv // (len(left) - 1)"
    assert display(ast.parse("a[i] + hi__o", mode="eval").body) == "a[i] + hi__o"


# ---------------------------------------------------------------- slice assignment

def _copies_on_every_path(x):
    shifts = slice_examples.shifts
    want_a = x.copy()
    want = shifts.py_func(want_a, 0, len(want_a))
    runs = {}
    for device, alpha, y in PATHS:
        xd = x.copy()
        runs[device, alpha] = run = shifts.run(xd, 0, len(xd), **_options(device, alpha, y))
        assert run.value == want, (device, alpha, y, x.size)
        assert np.array_equal(xd, want_a), (device, alpha, y, x.size)
    return runs


@pytest.mark.opencl
@settings(COMPILES, max_examples=4)
@given(x=st.lists(st.integers(-1000, 1000), min_size=0, max_size=300))
def test_slice_assignments_copy_as_numpy_does_on_every_path(x):
    """Overlapping views of one array in both directions, a scalar stored in a slice, a
    one-element source broadcast, an empty slice: NumPy's answer on every path."""
    _copies_on_every_path(np.array(x, dtype=np.int64))


@pytest.mark.opencl
def test_slice_assignments_run_on_the_device():
    x = np.random.default_rng(9).integers(-1000, 1000, 4097).astype(np.int64)
    runs = _copies_on_every_path(x)
    for key in [("gpu", None), ("hybrid", 0.0), ("hybrid", 0.5)]:
        assert runs[key].gpu_tasks > 0 and runs[key].fallbacks == [], key


@pytest.mark.opencl
@pytest.mark.parametrize("alpha, y", [(0.5, 2), (0.0, 1)])
def test_a_merge_with_tails_copied_by_slices_on_a_discrete_device(discrete, alpha, y):
    x = np.random.default_rng(6).integers(-10**6, 10**6, 5001).astype(np.int64)
    a, tmp = x.copy(), np.zeros_like(x)
    run = slice_examples.msort_tails.run(a, tmp, device="hybrid", alpha=alpha, y=y)
    assert np.array_equal(a, np.sort(x, kind="stable"))
    assert len(discrete) == 1 and run.fallbacks == [] and run.gpu_tasks > 0


def lengths_differ(a, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    s = lengths_differ(a, lo, mid) + lengths_differ(a, mid, hi)
    if hi - lo == 5:
        a[lo:hi] = a[lo:mid]  # marker
    return s + 1


@pytest.mark.opencl
@pytest.mark.parametrize("boundscheck", [False, True])
def test_a_slice_assignment_of_another_length_raises_numpys_error_on_every_path(boundscheck):
    x = np.arange(640)                       # 640 = 5 * 2**7: 128 slices of length 5
    with pytest.raises(ValueError) as plain:
        lengths_differ(x.copy(), 0, 640)
    text = (f"{__file__}:{_line_of(lengths_differ, '# marker')}: a[lo:hi] = a[lo:mid]: "
            f"{plain.value}")
    assert str(plain.value) == "could not broadcast input array from shape (2,) into shape (5,)"
    f = hpu.divide_and_conquer(boundscheck=boundscheck)(lengths_differ)
    for device, alpha, y in [("cpu", None, None), ("gpu", None, None), ("hybrid", 0.0, 1),
                             ("hybrid", 0.5, 3)]:
        with pytest.raises(ValueError) as got:
            f.run(x.copy(), 0, 640, **_options(device, alpha, y))
        assert str(got.value) == text, (device, alpha, y)


def augmented_slice(a, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    s = augmented_slice(a, lo, mid) + augmented_slice(a, mid, hi)
    a[lo:hi] += 1  # marker
    return s


def slice_arithmetic(a, b, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    s = slice_arithmetic(a, b, lo, mid) + slice_arithmetic(a, b, mid, hi)
    a[lo:hi] = b[lo:hi] * 2  # marker
    return s


def array_update(a, b, lo, hi):
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    s = array_update(a, b, lo, mid) + array_update(a, b, mid, hi)
    a[lo:hi] += b[lo:hi]  # marker
    return s


def test_slice_assignments_that_compute_are_refused():
    """Arithmetic on views stays refused; ``a[lo:hi] += 1`` (a scalar) is each element's
    update (test_an_augmented_assignment_to_a_slice_updates_each_element)."""
    _refused(slice_arithmetic, "# marker", "the view `b[lo:hi]` used here")
    _refused(array_update, "# marker", "the view `a[lo:hi]` used here")
    f = hpu.divide_and_conquer(augmented_slice)
    x = np.arange(50)
    ref = x.copy()
    assert f(x, 0, 50) == augmented_slice(ref, 0, 50) and np.array_equal(x, ref)


def copy_back(out, src, lo, hi):
    out[lo:hi] = src[lo:hi]  # marker


def fills(out, src, lo, hi):
    if hi - lo <= 2:
        copy_back(out, src, lo, hi)
        return
    mid = (lo + hi) // 2
    fills(out, src, lo, mid)
    fills(out, src, mid, hi)
    out[lo:lo + 1] = src[lo:lo + 1]  # marker


def helper_fills(out, src, lo, hi):
    """``fills`` with its copies in the helper only."""
    if hi - lo <= 2:
        copy_back(out, src, lo, hi)
        return
    mid = (lo + hi) // 2
    helper_fills(out, src, lo, mid)
    helper_fills(out, src, mid, hi)


def test_a_slice_copy_into_a_narrower_array_is_refused_naming_the_statement():
    """float64 into int64 by slice assignment: refused at the call as an element copy is,
    naming the statement as written (not hpu's loop), in the function and in a helper."""
    from hpu import ArrayMismatchError

    f = hpu.divide_and_conquer(fills)
    src = np.arange(8) * 1.5
    with pytest.raises(ArrayMismatchError) as info:
        f.run(np.zeros(8, np.int64), src, 0, 8, device="cpu")
    text = str(info.value)
    assert "hpu__" not in text and "copies src (float64 values) into out (int64)" in text, text
    assert text.startswith(f"{__file__}:{_line_of(fills, '# marker')}: "
                           "out[lo:lo + 1] = src[lo:lo + 1]: copies"), text
    g = hpu.divide_and_conquer(helper_fills)
    with pytest.raises(ArrayMismatchError) as info:
        g.run(np.zeros(8, np.int64), src, 0, 8, device="cpu")
    assert str(info.value).startswith(f"{__file__}:{_line_of(copy_back, '# marker')}: in "
                                      "copy_back(): out[lo:hi] = src[lo:hi]: copies")
    out = np.zeros(8)
    f.run(out, src, 0, 8, device="cpu")
    want = np.zeros(8)
    fills(want, src, 0, 8)
    assert np.array_equal(out, want)


def sort_method_cutoff(a, lo, hi):
    if hi - lo <= 8:
        a[lo:hi].sort()  # marker
        return
    mid = (lo + hi) // 2
    sort_method_cutoff(a, lo, mid)
    sort_method_cutoff(a, mid, hi)


def sort_cutoff(a, tmp, lo, hi):
    if hi - lo <= 8:
        a[lo:hi] = np.sort(a[lo:hi])
        return
    mid = (lo + hi) // 2
    sort_cutoff(a, tmp, lo, mid)
    sort_cutoff(a, tmp, mid, hi)
    i, j, k = lo, mid, lo
    while i < mid and j < hi:
        if a[j] < a[i]:
            tmp[k] = a[j]
            j += 1
        else:
            tmp[k] = a[i]
            i += 1
        k += 1
    tmp[k:k + mid - i] = a[i:mid]
    tmp[k + mid - i:hi] = a[j:hi]
    a[lo:hi] = tmp[lo:hi]


def test_sorting_a_slice_in_place_is_refused_with_the_rewrite_that_runs():
    """``a[lo:hi].sort()`` has no device form: refused, giving ``a[lo:hi] =
    np.sort(a[lo:hi])``, which runs (NumPy's sort makes an array: the function compiled by
    Numba as written, on the CPU, whatever the device asked for)."""
    _refused(sort_method_cutoff, "# marker", "sorting in place with `a[lo:hi].sort()`",
             "a[lo:hi] = np.sort(a[lo:hi])")
    f = hpu.divide_and_conquer(sort_cutoff)
    x = np.random.default_rng(2).standard_normal(3001)
    for device in ("cpu", "gpu"):
        a = x.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
            f.run(a, np.zeros_like(a), 0, len(a), device=device)
        assert np.array_equal(a, np.sort(x))


def mark_ends(a, lo, hi):
    part = a[lo:hi]
    part[0] = part[0] + 1               # an element store through a local view
    part[len(part) - 1] = -part[len(part) - 1]
    return len(part)


@hpu.divide_and_conquer(b=2, cost="1")
def marks(a, lo, hi):
    if hi - lo <= 2:
        return mark_ends(a, lo, hi)
    mid = (lo + hi) // 2
    here = a[lo:hi]
    here[mid - lo] = here[mid - lo] * 2     # and in the function itself
    return marks(a, lo, mid) + marks(a, mid, hi)


@pytest.mark.opencl
@pytest.mark.parametrize("device, alpha, y", PATHS[:3])
@pytest.mark.parametrize("n", [2, 17, 3001])
def test_elements_stored_through_a_local_view_on_every_path(device, alpha, y, n):
    """``part = a[lo:hi]; part[0] = ...`` was refused as "assigning something other than a
    view to 'part'" (the names read inside a store's target counted as bound)."""
    x = np.random.default_rng(n).integers(-99, 99, n).astype(np.int64)
    want = x.copy()
    value = marks.py_func(want, 0, n)
    got = x.copy()
    run = marks.run(got, 0, n, **_options(device, alpha, y))
    assert run.value == value and np.array_equal(got, want)


def prefix_by_slices(a, lo, hi):
    """The right half's sums raised by the left half's total: `+=` on a slice."""
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    prefix_by_slices(a, lo, mid)
    prefix_by_slices(a, mid, hi)
    a[mid:hi] += a[mid - 1]


def scale_right(a, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    scale_right(a, lo, mid)
    scale_right(a, mid, hi)
    a[mid:hi] *= 3
    a[lo:mid] -= min(a[lo], 2)


_SLICE_UPDATES = {f.__name__: hpu.divide_and_conquer(f) for f in (prefix_by_slices,
                                                                  scale_right)}


@pytest.mark.opencl
@pytest.mark.parametrize("name", sorted(_SLICE_UPDATES))
@pytest.mark.parametrize("device, kw", [("cpu", {}), ("gpu", {}),
                                        ("hybrid", {"alpha": 0.5, "y": 2})])
@settings(COMPILES, max_examples=4)
@given(xs=st.lists(st.integers(-9, 9), min_size=0, max_size=300))
def test_an_augmented_assignment_to_a_slice_updates_each_element(name, device, kw, xs):
    """``a[mid:hi] += a[mid - 1]`` was refused ("the view used here"): it is NumPy's update
    of each element, the value read once first; the same array as Python leaves it."""
    f = _SLICE_UPDATES[name]
    x = np.array(xs, dtype=np.int64)
    ref = x.copy()
    f.py_func(ref, 0, ref.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f.run(x, 0, x.size, device=device, **kw)
    assert np.array_equal(x, ref)


def _pick(v, idx, i):
    return v[idx[i]]


@hpu.divide_and_conquer
def gather_unsigned(a, idx):
    if len(a) <= 4:
        s = 0
        for i in range(len(idx)):
            s += _pick(a, idx, i)
        return s
    m = len(a) // 2
    return gather_unsigned(a[:m], idx) + gather_unsigned(a[m:], idx)


@pytest.mark.parametrize("dtype", [np.uint64, np.uint8, np.int32])
def test_a_view_indexed_by_an_unsigned_integer(dtype):
    """``v[idx[i]]`` with ``idx`` a uint64 array: NumPy takes it; the view's place in its
    base array, int64 offset plus uint64 index, was a float64 in Numba, which no array
    takes (a TranslationError naming getitem of a float64)."""
    a = np.array([2, 3, 5, 10, 7, 1, 4, 8], dtype=np.int64)
    idx = np.array([0, 1, 3, 2], dtype=dtype)
    want = gather_unsigned.py_func(a.copy(), idx)
    assert gather_unsigned.sequential(a.copy(), idx) == want
    assert gather_unsigned.run(a.copy(), idx, device="cpu").value == want
    assert gather_unsigned.run(a.copy(), idx, device="gpu").value == want
