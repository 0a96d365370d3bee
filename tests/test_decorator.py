"""The decorated object: calling conventions, argument checks, devices, the debug switch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dc_examples as E
import functional_examples
import hpu


def test_bare_and_with_options():
    @hpu.divide_and_conquer
    def bare(a, lo, hi):
        if hi - lo <= 1:
            return
        mid = (lo + hi) // 2
        bare(a, lo, mid)
        bare(a, mid, hi)

    assert isinstance(bare, hpu.DivideAndConquer)
    assert bare.spec.b == 2 and bare.spec.cost == "n" and bare.spec.span is None
    assert E.sum3.spec.a == 3 and E.sum3.spec.b == 3 and E.sum3.spec.cost == "1"
    assert E.mergesort.spec.span == ("lo", "hi")
    assert E.mergesort.__name__ == "mergesort" and "In place" in E.mergesort.__doc__
    assert "mergesort" in repr(E.mergesort) and "a=2" in repr(E.mergesort)


def test_positional_options_are_refused():
    with pytest.raises(TypeError, match="keyword-only"):
        hpu.divide_and_conquer(2)


def test_py_func_is_the_original_and_runs_in_plain_python():
    import inspect

    assert inspect.getsource(E.mergesort.py_func).lstrip().startswith("@hpu.divide_and_conquer")
    x = np.array([5, 3, 9, 1, 1, 0, 7, 2, 8, 6, 4, 3])
    a = x.copy()
    assert E.mergesort.py_func(a, np.empty_like(a), 0, len(a)) is None
    np.testing.assert_array_equal(a, np.sort(x))
    # the original's recursive calls stay in Python: no specialisation is created for them
    fresh = hpu.divide_and_conquer(E.dsum.py_func)
    assert fresh.py_func(x, 0, len(x)) == x.sum()
    assert fresh._programs == {}


def test_calling_returns_what_the_original_returns():
    x = np.arange(-50, 50)
    assert E.dsum(x, 0, len(x)) == E.dsum.py_func(x, 0, len(x)) == x.sum()
    assert E.maxsub(x, 0, len(x)) == E.ref_maxsub(x)
    assert E.is_sorted(x, 0, len(x)) is True
    assert E.sumsq(x.astype(float), hi=len(x), lo=0, scale=2.0) == pytest.approx(
        2.0 * float((x.astype(float) ** 2).sum()))
    a = x[::-1].copy()
    assert E.mergesort(a, np.empty_like(a), 0, len(a)) is None
    np.testing.assert_array_equal(a, x)


def test_sequential_is_the_compiled_original():
    x = np.random.default_rng(0).integers(-9, 9, 777)
    assert E.maxsub.sequential(x, 0, len(x)) == E.ref_maxsub(x)
    a = x.copy()
    E.mergesort.sequential(a, np.empty_like(a), 0, len(a))
    np.testing.assert_array_equal(a, np.sort(x))
    program, _ = E.maxsub._program_for(x, 0, len(x))
    assert program.function.py_func is not E.maxsub.py_func  # compiled from the generated copy


def _line_of(tag: str) -> int:
    with open(__file__) as fh:
        return next(k for k, t in enumerate(fh, 1) if t.rstrip().endswith(f"# {tag}"))


def zero_at_a_leaf(a, lo, hi):
    if hi - lo <= 1:
        return 1 // (a[lo] - 7)   # LINE_ZERO_LEAF
    mid = (lo + hi) // 2
    return zero_at_a_leaf(a, lo, mid) + zero_at_a_leaf(a, mid, hi)


def bump_chain(a, lo, hi):
    if hi - lo <= 1:
        if hi > lo:
            a[lo] += 1
        return 0
    bump_chain(a, lo, lo + 1)     # one element, then the rest: n calls deep
    return bump_chain(a, lo + 1, hi)


def test_native_recursion_answers_before_the_growable_stack_solver_is_compiled():
    """``.sequential`` of small arguments and the rerun that finds a task's error in Python's
    order run the core module's recursion, compiled with the program: the solver that
    continues a recursion past native depth on a growable stack (more compilation than the
    rest of the module) is built only for a call that goes that deep, which runs again from
    the arguments as they were."""
    x = np.arange(64)
    f = hpu.divide_and_conquer(b=2, cost="1")(zero_at_a_leaf)
    y = x + 8
    assert f.sequential(y, 0, len(y)) == zero_at_a_leaf(y, 0, len(y))
    with pytest.raises(ZeroDivisionError) as err:
        f.run(x, 0, len(x), device="cpu", K=3)
    assert f"test_decorator.py:{_line_of('LINE_ZERO_LEAF')}" in str(err.value), err.value
    program, _ = f._program_for(x, 0, len(x))
    assert not program.has_deep_module
    g = hpu.divide_and_conquer(b=2, cost="1")(bump_chain)
    a = np.arange(6000)          # past hpu._guard.NATIVE_DEPTH calls
    assert g.sequential(a, 0, len(a)) == 0
    np.testing.assert_array_equal(a, np.arange(6000) + 1)   # each element bumped once
    program, _ = g._program_for(a, 0, len(a))
    assert program.has_deep_module


@pytest.mark.parametrize("device", ["gpu", "hybrid"])
def test_gpu_and_hybrid_run_and_agree_with_numpy(device):
    x = np.arange(1000)[::-1].copy()
    run = E.mergesort.run(x, np.empty_like(x), 0, len(x), device=device,
                          **({"alpha": 0.5, "y": 2} if device == "hybrid" else {}))
    np.testing.assert_array_equal(x, np.arange(1000))
    assert run.device == device and run.gpu_tasks > 0 and run.fallbacks == []


def test_the_default_device_is_hybrid():
    from hpu._options import RUN_OPTIONS

    assert RUN_OPTIONS["device"].default == "hybrid"
    x = np.arange(500)[::-1].copy()
    assert E.mergesort(x, np.empty_like(x), 0, len(x)) is None
    np.testing.assert_array_equal(x, np.arange(500))


def test_device_and_split_options_are_checked():
    x = np.arange(10)
    with pytest.raises(ValueError, match="device='tpu'"):
        E.dsum.run(x, 0, 10, device="tpu")
    with pytest.raises(ValueError, match="alpha=0.5 applies only"):
        E.dsum.run(x, 0, 10, alpha=0.5, device="cpu")
    with pytest.raises(ValueError, match="y=3 applies only"):
        E.dsum.run(x, 0, 10, y=3, device="cpu")
    with pytest.raises(ValueError, match="K=-1"):
        E.dsum.run(x, 0, 10, K=-1)
    with pytest.raises(ValueError, match="alpha=1.5 must be a number in"):
        E.dsum.run(x, 0, 10, alpha=1.5, y=2)
    with pytest.raises(ValueError, match="y=-1 must be an int"):
        E.dsum.run(x, 0, 10, alpha=0.5, y=-1)
    with pytest.raises(ValueError, match="device='gpu' runs every leaf"):
        E.dsum.run(x, 0, 10, alpha=0.5, device="gpu")
    with pytest.raises(ValueError, match="strategy='fast'"):
        E.dsum.run(x, 0, 10, strategy="fast")
    assert E.dsum.run(x, 0, 10, alpha=1.0, device="cpu").value == 45


def _untouched(f, args, exc, match):
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(exc, match=match):
        f(*args)
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def _unlaid(case):
    """Arguments of E.mergesort holding an array the breadth-first path does not lay out,
    made afresh each time, and the arrays that hold what the call writes."""
    x = np.arange(20, dtype=np.int64)[::-1].copy()
    t = np.zeros_like(x)
    if case == "2-D a":
        return (x.reshape(4, 5), t, 0, 4), (x, t)
    if case == "strided tmp":
        t2 = np.zeros(40, np.int64)
        return (x[:10].copy(), t2[::2], 0, 10), (t2,)
    if case == "strided a":
        x2 = np.repeat(x, 2)
        return (x2[::2], t, 0, 20), (x2, t)
    if case == "complex128":
        c = x.astype(np.complex128) * (1 - 1j)
        return (c, np.zeros_like(c), 0, 20), (c,)
    if case == "float16":
        h = x.astype(np.float16) / 4
        return (h, np.zeros_like(h), 0, 20), (h,)
    swapped = x.astype(x.dtype.newbyteorder())      # another machine's byte order
    return (swapped, t, 0, 20), (swapped,)


_FIXES = {"2-D a": ("'a'", "ravel"), "strided tmp": ("'tmp'", "ascontiguousarray"),
          "strided a": ("'a'", "ascontiguousarray"), "complex128": ("'a'", "astype"),
          "float16": ("'a'", "astype"), "byte order": ("'a'", "newbyteorder('=')")}


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@pytest.mark.parametrize("case", sorted(_FIXES))
def test_arrays_the_breadth_first_path_does_not_take_give_the_plain_answer(case, device):
    """A 2-D array, a strided view, complex or float16 keys, another byte order: the plain
    function takes them all, so the call runs the function compiled by Numba as written
    (the plain function where Numba cannot compile it) and gives Python's result or
    raises Python's exception -- the arrays left as they were then -- with a warning that
    names the parameter and the conversion that runs it breadth-first."""
    args, written = _unlaid(case)
    try:
        E.mergesort.py_func(*args)
        want = None
    except Exception as err:  # noqa: BLE001 - Python's own, compared below
        want = type(err)
    wanted = [w.copy() for w in written]
    args, written = _unlaid(case)
    before = [w.copy() for w in written]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if want is None:
            E.mergesort.options(device=device).run(*args)
        else:
            with pytest.raises(want):
                E.mergesort.options(device=device).run(*args)
    for got, ran, was in zip(written, wanted, before):
        assert np.array_equal(got, ran if want is None else was), (case, got)
    if device != "cpu":                 # (asked for the CPU, a plain run warns only)
        said = " ".join(str(w.message) for w in caught)
        param, fix = _FIXES[case]
        assert f"as {param}" in said and fix in said, said


def test_bad_arrays_are_refused_naming_parameter_value_and_fix():
    x = np.arange(20, dtype=np.int64)[::-1].copy()
    t = np.empty_like(x)
    mask = x > 3       # a bool array: compiled as written (test_a_bool_mask_runs_...)
    E.mergesort(mask, t, 0, 20)
    assert mask.tolist() == sorted((x > 3).tolist())
    ro = x.copy()
    ro.flags.writeable = False
    _untouched(E.mergesort, (ro, t, 0, 20), ValueError,
               r"parameter 'a' is read-only.*writes to it.*copy\(\)")
    listed = [int(v) for v in x]        # a list it writes: sorted in place, as in Python
    with pytest.warns(hpu.HpuPerformanceWarning, match="was given a list"):
        E.mergesort(listed, t.copy(), 0, 20)
    assert listed == sorted(x.tolist())
    _untouched(E.mergesort, (x, t, 0, 20.5), TypeError, r"'hi' is named in span")
    _untouched(E.mergesort, (x, t, 0, x), TypeError, r"parameter 'hi' received an array")
    with pytest.warns(hpu.HpuPerformanceWarning, match="beyond 64 bits"):
        # the plain function, as Python's ints need: its IndexError, the arrays put back
        _untouched(E.mergesort, (x, t, 0, 2**70), IndexError, "index 20 is out of bounds")
    _untouched(E.mergesort, (x, t, np.array(0), 20), ValueError, r"0-d array.*item\(\)")
    _untouched(E.mergesort, (x, t, 0), TypeError, r"mergesort\(\): missing")
    _untouched(E.mergesort, (x, t, 0, 20, 5), TypeError, r"mergesort\(\): too many")
    _untouched(E.mergesort, (x, t, 0, "20"), TypeError, r"received str")


def _merge_to(src, dst, lo, mid, hi):
    i, j = lo, mid + 1
    for k in range(lo, hi + 1):
        if i > mid:
            dst[k] = src[j]; j += 1
        elif j > hi:
            dst[k] = src[i]; i += 1
        elif src[j] < src[i]:
            dst[k] = src[j]; j += 1
        else:
            dst[k] = src[i]; i += 1


@hpu.divide_and_conquer
def sedgewick_sort(src, dst, lo, hi):
    """Sedgewick's merge sort without copies: src and dst swap roles at each level."""
    if hi <= lo:
        return
    mid = lo + (hi - lo) // 2
    sedgewick_sort(dst, src, lo, mid)
    sedgewick_sort(dst, src, mid + 1, hi)
    _merge_to(src, dst, lo, mid, hi)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 1001])
