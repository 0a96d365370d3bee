"""Arithmetic like Python on the compiled paths: ``// 0``, ``% 0`` and NaN/inf -> int raise.

Mirrors :mod:`hpu._guard` and the checked form of :mod:`hpu._codegen`'s CPU
module.  Every case is checked against the plain function (``.py_func``):
same exception class, and the message names the user's file and line.  The
OpenCL device reports through its error channel (:mod:`hpu._opencl._backend`,
``device_error``): the same classes and, from one site table per module, the
same message texts as the CPU module's.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from hpu import _codegen, _guard

HERE = os.path.abspath(__file__)


@hpu.divide_and_conquer(b=2, cost="1")
def qsum(a, d, lo, hi):
    if hi - lo == 1:
        return a[lo] // d[lo]   # LINE_FLOORDIV
    mid = (lo + hi) // 2
    s1 = qsum(a, d, lo, mid)
    s2 = qsum(a, d, mid, hi)
    return s1 + s2


@hpu.divide_and_conquer(b=2, cost="1")
def csum(a, d, lo, hi):
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    s1 = csum(a, d, lo, mid)
    s2 = csum(a, d, mid, hi)
    return (s1 + s2) // d[mid]   # LINE_COMBINE


def rem(x, y):
    r = 0
    for k in range(1):
        r += x % y   # LINE_HELPER
    return r


@hpu.divide_and_conquer(b=2, cost="1")
def rsum(a, d, lo, hi):
    if hi - lo == 1:
        return rem(a[lo], d[lo])
    mid = (lo + hi) // 2
    s1 = rsum(a, d, lo, mid)
    s2 = rsum(a, d, mid, hi)
    return s1 + s2


@hpu.divide_and_conquer(b=2, cost="1")
def rounds(x, out, lo, hi):
    if hi - lo == 1:
        out[lo] = round(x[lo])   # LINE_ROUND
        return
    mid = (lo + hi) // 2
    rounds(x, out, lo, mid)
    rounds(x, out, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1")
def ints(x, out, lo, hi):
    if hi - lo == 1:
        v = x[lo]
        v //= 1.0
        out[lo] = int(v)   # LINE_INT
        return
    mid = (lo + hi) // 2
    ints(x, out, lo, mid)
    ints(x, out, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1")
def floors(x, lo, hi):
    if hi - lo == 1:
        return math.floor(x[lo]) + math.ceil(x[lo] / 2)   # LINE_FLOOR
    mid = (lo + hi) // 2
    return floors(x, lo, mid) + floors(x, mid, hi)


@hpu.divide_and_conquer
def floors_functional(x):
    if len(x) == 1:
        return np.zeros(1, np.int64) + math.trunc(x[0])   # LINE_TRUNC
    mid = len(x) // 2
    return np.concatenate((floors_functional(x[:mid]), floors_functional(x[mid:])))


@hpu.divide_and_conquer(b=2, cost="1")
def stores(x, out, lo, hi):
    if hi - lo == 1:
        out[lo] = x[lo] * 2.0   # LINE_STORE
        return
    mid = (lo + hi) // 2
    stores(x, out, lo, mid)
    stores(x, out, mid, hi)


def _line(tag: str) -> int:
    with open(HERE) as fh:
        for k, text in enumerate(fh, 1):
            if text.rstrip().endswith(f"# {tag}"):
                return k
    raise AssertionError(tag)


CPU_PATHS = [("sequential", {}), ("cpu", {}), ("hybrid", dict(alpha=1.0, y=2))]
DEVICE_PATHS = [("gpu", {}), ("hybrid", dict(alpha=0.0, y=2))]   # every leaf on the device
MIXED_PATHS = [("hybrid", dict(alpha=0.5, y=3))]                   # leaves on both sides
#: every leaf and every combine at levels >= y on the device
COMBINE_PATHS = [("gpu", {}), ("hybrid", dict(alpha=0.0, y=1)), ("hybrid", dict(alpha=0.3, y=2))]
ALL_PATHS = CPU_PATHS + DEVICE_PATHS + MIXED_PATHS


def _call(f, args, path, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if path == "sequential":
            return f.sequential(*args)
        return f.run(*args, device=path, **kw).value


def _python_error(f, args):
    try:
        f.py_func(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except Exception as err:  # noqa: BLE001
        return type(err)
    return None


# ------------------------------------------------------------------- division by zero

@pytest.mark.parametrize("path, kw", ALL_PATHS)
@settings(max_examples=8, deadline=None)
@given(n=st.integers(2, 64), data=st.data())
def test_integer_division_by_zero_raises_with_the_users_line(path, kw, n, data):
    a = np.array(data.draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n)))
    d = np.array(data.draw(st.lists(st.integers(1, 9), min_size=n, max_size=n)))
    zero = data.draw(st.integers(0, n - 1))
    assert _call(qsum, (a, d, 0, n), path, kw) == sum(int(x) // int(y) for x, y in zip(a, d))
    d[zero] = 0
    # NumPy scalars would give 0 with a RuntimeWarning; Python ints and Numba (the
    # compiled baseline hpu follows) raise ZeroDivisionError
    with pytest.raises(ZeroDivisionError):
        int(a[zero]) // int(d[zero])
    with pytest.raises(ZeroDivisionError) as err:
        _call(qsum, (a, d, 0, n), path, kw)
    assert f"{HERE}:{_line('LINE_FLOORDIV')}:" in str(err.value)
    assert "a[lo] // d[lo]" in str(err.value)


@pytest.mark.parametrize("path, kw", ALL_PATHS)
def test_modulo_by_zero_in_a_helper_names_the_helper_and_the_line(path, kw):
    a = np.arange(1, 40)
    d = np.full(39, 7)
    assert _call(rsum, (a, d, 0, 39), path, kw) == int((a % 7).sum())
    d[17] = 0
    with pytest.raises(ZeroDivisionError) as err:
        _call(rsum, (a, d, 0, 39), path, kw)
    # the failing line inside the helper (in a loop), not its def line
    assert str(err.value) == (f"{HERE}:{_line('LINE_HELPER')}: in rem(): x % y: integer "
                              "division or modulo by zero")


def _python_says(op):
    try:
        op(1.0, 0.0)
    except ZeroDivisionError as err:
        return str(err)
    raise AssertionError("no error")


@pytest.mark.parametrize("path, kw", ALL_PATHS)
def test_float_floor_division_and_modulo_by_zero_say_what_python_says(path, kw):
    """On floats Python's text is "float floor division by zero" / "float modulo", not the
    integer one, on every path (the device's error channel carries which it was)."""
    a = np.arange(1.0, 200.0)
    d = np.full(199, 7.0)
    d[150] = 0.0
    with pytest.raises(ZeroDivisionError) as err:
        _call(qsum, (a, d, 0, 199), path, kw)
    assert str(err.value) == (f"{HERE}:{_line('LINE_FLOORDIV')}: a[lo] // d[lo]: "
                              + _python_says(lambda x, y: x // y))
    with pytest.raises(ZeroDivisionError) as err:
        _call(rsum, (a, d, 0, 199), path, kw)
    assert str(err.value) == (f"{HERE}:{_line('LINE_HELPER')}: in rem(): x % y: "
                              + _python_says(lambda x, y: x % y))


@pytest.mark.parametrize("path, kw", DEVICE_PATHS)
def test_device_division_by_zero_raises(path, kw):
    a = np.arange(1, 200)
    d = np.zeros(199, np.int64)
    with pytest.raises(ZeroDivisionError):
        _call(qsum, (a, d, 0, 199), path, kw)


@pytest.mark.parametrize("path, kw", COMBINE_PATHS + CPU_PATHS)
@settings(max_examples=5, deadline=None)
@given(n=st.integers(4, 64), data=st.data())
def test_division_by_zero_in_a_combine_raises(path, kw, n, data):
    a = np.array(data.draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n)))
    d = np.ones(n, np.int64)
    assert _call(csum, (a, d, 0, n), path, kw) == csum.py_func(a, d, 0, n)
    d[data.draw(st.sampled_from(_mids(0, n)))] = 0
    # on Python ints (NumPy scalars would give 0 and a warning), as Numba does
    assert _python_error(csum, (a.tolist(), d.tolist(), 0, n)) is ZeroDivisionError
    with pytest.raises(ZeroDivisionError) as err:
        _call(csum, (a, d, 0, n), path, kw)
    assert f"{HERE}:{_line('LINE_COMBINE')}: (s1 + s2) // d[mid]:" in str(err.value)


@hpu.divide_and_conquer(b=2, cost="1")
def two_faults(a, d, lo, hi):
    if hi - lo == 1:
        return 100 // a[lo]   # LINE_LEAF_FAULT
    mid = (lo + hi) // 2
    s1 = two_faults(a, d, lo, mid)
    s2 = two_faults(a, d, mid, hi)
    return s1 + s2 + 1000 // d[mid]   # LINE_NODE_FAULT


@pytest.mark.parametrize("path, kw", ALL_PATHS + COMBINE_PATHS[1:])
@pytest.mark.parametrize("n", [64, 5000])
def test_the_error_raised_is_the_one_python_meets_first(path, kw, n):
    """The combine of the left half (``d[n // 4] = 0``: the node [0, n/2), level 1) and
    the last leaf (``a[-1] = 0``) both fail.  Python, depth first, meets the combine
    first; the levels run the subtrees below the cut-off before level 1's combines, so
    they meet the leaf first: the error raised is still the combine's, as in Python (the
    plain compiled function reruns from the restored arguments)."""
    a = np.arange(1, n + 1)
    d = np.ones(n, np.int64)
    d[n // 4] = 0
    a[-1] = 0
    keep = (a.copy(), d.copy())
    with pytest.raises(ZeroDivisionError) as python:       # Python ints, as Numba divides
        two_faults.py_func(a.tolist(), d.tolist(), 0, n)
    assert python.traceback[-1].lineno + 1 == _line("LINE_NODE_FAULT")
    with pytest.raises(ZeroDivisionError) as err:
        _call(two_faults, (a, d, 0, n), path, kw)
    assert f"{HERE}:{_line('LINE_NODE_FAULT')}: 1000 // d[mid]:" in str(err.value)
    assert np.array_equal(a, keep[0]) and np.array_equal(d, keep[1])


@hpu.divide_and_conquer(b=2, cost="1")
def ratios(a, d, lo, hi):
    if hi - lo == 1:
        return a[lo] / d[lo]   # LINE_TRUEDIV
    mid = (lo + hi) // 2
    return ratios(a, d, lo, mid) + ratios(a, d, mid, hi)


@hpu.divide_and_conquer
def halves(a):
    """The slice form (a functional function), the division in a combine."""
    if len(a) == 1:
        return a[0] * 1.0
    m = len(a) // 2
    return halves(a[:m]) / halves(a[m:])   # LINE_SLICE_DIV


@pytest.mark.parametrize("path, kw", ALL_PATHS + COMBINE_PATHS[1:])
@settings(max_examples=4, deadline=None)
@given(n=st.integers(2, 300), data=st.data())
def test_true_division_by_zero_raises_with_the_users_line(path, kw, n, data):
    """``x / 0``: Python's (and Numba's) ZeroDivisionError on every path -- the device's IEEE
    division would give inf or nan where the CPU raises."""
    a = np.array(data.draw(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n)))
    d = np.array(data.draw(st.lists(st.floats(0.5, 9), min_size=n, max_size=n)))
    assert _call(ratios, (a, d, 0, n), path, kw) == ratios.py_func(a, d, 0, n)
    d[data.draw(st.integers(0, n - 1))] = data.draw(st.sampled_from([0.0, -0.0]))
    with pytest.raises(ZeroDivisionError):
        ratios.py_func(a.tolist(), d.tolist(), 0, n)
    with pytest.raises(ZeroDivisionError) as err:
        _call(ratios, (a, d, 0, n), path, kw)
    assert str(err.value) == (f"{HERE}:{_line('LINE_TRUEDIV')}: a[lo] / d[lo]: division by "
                              "zero")


@pytest.mark.parametrize("path, kw", ALL_PATHS)
def test_true_division_by_zero_in_the_slice_form(path, kw):
    x = np.linspace(1.0, 2.0, 777)
    assert _call(halves, (x,), path, kw) == halves.py_func(x)
    x[500] = 0.0      # a right half's value 0: its parent divides by it
    with pytest.raises(ZeroDivisionError):
        halves.py_func(x.tolist())
    with pytest.raises(ZeroDivisionError) as err:
        _call(halves, (x,), path, kw)
    assert f"{HERE}:{_line('LINE_SLICE_DIV')}:" in str(err.value)
    assert str(err.value).endswith("division by zero")


def _mids(lo, hi):
    if hi - lo <= 1:
        return []
    mid = (lo + hi) // 2
    return [mid] + _mids(lo, mid) + _mids(mid, hi)


@pytest.mark.parametrize("path, kw", DEVICE_PATHS + COMBINE_PATHS)
def test_the_forced_copy_path_raises_too(discrete, path, kw):
    """A device with its own memory (``discrete``): the error channel is read the same way."""
    a = np.arange(1, 200)
    d = np.ones(199, np.int64)
    d[77] = 0
    with pytest.raises(ZeroDivisionError, match=r"a\[lo\] // d\[lo\]"):
        _call(qsum, (a, d, 0, 199), path, kw)
    with pytest.raises(ZeroDivisionError, match=r"in rem\(\): x % y"):
        _call(rsum, (a, d, 0, 199), path, kw)
    x = np.linspace(-5.5, 5.5, 33)
    x[9] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        _call(rounds, (x, np.zeros(33, np.int64), 0, 33), path, kw)
    assert discrete  # the copy path was taken


@pytest.mark.parametrize("f, args", [
    (qsum, (np.arange(1, 50), np.zeros(49, np.int64), 0, 49)),
    (rsum, (np.arange(1, 50), np.zeros(49, np.int64), 0, 49)),
    (ratios, (np.arange(1.0, 50.0), np.zeros(49), 0, 49)),
])
def test_the_message_is_the_same_on_every_path(f, args):
    seen = set()
    for path, kw in ALL_PATHS + COMBINE_PATHS:
        with pytest.raises(ZeroDivisionError) as err:
            _call(f, args, path, kw)
        seen.add(str(err.value))
    assert len(seen) == 1, seen


# -------------------------------------------------------------------- float -> int

@pytest.mark.parametrize("path, kw", ALL_PATHS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e19, -1e300])
@pytest.mark.parametrize("f, tag", [(rounds, "LINE_ROUND"), (ints, "LINE_INT")])
def test_nan_and_out_of_range_floats_to_int_raise(path, kw, bad, f, tag):
    x = np.linspace(-50.5, 50.5, 33)
    out = np.zeros(33, np.int64)
    ref = np.zeros(33, np.int64)
    _call(f, (x, out, 0, 33), path, kw)
    f.py_func(x, ref, 0, 33)
    assert (out == ref).all()
    x[5] = bad
    python = _python_error(f, (x, np.zeros(33, np.int64), 0, 33))
    assert python in (ValueError, OverflowError)  # NaN: ValueError; too large: OverflowError
    with pytest.raises(python) as err:
        _call(f, (x, out, 0, 33), path, kw)
    if math.isfinite(bad):
        # int(1e19) is an int in Python, whose store into int64 fails: compiled code has no
        # such int, so the call runs again as the plain function, which raises Python's own
        # error (its text, and its traceback at the line)
        assert str(err.value) == "Python int too large to convert to C long"
        assert any(e.path == Path(HERE) and e.lineno + 1 == _line(tag) for e in err.traceback)
    else:
        assert f"{HERE}:{_line(tag)}:" in str(err.value)


