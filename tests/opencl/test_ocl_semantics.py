"""One differential test per rule of DESIGN.md section 7 (Python semantics on OpenCL).

Each test runs a small function through plain Python, Numba (error_model="numpy")
and the translated OpenCL C on every available back end (PoCL and/or the
UBSan C emulation, see ocl_support.py), with Hypothesis choosing the inputs
(negative operands, zero divisors, NaN, infinities, signed zeros, 64-bit
extremes).  Integers must agree exactly and floats bit for bit.  Each function
is chosen so that breaking its rule in the translator changes at least one
result (the comment says which).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import example, given, settings

from hpu._opencl._translate import (BOOL, FLOAT32, FLOAT64, INT8, INT32, INT64, UINT32, UINT64,
                                    Array, translate)
from ocl_support import (FLOATS, FLOATS32, INTS, SMALL_INTS, Differential, backends, columns,
                         numba_version, same, st)

pytestmark = pytest.mark.skipif(not backends(), reason="no OpenCL back end can run here")

LMIN, LMAX = -(1 << 63), (1 << 63) - 1
FAST = settings(max_examples=25, deadline=None)


@functools.lru_cache(maxsize=None)
def diff(fn, *types):
    return Differential(fn, types)


def jit(fn):
    return numba_version(fn)


# --- integers are 64-bit and every literal is a long ---------------------------------

def big_literal(x):
    return x * 3000000000 + 4000000000   # a 32-bit literal would truncate both constants


def test_literals_are_64_bit():
    d = diff(big_literal, INT64)
    d.check([[0, 1, -1, 5, 3074457345, LMAX, LMIN]])
    body = d.prog.source[d.prog.source.index("hpu_big_literal__l("):]
    assert "3000000000L" in body and "4000000000L" in body


def wraps(x, y):
    return x + y, x - y, x * y, -x   # signed overflow is undefined in C; Numba wraps


@FAST
@given(columns(INTS, INTS))
@example([[LMAX, LMIN, LMIN], [1, -1, LMIN]])
def test_int64_overflow_wraps(cols):
    diff(wraps, INT64, INT64).check(cols)


# --- // and % floor, by zero and LONG_MIN // -1 as Numba ---------------------------------

def floordiv(x, y):
    return x // y     # C's / truncates: -7 / 2 == -3, Python's -7 // 2 == -4


def modulo(x, y):
    return x % y      # C's % takes the dividend's sign: -7 % 2 == -1, Python's == 1


@FAST
@given(columns(INTS, INTS))
@example([[-7, 7, -7, 7, 0, -1], [2, -2, -2, 2, 5, 3]])
def test_floor_division_of_negative_ints(cols):
    diff(floordiv, INT64, INT64).check(cols)


@FAST
@given(columns(INTS, INTS))
@example([[-7, 7, -7, 7, 0, -1], [2, -2, -2, 2, 5, 3]])
def test_modulo_takes_the_sign_of_the_divisor(cols):
    diff(modulo, INT64, INT64).check(cols)


def test_integer_division_by_zero_is_zero_as_in_numba():
    # Python raises ZeroDivisionError; Numba's numpy error model gives 0 for both
    xs = [7, -7, 0, LMAX, LMIN]
    diff(floordiv, INT64, INT64).check([xs, [0] * 5], python=False)
    diff(modulo, INT64, INT64).check([xs, [0] * 5], python=False)
    got = diff(floordiv, INT64, INT64).device_results(backends()[0], [xs, [0] * 5])
    assert [g[0] for g in got] == [0] * 5


def test_long_min_floor_div_minus_one_is_zero_as_in_numba():
    # the hardware traps (x86 SIGFPE); Numba returns 0 for // and for %
    d = diff(floordiv, INT64, INT64)
    d.check([[LMIN, LMIN], [-1, 1]], python=False)
    assert d.device_results(backends()[0], [[LMIN], [-1]]) == [(0,)]
    diff(modulo, INT64, INT64).check([[LMIN], [-1]])


def float_divmod(x, y):
    return x // y, x % y   # floor + fmod with the sign fix; x // 0.0 is inf/nan, x % 0.0 nan


@FAST
@given(columns(FLOATS, FLOATS))
@example([[7.5, -7.5, 7.5, -0.0, 0.0, 5.0, -5.0, math.inf, 1.0, 0.1],
          [2.0, 2.0, -2.0, 3.0, -3.0, math.inf, math.inf, 2.0, 0.0, 0.01]])
def test_float_floor_division_and_modulo(cols):
    diff(float_divmod, FLOAT64, FLOAT64).check(cols)


# --- / on ints is true division -------------------------------------------------------

def truediv(x, y):
    return x / y      # C's / on longs would truncate


@FAST
@given(columns(INTS, INTS))
@example([[7, -7, 1, 0, LMIN], [2, 2, 3, 0, -1]])
@example([[1], [9999999999999999]])
def test_int_true_division_is_float64(cols):
    # every back end as Numba; Python too where the ints are floats exactly: Numba converts
    # each operand to float64 first (1 / 9999999999999999 is 1e-16, Python's correctly
    # rounded quotient 1.0000000000000001e-16; guide §9)
    diff(truediv, INT64, INT64).check(cols, python=False)
    exact = [(x, y) for x, y in zip(*cols) if abs(x) <= 2 ** 53 and abs(y) <= 2 ** 53]
    if exact:
        diff(truediv, INT64, INT64).check([list(c) for c in zip(*exact)])
    assert translate([(truediv, (INT64, INT64))]).functions[
        ("truediv", (INT64, INT64))].return_type == FLOAT64


# --- ** by operand types ---------------------------------------------------------------

def int_power(x, y):
    return x ** y     # int64 (wrapping), 0 for negative exponents unless x is +-1


def float_int_power(x, n):
    return x ** n     # pow(), as Python computes it (the CPU's modules too: hpu._guard.power)


def float_power(x, y):
    return x ** y


def literal_square(x):
    s = x
    s **= 2
    return x ** 2, s, x ** 2 + 1.0     # x * x, as LLVM compiles Numba's power, on every path


@FAST
@given(columns(FLOATS))
@example([[0.1, 1.0000000000000002, 3.3, -7.77, 1e200, math.nan, -0.0]])
def test_a_literal_square_is_the_product_numba_and_numpys_arrays_give(cols):
    """``x ** 2`` (and ``x **= 2``) is ``x * x`` on the device: bit for bit Numba's (LLVM
    writes the product) and NumPy's square of an array -- the device's ``pow`` differed in
    the last bit (``np.sum(a ** 2)`` of the functional paths)."""
    d = diff(literal_square, FLOAT64)
    assert "hpu_sq_d(" in d.prog.source and "pow(" not in d.prog.source
    d.check(cols, python=False)        # Python's scalar pow() is within 0.52 ulp of it
    for be in backends():
        got = [r[0] for r in d.device_results(be, cols)]
        want = np.array(cols[0], dtype=np.float64) ** 2
        assert same(tuple(want.tolist()), tuple(float(g) for g in got)), be.name


@FAST
@given(columns(st.one_of(SMALL_INTS, INTS), SMALL_INTS))
@example([[2, 2, 3, -1, -1, 0, 1, 7], [10, 63, 41, -3, -4, -2, -9, 0]])
def test_int_power_is_int64_with_numbas_negative_exponents(cols):
    diff(int_power, INT64, INT64).check(cols)


@FAST
@given(columns(FLOATS, st.one_of(SMALL_INTS, st.integers(-3000, 3000))))
@example([[1.1, 1.1, -2.5, 0.0, 10.0, 1e-300, 1.83068619792418, 69.22569154784225, 0.999,
           2.0, 1e-5, -0.5, 0.49999999999999994, -0.49999999999999994],
          [3, -3, 7, -1, 300, -1, -31, 7, 6, -1074, -70, 1075, -1, -3]])
def test_float_to_int_power_is_the_correctly_rounded_power(cols):
    """Python's ``x ** n`` is glibc's pow(), within 0.52 ulp of the exact power; OpenCL's
    pow() is allowed 16 ulp, and PoCL's differed from Python's in the last bit for 8 % of
    random ``x ** k`` (a polynomial evaluated by halves then differed in its last digits).
    The device computes it in double-double: the exact power correctly rounded wherever the
    result is a normal double (``1.83068619792418 ** -31``: glibc's is the one an ulp off),
    so it is Python's but where glibc misrounds (about 1 in 1400).  A negative power whose
    quotient lies just past a tie (``0.49999999999999994 ** -1`` is 2.0000000000000004)
    came out as the tie's even neighbour, 2.0, until the tail's sign was read."""
    from fractions import Fraction

    d = diff(float_int_power, FLOAT64, INT64)
    assert "hpu_pown_d(" in d.prog.source and "hpu_powi_d" not in d.prog.source
    for be in backends():
        for x, n, (got,) in zip(*cols, d.device_results(be, cols)):
            x, n, got = float(x), int(n), float(got)
            if math.isnan(x) or math.isinf(x) or x == 0.0:
                continue
            exact = Fraction(x) ** n
            if not (2.0 ** -1022 <= abs(exact) < 2.0 ** 1023):
                continue                # subnormal or past the doubles: pow(), as before
            assert got == float(exact), (x, n, got, float(exact), be.name)   # one rounding


def test_float_to_int_power_agrees_with_python_but_where_glibc_misrounds():
    """On 20 000 random ``x ** k`` the device gives Python's value in all but a few
    (PoCL's own pow() differed in 8 % of them), each of those being glibc's misrounding."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    xs = rng.uniform(0.5, 2.0, 20000)
    ks = rng.integers(-60, 61, 20000)
    d = diff(float_int_power, FLOAT64, INT64)
    cols = [xs.tolist(), ks.tolist()]
    for be in backends():
        got = [float(r[0]) for r in d.device_results(be, cols)]
        differ = [(x, k, g) for x, k, g in zip(xs.tolist(), ks.tolist(), got) if g != x ** k]
        assert len(differ) < 40, (len(differ), be.name)
        assert all(g == float(Fraction(x) ** k) for x, k, g in differ)


def test_power_result_types_follow_the_operands():
    types = {}
    for fn, sig in [(int_power, (INT64, INT64)), (float_int_power, (FLOAT64, INT64)),
                    (float_power, (FLOAT64, FLOAT64)), (float_power, (INT64, FLOAT64)),
                    (float_int_power, (FLOAT32, INT64))]:
        types[sig] = translate([(fn, sig)]).functions[(fn.__name__, sig)].return_type
    assert types[(INT64, INT64)] == INT64
    assert types[(FLOAT64, INT64)] == FLOAT64
    assert types[(INT64, FLOAT64)] == FLOAT64
    assert types[(FLOAT32, INT64)] == FLOAT32
    # float ** float is pow(), which OpenCL computes to 16 ulp (PoCL: 1), not bit-exactly
    diff(float_power, FLOAT64, FLOAT64).check([[2.0, 9.0, -8.0, 0.0], [0.5, 0.5, 3.0, -1.0]],
                                              ulps=16)


# --- abs(long) stays long ----------------------------------------------------------------

def absolute(x):
    return abs(x)     # OpenCL's abs(long) is ulong: abs(LONG_MIN) would be 2**63


@FAST
@given(columns(INTS))
@example([[LMIN, -5, 5, 0, LMAX]])
def test_abs_of_long_is_long(cols):
    d = diff(absolute, INT64)
    d.check(cols)
    assert d.device_results(backends()[0], [[LMIN, -3]]) == [(LMIN,), (3,)]


# --- min / max with NaN as Python ---------------------------------------------------------

def maximum(x, y):
    return max(x, y), min(x, y), max(x, y, 0.5), min(y, x, -0.0)   # fmax/fmin drop NaN


@FAST
@given(columns(FLOATS, FLOATS))
@example([[math.nan, 1.0, -0.0, 0.0, math.nan], [1.0, math.nan, 0.0, -0.0, math.nan]])
def test_min_max_with_nan_in_each_position(cols):
    diff(maximum, FLOAT64, FLOAT64).check(cols)


def int_minmax(x, y, z):
    return max(x, y, z), min(x, y, z)


@FAST
@given(columns(INTS, INTS, INTS))
def test_min_max_of_ints(cols):
    diff(int_minmax, INT64, INT64, INT64).check(cols)


# --- NumPy's scalar functions: NumPy's answers, NaN and signed zeros included ---------------

def np_extrema(x, y):
    return np.maximum(x, y), np.minimum(x, y), np.fmax(x, y), np.fmin(x, y)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's, of log(-1)...
@FAST
@given(columns(FLOATS, FLOATS))
@example([[math.nan, 1.0, -0.0, 0.0, math.nan, 2.0], [1.0, math.nan, 0.0, -0.0, math.nan, 2.0]])
def test_numpys_extrema_are_numpys_with_nan_and_signed_zeros(cols):
    """maximum/minimum keep a NaN from either side, fmax/fmin drop it; of two zeros
    NumPy's loops give ``np.maximum(-0.0, 0.0) == 0.0`` (b unless a is larger) and
    ``np.fmax(-0.0, 0.0) == -0.0`` (a unless b is larger).  The reference is NumPy itself:
    Numba's ``np.maximum`` keeps ``a`` of equal values (-0.0 there)."""
    Differential(np_extrema, (FLOAT64, FLOAT64), numba_fn=np_extrema).check(cols)


@FAST
@given(columns(INTS, INTS))
@example([[LMIN, LMAX, 0, -1], [LMAX, LMIN, 0, 1]])
def test_numpys_extrema_of_ints_and_of_an_int_and_a_float(cols):
    diff(np_extrema, INT64, INT64).check(cols)
    d = Differential(np_extrema, (INT64, FLOAT64), numba_fn=np_extrema)
    assert d.ret_types == (FLOAT64,) * 4
    d.check([cols[0], [float(v) / 3 for v in cols[1]]])


def np_unary(x):
    return (np.sqrt(x), np.fabs(x), np.abs(x), np.absolute(x), np.isnan(x), np.isinf(x),
            np.isfinite(x))


def np_rounding(x):
    return np.floor(x), np.ceil(x)


def np_transcendental(x):
    return np.exp(x), np.log(x), np.log2(x), np.log10(x), np.sin(x), np.cos(x), np.tan(x), \
        np.arctan(x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's, of log(-1)...
@FAST
@given(columns(FLOATS))
@example([[math.nan, math.inf, -math.inf, -0.0, 0.0, -4.0, 2.0, 1e-310]])
def test_numpys_exact_scalar_functions_are_bit_exact(cols):
    """sqrt, fabs, abs, the predicates and the roundings are exact on every path; of a
    float32 they stay float32, of an int64 (sqrt) a float64, as NumPy and Numba type them."""
    diff(np_unary, FLOAT64).check(cols)
    diff(np_rounding, FLOAT64).check(cols)
    d32 = diff(np_unary, FLOAT32)
    assert d32.ret_types[:4] == (FLOAT32,) * 4
    d32.check([[float(np.float32(v)) for v in cols[0]]], python=False)  # Python: float64
    assert diff(np_unary, INT64).ret_types[:3] == (FLOAT64, FLOAT64, INT64)
    diff(np_unary, INT64).check([[LMIN + 1, -7, 0, 4, LMAX]])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's, of log(-1)...
@FAST
@given(columns(FLOATS))
@example([[math.nan, math.inf, -0.0, 0.5, 1e300, -1e-300]])
def test_numpys_transcendental_functions_are_the_devices_within_ulps(cols):
    """exp, log, sin and their kin are the device's, which OpenCL allows a few units in
    the last place (as for ``math``'s, guide §7)."""
    diff(np_transcendental, FLOAT64).check(cols, ulps=4)


def np_narrow(x):
    return np.sqrt(x)


def test_numpys_functions_of_narrow_ints_and_int_roundings_are_left_to_the_cpu():
    """``np.sqrt`` of an int8 is float16 in NumPy and float64 in Numba; ``np.floor`` of an
    int64 is an int64 in NumPy 2: the translator refuses them (the CPU runs them)."""
    from hpu._errors import TranslationError
    for fn, ty in ((np_narrow, INT8), (np_narrow, BOOL), (np_rounding, INT64)):
        with pytest.raises(TranslationError, match="is not supported"):
            translate([(fn, (ty,))])


# --- round half to even --------------------------------------------------------------------

def rounding(x):
    return round(x)   # C's round() rounds halves away from zero


@FAST
@given(columns(st.one_of(FLOATS.filter(lambda v: math.isfinite(v) and abs(v) < 9e18),
                         st.sampled_from([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e15 + 0.5]))))
@example([[0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, 4503599627370497.0]])
def test_round_is_half_to_even(cols):
    diff(rounding, FLOAT64).check(cols)


# --- FP_CONTRACT OFF -------------------------------------------------------------------------

def mul_add(a, b, c):
    return a * b + c  # fused into fma() the result would differ in the last bits


def test_no_fused_multiply_add():
    from fractions import Fraction
    eps = 2.0 ** -30
    a, b, c = 1 + eps, 1 - eps, -1.0
    fused = float(Fraction(a) * Fraction(b) + Fraction(c))   # fma: one rounding
    assert fused != a * b + c   # so these inputs tell fused from unfused
    d = diff(mul_add, FLOAT64, FLOAT64, FLOAT64)
    d.check([[a, 0.1, 1e16 + 1], [b, 3.3, 1 - 1e-16], [c, -0.33, -1e16]])
    assert "#pragma OPENCL FP_CONTRACT OFF" in d.prog.source


# --- negative indices -------------------------------------------------------------------------

def from_the_end(a, i):
    return a[i] + a[-1] * 1000   # a[-1] is the last element, not memory before the array


def _from_the_end_task(t, out, a, i):
    out[0] = from_the_end(a, i)


@functools.lru_cache(maxsize=None)
def _from_the_end_program():
    return translate([(_from_the_end_task, (INT64, Array(np.int64), Array(np.int64), INT64))],
                     kernels={"k": "_from_the_end_task"})


@FAST
@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=8), st.data())
def test_negative_indices_wrap(values, data):
    i = data.draw(st.integers(-len(values), len(values) - 1))
    a = np.array(values, dtype=np.int64)
    want = from_the_end(a, i)
    assert jit(from_the_end)(a, i) == want
    for be in backends():
        got = be.run(_from_the_end_program(), "k", {"a": a, "out": np.zeros(1, np.int64)},
                     {"i": i}, 0, 1)
        assert got["out"][0] == want


# --- for range: any step, bounds once, the variable after the loop ---------------------------

def ranged(start, stop, step):
    n = 0
    total = 0
    i = -99
    for i in range(start, stop, step):
        n += 1
        total = total * 31 + i
        stop = stop + 1       # the bounds were evaluated once: no effect on the loop
        if n > 50:
            break
    return n, total, i        # i: the last value, or -99 if the loop never ran


@FAST
@given(columns(st.integers(-60, 60), st.integers(-60, 60),
               st.sampled_from([1, 2, 3, 7, -1, -2, -3, -7, LMAX, LMIN, 0])))
@example([[LMAX - 5, LMIN + 5, 0, 5, LMIN, LMAX, 0], [LMAX, LMIN, 10, 0, LMAX, LMIN, 0],
          [3, -3, 1, -1, LMAX, LMIN, 0]])
def test_range_with_any_step(cols):
    cols = [c[:] for c in cols]
    nonzero = [k for k, s in enumerate(cols[2]) if s != 0]
    if nonzero:
        diff(ranged, INT64, INT64, INT64).check([[c[k] for k in nonzero] for c in cols])
    # a run-time zero step runs zero times on the device (Python and Numba raise)
    zero = [k for k, s in enumerate(cols[2]) if s == 0]
    if zero:
        d = diff(ranged, INT64, INT64, INT64)
        got = d.device_results(backends()[0], [[c[k] for k in zero] for c in cols])
        assert all(g == (0, 0, -99) for g in got)


def countdown(n):
    s = 0
    k = -1
    for k in range(n, 0, -1):
        s = s * 3 + k
    return s, k


def test_range_with_a_negative_literal_step():
    diff(countdown, INT64).check([[0, 1, 5, 20, -3]])


# --- chained comparisons evaluate each operand once ------------------------------------------

def bump(counter, t, v):
    counter[t] += 1     # one slot per work-item: on a GPU they run at once (a shared slot races)
    return v


def chain(counter, t, a, b, c):
    return 1 if a < bump(counter, t, b) < c else 0


def _chain_task(t, out, counter, a, b, c):
    out[t] = chain(counter, t, a[t], b[t], c[t])


def test_chained_comparison_evaluates_the_middle_once():
    prog = translate([(_chain_task, (INT64, Array(np.int64), Array(np.int64), Array(np.int64),
                                     Array(np.int64), Array(np.int64)))], kernels={"k": "_chain_task"})
    a = np.array([1, 5, 1, 3]); b = np.array([2, 2, 9, 3]); c = np.array([3, 3, 5, 9])
    for be in backends():
        counter = np.zeros(4, np.int64)
        got = be.run(prog, "k", {"out": np.zeros(4, np.int64), "counter": counter,
                                 "a": a, "b": b, "c": c}, {}, 0, 4)
        want = [chain(np.zeros(1, np.int64), 0, *map(int, v)) for v in zip(a, b, c)]
        assert list(got["out"]) == want
        assert list(got["counter"]) == [1] * 4   # once per row, although b is in two comparisons


# --- shifts: counts as Numba on x86-64 --------------------------------------------------------

def shifts(x, n):
    return x << n, x >> n   # C leaves counts >= 64 and negative counts undefined


@FAST
@given(columns(INTS, st.integers(-70, 130)))
@example([[5, -5, 1, LMIN], [64, 65, 63, -1]])
def test_shift_counts_wrap_modulo_64(cols):
    diff(shifts, INT64, INT64).check(cols, python=False)


# --- storing into arrays converts as NumPy/Numba ---------------------------------------------

def _store_task(t, ints, narrow, vals, big):
    ints[t] = vals[t]        # float -> int64: truncation toward zero
    narrow[t] = big[t]       # int64 -> int32: keeps the low 32 bits


def test_stores_convert_as_numba():
    prog = translate([(_store_task, (INT64, Array(np.int64), Array(np.int32), Array(np.float64),
                                     Array(np.int64)))], kernels={"k": "_store_task"})
    vals = np.array([2.7, -2.7, 0.5, -0.5, 1e15 + 0.5, -0.0])
    big = np.array([1 << 40, -1, (1 << 31), (1 << 32) + 5, LMIN, 7])
    ref_i, ref_n = np.zeros(6, np.int64), np.zeros(6, np.int32)
    for t in range(6):
        jit(_store_task)(t, ref_i, ref_n, vals, big)
    for be in backends():
        got = be.run(prog, "k", {"ints": np.zeros(6, np.int64), "narrow": np.zeros(6, np.int32),
                                 "vals": vals, "big": big}, {}, 0, 6)
        assert list(got["ints"]) == list(ref_i) == [2, -2, 0, 0, 1000000000000000, 0]
        assert list(got["narrow"]) == list(ref_n)


# --- narrow and float32 types as Numba types them -----------------------------------------

def narrow_sum(x, y):
    return x + y, x - y, x * y   # int32 operands: arithmetic in int64 (no int32 wrap)


def test_int32_arithmetic_happens_in_int64():
    d = diff(narrow_sum, INT32, INT32)
    d.check([[2**31 - 1, -2**31, 7], [2**31 - 1, 1, -9]])
    assert d.device_results(backends()[0], [[2**31 - 1], [2**31 - 1]])[0][0] == 2**32 - 2


def narrow_negate(x):
    return -x, abs(x), ~x   # Numba negates an int32 in 32 bits: -(-2**31) stays -2**31


def test_narrow_negation_wraps_in_its_own_width_as_numba():
    d = diff(narrow_negate, INT32)
    d.check([[-2**31, -5, 0, 7, 2**31 - 1]], python=False)
    assert d.device_results(backends()[0], [[-2**31]])[0][:2] == (-2**31, -2**31)


def unsigned_mix(x, y):
    return x - y, x < y, x + 1     # uint64 - uint64 wraps; uint64 < int64 compares in float64


@FAST
@given(columns(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)))
def test_uint64_arithmetic_wraps(cols):
    diff(unsigned_mix, UINT64, UINT64).check(cols, python=False)


