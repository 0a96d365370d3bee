"""Arrays that don't fit each other: a copy into a narrower dtype is refused before anything runs.

Mirrors :func:`hpu._guard.check_array_fit`.  Before it, int64 keys sorted
with an int32 scratch array came back as ``[0, 1, 2, ...]``: the data destroyed.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from algorithms import mergesort as M


def copy_narrowing(a, tmp, lo, hi):
    for k in range(lo, hi):
        tmp[k] = np.int32(a[k])   # explicit: the user's decision


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def explicit(a, tmp, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    explicit(a, tmp, lo, mid)
    explicit(a, tmp, mid, hi)
    copy_narrowing(a, tmp, lo, hi)


PATHS = [("sequential", {}), ("cpu", {}), ("gpu", {}), ("hybrid", dict(alpha=0.0, y=2)),
         ("hybrid", dict(alpha=0.5, y=3))]


def _call(f, args, path, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if path == "sequential":
            return f.sequential(*args)
        return f.run(*args, device=path, **kw).value


@pytest.mark.parametrize("path, kw", PATHS)
@settings(max_examples=3, deadline=None)
@given(x=st.lists(st.integers(-(1 << 62), 1 << 62), min_size=2, max_size=300))
def test_int64_data_with_an_int32_scratch_is_refused_untouched(path, kw, x):
    x = np.array(x, np.int64)
    a = x.copy()
    tmp = np.zeros(len(a), np.int32)
    with pytest.raises(hpu.HpuError) as err:
        _call(M.mergesort, (a, tmp, 0, len(a)), path, kw)
    assert isinstance(err.value, TypeError)
    msg = str(err.value)
    assert "mergesort.py:" in msg and "in merge(): tmp[k] = a[i]" in msg
    assert "stores a (int64 values) into tmp (int32)" in msg and "np.empty_like(a)" in msg
    assert (a == x).all() and not tmp.any()  # nothing was touched


@pytest.mark.parametrize("path, kw", PATHS[:2])
def test_a_wider_scratch_and_an_explicit_conversion_are_accepted(path, kw):
    x = np.random.default_rng(3).integers(-1000, 1000, 500).astype(np.int32)
    a = x.copy()
    _call(M.mergesort, (a, np.empty(len(a), np.int64), 0, len(a)), path, kw)
    assert (a == np.sort(x)).all()
    a = np.arange(64, dtype=np.int64)
    tmp = np.zeros(64, np.int32)
    _call(explicit, (a, tmp, 0, 64), path, kw)
    assert (tmp == np.arange(64)).all()
