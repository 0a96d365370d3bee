"""algorithms.mergesort3: a = 3 with uneven thirds sorts like NumPy's stable sort."""
from __future__ import annotations

import numpy as np
import pytest
from alg_support import CUT_OFFS, DEVICES, DTYPES, arrays, same_bits
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms.mergesort3 import merge3, mergesort3, sort3

ALG = settings.get_profile("algorithms")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@settings(ALG)
@given(data=st.data())
def test_sort3_equals_numpy_stable_sort_and_leaves_input_alone(dtype, device, data):
    x = data.draw(arrays(dtype))
    before = x.copy()
    got = sort3(x, device=device)
    assert same_bits(got, np.sort(before, kind="stable"))
    assert same_bits(x, before)


@pytest.mark.parametrize("device", DEVICES)
@settings(ALG, max_examples=15)
@given(data=st.data())
def test_run_sorts_exactly_the_span_in_place(device, data):
    x = data.draw(arrays("int64"))
    lo = data.draw(st.integers(0, x.size))
    hi = data.draw(st.integers(lo, x.size))
    K = data.draw(CUT_OFFS)
    a = x.copy()
    assert mergesort3.run(a, np.empty_like(a), lo, hi, device=device, K=K).value is None
    want = x.copy()
    want[lo:hi] = np.sort(x[lo:hi], kind="stable")
    assert same_bits(a, want)


@settings(ALG, max_examples=30)
@given(x=st.lists(st.integers(-4, 4), max_size=200))
def test_py_func_sequential_and_call_agree(x):
    for f in (mergesort3.py_func, mergesort3.sequential, mergesort3):
        a = np.array(x, dtype=np.int64)
        assert f(a, np.empty_like(a), 0, a.size) is None
        assert a.tolist() == sorted(x), f


# -0.0 and 0.0 compare equal but can be told apart: a stable merge of sorted runs
# is the stable sort of their concatenation, signed zeros included
KEYS = st.sampled_from([-1.0, -0.0, 0.0, 2.5])


@settings(ALG, max_examples=60)
@given(runs=st.lists(st.lists(KEYS, max_size=8), min_size=3, max_size=3))
def test_merge3_is_stable_for_every_run_length(runs):
    sorted_runs = [np.sort(np.array(r, dtype=np.float64), kind="stable") for r in runs]
    a = np.concatenate(sorted_runs)
    want = np.sort(a, kind="stable")
    m1 = sorted_runs[0].size
    m2 = m1 + sorted_runs[1].size
    merge3(a, np.empty_like(a), 0, m1, m2, a.size)
    assert same_bits(a, want)


@pytest.mark.parametrize("n", [13, 14, 15, 100, 1001])
def test_uneven_thirds(n):
    x = np.random.default_rng(n).permutation(n)
    a = x.copy()
    mergesort3.py_func(a, np.empty_like(a), 0, n)
    assert a.tolist() == list(range(n))
