"""Small problems take the small path (hpu/_overheads.py, the planner, the CPU backend).

The planner weighs the fixed costs of a run (a phase's bookkeeping, a parallel
region, a kernel launch) against the work: a problem too small to pay for them
runs as one task on the calling thread (K = 0, the sequential solver), and
phases with too little work run the serial level drivers.  Every path must
still give plain NumPy's answer; the decisions must follow the costs
(monotone in them), be recorded in the plan (``plan.reason``,
``plan.serial_levels``) and never override what the caller fixed (K, alpha/y,
``device="gpu"``).
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dc_examples as E
from hpu import _overheads, _profile, model
from hpu._cpu import CpuBackend
from hpu._driver import execute
from hpu._errors import ProfileError
from hpu._plan import make_plan

COMPILES = settings.get_profile("hpu-compiles")
TWO_CORES = model.Machine(p=2, g=1, gamma=1.0)


def _values(f, *args):
    program, values = f._program_for(*args)
    return program, values


def _sort_args(n, seed=0):
    x = np.random.default_rng(seed).integers(-1000, 1000, n).astype(np.int64)
    return x, np.empty_like(x), 0, n


def test_a_small_sort_runs_as_one_task_and_says_why():
    x, tmp, lo, hi = _sort_args(300)
    a = x.copy()
    run = E.mergesort.run(a, tmp, lo, hi, device="cpu")
    np.testing.assert_array_equal(a, np.sort(x))
    assert run.device == "cpu"  # one CPU thread is still a CPU run
    assert run.plan.cutoff_level == 0 and run.K == 0 and run.level_sizes == (1,)
    assert "small problem" in run.plan.reason and "K = 0" in run.plan.reason
    assert [r.phase for r in run.levels] == ["leaf"]


def test_a_large_sort_is_split_over_the_threads():
    program, values = _values(E.mergesort, *_sort_args(1 << 16))
    plan = make_plan(program.spec, values, device="cpu", machine=TWO_CORES)
    assert plan.cutoff_level >= 3 and "small problem" not in plan.reason
    # the leaf level solves whole subtrees: worth a parallel region
    assert plan.cutoff_level not in plan.serial_levels
    assert 0 in plan.serial_levels  # one task: the calling thread


@pytest.mark.parametrize("n", [64, 4096, 1 << 16, 1 << 20])
def test_the_decision_follows_the_fixed_costs(n):
    program, values = _values(E.mergesort, *_sort_args(16))
    values = dict(values, hi=n)  # only the size matters to the planner
    cheap = _overheads.Overheads(phase_s=0.0, parallel_level_s=0.0)
    dear = _overheads.Overheads(phase_s=1.0, parallel_level_s=1.0)
    assert make_plan(program.spec, values, device="cpu", machine=TWO_CORES,
                     overheads=cheap).cutoff_level > 0
    assert make_plan(program.spec, values, device="cpu", machine=TWO_CORES,
                     overheads=dear).cutoff_level == 0
    # the default costs: small at a few thousand keys, split at a million
    plan = make_plan(program.spec, values, device="cpu", machine=TWO_CORES)
    if n <= 4096:
        assert plan.cutoff_level == 0
    if n >= 1 << 20:
        assert plan.cutoff_level > 0


def test_what_the_caller_fixed_is_never_overridden():
    program, values = _values(E.mergesort, *_sort_args(100))
    dear = _overheads.Overheads(phase_s=1.0, parallel_level_s=1.0)
    plan = make_plan(program.spec, values, device="cpu", K=3, machine=TWO_CORES, overheads=dear)
    assert plan.cutoff_level == 3
    plan = make_plan(program.spec, values, device="hybrid", alpha=0.5, y=1, machine=TWO_CORES,
                     overheads=dear)
    assert plan.cutoff_level > 0 and plan.strategy == "given"


def test_serial_levels_are_the_levels_with_little_work():
    # a sum: one addition per combine; 2 cores: the combines are not worth a region, the
    # leaves (whole subtrees of a large array) are
    program, values = _values(E.dsum, np.ones(16), 0, 16)
    values = dict(values, hi=1 << 24)
    plan = make_plan(program.spec, values, device="cpu", machine=TWO_CORES)
    K = plan.cutoff_level
    assert K > 0
    assert set(range(K)) <= set(plan.serial_levels)
    assert K not in plan.serial_levels
    # free parallel regions: only the single-task root level is serial
    free = _overheads.Overheads(phase_s=0.0, parallel_level_s=0.0)
    plan = make_plan(program.spec, values, device="cpu", machine=TWO_CORES, overheads=free)
    assert plan.serial_levels == (0,)


def _run_with(backend, f, args):
    program, values = f._program_for(*args)
    return execute(program.layout, program.types, values, backend(program), K=None,
                   min_tasks=16)


@settings(COMPILES)
@given(x=hnp.arrays(np.int64, st.integers(0, 3000), elements=st.integers(-1000, 1000)),
       serial=st.sampled_from(["all", "none", "expand only"]))
def test_serial_and_parallel_drivers_agree_with_numpy(x, serial):
    levels = range(64) if serial == "all" else ()
    expand = 1 << 30 if serial != "none" else 2  # count/fill: serial below this many tasks

    def backend(program):
        return CpuBackend(program, serial_levels=levels, serial_expand=expand)

    a = x.copy()
    _run_with(backend, E.mergesort, (a, np.empty_like(a), 0, len(a)))
    np.testing.assert_array_equal(a, np.sort(x))
    if len(x):
        got = _run_with(backend, E.dsum, (x.astype(np.float64), 0, len(x))).value
        assert got == pytest.approx(float(np.sum(x)))
        got = _run_with(backend, E.maxsub, (x.copy(), 0, len(x))).value
        assert got == E.ref_maxsub(x)


@settings(COMPILES)
@given(x=hnp.arrays(np.int64, st.integers(1, 600), elements=st.integers(-1000, 1000)),
       options=st.sampled_from([dict(device="cpu"), dict(device="gpu"),
                                dict(device="hybrid"), dict(device="hybrid", alpha=0.5, y=1),
                                dict(device="hybrid", alpha=0.0, y=2)]))
def test_small_inputs_on_every_device_path(x, options):
    import warnings

    a = x.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the model keeps everything on the CPU" once
        run = E.mergesort.options(**options).run(a, np.empty_like(a), 0, len(a))
    np.testing.assert_array_equal(a, np.sort(x))
    if options.get("device") == "gpu" or "alpha" in options:
        assert "small problem" not in run.plan.reason  # the caller chose the split


def test_the_profile_carries_the_fixed_costs(tmp_path):
    base = _profile.Profile.builtin(None)
    assert base.parallel_level_s is None
    assert _overheads.overheads_of(base).parallel_level_s == _overheads.DEFAULTS[
        "parallel_level_s"]
    measured = dataclasses.replace(base, parallel_level_s=3e-6, device_launch_s=2e-5)
    back = _profile.Profile.from_json(measured.to_json())
    assert back.parallel_level_s == 3e-6 and back.device_launch_s == 2e-5
    ov = _overheads.overheads_of(back)
    assert (ov.parallel_level_s, ov.device_launch_s) == (3e-6, 2e-5)
    data = json.loads(measured.to_json())
    data.pop("parallel_level_s")  # older profiles have no such field: the default stands in
    assert _profile.Profile.from_json(json.dumps(data)).parallel_level_s is None
    data["device_launch_s"] = -1.0
    with pytest.raises(ProfileError, match="device_launch_s"):
        _profile.Profile.from_json(json.dumps(data))


def test_measure_returns_positive_seconds():
    got = _overheads.measure(repeats=20)
    assert set(got) == {"parallel_level_s"} and 0 < got["parallel_level_s"] < 1


def test_the_run_summary_says_why():
    x, tmp, lo, hi = _sort_args(100)
    run = E.mergesort.run(x, tmp, lo, hi, device="cpu")
    assert "plan: small problem" in run.summary()


# ---------------------------------------------------------------- fixed costs seen under load

@pytest.fixture
def observing(monkeypatch):
    monkeypatch.setenv("HPU_OBSERVE_OVERHEADS", "1")
    monkeypatch.setattr(_overheads, "_observed", type(_overheads._observed)(maxlen=16))
    monkeypatch.setattr(_overheads, "_first_runs", {})
    return _overheads._observed


def _fake_run(plan, seconds):
    return type("R", (), {"plan": plan, "seconds": seconds, "fallbacks": []})()


def test_a_run_records_what_its_parallel_regions_cost(observing):
    program, values = _values(E.mergesort, *_sort_args(4096))
    plan = make_plan(program.spec, values, device="cpu", K=3, machine=TWO_CORES)
    assert _overheads._regions(plan) >= 1
    assert _overheads.observe(_fake_run(plan, 0.02)) is None  # a plan's first run: warm-up
    got = _overheads.observe(_fake_run(plan, 0.02))
    ov = _overheads.Overheads()
    work = plan.predicted_time * ov.seconds_per_unit
    expected = (0.02 - work - 10 * ov.phase_s) / _overheads._regions(plan)
    assert got == pytest.approx(expected) and len(observing) == 1
    # nothing to learn from: a long run, a run that used the device, a run of one task
    assert _overheads.observe(_fake_run(plan, 1.0)) is None
    one = make_plan(program.spec, values, device="cpu", K=0, machine=TWO_CORES)
    assert _overheads.observe(_fake_run(one, 0.001)) is None
    assert len(observing) == 1


def test_costly_regions_send_small_problems_down_the_small_path(observing):
    program, values = _values(E.mergesort, *_sort_args(16))
    values = dict(values, hi=1 << 16)
    cheap = _overheads.Overheads(phase_s=1e-6, parallel_level_s=1e-6)
    split = make_plan(program.spec, values, device="cpu", machine=TWO_CORES, overheads=cheap)
    assert split.cutoff_level > 0
    now = __import__("time").monotonic()
    observing.extend([(now, 0.006), (now, 0.009), (now, 0.007)])  # a loaded machine
    ov = _overheads.effective(cheap)
    assert ov.parallel_level_s == 8192e-6  # the median, rounded up to a power of two of us
    small = make_plan(program.spec, values, device="cpu", machine=TWO_CORES, overheads=cheap)
    assert small.cutoff_level == 0
    assert "recent runs measured" in small.reason and "8192 us" in small.reason
    # a big problem still splits: the work dwarfs the regions
    big = make_plan(program.spec, dict(values, hi=1 << 24), device="cpu", machine=TWO_CORES,
                    overheads=cheap)
    assert big.cutoff_level > 0
    # the load passes: old observations expire and the calibrated figure returns
    assert _overheads._recent(now + _overheads.OBSERVE_WINDOW_S + 1) is None
    observing.clear()
    observing.extend([(now, 1e-7), (now, 1e-7)])  # cheaper than calibrated: no change
    assert _overheads.effective(cheap) is cheap
    assert make_plan(program.spec, values, device="cpu", machine=TWO_CORES,
                     overheads=cheap).cutoff_level == split.cutoff_level


def test_observation_can_be_turned_off(observing, monkeypatch):
    now = __import__("time").monotonic()
    observing.extend([(now, 0.006), (now, 0.009)])
    ov = _overheads.Overheads()
    assert _overheads.effective(ov).parallel_level_s > ov.parallel_level_s
    monkeypatch.setenv("HPU_OBSERVE_OVERHEADS", "0")
    assert _overheads.effective(ov) is ov


def test_real_runs_feed_the_observation(observing):
    x, tmp, lo, hi = _sort_args(1 << 12)
    f = E.mergesort.options(device="cpu", K=3)
    for _ in range(3):
        a = x.copy()
        f(a, tmp, lo, hi)
        np.testing.assert_array_equal(a, np.sort(x))
    assert len(observing) == 2 and all(x >= 0 for _, x in observing)