@pytest.mark.parametrize("path, kw", ALL_PATHS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e19, -1e300, 2.0 ** 63])
def test_math_floor_of_a_float_without_an_int64_is_python_s(path, kw, bad):
    """math.floor/ceil of NaN and inf raise Python's ValueError and OverflowError at the
    line (Numba gave int64's minimum, silently); of 1e19, Python's int -- the call runs
    again as the plain function, whose ints grow."""
    x = np.linspace(-50.5, 50.5, 33)
    assert _call(floors, (x, 0, 33), path, kw) == floors.py_func(x, 0, 33)
    x[5] = bad
    try:
        want = floors.py_func(x, 0, 33)
    except (ValueError, OverflowError) as err:
        with pytest.raises(type(err)) as got:
            _call(floors, (x, 0, 33), path, kw)
        assert str(got.value) == f"{HERE}:{_line('LINE_FLOOR')}: math.floor(x[lo]): {err}"
    else:
        assert _call(floors, (x, 0, 33), path, kw) == want


@pytest.mark.parametrize("bad", [math.nan, math.inf, 1e19])
@pytest.mark.parametrize("n", [1, 7, 40_000])
def test_math_trunc_in_a_functional_function_is_python_s(bad, n):
    x = np.linspace(-50.5, 50.5, n)
    x[n // 2] = bad
    try:
        want = floors_functional.py_func(x)
    except (ValueError, OverflowError) as err:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(type(err)) as got:
                floors_functional(x)
        if math.isfinite(bad):
            # trunc(1e19) is Python's int, which NumPy cannot add to int64: the plain
            # function's own error, raised by the call run again as the plain function
            assert str(got.value) == str(err)
        else:
            assert str(got.value) == f"{HERE}:{_line('LINE_TRUNC')}: math.trunc(x[0]): {err}"
    else:
        raise AssertionError(f"the plain function returned {want!r}")


@pytest.mark.parametrize("path, kw", ALL_PATHS + COMBINE_PATHS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e19, -1e300])
def test_a_bad_float_stored_into_an_int_array_raises(path, kw, bad):
    x = np.linspace(-50.7, 50.7, 33)
    out = np.zeros(33, np.int64)
    ref = np.zeros(33, np.int64)
    _call(stores, (x, out, 0, 33), path, kw)
    stores.py_func(x, ref, 0, 33)
    assert (out == ref).all()  # in range: truncated, as NumPy and Numba do
    x[7] = bad
    python = _python_error(stores, (x, np.zeros(33, np.int64), 0, 33))
    assert python in (ValueError, OverflowError)
    with pytest.raises(python) as plain:
        stores.py_func(x, np.zeros(33, np.int64), 0, 33)
    with pytest.raises(python) as err:
        _call(stores, (x, out, 0, 33), path, kw)
    # NumPy's own text: "cannot convert float NaN to integer", "cannot convert float
    # infinity to integer", "Python int too large to convert to C long"
    assert str(err.value) == f"{HERE}:{_line('LINE_STORE')}: out[lo]: {plain.value}"