def test_arrays_that_swap_roles_between_calls_run_as_written(device, n):
    """Arrays a recursive call passes in each other's places (the breadth-first path passes
    each one down unchanged): the function compiled as written, one call on the CPU --
    Python's sorted dst, never the TypeError every call raised before -- and, asked for
    another device, the warning naming the parameter and the line."""
    x = np.random.default_rng(n).integers(-50, 50, n)
    want_src, want_dst = x.copy(), x.copy()
    sedgewick_sort.py_func(want_src, want_dst, 0, n - 1)
    src, dst = x.copy(), x.copy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = sedgewick_sort.options(device=device).run(src, dst, 0, n - 1)
    assert run.value is None and run.gpu_tasks == 0
    assert np.array_equal(src, want_src) and np.array_equal(dst, want_dst)
    assert dst.tolist() == sorted(x.tolist())
    assert "'src', which its recursive calls change (line" in run.reason
    assert (device == "cpu") != any("swap roles" in str(w.message) for w in caught)
    src, dst = x.copy(), x.copy()
    sedgewick_sort.sequential(src, dst, 0, n - 1)
    assert np.array_equal(dst, want_dst)
    assert sedgewick_sort.plan(src, dst, 0, n - 1).device == "cpu"


def test_read_only_arrays_are_fine_when_never_written():
    x = np.arange(-10, 30)
    x.flags.writeable = False
    assert E.maxsub(x, 0, len(x)) == E.ref_maxsub(x)
    assert E.dsum.run(x, 0, len(x), K=2).value == x.sum()


