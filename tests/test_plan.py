"""The Plan is the contract (``hpu._plan``): what ``.plan()`` and ``hpu plan`` say is what runs.

* every Run carries the plan it executed, equal to ``.plan()`` with the same options;
* the deepest level executed is the plan's ``cutoff_level`` (or where the tree
  ends, when every task above it is a base case), and every level's task split
  is the plan's ``tasks``;
* ``hpu plan ALGORITHM --json`` agrees with ``.plan()`` and the run on
  ``cutoff_level``, ``transfer_level`` and ``split_alpha``;
* K and ⌈α·m⌉ are decided in one place each (``model.cutoff_level``,
  ``model.tasks_on_cpu``): replacing either changes what the run does.

Mergesort's tree is balanced for these sizes (its base case is ``hi - lo <= 16``),
so the plan's per-level counts (``a**i``) are the run's exactly.
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from contract_support import Config, builtin_profile, check_report  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms.mergesort import mergesort
from hpu import _plan, _profile, model
from hpu._opencl._device import select_device

pytestmark = pytest.mark.opencl

COMPILES = settings.get_profile("hpu-compiles")


def _data(n, seed=0):
    return np.random.default_rng(seed).integers(-10**6, 10**6, n).astype(np.int32)


def _ended_at(n: int) -> int:
    """The level where mergesort's tree ends: the first whose tasks are all <= 16 keys."""
    d = 0
    while math.ceil(n / 2**d) > 16:
        d += 1
    return d


def _check_executed(run, plan):
    assert run.plan == plan
    assert run.K == plan.cutoff_level
    assert run.level_sizes == tuple(c + d for c, d in plan.tasks)
    for r in run.levels:
        if r.phase in ("leaf", "combine"):
            assert (r.cpu_tasks, r.gpu_tasks) == tuple(plan.tasks[r.level]), run.summary()
    if plan.uses_device:
        assert run.y == plan.transfer_level and run.alpha == plan.split_alpha


@pytest.fixture
def fast_device(monkeypatch):
    """A profile whose device is much faster than the CPU: the model splits."""
    import hpu.calibrate as cal

    device = select_device(None)
    fast = dataclasses.replace(_profile.Profile.builtin(device), g=64, gamma=1 / 4,
                               device_shares_cpu=False, latency_s=1e-6, seconds_per_byte=1e-11)
    monkeypatch.setattr(_profile, "active_profile", lambda device=None, **kw: fast)
    monkeypatch.setattr(cal, "active_profile", lambda device=None, **kw: fast)
    return fast