def test_bad_float_in_plain_python():
    for v in (1.7, -2.5, 3, -9.2e18):
        assert not _guard.bad_float(v)
    for v in (math.nan, math.inf, -math.inf, 2.0 ** 63, -1e300):
        assert _guard.bad_float(v)


def test_the_device_source_keeps_plain_operators():
    """Only the CPU module is rewritten; the translator reads the plain operators."""
    program = next(iter(qsum._programs.values())) if qsum._programs else None
    if program is None:
        _call(qsum, (np.arange(4), np.ones(4, np.int64), 0, 4), "cpu", {})
        program = next(iter(qsum._programs.values()))
    core = _codegen.core_source(program.spec, program.closure, program.layout)
    assert "hpu__floordiv(a[lo], d[lo]," in core and "a[lo] // d[lo]'" in core  # the site
    it = program.iter_source(8)
    assert "hpu__floordiv" not in it and "a[lo] // d[lo]" in it


# ------------------------------------------------------------ never a crash, any path

SCRIPT = textwrap.dedent('''
    import json, sys, warnings
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import test_safety_arith as T
    path, kw = sys.argv[2], json.loads(sys.argv[3])
    a = np.arange(1, 300); d = np.ones(299, np.int64); d[100] = 0
    try:
        T._call(T.qsum, (a, d, 0, 299), path, kw)
        print(json.dumps(["returned", ""]))
    except Exception as err:
        print(json.dumps([type(err).__name__, str(err)]))
''')