def f32_ops(x, y):
    return x + y, x - y, x * y, x / y, math.sqrt(x)   # float32 stays float32 in Numba


@FAST
@given(columns(FLOATS32, FLOATS32))
def test_float32_arithmetic_is_float32_and_bit_exact(cols):
    d = diff(f32_ops, FLOAT32, FLOAT32)
    assert d.ret_types == (FLOAT32,) * 5
    d.check(cols, python=False)


def f32_floor_ops(x, y):
    return x // y, x % y, x ** 3, x ** -2, max(x, y), abs(x)


@FAST
@given(columns(FLOATS32, FLOATS32))
def test_float32_floor_division_modulo_power_as_numba(cols):
    d = diff(f32_floor_ops, FLOAT32, FLOAT32)
    assert d.ret_types == (FLOAT32,) * 6
    d.check(cols, python=False)


def f64_ops(x, y):
    return x + y, x - y, x * y, x / y, math.sqrt(x)


@FAST
@given(columns(FLOATS, FLOATS))
def test_float64_ieee_operations_are_bit_exact(cols):
    diff(f64_ops, FLOAT64, FLOAT64).check(cols)


# --- a variable's type is what Numba gives each assignment -----------------------------------

def retyped(x):
    y = x // 2        # x is an int here: int floor division
    x = 0.5
    s = 0
    for i in range(3):
        s += x        # s becomes a float where the loop merges
    return y, s, x


