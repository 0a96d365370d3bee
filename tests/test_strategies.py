"""Tests of hpu._strategies: strategy="minmax" (002) and strategy="adaptive" (001).

Exactness: every registered algorithm, on random inputs Hypothesis draws, gives NumPy's
answer under both strategies on every device.  The choices themselves are checked where
they are deterministic: the min-max argmin against a brute force on known time
functions, the adaptive split against HyCOMP's Eq. 1 on an injected rate history, its
convergence on a synthetic machine, and its indifference to one outlier.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms import _registry
from hpu import _strategies
from hpu._history import History

DEVICES = ["cpu", "gpu", "hybrid"]


def _inputs(name, n, seed, dtype=np.int32):
    alg = _registry.get(name)
    x = alg.make_input(n, dtype, seed)
    prepared = alg.prepare(x)
    return alg, x, prepared


def _checked_run(name, n, seed, **options):
    alg, x, prepared = _inputs(name, n, seed)
    args = prepared.args(x)
    run = alg.function.options(**options).run(*args)
    problem = prepared.check(prepared.output(args, run.value), prepared.expected(x))
    assert problem is None, f"{name} n={n} seed={seed} {options}: {problem}"
    return run


# ------------------------------------------------------------------ exact on every algorithm

@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from(_registry.names()), n=st.integers(1, 5000),
       seed=st.integers(0, 2**20), device=st.sampled_from(DEVICES),
       strategy=st.sampled_from(["minmax", "adaptive"]))
def test_both_strategies_are_exact_on_every_algorithm_and_device(name, n, seed, device,
                                                                strategy):
    run = _checked_run(name, n, seed, device=device, strategy=strategy)
    if device == "hybrid":
        assert run.plan.strategy in (strategy, "given")
        assert run.plan.reason


@pytest.mark.parametrize("strategy", ["minmax", "adaptive"])
@pytest.mark.parametrize("name", _registry.names())
def test_each_algorithm_runs_hybrid_under_each_strategy(name, strategy):
    for seed in range(3):  # adaptive: the exploring run, then runs that follow the history
        run = _checked_run(name, 20000, seed, device="hybrid", strategy=strategy)
        assert run.plan.strategy == strategy


# ------------------------------------------------------------------ min-max

@given(cs=st.floats(0.01, 100), gs=st.floats(0.01, 100), m=st.integers(1, 300))
def test_minmax_choice_is_the_argmin_of_the_max_on_linear_time_functions(cs, gs, m):
    samples = [(m, cs * m, 0.0), (0, 0.0, gs * m), (m // 2, cs * (m // 2), gs * (m - m // 2))]
    k, c, g = _strategies.minmax_choice(samples, m)
    worst = [max(cs * j, gs * (m - j)) for j in range(m + 1)]
    assert max(c, g) == pytest.approx(min(worst), rel=1e-9, abs=1e-12)
    assert c == pytest.approx(cs * k) and g == pytest.approx(gs * (m - k))


def test_minmax_records_its_samples_and_plan_agrees_with_the_run():
    _strategies.clear_cache()
    alg, x, prepared = _inputs("mergesort", 30000, 7)
    f = alg.function.options(strategy="minmax")
    run = f.run(*prepared.args(x))
    assert run.plan.strategy == "minmax"
    assert len(run.plan.samples) == 3
    ks = sorted(int(s[0]) for s in run.plan.samples)
    m = run.level_sizes[int(run.plan.y)]  # the split level (also when all stayed on the CPU)
    assert ks[0] == 0 and ks[-1] == m
    assert "argmin" in run.plan.reason
    # the plan of the same call uses the cached samples: the same split
    plan = f.plan(*prepared.args(x))
    assert (plan.split_alpha, plan.transfer_level, plan.cutoff_level) == \
        (run.plan.split_alpha, run.plan.transfer_level, run.plan.cutoff_level)
    assert plan.samples == run.plan.samples


def test_minmax_sampling_leaves_the_callers_data_alone():
    _strategies.clear_cache()
    alg, x, prepared = _inputs("mergesort", 5000, 3)
    args = prepared.args(x)
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    alg.function.options(strategy="minmax").plan(*args)
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def test_a_given_split_overrides_the_strategy():
    run = _checked_run("sum", 4000, 1, device="hybrid", strategy="minmax", alpha=0.25, y=2)
    assert run.plan.strategy == "given" and run.alpha == 0.25


# ------------------------------------------------------------------ adaptive

def test_adaptive_alpha_is_hycomp_eq1_on_the_medians():
    runs = [{"cpu_rate": c, "device_rate": g} for c, g in [(3, 1), (3.3, 0.9), (2.7, 1.1)]]
    alpha, pc, pg, used = _strategies.adaptive_alpha(runs)
    assert (pc, pg) == (3, 1)
    assert alpha == pytest.approx(0.75)
    assert len(used) == 3


def test_adaptive_without_a_rate_for_a_side_explores():
    assert _strategies.adaptive_alpha([])[0] is None
    assert _strategies.adaptive_alpha([{"cpu_rate": 2.0, "device_rate": None}])[0] is None


@given(pc=st.floats(0.1, 100), pg=st.floats(0.1, 100), outlier_at=st.integers(0, 4),
       slow=st.floats(5, 1000), side=st.sampled_from(["cpu", "device"]))
def test_adaptive_converges_within_1_15_of_the_best_split_and_ignores_one_outlier(
        pc, pg, outlier_at, slow, side):
    """A synthetic machine: the CPU solves pc problems/s, the device pg; run i measures
    both rates exactly, except one run where one side was ``slow`` times slower."""
    runs = []
    alpha = 0.5  # the exploring first run
    best = 1.0 / (pc + pg)  # both sides finish together
    for i in range(5):
        c_rate, g_rate = pc, pg
        if i == outlier_at:
            c_rate, g_rate = (pc / slow, pg) if side == "cpu" else (pc, pg / slow)
        runs.append({"cpu_rate": c_rate, "device_rate": g_rate})
        alpha = _strategies.adaptive_alpha(runs)[0]
    makespan = max(alpha / pc, (1 - alpha) / pg)
    assert makespan <= 1.15 * best
    # with the outlier among five, the medians are the true rates
    assert alpha == pytest.approx(pc / (pc + pg))


def test_adaptive_follows_an_injected_history_and_learns_after_each_run():
    alg, x, prepared = _inputs("mergesort", 40000, 5)
    f = alg.function.options(strategy="adaptive")
    store = History()
    store.reset()
    first = f.run(*prepared.args(x))
    assert "explores" in first.plan.reason
    [key] = [k for k in store.entries() if k.startswith("mergesort")]
    assert len(store.runs(key)) == 1
    # inject a history: the CPU three times the device's rate, one wild run among them
    data = store.load()
    row = dict(store.runs(key)[0])
    rows = [dict(row, cpu_rate=c, device_rate=g) for c, g in
            [(30.0, 10.0), (33.0, 9.0), (0.01, 10.0), (27.0, 11.0), (30.0, 1e6)]]
    data["entries"][key]["runs"] = rows
    store._save(data)
    plan = f.plan(*prepared.args(x))
    assert plan.strategy == "adaptive"
    assert plan.split_alpha == pytest.approx(30.0 / 40.0)
    assert "HyCOMP Eq. 1" in plan.reason
    assert len(plan.samples) == 5
    run = _checked_run("mergesort", 40000, 5, strategy="adaptive")
    assert run.plan.split_alpha == pytest.approx(0.75)
    assert len(store.runs(key)) == 6  # the run was remembered


def test_the_strategy_option_is_checked():
    alg = _registry.get("sum")
    with pytest.raises(ValueError, match="'minmax', 'adaptive'"):
        alg.function.options(strategy="fastest")


# ------------------------------------------------------------------ the Run says who chose the split

@pytest.mark.parametrize("strategy,words", [("minmax", "min-max (002)"),
                                            ("adaptive", "adaptive (001)")])
def test_the_run_says_which_strategy_chose_the_split_and_why(strategy, words):
    run = _checked_run("mergesort", 20000, 5, device="hybrid", strategy=strategy)
    text = run.summary()
    assert f"  strategy: {strategy}" in text and words in text
    assert run.plan.reason.startswith(words)


def test_hpu_run_prints_the_strategy_and_its_reason(capsys):
    from hpu.cli import main

    assert main(["run", "mergesort", "--n", "4096", "--device", "hybrid", "--strategy",
                 "adaptive", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "split chosen by strategy 'adaptive': adaptive (001)" in out