@pytest.mark.parametrize("path, kw", CPU_PATHS + DEVICE_PATHS + MIXED_PATHS)
def test_division_by_zero_never_kills_the_process(path, kw):
    out = subprocess.run([sys.executable, "-c", SCRIPT, os.path.dirname(HERE), path,
                          json.dumps(kw)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    kind, _ = json.loads(out.stdout.strip().splitlines()[-1])
    assert kind == "ZeroDivisionError"


# ---- a float to an integer power: Python's pow(), not Numba's repeated multiplication

@hpu.divide_and_conquer
def powers_by_halves(a, x):
    """sum(a[i] * x ** i), the power of each half written with ** and math.pow."""
    if len(a) == 1:
        return a[0]
    m = len(a) // 2
    return powers_by_halves(a[:m], x) + x ** m * powers_by_halves(a[m:], x) \
        + 0.0 * math.pow(x, m)


def test_a_float_to_an_int_power_is_pythons_on_the_cpu_and_near_it_on_the_device():
    x = 0.999
    assert _guard.power(x, 6) == x ** 6
    a = np.random.default_rng(3).standard_normal(70_001)
    want = powers_by_halves.py_func(a, x)
    for n in (1, 5, 70_001):
        assert powers_by_halves.options(device="cpu")(a[:n], x) == \
            powers_by_halves.py_func(a[:n], x)
    assert powers_by_halves.sequential(a, x) == want
    got = powers_by_halves.options(device="gpu")(a, x)
    assert math.isclose(got, want, rel_tol=1e-12)


# ---- integers past int64: Python's int grows where int64 wraps; the plain function runs

@hpu.divide_and_conquer(b=2, cost="1")
def iprod(a, lo, hi):
    if hi - lo == 1:
        return a[lo]
    mid = (lo + hi) // 2
    return iprod(a, lo, mid) * iprod(a, mid, hi)   # LINE_PRODUCT


@hpu.divide_and_conquer(b=2, cost="1")
def cubes(a, lo, hi):
    if hi - lo == 1:
        return a[lo] * a[lo] * a[lo] + (1 << a[lo] % 70) + a[lo] ** (a[lo] % 3 - 1)
    mid = (lo + hi) // 2
    return cubes(a, lo, mid) + cubes(a, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1")
def squares_in_place(a, lo, hi):
    if hi - lo == 1:
        a[lo] = a[lo] * a[lo]   # LINE_SQUARE
        return
    mid = (lo + hi) // 2
    squares_in_place(a, lo, mid)
    squares_in_place(a, mid, hi)


def _same_answer(f, args, path, kw):
    want = f.py_func(*[list(a) if isinstance(a, list) else a for a in args])
    got = _call(f, [list(a) if isinstance(a, list) else a for a in args], path, kw)
    assert got == want and type(got) is type(want), (got, want)
    return got


@pytest.mark.parametrize("path, kw", ALL_PATHS + COMBINE_PATHS)
def test_an_int_product_past_int64_gives_pythons_int(path, kw):
    """30! of a list of Python ints: int64 would wrap (-8764578968847253504); the call runs
    again as the plain function and gives Python's exact int, on every path; 20! fits and
    runs compiled."""
    assert _same_answer(iprod, (list(range(1, 31)), 0, 30), path, kw) == math.factorial(30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # within int64: no fallback, no warning
        run = iprod.run(list(range(1, 21)), 0, 20, device="cpu" if path == "sequential"
                        else path, **kw)
    assert run.value == math.factorial(20) and run.device != "python"


@pytest.mark.parametrize("path, kw", ALL_PATHS + COMBINE_PATHS)
def test_a_product_just_past_int64_is_caught_too(path, kw):
    """Products between 2**63 and 9.25e18, where the float estimate cannot decide and the
    exact test runs (compiled, a test ``(x * y) // x != y`` was folded to False and these
    wrapped to negative numbers): Python's ints, each sign; their neighbours inside int64
    stay compiled and exact."""
    pairs = [(2 ** 32, 2 ** 31), (3037000500, 3037000500), (-3037000500, 3037000500),
             (2, 2 ** 62), (-2, -2 ** 62), (3, 3074457345618258603),
             (-2 ** 32, 2 ** 31 + 1), (-7, -1317624576693539402)]
    for x, y in pairs:
        assert not -2 ** 63 <= x * y < 2 ** 63
        assert _same_answer(iprod, ([x, y], 0, 2), path, kw) == x * y
    for x, y in [(3037000499, 3037000499), (-2 ** 32, 2 ** 31), (3, 3074457345618258602),
                 (7, -1317624576693539401)]:
        assert _same_answer(iprod, ([x, y], 0, 2), path, kw) == x * y


@hpu.divide_and_conquer(b=2, cost="1")
def pow_sum(a, lo, hi, e):
    if hi - lo == 1:
        return pow(a[lo], e)
    mid = (lo + hi) // 2
    return pow_sum(a, lo, mid, e) + pow_sum(a, mid, hi, e)


@pytest.mark.parametrize("path, kw", ALL_PATHS + COMBINE_PATHS)
def test_the_builtin_pow_is_the_power_operator(path, kw):
    """`pow(x, e)` is `x ** e` in Python, and now on every path: an int list to a negative
    power is Python's float sum, an int64 array's NumPy's ValueError, past int64 Python's
    int (compiled as a call it was Numba's integer power: 1 for pow(2, -1))."""
    assert _same_answer(pow_sum, ([1, 2, 3, 4], 0, 4, -1), path, kw) == 1 + 1 / 2 + 1 / 3 + 1 / 4
    assert _same_answer(pow_sum, ([3, 5, 7], 0, 3, 40), path, kw) == 3 ** 40 + 5 ** 40 + 7 ** 40
    assert _same_answer(pow_sum, ([1.5, 2.0, -3.0], 0, 3, -2), path, kw) > 0
    with pytest.raises(ValueError, match="negative integer powers"):
        _call(pow_sum, [np.arange(1, 5), 0, 4, -1], path, kw)


def _ndigits(x):
    d = 1
    while x >= 10:
        x //= 10
        d += 1
    return d


@hpu.divide_and_conquer
def karatsuba(x, y):
    if x < 10 or y < 10:
        return x * y
    m = max(_ndigits(x), _ndigits(y)) // 2
    p = 10 ** m
    high1, low1 = divmod(x, p)
    high2, low2 = divmod(y, p)
    z0 = karatsuba(low1, low2)
    z1 = karatsuba(low1 + high1, low2 + high2)
    z2 = karatsuba(high1, high2)
    return z2 * 10 ** (2 * m) + (z1 - z2 - z0) * p + z0


@pytest.mark.parametrize("path, kw", ALL_PATHS[:1] + COMBINE_PATHS)
def test_an_int_argument_beyond_int64_runs_the_plain_function(path, kw):
    """Karatsuba's operands past int64 (its whole purpose): Python's product, the plain
    function run and said (it raised ValueError at the call before); within int64 it
    runs compiled."""
    for x, y in [(10 ** 20 + 3, 7), (10 ** 20 + 3, 10 ** 19 + 7), (-2 ** 64, 3)]:
        with pytest.warns(hpu.HpuPerformanceWarning, match="beyond 64 bits"):
            run = karatsuba.options(device="cpu" if path == "sequential" else path,
                                    **kw).run(x, y)
        assert run.value == x * y and run.device == "python", run
        assert karatsuba.sequential(x, y) == x * y
        assert karatsuba.plan(x, y).device == "python"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        run = karatsuba.options(device="cpu" if path == "sequential" else path,
                                **kw).run(1234, 5678)
    assert run.value == 1234 * 5678 and run.device != "python"


@pytest.mark.parametrize("path, kw", ALL_PATHS + COMBINE_PATHS)
def test_powers_shifts_and_cubes_past_int64_in_the_leaves(path, kw):
    """A leaf's ``x * x * x``, ``1 << k`` and ``x ** -1`` (a float in Python): each gives
    Python's answer (leaves on the device included); small values stay compiled."""
    big = [(k * 7919) % 3_000_000 + 2_100_000 for k in range(64)]   # cubes > 2**63
    _same_answer(cubes, (big, 0, 64), path, kw)
    _same_answer(cubes, ([k + 2 for k in range(64)], 0, 64), path, kw)   # ** -1 at k % 3 == 0
    small = [k * 3 + 2 for k in range(64)]     # k % 3 == 2: x ** 1, 1 << k%70 <= 2**62
    small = [x for x in small if x % 3 and x % 70 < 62] * 2
    _same_answer(cubes, (small, 0, len(small)), path, kw)


def test_int64_arrays_wrap_as_numpy_does():
    """On an int64 array Python's own arithmetic wraps (NumPy's scalars): the plain
    function's answer is the wrapped one, and that is what hpu gives."""
    a = np.arange(1, 31, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = iprod.py_func(a, 0, 30)
        got = iprod(a, 0, 30)
    assert got == want and want != math.factorial(30)


@pytest.mark.parametrize("path, kw", CPU_PATHS + DEVICE_PATHS)
def test_an_in_place_overflow_reruns_from_the_callers_values(path, kw):
    """The run put the list back before the plain function ran: each element squared once."""
    a = [3, 2**40, 5, 7] * 8
    want = list(a)
    squares_in_place.py_func(want, 0, len(want))
    _call(squares_in_place, (a, 0, len(a)), path, kw)
    assert a == want and a[1] == 2**80


def test_without_kept_inputs_the_overflow_is_raised_with_the_users_line():
    """``keep_inputs=False``: the array may be half squared, so no rerun: OverflowError at
    the product's line."""
    a = np.array([3, 2**40, 5, 7] * 8, np.int64)
    with pytest.raises(OverflowError, match=rf"{os.path.basename(HERE)}:"
                       rf"{_line('LINE_SQUARE')}: a\[lo\] \* a\[lo\]: an integer result beyond"):
        squares_in_place.run(a, 0, len(a), device="cpu", keep_inputs=False)


def test_the_overflow_names_the_calls_as_written():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run = iprod.run(list(range(1, 31)), 0, 30, device="cpu")
    assert run.device == "python"
    assert (f"{os.path.basename(HERE)}:{_line('LINE_PRODUCT')}: iprod(a, lo, mid) * "
            "iprod(a, mid, hi): an integer result beyond int64") in run.reason
    assert any("plain Python function ran" in str(w.message) for w in seen)


# ------------------------------------------------------------------ math of float32 values
def root_sum(a, lo, hi):
    if hi - lo == 1:
        return math.sqrt(abs(a[lo]))
    m = (lo + hi) // 2
    return root_sum(a, lo, m) + root_sum(a, m, hi)


def log_angle_sum(a, lo, hi):
    if hi - lo <= 2:
        s = 0.0
        for i in range(lo, hi):
            s += math.log1p(abs(a[i])) + math.atan2(a[i], 2.0) + math.hypot(a[i], 1)
        return s
    m = (lo + hi) // 2
    return log_angle_sum(a, lo, m) + log_angle_sum(a, m, hi)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_math_of_a_float32_element_is_pythons_double(device):
    """Python's math converts a float32 to a double first; Numba (and OpenCL C) took the
    float32 function (``sqrtf``): a square root off by 5e-8.  ``math.sqrt`` (correctly
    rounded everywhere) is now Python's to the last bit on every path, ``log1p``,
    ``atan2`` and ``hypot`` on the CPU's."""
    x = (np.random.default_rng(8).standard_normal(3001) * 50).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        opts = {"device": device} | ({"alpha": 0.5, "y": 2} if device == "hybrid" else {})
        got = hpu.divide_and_conquer(root_sum).options(**opts)(x, 0, x.size)
        assert got == root_sum(x, 0, x.size), (got, root_sum(x, 0, x.size))
        if device == "cpu":
            got = hpu.divide_and_conquer(log_angle_sum).options(device="cpu")(x, 0, x.size)
            assert got == log_angle_sum(x, 0, x.size)