def test_variable_types_follow_numba():
    d = diff(retyped, INT64)
    assert d.ret_types == (INT64, FLOAT64, FLOAT64)
    d.check([[7, -7, LMAX]])


# --- and / or short-circuit -------------------------------------------------------------

def guarded(counter, t, x):
    return x != 0 and bump(counter, t, 10) // x > 1 or x == 5 and bump(counter, t, 1) > 0


def _guard_task(t, out, counter, x):
    out[t] = 1 if guarded(counter, t, x[t]) else 0


def test_and_or_short_circuit():
    prog = translate([(_guard_task, (INT64, Array(np.int64), Array(np.int64), Array(np.int64)))],
                     kernels={"k": "_guard_task"})
    xs = np.array([0, 1, 5, 20, -3])
    for be in backends():
        counter = np.zeros(5, np.int64)
        got = be.run(prog, "k", {"out": np.zeros(5, np.int64), "counter": counter, "x": xs},
                     {}, 0, 5)
        ref_counter = np.zeros(5, np.int64)
        want = [1 if guarded(ref_counter, t, int(v)) else 0 for t, v in enumerate(xs)]
        assert list(got["out"]) == want
        assert list(got["counter"]) == list(ref_counter)


def value_or(x, y):
    return x or y, x and y, (x > 0) and y   # non-bool operands: the deciding operand


