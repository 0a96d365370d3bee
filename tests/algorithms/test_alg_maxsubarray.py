"""algorithms.maxsubarray: the four sums equal Kadane's algorithm and direct scans."""
from __future__ import annotations

import numpy as np
import pytest
from alg_support import CUT_OFFS, DEVICES, DTYPES, FLOAT_DTYPES, INT_DTYPES, SMALL_MAX, arrays, kadane_reference
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms.maxsubarray import MaxSubarray, max_subarray, max_subarray_sum

ALG = settings.get_profile("algorithms")


def bound_for(dtype):
    """Element bound that keeps every sum of 10**5 elements exact in int64."""
    return 2**40 if np.dtype(dtype).itemsize == 8 else None


def close(got, want, x, eps):
    """Sums of the same values in different orders: within n · eps · Σ|x|."""
    scale = float(np.sum(np.abs(x.astype(np.float64)))) + 1.0
    return all(abs(float(g) - float(w)) <= 4 * x.size * eps * scale for g, w in zip(got, want))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@settings(ALG)
@given(data=st.data())
def test_max_subarray_equals_kadane(dtype, device, data):
    if dtype in FLOAT_DTYPES:
        x = data.draw(arrays(dtype, bound=1000, min_size=1))
    else:
        x = data.draw(arrays(dtype, bound=bound_for(dtype), min_size=1))
    before = x.copy()
    got = max_subarray(x, device=device)
    want = kadane_reference(x.tolist())
    fields = (got.total, got.best_prefix, got.best_suffix, got.best)
    if dtype in INT_DTYPES:
        assert fields == want and all(type(v) is int for v in fields)
    else:
        assert close(fields, want, x, np.finfo(np.float64).eps)
        assert all(type(v) is float for v in fields)
        if x.size <= SMALL_MAX:  # same additions in the same order: exact
            assert fields == max_subarray_sum.py_func(x.astype(np.float64), 0, x.size)
    assert np.array_equal(x, before)


# max_subarray() above covers every dtype (it adds in int64 or float64); running on
# the raw dtype compiles one specialisation per dtype, so a few representative ones
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int8", "uint64", "float32"])
@settings(ALG, max_examples=15)
@given(data=st.data())
def test_run_on_the_raw_dtype(dtype, device, data):
    bound = 1000 if dtype in FLOAT_DTYPES else bound_for(dtype)
    x = data.draw(arrays(dtype, bound=bound, min_size=1))
    K = data.draw(CUT_OFFS)
    value = tuple(max_subarray_sum.run(x, 0, x.size, device=device, K=K).value)
    if dtype in INT_DTYPES:  # compiled integer arithmetic is 64-bit: exact
        assert tuple(int(v) for v in value) == kadane_reference(x.tolist())
    else:
        assert close(value, kadane_reference(x.tolist()), x, np.finfo(dtype).eps)
        if x.size <= SMALL_MAX:  # float32 stays float32 in both: bit for bit
            assert value == tuple(max_subarray_sum.py_func(x, 0, x.size))


@settings(ALG, max_examples=30)
@given(x=st.lists(st.integers(-100, 100), min_size=1, max_size=200))
def test_py_func_sequential_and_call_agree_with_kadane(x):
    a = np.array(x, dtype=np.int64)
    want = kadane_reference(x)
    for f in (max_subarray_sum.py_func, max_subarray_sum.sequential, max_subarray_sum):
        assert tuple(int(v) for v in f(a, 0, a.size)) == want, f


def test_hand_computed_cases():
    # prefix sums -2 -1 -4 0 -1 1 2 -3 1; suffix sums (from the right) 4 -1 0 2 1 5 2 3 1;
    # the best subarray is 4 -1 2 1
    x = np.array([-2, 1, -3, 4, -1, 2, 1, -5, 4], dtype=np.int32)
    assert max_subarray(x) == MaxSubarray(total=1, best_prefix=2, best_suffix=5, best=6)
    neg = np.array([-5.0, -1.5, -3.0])  # all negative: the best is the largest element
    assert max_subarray(neg) == MaxSubarray(total=-9.5, best_prefix=-5.0, best_suffix=-3.0, best=-1.5)
    assert max_subarray(np.array([7], dtype=np.uint8)) == MaxSubarray(7, 7, 7, 7)
    result, run = max_subarray(x, return_run=True)
    assert result.best == 6 and run is not None


def test_empty_and_too_large_unsigned_inputs_are_refused():
    with pytest.raises(ValueError, match="at least one element"):
        max_subarray(np.array([], dtype=np.float64))
    with pytest.raises(ValueError, match=r"2\*\*63.*astype\(np.float64\)"):
        max_subarray(np.array([1, 2**63], dtype=np.uint64))
