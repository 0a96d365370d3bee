"""Tests of hpu/_explain.py and the model's per-level prediction (issue 14 item 3)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpu import model
from hpu._explain import ExplainRow, explain
from hpu._run import LevelRecord, Run, TransferRecord
from hpu.cli import main

settings.load_profile("hpu-compiles")

_MACHINE = model.Machine(p=2, g=4, gamma=0.6, latency_s=2e-5, seconds_per_byte=1e-9,
                         seconds_per_unit=3e-9)


# ----------------------------------------------------------------- the model's level times

@given(exp=st.integers(6, 24), y=st.integers(0, 6), frac=st.floats(0.0, 1.0),
       contention=st.floats(1.0, 3.0), cost=st.sampled_from(["n", "1", "n log n", "n^2"]))
def test_level_times_add_up_to_the_schedule(exp, y, frac, contention, cost):
    problem = model.Problem(a=2, b=2, cost=cost, n=2 ** exp)
    y = min(y, exp)
    s = model.simulate(problem, _MACHINE, alpha=frac, y=y, contention=contention)
    upper = sum(r.seconds for r in s.level_times if r.level < y)
    cpu = sum(r.seconds for r in s.level_times if r.level >= y and r.side == "cpu")
    dev = sum(r.seconds for r in s.level_times if r.side == "device")
    assert math.isclose(upper, s.upper_levels_time, rel_tol=1e-9, abs_tol=1e-15)
    assert math.isclose(cpu, s.cpu_share_time, rel_tol=1e-9, abs_tol=1e-15)
    assert math.isclose(dev, s.device_share_time, rel_tol=1e-9, abs_tol=1e-15)
    # one row per level and side that has tasks; the cut-off level's are the leaves
    for r in s.level_times:
        assert (r.phase == "leaf") == (r.level == s.K)
        assert r.tasks > 0 and r.seconds >= 0
    want = {side for side, tasks in (("cpu", s.cpu_tasks), ("device", s.device_tasks)) if tasks}
    assert {r.side for r in s.level_times if r.level >= y} == want


def test_plan_carries_the_chosen_splits_level_times():
    problem = model.Problem(a=2, b=2, cost="n", n=2 ** 20)
    pl = model.given_plan(problem, _MACHINE, alpha=0.5, y=3, contention=1.5)
    s = model.simulate(problem, _MACHINE, alpha=0.5, y=3, contention=1.5)
    assert pl.level_times == s.level_times
    assert math.isclose(2 * pl.transfer_one_way, s.transfer_time)


# ------------------------------------------------------------------- explain, synthetic

def _synthetic_run(plan, scale_levels=2.0):
    """A Run whose measured times are ``scale_levels`` times the plan's, with bookkeeping."""
    recs = []
    for lt in plan.level_times:
        secs = scale_levels * lt.seconds
        cpu = lt.side == "cpu"
        recs.append(LevelRecord(lt.level, lt.phase, lt.tasks if cpu else 0,
                                0 if cpu else lt.tasks, secs if cpu else 0.0,
                                0.0 if cpu else secs))
    recs.append(LevelRecord(0, "count", 1, 0, 1e-5, 0.0))
    transfers = (TransferRecord("host->device", 100, 3 * plan.transfer_one_way),
                 TransferRecord("device->host", 100, plan.transfer_one_way))
    return Run(value=None, device="hybrid", alpha=plan.split_alpha, y=plan.transfer_level,
               K=plan.cutoff_level, cpu_tasks=plan.tasks[-1][0], gpu_tasks=plan.tasks[-1][1],
               levels=tuple(recs), transfers=transfers, seconds=2 * plan.predicted_time,
               plan=plan)


def test_explain_sets_each_phase_beside_its_prediction():
    problem = model.Problem(a=2, b=2, cost="n", n=2 ** 20)
    pl = model.given_plan(problem, _MACHINE, alpha=0.25, y=2, contention=1.3)
    e = explain(_synthetic_run(pl))
    priced = [r for r in e.rows if r.phase in ("leaf", "combine")]
    assert len(priced) == len(pl.level_times)
    for r in priced:
        assert r.error == pytest.approx(1.0)          # measured = 2 x predicted
        assert r.tasks_run == r.tasks_planned
    count = next(r for r in e.rows if r.phase == "count")
    assert count.predicted_s == 0.0 and count.error is None and count.measured_s == 1e-5
    up = next(r for r in e.rows if r.phase == "upload")
    down = next(r for r in e.rows if r.phase == "download")
    assert up.error == pytest.approx(2.0) and down.error == pytest.approx(0.0)
    assert e.error == pytest.approx(1.0)
    text = e.table()
    assert "total" in text and "+100.0 %" in text and "unpriced" in text
    totals = e.phase_totals()
    assert totals[("leaf", "cpu")][1] == pytest.approx(2 * totals[("leaf", "cpu")][0])