def test_numpy_scalars_are_accepted():
    x = np.arange(30, dtype=np.int16)
    assert E.dsum(x, np.int32(0), np.uint8(30)) == x.sum()
    assert E.count8(x, np.int64(0), 30, np.float32(10.5)) == int((x > 10.5).sum())
    assert E.count8(x, 0, 30, True) == int((x > 1).sum())


def test_the_disable_switch_runs_the_plain_function(monkeypatch):
    x = np.arange(40)[::-1].copy()
    monkeypatch.setenv("HPU_DISABLE", "1")
    fresh = hpu.divide_and_conquer(E.dsum.py_func)
    assert fresh._spec is None  # not even parsed
    assert fresh(x, 0, 40) == x.sum()
    run = fresh.run(x, 0, 40)
    assert run.device == "python" and run.value == x.sum() and run.levels == ()
    assert fresh.sequential(x, 0, 40) == x.sum()
    assert fresh._programs == {}
    monkeypatch.setenv("HPU_DISABLE", "0")
    assert fresh.run(x, 0, 40).device == "hybrid"  # the default, compiled again
    assert fresh._programs != {}


def test_a_refused_function_can_still_run_as_python_when_disabled(monkeypatch):
    monkeypatch.setenv("HPU_DISABLE", "1")

    def single(a, n):
        if n <= 0:
            return 0
        return a[n - 1] + single(a, n - 1)

    f = hpu.divide_and_conquer(single)
    assert f(np.arange(5), 5) == 10
    monkeypatch.delenv("HPU_DISABLE")
    with pytest.raises(hpu.TranslationError):
        f.spec


