"""Run options apart from the user's arguments (``hpu._options``, ``f.options(...)``).

A function whose parameters are called like run options (``y``, ``K``,
``depth``, ``device``) gets them by keyword through ``f.options(...)``; the
same keyword on ``f.run`` is refused with an error naming ``.options()``; the
configured object has the whole interface (call, ``.run``, ``.plan``,
``.sequential``, ``.opencl_source``) and gives the plain Python result on
every device path, with Hypothesis choosing the data.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from contract_support import builtin_profile  # noqa: F401 - no calibration in this module
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hpu
from hpu._options import RUN_OPTIONS, check_options

COMPILES = settings.get_profile("hpu-compiles")


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def scaled(a, lo, hi, y, K, depth, device):
    """sum(a[lo:hi]) * y + K * (hi - lo) - depth * device, with parameters named like options."""
    if hi - lo <= 1:
        return a[lo] * y + K - depth * device
    mid = (lo + hi) // 2
    left = scaled(a, lo, mid, y, K, depth, device)
    right = scaled(a, mid, hi, y, K, depth, device)
    return left + right


def plain(a, y, K, depth, device):
    return sum(int(v) * y + K - depth * device for v in a)


PATHS = [{"device": "cpu"}, {"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2},
         {"device": "hybrid", "alpha": 0.0, "y": 1}, {"device": "cpu", "K": 3}]


@pytest.mark.opencl
@pytest.mark.parametrize("opts", PATHS, ids=lambda o: "-".join(f"{k}{v}" for k, v in o.items()))
@settings(COMPILES, max_examples=6)
@given(x=hnp.arrays(np.int64, st.integers(1, 3000), elements=st.integers(-1000, 1000)),
       y=st.integers(-5, 5), K=st.integers(0, 9), depth=st.integers(0, 9),
       device=st.integers(0, 3))
def test_parameters_named_like_options_reach_the_function(opts, x, y, K, depth, device):
    f = scaled.options(**opts)
    want = plain(x, y, K, depth, device)
    run = f.run(x, 0, x.size, y=y, K=K, depth=depth, device=device)
    assert run.value == want and run.device == opts["device"]
    assert f(x, 0, x.size, y=y, K=K, depth=depth, device=device) == want
    assert f.sequential(x, 0, x.size, y=y, K=K, depth=depth, device=device) == want
    if "K" in opts:  # the run option, not the user's K
        assert run.K <= opts["K"] and run.plan.cutoff_level == opts["K"]
    assert run.plan == f.plan(x, 0, x.size, y=y, K=K, depth=depth, device=device)


@pytest.mark.parametrize("name", ["y", "K", "depth", "device"])
def test_a_run_option_that_shadows_a_parameter_is_refused_naming_options(name):
    x = np.arange(8)
    values = dict(y=1, K=0, depth=0, device=0)
    args = {name: values.pop(name), **values}  # the clash named first
    with pytest.raises(TypeError) as info:
        scaled.run(x, 0, 8, **args)
    message = str(info.value)
    assert ".options(" in message and "both a parameter" in message
    assert f"{name}=" in message
    # the form it gives is one that works
    assert f"scaled.options({name}=...).run(...)" in message, message
    with pytest.raises(TypeError, match=rf"scaled\.options\({name}=\.\.\.\)\.plan\("):
        scaled.plan(x, 0, 8, **args)
    # by position there is no clash
    assert scaled.options(device="cpu").run(x, 0, 8, 2, 0, 0, 0).value == 2 * 28


def test_a_run_option_given_to_a_configured_run_sets_it_for_that_run():
    from algorithms.mergesort import mergesort

    x = np.random.default_rng(3).integers(-50, 50, 3001).astype(np.int64)
    f = mergesort.options(K=2)
    a = x.copy()
    run = f.run(a, np.empty_like(x), 0, x.size, device="cpu")
    assert run.device == "cpu" and run.plan.cutoff_level == 2
    assert np.array_equal(a, np.sort(x))
    plan = f.plan(x, np.empty_like(x), 0, x.size, device="cpu")
    assert plan == run.plan
    with pytest.raises(ValueError, match="device='tpu'"):
        f.run(x.copy(), np.empty_like(x), 0, x.size, device="tpu")
    assert f.run_options == {"K": 2}                    # the object is unchanged


def test_options_are_checked_when_set():
    with pytest.raises(TypeError, match="unknown run option 'devcie'.*device"):
        scaled.options(devcie="cpu")
    with pytest.raises(ValueError, match="device='tpu'"):
        scaled.options(device="tpu")
    with pytest.raises(ValueError, match="alpha=2 must be"):
        scaled.options(alpha=2)
    with pytest.raises(ValueError, match="applies only to device='hybrid'"):
        scaled.options(device="cpu", y=2)
    with pytest.raises(ValueError, match="depth=0 must be"):
        scaled.options(depth=0)
    # an int was taken for a device object, failed inside, and the run fell back silently
    with pytest.raises(TypeError, match=r"cl_device=0 must be .*pass e.g. cl_device='0:0'"):
        scaled.options(cl_device=0)
    with pytest.raises(TypeError, match=r"cl_device=1.5 must be"):
        scaled.options(device="gpu", cl_device=1.5)
    # .plan(cluster=5) was accepted where .options and .run refused it
    x = np.arange(8, dtype=np.float64)
    for bad in (5, True, [1]):
        for entry in (lambda: scaled.options(cluster=bad),
                      lambda: scaled.plan(x, 0, 8, 2.0, 1, 1, 1, cluster=bad)):
            with pytest.raises(TypeError, match=re.escape(f"cluster={bad!r}: expected a dask")):
                entry()


def test_options_chain_and_keep_the_interface():
    from algorithms.mergesort import mergesort

    f = mergesort.options(device="cpu").options(K=2)
    assert f.run_options == {"device": "cpu", "K": 2}
    assert f.py_func is mergesort.py_func and f.__name__ == "mergesort"
    x = np.random.default_rng(0).integers(0, 100, 1000).astype(np.int32)
    run = f.run(x, np.empty_like(x), 0, x.size)
    assert run.K == 2 == run.plan.cutoff_level and np.array_equal(x, np.sort(x))
    src = mergesort.options(depth=8).opencl_source(x, np.empty_like(x), 0, x.size)
    assert src == mergesort.opencl_source(x, np.empty_like(x), 0, x.size, depth=8)
    assert "options(device='cpu', K=2)" in repr(f)


def test_options_work_under_hpu_disable(monkeypatch):
    monkeypatch.setenv("HPU_DISABLE", "1")
    x = np.arange(6)
    f = scaled.options(device="gpu")
    assert f(x, 0, 6, y=1, K=0, depth=0, device=0) == 15
    assert f.run(x, 0, 6, y=1, K=0, depth=0, device=0).device == "python"


def test_the_table_is_the_one_list_of_options():
    assert set(RUN_OPTIONS) >= {"device", "alpha", "y", "K", "strategy", "cl_device", "depth",
                                "machine", "backend"}
    full = check_options({})
    assert full == {k: o.default for k, o in RUN_OPTIONS.items()}
    assert all(o.doc for o in RUN_OPTIONS.values())
