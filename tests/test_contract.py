"""The contract every device path passes: each ready algorithm × cpu, gpu, hybrid (α, y).

Hypothesis chooses the data (sizes 0..20000, mostly small); every result is
compared with an independent reference (NumPy's stable sort bit for bit, an
independent inversion count, np.sum or the plain Python function for sums,
Kadane's algorithm), and every :class:`hpu.Run` is checked against the split
the issue defines (see ``contract_support.check_report``).

Compiling costs a Numba compile and an OpenCL build per (function, dtype), so
each algorithm runs on a representative subset of dtypes (int8/uint8/float32
among them): mergesort int32, int64, float64, uint8; mergesort3 int64, float64,
int8; inversions int32, int64, float32; dc_sum int8, int64, float32, float64;
max_subarray_sum int64, float64 (through ``max_subarray``) and float32 (raw).
The other dtypes run on the CPU in tests/algorithms/.

The model's own choice (α = y = None) is exercised with
``HPU_NO_AUTOCALIBRATE=1`` and a private, empty profile folder: hpu's built-in
profile, never a calibration.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from contract_support import (CASES, CONFIGS, SIZES, Config, arrays,  # noqa: F401
                              builtin_profile, check_report, level_sizes, same_scalar,
                              same_values)
from hypothesis import given, settings
from hypothesis import strategies as st

from hpu import HpuPerformanceWarning, _profile
from hpu._hybrid import choose_split
from hpu._opencl._device import select_device

pytestmark = pytest.mark.opencl

COMPILES = settings.get_profile("hpu-compiles")

PAIRS = [(case, dtype) for case in CASES for dtype in case.dtypes]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("case,dtype", PAIRS, ids=[f"{c.name}-{d}" for c, d in PAIRS])
@settings(COMPILES, max_examples=8)
@given(data=st.data())
def test_every_device_path_gives_the_reference_result(case, dtype, config, data):
    x = case.draw(data, dtype)
    run = case.check(x, config.options)
    if run is not None:
        check_report(run, config)


# Hypothesis mostly draws small trees; here every algorithm meets a tree big enough
# that both shares of level y are non-empty, so "both devices did work" is always checked.
@pytest.mark.parametrize("config", [c for c in CONFIGS if c.device == "hybrid"
                                    and 0 < c.alpha < 1 and c.y > 0], ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_large_split_run_uses_both_devices(case, config):
    dtype = case.dtypes[0]
    rng = np.random.default_rng(20000)
    x = rng.integers(-1000, 1000, 20000).astype(dtype)
    run = case.check(x, config.options)
    s, m = check_report(run, config)
    assert 0 < s < m, run.summary()
    assert run.cpu_tasks > 0 and run.gpu_tasks > 0
    assert level_sizes(run)[run.y] == m >= 2


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@settings(COMPILES, max_examples=5)
@given(data=st.data())
def test_the_models_split_is_used_when_none_is_given(case, data):
    dtype = case.dtypes[0]
    bound = 1000 if np.dtype(dtype).kind == "f" else 2**20
    x = data.draw(arrays(dtype, size=SIZES, bound=bound, min_size=2))  # no NaN: n is x.size
    args = case.args(x)
    program, values = case.function._program_for(*args)
    alpha, y, _ = choose_split(case.function, program, values, select_device(None), "advanced")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = case.function.run(*args)  # device, alpha, y: the defaults
    told = [w for w in caught if issubclass(w.category, HpuPerformanceWarning)]
    assert run.device == "hybrid"
    if alpha >= 1.0:  # the model keeps everything on the CPU (said once per function)
        check_report(run, Config("hybrid", 1.0, y))
        assert len(told) <= 1
    else:
        check_report(run, Config("hybrid", alpha, y))
        assert told == []

    plain = case.args(x)
    value = case.function(*plain)  # a plain call: the same default path
    if isinstance(value, tuple):
        assert all(same_scalar(a, b) for a, b in zip(value, run.value))
    elif value is not None:
        assert same_scalar(value, run.value)
    for got, want in zip(plain, args):
        if isinstance(got, np.ndarray):
            assert same_values(got, want)
    assert case.check(x, {}) is not None  # through the wrapper: the reference result


@pytest.mark.parametrize("case", [c for c in CASES if c.name in ("mergesort", "dc_sum")],
                         ids=lambda c: c.name)
def test_a_model_that_favours_the_device_splits_the_run_as_planned(case, monkeypatch):
    # a profile whose device is much faster than the CPU and cheap to reach: the
    # model now sends a share to the device, and the run must follow its (alpha, y)
    device = select_device(None)
    fast = dataclasses.replace(_profile.Profile.builtin(device), g=4096, gamma=1 / 100,
                               device_shares_cpu=False, latency_s=1e-6,
                               seconds_per_byte=1e-11)
    monkeypatch.setattr(_profile, "active_profile", lambda device=None, **kw: fast)
    x = np.random.default_rng(7).integers(-1000, 1000, 20000).astype(case.dtypes[0])
    args = case.args(x)
    program, values = case.function._program_for(*args)
    alpha, y, plan = choose_split(case.function, program, values, device, "advanced")
    assert plan.uses_device and 0 < alpha < 1 and y >= 1, plan.reason

    run = case.check(x, {})  # the defaults, through the wrapper: the reference result
    s, m = check_report(run, Config("hybrid", alpha, y))
    assert 0 < s < m and run.cpu_tasks > 0 and run.gpu_tasks > 0, run.summary()


# ------------------------------------------------------------------ every registered plug-in

def _registered():
    from algorithms import _registry

    return [_registry.get(name) for name in _registry.names()]


def test_every_registered_algorithm_has_a_hand_written_contract_case():
    # the cases above add NaN handling and wrappers; a new plug-in must get one too
    functions = {case.function for case in CASES}
    missing = [alg.name for alg in _registered() if alg.function not in functions]
    assert missing == [], f"add a contract_support.Case for {missing}"


@pytest.mark.parametrize("config", [Config("cpu"), Config("gpu"), Config("hybrid", 0.5, 2),
                                    Config("hybrid", 0.0, 1)], ids=str)
@pytest.mark.parametrize("alg", _registered(), ids=lambda a: a.name)
@settings(COMPILES, max_examples=4)
@given(n=st.integers(1, 3000), seed=st.integers(0, 2**16))
def test_every_registered_algorithm_matches_its_registered_reference(alg, config, n, seed):
    # what `hpu run` does, through the registry alone: input maker, reference, checker
    x = alg.make_input(n, "int32", seed)
    prepared = alg.prepare(x)
    args = prepared.args(x)
    run = alg.function.run(*args, **config.options)
    assert prepared.check(prepared.output(args, run.value), prepared.expected(x)) is None
    check_report(run, config)