def test_run_report_is_a_frozen_dataclass():
    import dataclasses

    x = np.arange(100)
    run = E.dsum.run(x, 0, 100)
    assert isinstance(run, hpu.Run)
    assert all(isinstance(r, hpu.LevelRecord) for r in run.levels)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.value = 3
    assert "cpu" in run.summary() and run.level_seconds() <= run.seconds


def test_plan_uses_the_model_with_n_from_span():
    from hpu import model

    x = np.arange(1 << 12)
    machine = model.Machine(p=4, g=4096, gamma=1 / 160)
    plan = E.mergesort.plan(x, np.empty_like(x), 100, 100 + 1024, machine=machine)
    assert plan.n == 1024 and plan.a == 2 and plan.b == 2 and plan.cost == "n"
    direct = model.plan(model.Problem(2, 2, "n", 1024), machine, "advanced", element_bytes=8)
    assert plan == direct
    plan3 = E.sum3.plan(x.astype(float), 0, len(x), machine=machine, strategy="basic")
    assert plan3.a == 3 and plan3.b == 3 and plan3.n == len(x)


def test_memory_on_the_breadth_first_path_counts_the_snapshot():
    """An in-place run allocates no result, but copies what it writes to put it back on an
    error (keep_inputs): the peak says so, and keep_inputs=False drops it."""
    x = np.random.default_rng(0).integers(0, 1000, 1 << 16)
    t = np.empty_like(x)
    E.mergesort.run(x.copy(), t, 0, x.size, device="cpu")
    kept = E.mergesort.run(x.copy(), t, 0, x.size, device="cpu", memory=True).peak_memory
    bare = E.mergesort.run(x.copy(), t, 0, x.size, device="cpu", memory=True,
                           keep_inputs=False).peak_memory
    assert kept >= 2 * x.nbytes > bare >= 0


