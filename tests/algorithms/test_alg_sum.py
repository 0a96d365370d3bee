"""algorithms.sum: the paper's pairwise sum equals NumPy (integers) or the same order in Python (floats)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from alg_support import DEVICES, DTYPES, FLOAT_DTYPES, INT_DTYPES, SMALL_MAX, arrays, same_scalar
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms.sum import accumulator_dtype, dc_sum, total

ALG = settings.get_profile("algorithms")


def pairwise_bound(x, dtype):
    """How far a pairwise sum may be from the exact one: depth · eps · Σ|x| (plus slack)."""
    n = max(x.size, 2)
    eps = np.finfo(dtype).eps
    return 2 * math.ceil(math.log2(n)) * eps * math.fsum(abs(v) for v in x.tolist()) + 1e-300


def plain_sum(x):
    """dc_sum's own recursion in plain Python, on a copy (the exact float reference)."""
    a = x.copy()
    with np.errstate(over="ignore", invalid="ignore"):  # wrap-around, inf - inf: as compiled
        return dc_sum.py_func(a, 0, a.size)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", INT_DTYPES)
@settings(ALG)
@given(data=st.data())
def test_total_of_integers_equals_numpy_sum_exactly(dtype, device, data):
    x = data.draw(arrays(dtype))
    before = x.copy()
    got = total(x, device=device)
    want = np.sum(before)
    assert type(got) is type(want) and got == want  # int64 / uint64, wrapping like NumPy
    assert np.array_equal(x, before)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@settings(ALG)
@given(data=st.data())
def test_total_of_floats_is_the_pairwise_sum(dtype, device, data):
    x = data.draw(arrays(dtype, bound=1e6))
    before = x.copy()
    got = total(x, device=device)
    assert type(got) is np.dtype(dtype).type
    assert abs(float(got) - math.fsum(x.tolist())) <= pairwise_bound(x, dtype)
    if 0 < x.size <= SMALL_MAX:
        assert same_scalar(got, plain_sum(x))  # same order of additions: bit for bit
    assert np.array_equal(x, before)


# total() above covers every input dtype (it adds in np.sum's dtype); here the
# paper's in-place sum runs on the raw array: the accumulator dtypes plus a narrow
# signed and a narrow unsigned type, each one more compiled specialisation
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int8", "uint32", "int64", "uint64", "float32", "float64"])
@settings(ALG)
@given(data=st.data())
def test_run_adds_in_the_arrays_own_dtype_into_the_first_element(dtype, device, data):
    x = data.draw(arrays(dtype, min_size=1))
    a = x.copy()
    run = dc_sum.run(a, 0, a.size, device=device)
    if x.dtype.kind == "f":
        if x.size <= SMALL_MAX:
            want = plain_sum(x)
            assert same_scalar(run.value, want) and same_scalar(a[0], want)
        else:
            finite = x[np.isfinite(x)]
            if finite.size == x.size and np.abs(x).max() < 1e30:
                assert abs(float(a[0]) - math.fsum(x.tolist())) <= pairwise_bound(x, dtype)
            assert same_scalar(run.value, a[0])
    else:
        want = np.sum(x, dtype=x.dtype)  # sums modulo 2**bits do not depend on the order
        assert int(run.value) == int(want) and a[0] == want


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@settings(ALG)
@given(data=st.data())
def test_specials_propagate_as_in_the_plain_function(dtype, data):
    x = data.draw(arrays(dtype, size=st.integers(1, 60)))  # NaN, ±inf, -0.0 likely
    got = total(x)
    assert same_scalar(got, plain_sum(x))
    if np.isnan(x).any():
        assert np.isnan(got)  # NaN wins whatever the order


@pytest.mark.parametrize("dtype", ["int64", "float64"])
@settings(ALG, max_examples=15)
@given(data=st.data())
def test_original_py_func_sequential_and_call_agree(dtype, data):
    x = data.draw(arrays(dtype, size=st.integers(1, 300), bound=1000))
    values = []
    for f in (dc_sum.py_func, dc_sum.sequential, dc_sum):
        a = x.copy()
        values.append(f(a, 0, a.size))
        assert same_scalar(a[0], values[-1])
    assert all(same_scalar(v, values[0]) for v in values)
    if dtype == "int64":
        assert values[0] == int(np.sum(x))


def test_empty_and_single_element_totals_have_numpys_type():
    for dtype in DTYPES:
        empty = np.array([], dtype=dtype)
        got = total(empty)
        assert type(got) is type(np.sum(empty)) and got == 0
        one = np.array([7], dtype=dtype)
        assert type(total(one)) is type(np.sum(one)) and total(one) == 7
    assert total(np.array([1, 2], dtype=np.int8), return_run=True)[1] is not None
    assert total(np.array([], dtype=np.int8), return_run=True) == (0, None)


def test_integer_overflow_wraps_like_numpy():
    x = np.full(1001, np.iinfo(np.int64).max, dtype=np.int64)
    assert total(x) == np.sum(x)
    u = np.full(777, np.iinfo(np.uint64).max, dtype=np.uint64)
    assert total(u) == np.sum(u)
    assert accumulator_dtype("uint8") == np.uint64 and accumulator_dtype(">f4") == np.float32