@FAST
@given(columns(SMALL_INTS, FLOATS))
def test_and_or_return_the_deciding_operand(cols):
    diff(value_or, INT64, FLOAT64).check(cols)


# --- bool arithmetic, comparisons across types -------------------------------------------

def mixed_compare(x, y):
    return x < y, x == y, x >= y, -1 < x <= y


@FAST
@given(columns(INTS, FLOATS))
@example([[2**53 + 1, 3], [2.0**53, math.nan]])
def test_int_float_comparisons_as_numba(cols):
    diff(mixed_compare, INT64, FLOAT64).check(cols, python=False)


def conversions(x):
    return int(x), float(int(x)), bool(x), x != x


@FAST
@given(columns(FLOATS.filter(lambda v: math.isfinite(v) and abs(v) < 9e18)))
def test_int_float_bool_conversions(cols):
    diff(conversions, FLOAT64).check(cols)


def rebind(x, f):
    f *= f            # reads the parameter, defines a new variable (a second C variable)
    x += 1
    return x, f


def test_augmented_assignment_to_a_parameter():
    diff(rebind, INT64, FLOAT64).check([[1, -5, LMAX], [math.nan, 2.5, -0.0]])


def signed_unsigned(x, y):
    return x < y, x == y, x >= y   # C would convert x to unsigned: -1 < 5u is false in C


