"""The robust estimators of hpu._stats on synthetic timing curves with known answers.

Each curve is built from a true value (a knee, a ratio, a line), then noise and
a few 10x spikes are added; the estimate must come back within tolerance.
Spikes are slowdowns (a timing is never ten times too fast), and each point is
measured several times, as calibration does.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpu import _stats

REPEATS = 5


def knee_curve(g_exp: int, top_exp: int, work: float = 1.0, overhead: float = 0.0):
    """Ideal time of an element-wise sum on N work-items of a device that runs g at once."""
    xs = [1 << e for e in range(top_exp + 1)]
    g = 1 << g_exp
    return xs, [work / min(x, g) + overhead for x in xs]


def noisy_repeats(rng, clean, noise, spikes_per_point, spike_points=()):
    """REPEATS samples per point: multiplicative noise, some repeats spiked 10x,
    and whole points in ``spike_points`` (their median too) spiked 10x."""
    out = []
    for i, t in enumerate(clean):
        reps = t * (1 + rng.uniform(-noise, noise, REPEATS))
        k = rng.integers(0, spikes_per_point + 1)
        reps[rng.choice(REPEATS, size=k, replace=False)] *= 10
        if i in spike_points:
            reps *= 10
        out.append(reps.tolist())
    return out


def isolated_interior(rng, n, count, avoid=-1):
    """Up to ``count`` interior indices, no two adjacent and none at ``avoid``
    (what despike can repair)."""
    chosen = []
    for i in rng.permutation(np.arange(1, n - 1)):
        if len(chosen) == count:
            break
        if int(i) != avoid and all(abs(int(i) - c) > 1 for c in chosen):
            chosen.append(int(i))
    return chosen


# --------------------------------------------------------------------- find_knee

def test_knee_of_a_clean_curve_is_the_saturation_point():
    xs, t = knee_curve(6, 12)
    knee = _stats.find_knee(xs, t)
    assert knee.x == 64 and knee.index == 6
    assert knee.time == pytest.approx(1 / 64) and knee.floor == pytest.approx(1 / 64)


def test_knee_uses_the_tolerance_against_the_best_later_time():
    # 1.05 is within 10 % of the later floor 1.0, 1.2 is not.
    assert _stats.find_knee([1, 2, 4, 8], [2.0, 1.2, 1.05, 1.0]).x == 4
    assert _stats.find_knee([1, 2, 4, 8], [2.0, 1.2, 1.05, 1.0], tolerance=0.0).x == 8
    assert _stats.find_knee([1, 2, 4, 8], [2.0, 1.2, 1.05, 1.0], tolerance=0.25).x == 2


def test_knee_of_a_curve_that_rises_again_is_before_the_minimum():
    # too many work-items cost scheduling overhead: the knee is the point of best time
    xs = [1, 2, 4, 8, 16, 32]
    t = [8.0, 4.0, 2.0, 1.0, 1.5, 3.0]
    assert _stats.find_knee(xs, t).x == 8


def test_knee_of_a_flat_curve_is_the_first_point():
    assert _stats.find_knee([1, 2, 4], [1.0, 1.0, 1.0]).x == 1


def test_knee_takes_medians_of_repeats():
    xs = [1, 2, 4, 8]
    reps = [[4, 4, 40], [2, 20, 2], [1, 1, 1], [1, 10, 1]]
    assert _stats.find_knee(xs, reps).x == 4


def test_isolated_spike_in_the_tail_does_not_move_the_knee():
    xs, t = knee_curve(4, 10)
    t[7] *= 10                            # a whole point spoiled, past the knee
    assert _stats.find_knee(xs, t).x == 16


def test_spike_on_the_knee_itself_moves_it_at_most_one_step():
    # a spoiled corner cannot be told from a real one by its neighbours
    xs, t = knee_curve(4, 10)
    t[4] *= 10
    assert _stats.find_knee(xs, t).x == 32


@settings(max_examples=40, deadline=None)
@given(g_exp=st.integers(1, 12), extra=st.integers(2, 5), noise=st.floats(0.0, 0.03),
       spikes=st.integers(0, 2), whole=st.integers(0, 2), seed=st.integers(0, 2**32 - 1))
def test_knee_found_exactly_under_noise_and_spikes(g_exp, extra, noise, spikes, whole, seed):
    rng = np.random.default_rng(seed)
    xs, clean = knee_curve(g_exp, g_exp + extra, work=1e-2, overhead=1e-6)
    bad = isolated_interior(rng, len(xs), whole, avoid=g_exp)
    samples = noisy_repeats(rng, clean, noise, spikes, bad)
    assert _stats.find_knee(xs, samples).x == 1 << g_exp


@settings(max_examples=30, deadline=None)
@given(g_exp=st.integers(2, 12), noise=st.floats(0.0, 0.06), seed=st.integers(0, 2**32 - 1))
def test_knee_within_a_factor_two_under_heavy_noise(g_exp, noise, seed):
    rng = np.random.default_rng(seed)
    xs, clean = knee_curve(g_exp, g_exp + 4, work=1.0)
    samples = noisy_repeats(rng, clean, noise, 2)
    assert (1 << g_exp) / 2 <= _stats.find_knee(xs, samples).x <= 2 * (1 << g_exp)


@pytest.mark.parametrize("xs, times, tol, match", [
    ([], [], 0.1, "empty"),
    ([1, 1, 2], [1, 1, 1], 0.1, "strictly increasing"),
    ([4, 2], [1, 1], 0.1, "strictly increasing"),
    ([1, 2], [1], 0.1, "one time"),
    ([1, 2], [1, -1], 0.1, r">= 0"),
    ([1, 2], [1, []], 0.1, "no repeats"),
    ([1, 2], [1, float("nan")], 0.1, "finite"),
    ([1, 2], [1, 1], 1.5, "tolerance"),
])
def test_knee_refuses_bad_input(xs, times, tol, match):
    with pytest.raises(ValueError, match=match):
        _stats.find_knee(xs, times, tolerance=tol)


# ----------------------------------------------------------------------- despike

@given(st.lists(st.floats(0, 1e6), min_size=0, max_size=30))
def test_despike_leaves_monotone_sequences_alone(values):
    dec = sorted(values, reverse=True)
    assert _stats.despike(dec).tolist() == dec
    inc = sorted(values)
    assert _stats.despike(inc).tolist() == inc


def test_despike_caps_an_isolated_spike_keeps_dips_and_ends():
    assert _stats.despike([5.0, 4.0, 40.0, 2.0, 9.0]).tolist() == [5.0, 4.0, 4.0, 2.0, 9.0]
    assert _stats.despike([50.0, 1.0, 3.0, 30.0]).tolist() == [50.0, 1.0, 3.0, 30.0]


def test_relative_noise_estimates_the_spread_of_a_median():
    rng = np.random.default_rng(3)
    sigma = 0.05
    samples = [1.0 + sigma * rng.standard_normal(9) for _ in range(200)]
    expected = sigma * 1.2533 / 3            # standard error of a median of 9
    assert _stats.relative_noise(samples) == pytest.approx(expected, rel=0.15)
    assert _stats.relative_noise([1.0, 2.0]) == 0.0


# ------------------------------------------------------------------ ratio_estimate

def test_ratio_is_the_median_of_per_point_ratios():
    r = _stats.ratio_estimate([1.0, 2.0, 9.0], [2.0, 2.0, 3.0])
    assert r.ratios == (0.5, 1.0, 3.0)
    assert (r.value, r.low, r.high) == (1.0, 0.5, 3.0)


@settings(max_examples=40, deadline=None)
@given(gamma=st.floats(1e-3, 10.0), sizes=st.integers(3, 9), noise=st.floats(0.0, 0.05),
       spikes=st.integers(0, 2), seed=st.integers(0, 2**32 - 1))
def test_ratio_within_tolerance_under_noise_and_spikes(gamma, sizes, noise, spikes, seed):
    rng = np.random.default_rng(seed)
    n = np.array([1 << (12 + i) for i in range(sizes)], dtype=float)
    cpu_clean = 3e-9 * n
    dev_clean = cpu_clean / gamma
    # a minority of sizes may be spoiled entirely, on either side
    spoiled = rng.choice(sizes, size=(sizes - 1) // 2 if sizes >= 5 else 0, replace=False)
    cpu = noisy_repeats(rng, cpu_clean, noise, spikes, set(spoiled[: len(spoiled) // 2].tolist()))
    dev = noisy_repeats(rng, dev_clean, noise, spikes, set(spoiled[len(spoiled) // 2:].tolist()))
    est = _stats.ratio_estimate(cpu, dev).value
    # the worst honest ratio is (1+noise)/(1-noise) away from gamma
    bound = (1 + noise) / (1 - noise) * (1 + 1e-12)
    assert gamma / bound <= est <= gamma * bound


@pytest.mark.parametrize("num, den, match", [
    ([], [], "no points"),
    ([1.0], [1.0, 2.0], "equal lengths"),
    ([1.0], [0.0], "> 0"),
])
def test_ratio_refuses_bad_input(num, den, match):
    with pytest.raises(ValueError, match=match):
        _stats.ratio_estimate(num, den)


# -------------------------------------------------------------------- fit_transfer

SIZES = [1 << k for k in range(10, 27)]                  # 1 KiB .. 64 MiB, as calibration copies


def test_transfer_line_through_exact_points():
    line = _stats.fit_transfer(SIZES, [2e-5 + 1e-10 * x for x in SIZES])
    assert line.intercept == pytest.approx(2e-5, rel=1e-9)
    assert line.slope == pytest.approx(1e-10, rel=1e-9)
    assert line(0) == pytest.approx(2e-5)


@settings(max_examples=40, deadline=None)
@given(lam=st.floats(1e-6, 1e-3), bw=st.floats(1e8, 1e11), noise=st.floats(0.0, 0.05),
       spikes=st.integers(0, 2), whole=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_transfer_fit_within_tolerance_under_noise_and_spikes(lam, bw, noise, spikes, whole, seed):
    rng = np.random.default_rng(seed)
    delta = 1.0 / bw
    clean = [lam + delta * x for x in SIZES]
    large = range(len(SIZES) - 5, len(SIZES))            # the sizes δ is taken from
    # whole spoiled sizes anywhere, but at most one among the large ones
    bad = set(rng.choice(len(SIZES) - 5, size=whole, replace=False).tolist())
    if whole and rng.random() < 0.5:
        bad.add(int(rng.choice(large)))
    line = _stats.fit_transfer(SIZES, noisy_repeats(rng, clean, noise, spikes, bad))
    # δ is pinned down only as well as the large copies rise above λ's noise;
    # a 10x spike that got through would be far outside this bound
    identifiable = 1 + lam / (delta * SIZES[-1] / 2)
    assert line.slope == pytest.approx(delta, rel=4 * noise * identifiable + 0.02)
    # λ shows at the smallest clean copy: its noise, and δ's error there, bound λ's error
    i = min(set(range(len(SIZES))) - bad)
    bound = 2 * noise * clean[i] + abs(line.slope - delta) * SIZES[i] + 0.02 * lam
    assert abs(line.intercept - lam) <= bound


def test_transfer_fit_prices_large_copies_at_their_own_bandwidth():
    # cached copies at 40 GB/s up to 8 MiB, then 20 GB/s (as PoCL measured here)
    lam, fast, slow, knee = 2e-5, 1 / 40e9, 1 / 20e9, 8 << 20
    ys = [lam + fast * min(x, knee) + slow * max(0, x - knee) for x in SIZES]
    line = _stats.fit_transfer(SIZES, ys)
    assert line.slope == pytest.approx(slow, rel=1e-9)
    assert line.intercept == pytest.approx(lam, rel=0.05)
    # the largest copy is priced at most by the cached part's saving too high ...
    assert ys[-1] * 0.999 <= line(64 << 20) <= ys[-1] + 1.01 * knee * (slow - fast)
    # ... and no copy is priced much too low (a single line cannot follow the bend exactly)
    assert all(line(x) >= 0.9 * y for x, y in zip(SIZES, ys))


def test_transfer_fit_of_a_zero_copy_device_is_near_zero():
    rng = np.random.default_rng(7)
    xs = SIZES[:15]
    ys = [1e-7 + 5e-12 * x + rng.uniform(0, 2e-8) for x in xs]
    line = _stats.fit_transfer(xs, ys)
    assert abs(line.intercept) < 1e-6 and line.slope == pytest.approx(5e-12, rel=0.1)


def test_transfer_fit_with_few_sizes_uses_them_all():
    line = _stats.fit_transfer([1000, 3000], [[1.1e-5, 9e-5, 1.1e-5], [1.3e-5]])
    assert line.slope == pytest.approx(1e-9) and line.intercept == pytest.approx(1e-5)


@pytest.mark.parametrize("xs, ys, kw, match", [
    ([1], [1.0], {}, "two distinct"),
    ([2, 2], [1.0, 2.0], {}, "two distinct"),
    ([1, 2], [1.0], {}, "one y"),
    ([1, float("inf")], [1.0, 2.0], {}, "finite"),
    ([1, 2], [1.0, 2.0], {"large_fraction": 0}, "large_fraction"),
])
def test_transfer_fit_refuses_bad_input(xs, ys, kw, match):
    with pytest.raises(ValueError, match=match):
        _stats.fit_transfer(xs, ys, **kw)


# ------------------------------------------------------------------- helpers

@given(st.lists(st.tuples(st.floats(-100, 100), st.floats(0.01, 10)), min_size=1, max_size=20))
def test_weighted_median_matches_the_definition(pairs):
    v = np.array([p[0] for p in pairs])
    w = np.array([p[1] for p in pairs])
    m = _stats.weighted_median(v, w)
    # at most half the weight lies strictly below, at most half strictly above
    total = w.sum()
    assert w[v < m].sum() <= total / 2 + 1e-9
    assert w[v > m].sum() <= total / 2 + 1e-9


def test_weighted_median_with_equal_weights_is_the_median():
    assert _stats.weighted_median([3, 1, 2], [1, 1, 1]) == 2
    assert _stats.weighted_median([4, 1, 3, 2], [1, 1, 1, 1]) == 2.5


def test_group_samples_sorts_and_collects_repeats():
    xs, reps = _stats.group_samples([(4, 1.0), (1, 3.0), (4, 2.0), (2, 5.0)])
    assert xs == [1, 2, 4] and reps == [[3.0], [5.0], [1.0, 2.0]]
    with pytest.raises(ValueError, match="pair"):
        _stats.group_samples([(1, 2, 3)])


# ------------------------------------------------------------------ repeatability (issue 14)

def _spiky_run(rng, true, noise, spike_prob):
    """A timed run: the true time, relative noise, and now and then a 2-10x slowdown."""
    def run():
        t = true * (1 + noise * abs(rng.standard_normal()))
        if rng.random() < spike_prob:
            t *= rng.uniform(2, 10)
        return t
    return run


def test_median_rel_error_is_zero_for_agreeing_samples_and_grows_with_spread():
    assert _stats.median_rel_error([1.0, 1.0, 1.0]) == 0.0
    assert _stats.median_rel_error([1.0]) == 0.0
    assert _stats.median_rel_error([1.0, 2.0]) == float("inf")
    tight = _stats.median_rel_error([1.0, 1.01, 0.99, 1.0, 1.02])
    wide = _stats.median_rel_error([1.0, 1.3, 0.8, 1.0, 1.2])
    assert 0 < tight < wide


def test_adaptive_sampling_stops_early_when_quiet_and_buys_repeats_when_noisy():
    quiet = _stats.adaptive_samples(lambda: 1.0, min_samples=5, max_samples=40, target=0.02)
    assert len(quiet) == 5
    rng = np.random.default_rng(0)
    noisy = _stats.adaptive_samples(_spiky_run(rng, 1.0, 0.3, 0.3), min_samples=5,
                                    max_samples=40, target=0.02)
    assert 5 < len(noisy) <= 40


@pytest.mark.parametrize("kwargs, match", [
    ({"min_samples": 0, "max_samples": 4, "target": 0.1}, "min_samples"),
    ({"min_samples": 5, "max_samples": 4, "target": 0.1}, "max_samples"),
    ({"min_samples": 1, "max_samples": 4, "target": 0.0}, "target"),
])
def test_adaptive_sampling_refuses_a_bad_budget(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _stats.adaptive_samples(lambda: 1.0, **kwargs)


@settings(max_examples=30, deadline=None)
@given(ratio=st.floats(0.05, 20), seed=st.integers(0, 2**32 - 1))
def test_paired_ratio_recovers_the_ratio_through_spikes_that_hit_both_sides(ratio, seed):
    """Load comes in bursts that slow whatever runs then; pairing cancels them."""
    rng = np.random.default_rng(seed)
    state = {"burst": 1.0, "k": 0}

    def load():
        state["k"] += 1
        if state["k"] % 2:                       # a new pair: maybe a new burst
            state["burst"] = rng.uniform(1.5, 4) if rng.random() < 0.3 else 1.0
        return state["burst"] * (1 + 0.01 * rng.standard_normal())

    est, nums, dens = _stats.paired_ratio(lambda: ratio * 1e-3 * load(), lambda: 1e-3 * load(),
                                          min_pairs=7, max_pairs=40, target=0.02)
    assert est.value == pytest.approx(ratio, rel=0.08)
    assert len(nums) == len(dens) == est.samples >= 7


def test_paired_ratio_alternates_which_side_runs_first():
    order = []
    _stats.paired_ratio(lambda: order.append("n") or 1.0, lambda: order.append("d") or 1.0,
                        min_pairs=4, max_pairs=4, target=0.5)
    assert order == ["n", "d", "d", "n", "n", "d", "d", "n"]


def test_low_quantile_ignores_one_sided_slowdowns():
    rng = np.random.default_rng(3)
    times = [1.0 * (1 + 0.01 * abs(rng.standard_normal())) for _ in range(20)]
    times[::3] = [t * 5 for t in times[::3]]     # a third of the runs slowed 5x
    assert _stats.low_quantile(times) == pytest.approx(1.0, rel=0.03)
    assert np.median(times) > _stats.low_quantile(times)
    with pytest.raises(ValueError):
        _stats.low_quantile([])


def test_combine_gives_a_noisy_point_little_say():
    E = _stats.Estimate
    got = _stats.combine_estimates([E(0.90, 0.01, 9), E(0.82, 0.01, 9), E(0.30, 0.5, 9)])
    assert got.value in (0.82, 0.90)
    assert got.rel_error == pytest.approx(1 / np.sqrt(1e4 + 1e4 + 4), rel=1e-6)
    with pytest.raises(ValueError):
        _stats.combine_estimates([])


@settings(max_examples=40, deadline=None)
@given(at12=st.floats(0.2, 3), slope=st.floats(-0.05, 0.05), noisy=st.integers(0, 3),
       seed=st.integers(0, 2**32 - 1))
def test_trend_at_reads_a_drifting_quantity_at_a_fixed_size(at12, slope, noisy, seed):
    """γ drifting with log2(size), one size spoiled: the line still holds at the middle."""
    rng = np.random.default_rng(seed)
    sizes = [1 << 12, 1 << 14, 1 << 16, 1 << 18]
    truth = [at12 * (1 + slope * (k - 12)) for k in (12, 14, 16, 18)]
    ests = [_stats.Estimate(t * (1 + 0.005 * rng.standard_normal()), 0.01, 9) for t in truth]
    ests[noisy] = _stats.Estimate(truth[noisy] * 0.6, 0.3, 9)  # a burst of load: wild, and says so
    got = _stats.trend_at(sizes, ests, 1 << 15)
    want = at12 * (1 + slope * 3)
    assert got.value == pytest.approx(want, rel=0.05)
    assert 0 < got.rel_error < 0.05


def test_trend_at_of_one_size_is_that_size():
    e = _stats.Estimate(0.8, 0.02, 5)
    assert _stats.trend_at([4096], [e], 1 << 14).value == 0.8
    with pytest.raises(ValueError, match="one x per estimate"):
        _stats.trend_at([1, 2], [e], 1)


def test_within_noise():
    assert _stats.within_noise(1.0, 1.02, 0.01)
    assert not _stats.within_noise(1.0, 1.2, 0.01)
    assert _stats.within_noise(0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        _stats.within_noise(1.0, 1.0, -1)


def test_transfer_fit_reads_repeats_by_their_lower_quartile():
    """Interference only adds time: half of every size's repeats slowed 2x leaves δ and λ."""
    lam, delta = 1e-5, 1e-10
    ys = [[lam + delta * x] * 2 + [2 * (lam + delta * x)] * 2 for x in SIZES]
    line = _stats.fit_transfer(SIZES, ys)
    assert line.slope == pytest.approx(delta, rel=1e-9)
    assert line.intercept == pytest.approx(lam, rel=1e-6)
    assert _stats.point_medians([[1.0, 2.0, 3.0, 4.0]], q=_stats.LOW_QUANTILE)[0] == 1.75


