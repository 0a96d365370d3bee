"""Tests of hpu._trace: a run as a Trace Event Format file, HPU_TRACE, ``hpu run --trace``
and ``hpu.figures.gantt``.

Every traced run is also checked for its result against NumPy (a trace of a wrong run is
worth nothing).  The checks of the file are structural: valid JSON, the fields the Trace
Event Format requires for complete ("X") and metadata ("M") events, one track per
processor that worked, slices inside the run, and the plan's predicted phases.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms import _registry
from hpu import cli

#: (device, alpha, y): the CPU alone, the device alone, and splits that put leaves and
#: combines on both sides
CONFIGS = [("cpu", None, None), ("gpu", None, None), ("hybrid", 0.5, 1), ("hybrid", 0.25, 3),
           ("hybrid", 0.0, 0)]


def _run(name, n, seed, device, alpha, y):
    alg = _registry.get(name)
    x = alg.make_input(n, np.int32, seed)
    prepared = alg.prepare(x)
    args = prepared.args(x)
    opts = {"device": device}
    if alpha is not None:
        opts.update(alpha=alpha, y=y)
    run = alg.function.options(**opts).run(*args)
    problem = prepared.check(prepared.output(args, run.value), prepared.expected(x))
    assert problem is None, problem
    return run


def _check_trace(data, run):
    assert set(data) >= {"traceEvents"}
    events = data["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    for e in slices:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(e)
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["dur"] >= 0
    for e in meta:
        assert e["name"] in ("process_name", "thread_name") and "name" in e["args"]
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta
              if e["name"] == "thread_name"}
    # a named track for every slice's track
    assert {(e["pid"], e["tid"]) for e in slices} <= set(tracks)
    run_slices = [e for e in slices if e["pid"] == 1]
    worked = {"CPU threads"} if any(r.cpu_tasks for r in run.levels) else set()
    if any(r.gpu_tasks for r in run.levels) and not run.fallbacks:
        worked.add("device queue")
        assert {tracks[(1, e["tid"])] for e in run_slices} >= {"transfers"}
    assert worked <= {tracks[(1, e["tid"])] for e in run_slices}
    # every phase of every level the CPU ran is a slice
    cpu_phases = {(r.level, r.phase) for r in run.levels if r.cpu_tasks}
    got = {(e["args"]["level"], e["args"]["phase"]) for e in run_slices
           if tracks[(1, e["tid"])] == "CPU threads"}
    assert got == cpu_phases
    # slices lie within the run (device events are moved onto the host's clock: allow slack)
    for e in run_slices:
        if tracks[(1, e["tid"])] != "device queue":
            assert -1.0 <= e["ts"] <= run.seconds * 1e6 + 1.0
    # the plan's predicted phases are a second process, and the strategy is named
    plan_slices = [e for e in slices if e["pid"] == 2]
    assert [e["name"] for e in plan_slices] == [p.name for p in run.plan.phases]
    first = run_slices[0]["args"]["plan"]
    assert first["strategy"] == run.plan.strategy and first["reason"] == run.plan.reason


@settings(max_examples=6, deadline=None)
@given(name=st.sampled_from(_registry.names()), n=st.integers(1, 3000),
       seed=st.integers(0, 2**16), config=st.sampled_from(CONFIGS))
def test_a_trace_is_valid_trace_event_json_with_a_track_per_processor(tmp_path_factory, name, n,
                                                                      seed, config):
    run = _run(name, n, seed, *config)
    path = run.trace(tmp_path_factory.mktemp("t") / "sub" / "run.json")
    data = json.loads(path.read_text())
    _check_trace(data, run)


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_every_configuration_traces_each_side_that_worked(tmp_path, config):
    run = _run("mergesort", 4096, 1, *config)
    data = json.loads(run.trace(tmp_path / "t.json").read_text())
    _check_trace(data, run)
    kinds = {e["cat"] for e in data["traceEvents"] if e["ph"] == "X" and e["pid"] == 1}
    assert ("cpu" in kinds) == any(r.cpu_tasks for r in run.levels)
    assert ("gpu" in kinds) == any(r.gpu_tasks for r in run.levels)


def test_records_carry_start_and_end_on_each_side_that_worked():
    run = _run("mergesort", 4096, 2, "hybrid", 0.5, 2)
    assert run.started is not None
    for r in run.levels:
        if r.cpu_tasks:
            assert run.started <= r.cpu_start <= r.cpu_end
        if r.gpu_tasks:
            assert r.gpu_start is not None and r.gpu_start <= r.gpu_end
    for t in run.transfers:
        assert t.spans and all(s <= e for s, e in t.spans)


def test_HPU_TRACE_traces_every_run_into_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HPU_TRACE", str(tmp_path / "traces"))
    runs = [_run("sum", 1000, s, "hybrid", 0.5, 1) for s in range(2)]
    files = sorted((tmp_path / "traces").glob("*.json"))
    assert len(files) == 2
    for f, run in zip(files, runs):
        _check_trace(json.loads(f.read_text()), run)


def test_a_run_under_HPU_DISABLE_cannot_be_traced_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("HPU_DISABLE", "1")
    alg = _registry.get("sum")
    x = alg.make_input(10, np.int32, 0)
    run = alg.function.run(*alg.prepare(x).args(x))
    with pytest.raises(ValueError, match="HPU_DISABLE"):
        run.trace(tmp_path / "t.json")


def test_hpu_run_trace_writes_the_leading_run(tmp_path, capsys):
    out = tmp_path / "run.json"
    code = cli.main(["run", "sum", "--n", "5000", "--device", "hybrid", "--alpha", "0.5",
                     "--y", "1", "--repeat", "1", "--trace", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    names = {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "thread_name"}
    assert {"CPU threads", "device queue", "transfers"} <= names
    assert str(out) in capsys.readouterr().err


def test_gantt_draws_one_row_per_track():
    pytest.importorskip("matplotlib")
    from hpu import figures

    run = _run("mergesort", 2048, 3, "hybrid", 0.5, 1)
    fig = figures.gantt(run)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[:3] == ["CPU threads", "device queue", "transfers"]
    assert "predicted cpu" in labels
    assert "strategy given" in ax.get_title()