@FAST
@given(columns(INTS, st.integers(0, 2**64 - 1)))
@example([[-1, -1, 5, LMIN], [5, 2**64 - 1, 5, 2**63]])
def test_int64_uint64_comparisons_as_numba(cols):
    diff(signed_unsigned, INT64, UINT64).check(cols, python=False)


@FAST
@given(columns(st.integers(-2**31, 2**31 - 1), st.integers(0, 2**32 - 1)))
@example([[-1, 7], [5, 7]])
def test_int32_uint32_comparisons_are_exact(cols):
    diff(signed_unsigned, INT32, UINT32).check(cols)


# --- NumPy's scalar functions in a divide-and-conquer function, end to end --------------

def _np_peak(a, lo, hi):
    if hi - lo == 1:
        return np.sqrt(np.fabs(a[lo])) if np.isfinite(a[lo]) else a[lo]
    mid = (lo + hi) // 2
    return np.maximum(_np_peak(a, lo, mid), _np_peak(a, mid, hi))


@settings(max_examples=10, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                          st.sampled_from([0.0, -0.0])), min_size=1, max_size=300),
       st.integers(0, 2))
def test_numpys_scalar_functions_run_on_the_device_as_numpy_gives_them(values, path):
    """``np.maximum`` of the halves' ``np.sqrt(np.fabs(x))``: the device runs the tasks (no
    fallback) and gives NumPy's answer, a NaN anywhere winning."""
    import hpu

    device, kw = [("cpu", {}), ("gpu", {}), ("hybrid", {"alpha": 0.5, "y": 2})][path]
    xs = np.array(values * (1 + 3000 // len(values)))
    want = _np_peak(xs, 0, len(xs))
    run = hpu.divide_and_conquer(_np_peak).options(device=device, **kw).run(xs, 0, len(xs))
    assert same((float(want),), (run.value,)) or (math.isnan(want) and math.isnan(run.value)) \
        or (want == run.value and device == "cpu"), (want, run.value)  # cpu: Numba's zeros
    assert not run.fallbacks, run.fallbacks
    assert (run.gpu_tasks > 0) == (device != "cpu"), run.gpu_tasks