def _returns_its_array(a):
    return a


def _adds_an_array(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return _adds_an_array(a, lo, mid) + _adds_an_array(a, mid, hi) + _returns_its_array(a)


def test_numbas_refusal_is_told_without_hpus_generated_module():
    """Numba's reason in the user's words: not the generated file, `f__d`, or IR names."""
    f = hpu.divide_and_conquer(_adds_an_array)
    x = np.arange(1, 18)
    # a call Numba cannot type runs the plain function (Python's answer), warned with why
    with pytest.warns(hpu.HpuPerformanceWarning) as info:
        got = f.options(device="cpu")(x, 0, 17)
    assert np.array_equal(got, _adds_an_array(x, 0, 17))
    text = next(str(w.message) for w in info if "Numba" in str(w.message))
    assert "Can't unify return type" in text and "test_decorator.py" in text
    assert "generated" not in text and "__" not in text and "Return of" not in text, text


# --------------------------------------- a module constant changed after the first call

BONUS = 1
SCALE = 1.0


@hpu.divide_and_conquer
def bonus_sum(a, lo, hi):
    if hi - lo <= 4:
        s = 0
        for i in range(lo, hi):
            s += a[i] + BONUS
        return s
    mid = (lo + hi) // 2
    return bonus_sum(a, lo, mid) + bonus_sum(a, mid, hi)


def _scaled_merge(left, right):
    out = np.empty(len(left) + len(right), left.dtype)
    i = j = 0
    for k in range(len(out)):
        if j >= len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i] * SCALE
            i += 1
        else:
            out[k] = right[j] * SCALE
            j += 1
    return out


@hpu.divide_and_conquer
def scaled_sort(a):
    if len(a) <= 1:
        return a.copy()
    mid = len(a) // 2
    return _scaled_merge(scaled_sort(a[:mid]), scaled_sort(a[mid:]))


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_module_constant_changed_after_a_call_is_read_again(monkeypatch, device):
    """Numba freezes a global's value into the machine code; Python reads it at each call.
    A constant changed after the first call (a notebook cell's cut-off) is the new value
    on every path, in the function and in a helper, on the in-place and functional paths."""
    import warnings

    import test_decorator as here

    a = np.arange(1000, dtype=np.int64)
    x = np.random.default_rng(3).random(301)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bonus_sum.options(device=device)(a, 0, 1000) == bonus_sum.py_func(a, 0, 1000)
        first = scaled_sort.options(device=device)(x)
        assert np.array_equal(first, scaled_sort.py_func(x))
        monkeypatch.setattr(here, "BONUS", 5)
        monkeypatch.setattr(here, "SCALE", 2.0)
        assert bonus_sum.options(device=device)(a, 0, 1000) == int(a.sum()) + 5 * 1000
        assert bonus_sum.sequential(a, 0, 1000) == int(a.sum()) + 5 * 1000
        second = scaled_sort.options(device=device)(x)
        assert np.array_equal(second, scaled_sort.py_func(x)) and not np.array_equal(second, first)


def test_an_unchanged_constant_keeps_what_was_compiled():
    a = np.arange(64, dtype=np.int64)
    bonus_sum.options(device="cpu")(a, 0, 64)
    programs = bonus_sum._programs
    assert programs and bonus_sum.options(device="cpu")(a, 0, 64) == int(a.sum()) + 64 * BONUS
    assert bonus_sum._programs is programs
    assert "BONUS" in [name for _, name in bonus_sum._constant_refs]


def _weight(x):
    return x + 1


def _weight_times_100(x):
    return x * 100


@hpu.divide_and_conquer
def weighted(a, lo, hi):
    if hi - lo == 1:
        return _weight(a[lo])
    mid = (lo + hi) // 2
    return weighted(a, lo, mid) + weighted(a, mid, hi)


@hpu.divide_and_conquer
def late_scaled(a, lo, hi):
    if hi - lo == 1:
        return _late_helper(a[lo])
    mid = (lo + hi) // 2
    return late_scaled(a, lo, mid) + late_scaled(a, mid, hi)


def _late_helper(v):            # defined after the function that calls it (guide §8)
    return v * LATE_SCALE


LATE_SCALE = 2


def _join(left, right):
    return np.concatenate((left, right))


@hpu.divide_and_conquer
def shifted(a):
    if len(a) <= 1:
        return a + OFFSETS[0]
    mid = len(a) // 2
    return _join(shifted(a[:mid]), shifted(a[mid:]))