# ------------------------------------------------------------------ outside load (issue 14)

def test_quiet_rounds_keeps_the_rounds_others_left_alone():
    loads = [0.0, 0.6, 0.05, 0.9, 0.15, float("nan")]
    assert _stats.quiet_rounds(loads) == [0, 2, 4, 5]          # at the threshold, unknown: quiet
    assert _stats.quiet_rounds(loads, quiet=0.1) == [0, 2, 5]
    assert _stats.quiet_rounds(loads, min_keep=5) is None        # too few quiet: the caller decides
    assert _stats.quiet_rounds([0.7, 0.8, 0.9]) is None
    assert _stats.quiet_rounds([]) is None


@pytest.mark.parametrize("kwargs, match", [(dict(quiet=1.5), "quiet=1.5"),
                                           (dict(min_keep=0), "min_keep=0")])
def test_quiet_rounds_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _stats.quiet_rounds([0.0], **kwargs)


def test_an_estimate_records_its_load_and_basis_only_when_told():
    e = _stats.Estimate(1.0, 0.01, 5)
    assert e.outside_load == 0.0 and e.basis == ""
    assert _stats.Estimate(1.0, 0.01, 5, 0.6, "waits removed").basis == "waits removed"


def test_interleaved_ratios_sample_a_drift_slower_than_one_pair():
    """One side's core switches between a fast and a 25 % slower state every few
    rounds (another tenant on the host); each side's lower quartile over the
    whole time is its fast state, and the blocks' spread shows in the error."""
    state = {"k": 0}

    def den():
        state["k"] += 1
        return 1e-3 * (1.25 if (state["k"] // 7) % 3 == 0 else 1.0)

    (est, nums, dens), = _stats.interleaved_ratios([(lambda: 2e-3, den)], min_rounds=60)
    assert est.value == pytest.approx(2.0, rel=1e-9)
    assert len(nums) == len(dens) == est.samples == 60
    # a burst of pairs inside one slow stretch would have read 1.6 "± 0 %"
    burst = _stats.paired_ratio(lambda: 2e-3, lambda: 1.25e-3, min_pairs=5, max_pairs=5,
                                target=0.5)[0]
    assert burst.value == pytest.approx(1.6) and burst.rel_error == 0


def test_interleaved_ratios_error_comes_from_blocks_in_time():
    state = {"k": 0}

    def den():                       # slow for the first 12 of 40 rounds: a drift, not noise
        state["k"] += 1
        return 1e-3 * (1.3 if state["k"] <= 12 else 1.0)

    (est, nums, dens), = _stats.interleaved_ratios([(lambda: 1e-3, den)], min_rounds=40)
    # most pairs read 1.0, so the median pair ratio's error is 0; the blocks disagree
    assert _stats.median_rel_error([n / d for n, d in zip(nums, dens)]) == 0
    assert est.rel_error > 0.03
    (steady, _, _), = _stats.interleaved_ratios([(lambda: 1e-3, lambda: 1e-3)], min_rounds=40)
    assert steady.value == 1.0 and steady.rel_error == 0


def test_interleaved_ratios_run_rounds_over_every_pair_for_the_time_asked():
    order, now = [], {"t": 0.0}

    def clock():
        return now["t"]

    def side(name):
        def run():
            order.append(name)
            now["t"] += 0.1
            return 1.0
        return run

    out = _stats.interleaved_ratios([(side("a"), side("A")), (side("b"), side("B"))],
                                    min_rounds=2, min_seconds=1.0, clock=clock)
    # rounds of both pairs, the order flipped every round, until 1 s had passed
    assert order[:8] == ["a", "A", "b", "B", "A", "a", "B", "b"]
    assert len(order) == 12 and all(e.samples == 3 for e, _, _ in out)
    capped = _stats.interleaved_ratios([(side("a"), side("A"))], min_rounds=2,
                                       min_seconds=100.0, max_rounds=4, clock=clock)
    assert capped[0][0].samples == 4


@pytest.mark.parametrize("kwargs, match", [
    ({"min_rounds": 0}, "min_rounds"),
    ({"min_rounds": 2, "min_seconds": -1.0}, "min_seconds"),
    ({"min_rounds": 3, "max_rounds": 2}, "max_rounds"),
])
def test_interleaved_ratios_refuse_a_bad_budget(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _stats.interleaved_ratios([(lambda: 1.0, lambda: 1.0)], **kwargs)
    with pytest.raises(ValueError, match="no pairs"):
        _stats.interleaved_ratios([], min_rounds=1)


def _recording_around():
    """``(around, inside)``: ``inside[0]`` is k within ``around(k)``, None outside."""
    inside: list[int | None] = [None]

    @contextlib.contextmanager
    def around(k):
        inside[0] = k
        yield
        inside[0] = None

    return around, inside


def test_interleaved_ratios_run_each_round_inside_around():
    """``around(k)`` wraps round k's pairs: every pair of a round sees the same context."""
    around, inside = _recording_around()
    log = []

    def side(name):
        def run():
            log.append((name, inside[0]))
            return 1.0
        return run

    _stats.interleaved_ratios([(side("a"), side("b")), (side("c"), side("d"))], min_rounds=3,
                              around=around)
    assert {k for _, k in log} == {0, 1, 2}
    for k in range(3):
        assert sorted(n for n, kk in log if kk == k) == ["a", "b", "c", "d"]


def test_paired_ratio_runs_each_pair_inside_around():
    around, inside = _recording_around()
    log = []

    est, _, _ = _stats.paired_ratio(lambda: log.append(inside[0]) or 2.0,
                                    lambda: log.append(inside[0]) or 1.0,
                                    min_pairs=4, max_pairs=4, target=0.5, around=around)
    assert est.value == pytest.approx(2.0)
    assert log == [0, 0, 1, 1, 2, 2, 3, 3]