PATHS = [{"device": "cpu"}, {"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2},
         {"device": "hybrid", "alpha": 0.25, "y": 3}, {"device": "hybrid", "alpha": 0.0, "y": 1},
         {"device": "cpu", "K": 3}, {"device": "hybrid", "alpha": 0.5, "y": 1, "K": 4}]


@pytest.mark.parametrize("opts", PATHS, ids=lambda o: "-".join(f"{k}{v}" for k, v in o.items()))
def test_the_run_executes_its_plan(opts):
    x = _data(1 << 12)
    want = np.sort(x, kind="stable")
    f = mergesort.options(**opts)
    plan = f.plan(x, np.empty_like(x), 0, x.size)
    run = f.run(x, np.empty_like(x), 0, x.size)
    assert np.array_equal(x, want)
    assert plan.strategy == "given"
    _check_executed(run, plan)
    if "K" in opts:
        assert plan.cutoff_level == opts["K"]


def test_the_models_plan_is_executed_when_the_device_is_used(fast_device):
    x = _data(1 << 14, seed=1)
    want = np.sort(x, kind="stable")
    plan = mergesort.plan(x, np.empty_like(x), 0, x.size)
    assert plan.strategy == "advanced" and plan.uses_device, plan.reason
    run = mergesort.run(x, np.empty_like(x), 0, x.size)
    assert np.array_equal(x, want)
    _check_executed(run, plan)
    assert run.gpu_tasks > 0 and run.cpu_tasks > 0


@settings(COMPILES, max_examples=12)
@given(n=st.integers(1, 6000), alpha=st.sampled_from([0.0, 0.2, 0.5, 0.7, 1.0]),
       y=st.integers(0, 12), device=st.sampled_from(["cpu", "gpu", "hybrid"]))
def test_a_tree_that_ends_early_stops_there_and_splits_by_the_plans_rule(n, alpha, y, device):
    x = _data(n, seed=n)
    want = np.sort(x, kind="stable")
    opts = {"device": device, **({"alpha": alpha, "y": y} if device == "hybrid" else {})}
    run = mergesort.options(**opts).run(x, np.empty_like(x), 0, n)
    assert np.array_equal(x, want)
    plan = run.plan
    assert run.K == min(plan.cutoff_level, _ended_at(n)), (n, plan.cutoff_level)
    config = Config(device, alpha if device == "hybrid" else None, y if device == "hybrid"
                    else None)
    check_report(run, config)  # level y splits as ⌈α·m⌉, the device's share below it


def test_plan_json_and_the_run_agree(fast_device, capsys):
    from hpu.cli import main

    n = 1 << 14
    assert main(["plan", "mergesort", "--n", str(n), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    x = _data(n, seed=2)
    plan = mergesort.plan(x, np.empty_like(x), 0, n)
    run = mergesort.run(x, np.empty_like(x), 0, n)
    for key in ("cutoff_level", "transfer_level", "split_alpha", "strategy"):
        assert cli[key] == getattr(plan, key) == getattr(run.plan, key), key
    assert cli["uses_device"] and run.K == cli["cutoff_level"]
    assert [list(t) for t in plan.tasks] == cli["tasks"]


def test_the_issues_example_plans_and_runs_the_same_K():
    # n = 2^20 with p = 8, g = 4096, gamma = 1/160: plan and run used to disagree on K
    machine = model.Machine(8, 4096, 1 / 160)
    x = _data(1 << 20, seed=3)
    want = np.sort(x, kind="stable")
    f = mergesort.options(machine=machine)
    plan = f.plan(x, np.empty_like(x), 0, x.size)
    run = f.run(x, np.empty_like(x), 0, x.size)
    assert np.array_equal(x, want)
    assert plan.uses_device
    _check_executed(run, plan)


def test_K_and_the_split_are_decided_in_one_place_each(monkeypatch):
    _plan._given_plan.cache_clear()
    _plan.model_plan.cache_clear()
    real_tasks_on_cpu = model.tasks_on_cpu
    monkeypatch.setattr(model, "cutoff_level", lambda *a, **k: 5)
    monkeypatch.setattr(model, "tasks_on_cpu", lambda alpha, m: min(m, 1 + real_tasks_on_cpu(
        alpha, m)))
    try:
        for opts in ({"device": "cpu"}, {"device": "gpu"},
                     {"device": "hybrid", "alpha": 0.5, "y": 2}):
            x = _data(1 << 16, seed=4)  # split, not the small path (K = 0) of a few thousand
            run = mergesort.options(**opts).run(x, np.empty_like(x), 0, x.size)
            assert run.K == 5 == run.plan.cutoff_level, opts
            assert np.array_equal(x, np.sort(x))
            if opts["device"] == "hybrid":  # one more task kept on the CPU at y: the patched rule
                at_y = next(r for r in run.levels if r.level == 2 and r.phase == "combine")
                assert (at_y.cpu_tasks, at_y.gpu_tasks) == (3, 1)
    finally:
        _plan._given_plan.cache_clear()
        _plan.model_plan.cache_clear()


# ------------------------------------------------------------------ nothing repeated per call

def test_the_profile_is_parsed_again_only_when_its_file_changes(tmp_path, monkeypatch):
    device = select_device(None)
    prof = dataclasses.replace(_profile.Profile.builtin(device), source="measured")
    path = tmp_path / "profile.json"
    _profile.save_profile(prof, path)
    parsed = []
    real = _profile._from_dict
    monkeypatch.setattr(_profile, "_from_dict", lambda d: parsed.append(1) or real(d))
    first = _profile.load_profile(device, path=path)
    assert _profile.load_profile(device, path=path) == first and len(parsed) == 1
    changed = dataclasses.replace(prof, g=prof.g + 7)
    _profile.save_profile(changed, path)   # a new file (atomic replace): read again
    assert _profile.load_profile(device, path=path).g == prof.g + 7 and len(parsed) == 2
    path.write_text("{ not json")
    with pytest.raises(_profile.ProfileError, match="corrupt"):
        _profile.load_profile(device, path=path)
    path.unlink()
    assert _profile.load_profile(device, path=path) is None


def test_the_device_program_queue_and_kernels_are_built_once_per_thread():
    import threading

    x = _data(3000, seed=5)
    f = mergesort.options(device="gpu")
    f.run(x.copy(), np.empty_like(x), 0, x.size)
    program, _ = mergesort._program_for(x, np.empty_like(x), 0, x.size)
    built = program.__dict__["_opencl_compiled"]
    assert len(built) >= 1   # one per device/depth/scalar types this process has run on
    before = dict(built)
    mine = {k: c.for_this_thread() for k, c in built.items()}
    f.run(x.copy(), np.empty_like(x), 0, x.size)
    assert built == before and all(built[k].for_this_thread() is mine[k] for k in built)
    compiled = next(iter(built.values()))
    mine = compiled.for_this_thread()
    other = []
    t = threading.Thread(target=lambda: other.append(compiled.for_this_thread()))
    t.start()
    t.join()
    assert other[0][0] is not mine[0] and other[0][1] is not mine[1]  # own queue and kernels


def test_the_profile_machine_is_kept_only_while_its_file_is_unchanged(monkeypatch, tmp_path):
    """A call's plan reads the profile once; a rewritten file is read again (issue 13)."""
    import os

    device = select_device(None)
    path = tmp_path / "profile.json"
    monkeypatch.setenv("HPU_PROFILE", str(path))
    first = dataclasses.replace(_profile.Profile.builtin(device), p=3, source="measured")
    _profile.save_profile(first, path)
    calls = []
    real = _profile.active_profile

    def counting(device=None, **kw):
        calls.append(1)
        return real(device, **kw)

    monkeypatch.setattr(_profile, "active_profile", counting)
    m1 = _plan._profile_machine(device, autocalibrate=False)[0]
    m2 = _plan._profile_machine(device, autocalibrate=False)[0]
    assert m1 == m2 and m1.p == 3 and len(calls) == 1
    _profile.save_profile(dataclasses.replace(first, p=5), path)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a new stamp, surely
    m3 = _plan._profile_machine(device, autocalibrate=False)[0]
    assert m3.p == 5 and len(calls) == 2
    path.unlink()  # gone: the full path again (here: hpu's built-in values)
    m4 = _plan._profile_machine(device, autocalibrate=False)[0]
    assert len(calls) == 3 and m4.p == _profile.Profile.builtin(device).p


def test_the_built_in_values_are_not_reread_on_every_call(monkeypatch, tmp_path):
    # no profile file (HPU_NO_AUTOCALIBRATE): the second plan takes the fast path, no read
    from hpu import _plan, _profile

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HPU_NO_AUTOCALIBRATE", "1")
    monkeypatch.setattr(_plan, "_from_file", {})
    first = _plan._profile_machine(None, autocalibrate=True)
    reads = []
    real = _profile.load_profile
    monkeypatch.setattr(_profile, "load_profile", lambda *a, **k: reads.append(1) or real(*a, **k))
    assert _plan._profile_machine(None, autocalibrate=True) is first
    assert reads == []
    # a profile file appears: it is read
    path = _profile.profile_path(None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    from hpu._errors import ProfileError

    with pytest.raises(ProfileError):  # read (and found corrupt), not the remembered values
        _plan._profile_machine(None, autocalibrate=True)
    assert reads == [1]


@pytest.mark.parametrize("alpha, y", [(0.3, None), (0.75, None), (None, 3)])
def test_alpha_or_y_alone_on_a_machine_whose_model_keeps_the_cpu(alpha, y):
    """The model fills in what was not given; where it keeps every task on the CPU, alpha=
    alone took its level 0 -- one task, kept by the CPU for any alpha > 0 -- and the run
    reported the alpha while nothing moved.  Now the first level where alpha leaves the
    device a task; y alone keeps alpha = 1 and says so."""
    machine = model.Machine(2, 1, 0.1)       # a slow device: the model keeps the CPU
    x = _data(1 << 16, seed=4)
    want = np.sort(x, kind="stable")
    opts = {k: v for k, v in (("alpha", alpha), ("y", y)) if v is not None}
    f = mergesort.options(machine=machine, device="hybrid", **opts)
    plan = f.plan(x, np.empty_like(x), 0, x.size)
    run = f.run(x, np.empty_like(x), 0, x.size)
    assert np.array_equal(x, want)
    _check_executed(run, plan)
    if alpha is not None:
        level = plan.transfer_level
        assert level >= 1 and 2 ** level - model.tasks_on_cpu(alpha, 2 ** level) >= 1
        assert 2 ** (level - 1) - model.tasks_on_cpu(alpha, 2 ** (level - 1)) < 1
        assert run.gpu_tasks > 0 and "leaves the device a task" in plan.reason
    else:
        assert run.gpu_tasks == 0 and "pass alpha= too" in plan.reason
