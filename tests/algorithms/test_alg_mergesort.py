"""algorithms.mergesort: the sort equals NumPy's stable sort, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from alg_support import CUT_OFFS, DEVICES, DTYPES, FLOAT_DTYPES, INT_DTYPES, arrays, same_bits
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from algorithms.mergesort import insertion_sort, merge, mergesort, sort

ALG = settings.get_profile("algorithms")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@settings(ALG)
@given(data=st.data())
def test_sort_equals_numpy_stable_sort_and_leaves_input_alone(dtype, device, data):
    x = data.draw(arrays(dtype))
    before = x.copy()
    got = sort(x, device=device)
    assert same_bits(got, np.sort(before, kind="stable"))
    assert same_bits(x, before)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int32", "uint64", "float64"])
@settings(ALG, max_examples=15)
@given(data=st.data())
def test_run_sorts_exactly_the_span_in_place(dtype, device, data):
    x = data.draw(arrays(dtype, specials=False))
    lo = data.draw(st.integers(0, x.size))
    hi = data.draw(st.integers(lo, x.size))
    K = data.draw(CUT_OFFS)
    a = x.copy()
    run = mergesort.run(a, np.empty_like(a), lo, hi, device=device, K=K)
    want = x.copy()
    want[lo:hi] = np.sort(x[lo:hi], kind="stable")
    assert same_bits(a, want)
    assert run.value is None


@pytest.mark.parametrize("dtype", ["int16", "float32"])
@settings(ALG, max_examples=20)
@given(data=st.data())
def test_original_py_func_sequential_and_call_agree(dtype, data):
    x = data.draw(arrays(dtype, size=st.integers(0, 300), specials=False))
    want = np.sort(x, kind="stable")
    results = []
    for f in (mergesort.py_func, mergesort.sequential, mergesort):
        a = x.copy()
        results.append(f(a, np.empty_like(a), 0, a.size))
        assert same_bits(a, want), f
    assert results == [None] * 3  # the decorated call returns what the original returns


def test_sort_return_run_reports_the_run():
    x = np.arange(1000, 0, -1, dtype=np.int32)
    got, run = sort(x, return_run=True, device="cpu")
    assert same_bits(got, np.arange(1, 1001, dtype=np.int32))
    assert isinstance(run, hpu.Run)
    assert run.value is None and run.fallbacks == []
    assert sort(np.array([5], dtype=np.int8), return_run=True)[1] is None  # nothing to run


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sort_places_nans_last_and_keeps_signed_zeros_in_input_order(dtype):
    x = np.array([np.nan, 0.0, -np.inf, -0.0, 1.0, -np.nan, 0.0, np.inf, -0.0, np.nan], dtype=dtype)
    before = x.copy()
    got = sort(x)
    assert same_bits(got, np.sort(before, kind="stable"))
    # spelled out: -inf, the zeros as they came (0, -0, 0, -0), 1, inf, then the NaNs
    assert got[0] == -np.inf and got[5] == 1.0 and got[6] == np.inf and np.isnan(got[7:]).all()
    assert list(np.signbit(got[1:5])) == [False, True, False, True]
    assert same_bits(x, before)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_sort_of_empty_and_single_element_arrays(dtype):
    assert same_bits(sort(np.array([], dtype=dtype)), np.array([], dtype=dtype))
    one = np.array([np.iinfo(dtype).max], dtype=dtype)
    assert same_bits(sort(one), one)


def test_sort_accepts_strided_and_byte_swapped_arrays():
    x = np.arange(40, 0, -1, dtype=np.int64)
    assert same_bits(sort(x[::3]), np.sort(x[::3]))
    swapped = np.array([3, 1, 2, -7], dtype=">i4")
    got = sort(swapped)
    assert got.dtype == np.dtype("int32") and got.tolist() == [-7, 1, 2, 3]


# -0.0 and 0.0 compare equal but can be told apart: a stable merge of two sorted
# runs, or a stable insertion sort, must give NumPy's stable sort, signed zeros included
KEYS = st.sampled_from([-1.0, -0.0, 0.0, 2.5])


@settings(ALG, max_examples=50)
@given(x=st.lists(KEYS, max_size=40), cut=st.integers(0, 40))
def test_helpers_merge_and_insertion_sort_stably(x, cut):
    keys = np.array(x, dtype=np.float64)
    cut = min(cut, keys.size)
    a = np.concatenate((np.sort(keys[:cut], kind="stable"), np.sort(keys[cut:], kind="stable")))
    want = np.sort(a, kind="stable")
    merge(a, np.empty_like(a), 0, cut, a.size)
    assert same_bits(a, want)
    b = keys.copy()
    insertion_sort(b, 0, b.size)
    assert same_bits(b, np.sort(keys, kind="stable"))


@pytest.mark.parametrize("n", [0, 1, 2, 16, 17, 33, 1000])
def test_plain_recursion_sorts_every_size_around_the_cut_off(n):
    x = np.random.default_rng(n).integers(-50, 50, n)
    a = x.copy()
    mergesort.py_func(a, np.empty_like(a), 0, n)
    assert a.tolist() == sorted(x.tolist())

