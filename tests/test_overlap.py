"""Tests of the pipelined copies of a device with its own memory, and the model's overlap term.

PoCL shares the host's memory, so the copy path is forced (as ``tests/test_hybrid.py``
does): the backend's ``unified`` flag is turned off after construction.  Results are
checked against NumPy on every algorithm at splits that put leaves and combines on the
device; the bytes moved must not change with the number of pieces, and the pieces must
really be several copies on their own queue.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from algorithms import _registry
from hpu import model
from hpu._opencl._backend import OpenCLBackend, _pieces

#: (alpha, y): the device alone from the root, and splits with combines on both sides
SPLITS = [(0.0, 0), (0.0, 2), (0.5, 1), (0.25, 3), (0.75, 2)]


def _run(name, n, seed, alpha, y, chunks, monkeypatch):
    monkeypatch.setattr(OpenCLBackend, "transfer_chunks", chunks)
    alg = _registry.get(name)
    x = alg.make_input(n, np.int32, seed)
    prepared = alg.prepare(x)
    args = prepared.args(x)
    run = alg.function.options(device="hybrid", alpha=alpha, y=y).run(*args)
    problem = prepared.check(prepared.output(args, run.value), prepared.expected(x))
    assert problem is None, f"{name} n={n} seed={seed} alpha={alpha} y={y}: {problem}"
    return run


# the fixture's patch holds for every example; each example sets its own piece count
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(_registry.names()), n=st.integers(1, 20000),
       seed=st.integers(0, 2**20), split=st.sampled_from(SPLITS), chunks=st.integers(1, 6))
def test_pipelined_copies_are_exact_on_every_algorithm(discrete, monkeypatch, name, n, seed,
                                                       split, chunks):
    _run(name, n, seed, *split, chunks, monkeypatch)


@pytest.mark.parametrize("split", SPLITS, ids=str)
@pytest.mark.parametrize("name", _registry.names())
def test_pieces_move_the_same_bytes_as_one_copy(discrete, monkeypatch, name, split):
    one = _run(name, 30000, 4, *split, 1, monkeypatch)
    four = _run(name, 30000, 4, *split, 4, monkeypatch)
    assert {t.direction: t.bytes for t in one.transfers} == \
        {t.direction: t.bytes for t in four.transfers}
    assert one.gpu_tasks == four.gpu_tasks > 0
    backend = discrete[-1]
    assert backend._pipelined  # every registered algorithm has a span
    # several pieces per array uploaded on the second queue
    assert len(backend.upload.events) > len(backend._deferred)
    assert backend.tqueue is not backend.queue


def test_the_pipeline_is_used_only_with_separate_memory_and_a_span(monkeypatch):
    monkeypatch.setattr(OpenCLBackend, "transfer_chunks", 4)
    alg = _registry.get("mergesort")
    x = alg.make_input(5000, np.int32, 1)
    built = []
    original = OpenCLBackend.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(OpenCLBackend, "__init__", init)
    prepared = alg.prepare(x)
    alg.function.options(device="hybrid", alpha=0.5, y=2).run(*prepared.args(x))
    if built[-1].unified:
        assert not built[-1]._pipelined  # zero-copy: nothing to overlap


@given(start=st.integers(0, 100), n=st.integers(1, 100), chunks=st.integers(1, 10))
def test_pieces_tile_the_range(start, n, chunks):
    got = _pieces(start, start + n, chunks)
    assert got[0][0] == start and got[-1][1] == start + n
    assert all(a < b for a, b in got) and all(p[1] == q[0] for p, q in zip(got, got[1:]))
    assert len(got) == min(chunks, n)


# ------------------------------------------------------------------ the model's overlap term

PROBLEM = model.Problem(a=2, b=2, cost="n", n=1 << 20)


@given(latency=st.floats(0, 1e-3), per_byte=st.floats(1e-12, 1e-8),
       chunks=st.integers(1, 16), alpha=st.sampled_from([0.0, 0.25, 0.5]),
       y=st.integers(0, 6))
def test_the_simulated_pipeline_follows_the_documented_overlap_term(latency, per_byte, chunks,
                                                                   alpha, y):
    """The device's span is ``overlapped_device_time(upload, compute, download, chunks)``,
    where ``compute`` is the share's levels with level y and the cut-off level launched in
    ``chunks`` pieces, one after another (:func:`hpu.model._level_rounds`): never less than
    in one launch, and more when a piece's tasks cannot fill the device."""
    machine = model.Machine(p=4, g=1024, gamma=1 / 50, latency_s=latency,
                            seconds_per_byte=per_byte, seconds_per_unit=1e-9)
    one = model.simulate(PROBLEM, machine, alpha=alpha, y=y, chunks=1)
    piped = model.simulate(PROBLEM, machine, alpha=alpha, y=y, chunks=chunks)
    assert piped.transfer_bytes == one.transfer_bytes
    up = [p for p in one.phases if p.name == "upload"]
    if not up:
        return
    u = up[0].end - up[0].start

    def compute(pieces):
        it = model._integer(PROBLEM)
        comb = model._combine_costs(PROBLEM, machine, 4)
        t, _ = model._side_time(it, PROBLEM.a, one.device_tasks, y, one.K,
                                machine.device_rounds, machine.gamma, comb,
                                machine.device_combine_speed, pieces)
        return t * machine.unit_scale

    d, d_piped = compute(1), compute(chunks)
    if one.cpu_share_time <= u:      # uncontended: the share is its compute
        assert one.device_share_time == pytest.approx(d, rel=1e-9, abs=1e-15)
    assert d_piped >= d * (1 - 1e-12)
    span = [p for p in piped.phases if p.unit in ("link", "device")]
    first, last = min(p.start for p in span), max(p.end for p in span)
    if one.cpu_share_time <= u:  # no contention while both compute: the formula exactly
        want = u / chunks + max((chunks - 1) / chunks * 2 * u, d_piped) + u / chunks
        assert last - first == pytest.approx(want, rel=1e-9, abs=1e-15)
        assert want == pytest.approx(model.overlapped_device_time(u, d_piped, u, chunks))
        if d_piped == pytest.approx(d):    # pieces that cost no more: pipelining only helps
            assert piped.total_time <= one.total_time * (1 + 1e-9)