def test_model_units_need_seconds_per_unit():
    problem = model.Problem(a=2, b=2, cost="n", n=2 ** 12)
    pl = model.given_plan(problem, model.Machine(p=2, g=1, gamma=1.0), alpha=1.0, y=None)
    run = _synthetic_run(pl)
    bare = explain(run)
    assert bare.predicted_total_s is None and bare.error is None
    assert all(r.predicted_s is None for r in bare.rows)
    priced = explain(run, seconds_per_unit=1e-9)
    assert priced.predicted_total_s == pytest.approx(pl.predicted_time * 1e-9)
    with pytest.raises(ValueError, match="seconds_per_unit = -1"):
        explain(run, seconds_per_unit=-1)


def test_a_run_without_a_plan_is_refused():
    run = Run(value=None, device="python", alpha=None, y=None, K=0, cpu_tasks=0, gpu_tasks=0)
    with pytest.raises(ValueError, match="run.plan is None"):
        explain(run)


def test_row_error_without_prediction():
    assert ExplainRow(1, "fill", "cpu", 2, 2, 0.0, 1.0).error is None
    assert ExplainRow(1, "leaf", "cpu", 2, 2, 2.0, 3.0).error == pytest.approx(0.5)


# ------------------------------------------------------------------ explain, real runs

def _sum_ref(x):
    return int(np.sum(x, dtype=np.int64))


@pytest.mark.parametrize("device,alpha,y", [
    ("cpu", None, None), ("gpu", None, None), ("hybrid", 0.5, 2), ("hybrid", 0.25, 4),
    ("hybrid", 0.75, 1), ("hybrid", 0.0, 0)])
@given(exp=st.integers(9, 14), seed=st.integers(0, 2 ** 31 - 1))
@settings(max_examples=3)
def test_explain_of_real_runs_matches_the_runs_records(device, alpha, y, exp, seed):
    from algorithms.mergesort import mergesort

    n = 2 ** exp + seed % 7
    rng = np.random.default_rng(seed)
    keys = rng.integers(-1000, 1000, n).astype(np.int32)
    a, tmp = keys.copy(), np.empty_like(keys)
    kw = {"device": device}
    if alpha is not None:
        kw.update(alpha=alpha, y=y)
    run = mergesort.run(a, tmp, 0, n, **kw)
    np.testing.assert_array_equal(a, np.sort(keys, kind="stable"))
    e = explain(run, seconds_per_unit=5e-9)
    assert e.measured_total_s == run.seconds
    # every measured second is in exactly one row, per phase
    for phase in ("count", "fill", "leaf", "combine"):
        want = sum(r.cpu_seconds + r.gpu_seconds for r in run.levels if r.phase == phase)
        got = sum(r.measured_s for r in e.rows if r.phase == phase)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    scale = 1.0 if run.plan.time_unit == "s" else 5e-9
    assert sum(r.predicted_s for r in e.rows if r.phase in ("leaf", "combine")) == pytest.approx(
        scale * sum(t.seconds for t in run.plan.level_times))
    assert e.predicted_total_s == pytest.approx(scale * run.plan.predicted_time)
    leaves = [r for r in e.rows if r.phase == "leaf"]
    assert sum(r.tasks_run for r in leaves) == run.cpu_tasks + run.gpu_tasks
    if run.gpu_tasks:
        assert any(r.phase == "upload" for r in e.rows)


def test_cli_explain_text_and_json(capsys):
    code = main(["run", "mergesort", "--n", "4097", "--device", "hybrid", "--alpha", "0.5",
                 "--y", "2", "--repeat", "1", "--explain"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "predicted vs measured (hybrid: alpha = 0.5, y = 2" in out
    assert "tasks planned" in out and "\ntotal" in out
    code = main(["run", "mergesort", "--n", "4097", "--device", "hybrid", "--alpha", "0.5",
                 "--y", "2", "--repeat", "1", "--explain", "--json"])
    out, _ = capsys.readouterr()
    d = json.loads(out)["explain"]
    assert code == 0 and d["measured_s"] > 0 and d["predicted_s"] > 0
    phases = {(r["phase"], r["side"]) for r in d["rows"]}
    assert {("leaf", "cpu"), ("leaf", "device"), ("upload", "link")} <= phases


def test_cli_without_explain_has_no_table(capsys):
    code = main(["run", "mergesort", "--n", "2000", "--device", "cpu", "--repeat", "1",
                 "--json"])
    out, _ = capsys.readouterr()
    assert code == 0 and "explain" not in json.loads(out)


def test_bench_explain_json(capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import bench_explain

    assert bench_explain.main(["--n", "4096", "--repeat", "2", "--alpha", "0.5", "--y", "2",
                               "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["seconds"]) == 2 and d["y"] == 2 and d["measured_s"] in d["seconds"]
    assert {("leaf", "cpu"), ("leaf", "device")} <= {(r["phase"], r["side"]) for r in d["rows"]}