OFFSETS = np.zeros(2, np.int64)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_helper_bound_again_is_the_one_called(monkeypatch, device):
    """A helper defined again (a notebook cell run again) is the function Python calls
    next: hpu compiled the one bound at decoration and kept it, silently wrong."""
    import test_decorator as here

    a = np.arange(2000, dtype=np.int64)
    f = weighted.options(device=device)
    assert f(a, 0, 2000) == weighted.py_func(a, 0, 2000) == int(a.sum()) + 2000
    monkeypatch.setattr(here, "_weight", _weight_times_100)
    assert f(a, 0, 2000) == weighted.py_func(a, 0, 2000) == int(a.sum()) * 100


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_late_helper_s_constant_changed_is_read_again(monkeypatch, device):
    """A constant read by a helper defined after the decorated function, or not yet bound
    at decoration, is watched as the function's own are; unbound again, Python's
    NameError."""
    import test_decorator as here

    a = np.arange(2000, dtype=np.int64)
    f = late_scaled.options(device=device)
    assert f(a, 0, 2000) == late_scaled.py_func(a, 0, 2000) == 2 * int(a.sum())
    monkeypatch.setattr(here, "LATE_SCALE", 5)
    assert f(a, 0, 2000) == late_scaled.py_func(a, 0, 2000) == 5 * int(a.sum())
    monkeypatch.delattr(here, "LATE_SCALE")
    with pytest.raises(NameError, match="LATE_SCALE"):
        late_scaled.py_func(a, 0, 2000)
    with pytest.raises(NameError, match="LATE_SCALE"):
        f(a, 0, 2000)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_global_array_a_functional_function_reads_is_read_again(monkeypatch, device):
    """Numba freezes a global array's contents into a functional function's machine code;
    Python reads the array at each call: changed in place or bound again, the next call
    sees it."""
    import warnings

    import test_decorator as here

    x = np.arange(50_000, dtype=np.int64)
    f = shifted.options(device=device)
    offsets = np.zeros(2, np.int64)
    monkeypatch.setattr(here, "OFFSETS", offsets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(f(x), x)
        offsets[0] = 100
        assert np.array_equal(f(x), x + 100)
        monkeypatch.setattr(here, "OFFSETS", np.full(1, 7))
        assert np.array_equal(f(x), x + 7)


# ------------------------------------- a list no number array holds exactly: Python's answer

@hpu.divide_and_conquer
def halves_max(a):
    if len(a) == 1:
        return a[0]
    mid = len(a) // 2
    return max(halves_max(a[:mid]), halves_max(a[mid:]))


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid", None])
@pytest.mark.parametrize("items", [[True, False, True], [1, 2, 2**64 + 5], [3, -2**70, 5],
                                   [2**63, 1], (1, -1, 2**63)])
def test_a_list_of_bools_or_huge_ints_runs_the_plain_function(device, items):
    """NumPy makes bools a bool array (no dtype hpu computes in), ints past 64 bits an
    object array, and ``[2**63, 1]`` float64, rounded: the plain function answers exactly
    (it was a TypeError at the call, or a rounded float), with the reason in the run."""
    import warnings

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        run = halves_max.run(items, **({"device": device} if device else {}))
        seq = halves_max.sequential(items)
    want = max(items)
    assert run.value == want and type(run.value) is type(want)
    assert seq == want and type(seq) is type(want)
    assert run.device == "python" and "plain Python function ran" in run.reason


@hpu.divide_and_conquer
def msort_defaults(a, lo=0, hi=None):
    if hi is None:
        hi = len(a)
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    msort_defaults(a, lo, mid)
    msort_defaults(a, mid, hi)
    left = a[lo:mid].copy()
    right = a[mid:hi].copy()
    i = j = 0
    k = lo
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            a[k] = left[i]
            i += 1
        else:
            a[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        a[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        a[k] = right[j]
        j += 1
        k += 1


@pytest.mark.parametrize("items", [[2**63, 1, 0, 5], [2**64 - 35, 33, -14, 20],
                                   [5, 2**63 + 1, -3, 2.5]])
def test_ints_past_int64_in_a_list_built_or_sorted_in_place_give_pythons_answer(items):
    """A list-building quicksort crashed in Numba ("can't unbox heterogeneous list: uint64
    != int64"), and an in-place sort of the caller's list wrote rounded floats into it;
    both run the plain function now, exactly, and say why."""
    qsort = functional_examples.qsort           # the textbook quicksort on lists
    want = qsort.py_func(list(items))
    got = qsort(list(items))
    assert got == want and [type(v) for v in got] == [type(v) for v in want]
    run = qsort.run(list(items), device="cpu")
    assert run.value == want and "int past int64" in run.reason
    mine, theirs = list(items), list(items)
    msort_defaults.py_func(theirs)
    assert msort_defaults(mine) is None
    assert mine == theirs and [type(v) for v in mine] == [type(v) for v in theirs]


def test_a_list_of_small_ints_still_runs_compiled():
    run = halves_max.run([4, -2, 9, 1], device="cpu")
    assert run.value == 9 and run.device == "cpu"


def test_run_options_given_to_the_decorator_point_at_options():
    with pytest.raises(TypeError, match=r"device= is a run option.*f.options\(device='cpu'\)"):
        hpu.divide_and_conquer(device="cpu")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'devices'.*expected b"):
        hpu.divide_and_conquer(devices="cpu")
    with pytest.raises(ValueError, match=r"device='GPU' is not known.*pass device='gpu'"):
        halves_max.options(device="GPU")


def test_a_masked_array_is_refused_naming_the_fixes():
    a = np.ma.masked_array([3, 1, 2], mask=[False, True, False])
    for call in (lambda: halves_max(a), lambda: halves_max.sequential(a),
                 lambda: halves_max.plan(a)):
        with pytest.raises(TypeError, match=r"masked array.*a\.filled\(value\).*compressed"):
            call()
    assert halves_max(a.compressed()) == 3


def test_a_decorated_function_pickles_by_reference_as_a_module_function_does():
    """A process pool or joblib pickles the function it sends: a module-level decorated
    function goes by its module and name (it failed: "not the same object as ..."), with
    its options; one defined inside a function is refused in words that say what to send."""
    import pickle

    from functional_examples import msort

    assert pickle.loads(pickle.dumps(msort)) is msort
    configured = pickle.loads(pickle.dumps(msort.options(device="cpu", K=1)))
    assert configured.run_options == {"device": "cpu", "K": 1}
    x = np.array([3, 1, 2])
    assert configured(x).tolist() == [1, 2, 3]

    @hpu.divide_and_conquer
    def inner(a, lo, hi):
        if hi - lo == 1:
            return a[lo]
        m = (lo + hi) // 2
        return inner(a, lo, m) + inner(a, m, hi)

    with pytest.raises(pickle.PicklingError, match=r"defined inside a function.*py_func"):
        pickle.dumps(inner)


@hpu.divide_and_conquer
def count_true(m, lo, hi):
    if hi - lo == 1:
        return 1 if m[lo] else 0
    mid = (lo + hi) // 2
    return count_true(m, lo, mid) + count_true(m, mid, hi)


@hpu.divide_and_conquer
def clear_then_check(m, lo, hi):
    if hi - lo == 1:
        if lo == 5:
            raise ValueError("five")
        m[lo] = False
        return
    mid = (lo + hi) // 2
    clear_then_check(m, lo, mid)
    clear_then_check(m, mid, hi)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_bool_mask_runs_compiled_as_written_and_says_so(device):
    """A NumPy bool array was refused at the call (TypeError) where a list of bools ran: it
    now runs the function compiled as written (Numba's bools), said in the run and the plan,
    and an error puts the mask back."""
    import warnings

    m = np.random.default_rng(3).random(1001) < 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        run = count_true.run(m, 0, m.size, device=device)
        plan = count_true.plan(m, 0, m.size, device=device)
    assert run.value == count_true.py_func(m, 0, m.size) == int(m.sum())
    assert "bool array" in run.reason and run.gpu_tasks == 0 and plan.reason == run.reason
    assert bool(run.fallbacks) == (device != "cpu")
    keep = m.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        with pytest.raises(ValueError, match="five"):
            clear_then_check.run(m, 0, m.size, device=device)
    assert np.array_equal(m, keep)


@pytest.mark.parametrize("given", ["no", 1, 0, "False"])
def test_boundscheck_is_true_false_or_none(given):
    """boundscheck="no" turned the checks on (any true value did): refused, naming it."""
    with pytest.raises(TypeError, match=rf"boundscheck={given!r}\): expected True, False or None"):
        hpu.divide_and_conquer(boundscheck=given)
