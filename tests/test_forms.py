"""Every textbook form of issue 10 gives the plain Python answer on every device.

The functions live in ``forms_examples.py`` (hpu reads their source).  Each runs
on the CPU, on the OpenCL device alone (every leaf and combine there) and
hybrid at explicit splits that give the device leaves and combines
(alpha=0.25, y=1 and alpha=0.5, y=3), at sizes 1, 2, odd and large enough that
the device gets tasks, on arrays Hypothesis chooses; the reference is the
function's own ``.py_func`` (plain Python) on a copy of the same input, and
arrays the function writes must end up equal too.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forms_examples as F

FUNCTIONS = [F.total, F.largest, F.count_positive, F.best_sum, F.max_subarray, F.is_sorted,
             F.mergesort, F.total4, F.span_min, F.total_ternary, F.count_desc, F.min_max]

SPLITS = [
    pytest.param({"device": "cpu"}, id="cpu"),
    pytest.param({"device": "gpu"}, id="gpu"),
    pytest.param({"device": "hybrid", "alpha": 0.25, "y": 1}, id="hybrid-0.25-1"),
    pytest.param({"device": "hybrid", "alpha": 0.5, "y": 3}, id="hybrid-0.5-3"),
]

#: 1, 2, odd sizes, and sizes where the device receives whole subtrees
sizes = st.sampled_from([1, 2, 3, 7, 31, 1001, 2049])


def _args(fn, x):
    if fn is F.mergesort:
        return (x, np.empty_like(x), 0, len(x))
    return (x, 0, len(x))


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_each_form_matches_plain_python_on_every_device(fn, split, data):
    n = data.draw(sizes, label="n")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, n).astype(np.int64)
    if fn is F.is_sorted and data.draw(st.booleans(), label="sorted"):
        x.sort()  # the True answer, not only False
    args = _args(fn, x)
    expected_args = _copy(args)
    expected = fn.py_func(*expected_args)
    got_args = _copy(args)
    run = fn.run(*got_args, **split)
    assert run.value == expected, (fn.__name__, n, split)
    assert type(run.value) is type(expected) or not isinstance(expected, bool)
    np.testing.assert_array_equal(got_args[0], expected_args[0])
    assert run.fallbacks == []


@pytest.mark.parametrize("fn", [F.total, F.is_sorted, F.count_positive, F.total4, F.min_max],
                         ids=lambda f: f.__name__)
def test_the_device_gets_work_at_the_large_size(fn):
    x = np.arange(2049, dtype=np.int64)
    run = fn.run(x, 0, len(x), device="hybrid", alpha=0.5, y=3)
    assert run.gpu_tasks > 0
    assert run.value == fn.py_func(x, 0, len(x))


def test_a_bool_result_is_a_bool_on_the_device():
    x = np.arange(2049, dtype=np.int64)
    assert F.is_sorted.run(x, 0, len(x), device="gpu").value is True
    x[1000] = -5
    assert F.is_sorted.run(x, 0, len(x), device="gpu").value is False
