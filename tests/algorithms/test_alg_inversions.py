"""algorithms.inversions: the count equals an independent count; the array ends sorted."""
from __future__ import annotations

import numpy as np
import pytest
from alg_support import CUT_OFFS, DEVICES, DTYPES, arrays, inversions_reference, same_bits
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms.inversions import count_inversions, insertion_count, inversions, merge_count

ALG = settings.get_profile("algorithms")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@settings(ALG)
@given(data=st.data())
def test_count_and_sorted_copy_equal_the_references(dtype, device, data):
    x = data.draw(arrays(dtype))
    before = x.copy()
    count, got = count_inversions(x, return_sorted=True, device=device)
    assert type(count) is int and count == inversions_reference(before)
    assert same_bits(got, np.sort(before, kind="stable"))
    assert same_bits(x, before)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int8", "uint32", "float32"])
@settings(ALG, max_examples=15)
@given(data=st.data())
def test_run_counts_a_span_and_sorts_it_in_place(dtype, device, data):
    x = data.draw(arrays(dtype, specials=False))
    lo = data.draw(st.integers(0, x.size))
    hi = data.draw(st.integers(lo, x.size))
    K = data.draw(CUT_OFFS)
    a = x.copy()
    run = inversions.run(a, np.empty_like(a), lo, hi, device=device, K=K)
    assert int(run.value) == inversions_reference(x[lo:hi])
    want = x.copy()
    want[lo:hi] = np.sort(x[lo:hi], kind="stable")
    assert same_bits(a, want)


@settings(ALG, max_examples=30)
@given(x=st.lists(st.integers(-3, 3), max_size=120))
def test_py_func_sequential_and_call_agree_with_brute_force(x):
    keys = np.array(x, dtype=np.int64)
    brute = sum(1 for i in range(len(x)) for j in range(i + 1, len(x)) if x[i] > x[j])
    for f in (inversions.py_func, inversions.sequential, inversions):
        a = keys.copy()
        assert f(a, np.empty_like(a), 0, a.size) == brute, f
        assert a.tolist() == sorted(x)


def test_helpers_count_what_they_undo():
    a = np.array([5, 1, 4, 2, 3], dtype=np.int64)  # (5,1) (5,4) (5,2) (5,3) (4,2) (4,3)
    assert insertion_count(a, 0, 5) == 6 and a.tolist() == [1, 2, 3, 4, 5]
    b = np.array([2, 5, 9, 1, 5, 6], dtype=np.int64)  # cross: 1 < 2,5,9; 5 < 9; 6 < 9
    assert merge_count(b, np.empty_like(b), 0, 3, 6) == 5 and b.tolist() == [1, 2, 5, 5, 6, 9]


def test_nans_count_as_larger_than_every_number():
    x = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, 2.0])
    # NaN@0 before 1, -0, 0, 2 (4); NaN@2 before -0, 0, 2 (3); 1 before -0, 0 (2); -0/0 equal
    assert count_inversions(x) == 9 == inversions_reference(x)
    count, got, run = count_inversions(x, return_sorted=True, return_run=True)
    assert count == 9 and same_bits(got, np.sort(x, kind="stable")) and run is not None
    assert count_inversions(np.array([np.nan, np.nan, 3.0]), return_run=True) == (2, None)


def test_reversed_array_has_every_pair_inverted():
    n = 5000
    x = np.arange(n, 0, -1, dtype=np.int32)
    assert count_inversions(x) == n * (n - 1) // 2
    assert count_inversions(np.array([], dtype=np.uint8)) == 0