def test_chunks_must_be_a_positive_int():
    machine = model.Machine(p=4, g=1024, gamma=1 / 50)
    with pytest.raises(ValueError, match="chunks = 0"):
        model.simulate(PROBLEM, machine, alpha=0.5, y=2, chunks=0)


# ------------------------------------------------------------------ plan and run agree

@pytest.mark.parametrize("unified,span,chunks,want", [
    (False, True, 4, 4), (True, True, 4, 1), (False, False, 4, 1), (False, True, 1, 1)])
def test_copy_chunks_is_the_backends_rule(unified, span, chunks, want):
    assert model.copy_chunks(unified=unified, span=span, chunks=chunks) == want


def _mergesort_plan(n, **options):
    alg = _registry.get("mergesort")
    x = alg.make_input(n, np.int32, 2)
    args = alg.prepare(x).args(x)
    return alg.function.options(device="hybrid", **options).plan(*args), alg, x, args


def test_on_shared_memory_the_plan_prices_no_overlap(monkeypatch):
    # the device as PoCL is (a GPU with its own memory prices the overlap: the next test)
    monkeypatch.setattr(OpenCLBackend, "unified_memory", classmethod(lambda cls, device: True))
    plan, *_ = _mergesort_plan(1 << 14, alpha=0.5, y=2)
    assert plan.transfer_chunks == 1
    assert "overlapped" not in plan.reason


@pytest.mark.parametrize("chunks", [1, 3])
def test_the_plan_prices_the_overlap_the_run_does(discrete, monkeypatch, chunks):
    monkeypatch.setattr(OpenCLBackend, "transfer_chunks", chunks)
    plan, alg, x, args = _mergesort_plan(1 << 14, alpha=0.5, y=2)
    run = alg.function.options(device="hybrid", alpha=0.5, y=2).run(*args)
    assert discrete[-1]._pipelined == (plan.transfer_chunks > 1)
    assert plan.transfer_chunks == chunks
    assert ("transfers overlapped in 3 chunks" in plan.reason) == (chunks == 3)
    assert run.plan.transfer_chunks == plan.transfer_chunks
