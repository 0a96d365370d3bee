"""The HPU model (hpu.model) against the paper's worked example, hand computations,
closed forms and brute-force sums.

Every expected value here is computed independently of hpu.model: plain Python
loops over the levels, the closed forms of 004 §5.2.2 (corrected as in
seeds/README.md), geometric-series formulas written out in the test, or
arithmetic done by hand in a comment.
"""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from hpu import model as M

PAPER_PROBLEM = M.Problem(a=2, b=2, cost="n", n=2**24)
PAPER_MACHINE = M.Machine(p=4, g=2**12, gamma=1 / 160)


# ---------------------------------------------------------------------------
# an independent implementation for f(n) = n (geometric level sums)
# ---------------------------------------------------------------------------


def _geometric_sum(r: float, lo: float, hi: float) -> float:
    """sum_{i=lo}^{hi-1} r**i continued to real bounds (the series' closed form)."""
    if r == 1:
        return hi - lo
    return (r ** lo - r ** hi) / (1 - r)


class _LinearCostReference:
    """004 §5.2.1 written out for f(n) = n with the geometric sums in closed form."""

    def __init__(self, a, b, n, p, g, gamma):
        self.a, self.b, self.n, self.p, self.g, self.gamma = a, b, n, p, g, gamma
        self.L = math.log(n) / math.log(b)
        self.leaves = a ** self.L

    def work(self, lo):  # sum a^i * n/b^i
        return self.n * _geometric_sum(self.a / self.b, lo, self.L)

    def span(self, lo, hi):  # sum n/b^i
        return self.n * _geometric_sum(1 / self.b, lo, hi)

    def t_c(self, alpha):
        c = min(max(math.log(self.p / alpha, self.a), 0.0), self.L)
        return alpha / self.p * (self.leaves + self.work(c))

    def t_g(self, alpha, y):
        if (1 - alpha) * self.leaves < self.g:
            return (1 + self.span(y, self.L)) / self.gamma
        u = math.log(self.g / (1 - alpha), self.a)
        t_max = (1 - alpha) / (self.gamma * self.g) * (self.leaves + self.work(u))
        if y >= u:
            return (1 - alpha) / (self.gamma * self.g) * (self.leaves + self.work(y))
        return t_max + self.span(y, u) / self.gamma

    def y(self, alpha):
        f = lambda y: self.t_g(alpha, y) - self.t_c(alpha)  # noqa: E731
        if f(0) <= 0:
            return 0.0
        if f(self.L) >= 0:
            return self.L
        return brentq(f, 0, self.L, xtol=1e-13)

    def w_g(self, alpha):
        return (1 - alpha) * (self.leaves + self.work(self.y(alpha)))

    def total(self):
        return self.leaves + self.work(0)


# ---------------------------------------------------------------------------
# the worked example of 004 §5.2.2
# ---------------------------------------------------------------------------


def test_worked_example_matches_the_paper():
    d = M.advanced_division(PAPER_PROBLEM, PAPER_MACHINE)
    assert d.alpha == pytest.approx(0.16, abs=0.02)
    assert d.gpu_work_fraction == pytest.approx(0.52, abs=0.03)
    assert d.y == pytest.approx(9.4, abs=0.3)
    assert d.case == 3  # "both saturated and non-saturated": log2 g = 12 > y
    assert d.uses_device
    assert d.total_work == 2**24 * 25  # n (log2 n + 1), as the paper says


def test_worked_example_agrees_with_the_corrected_closed_forms_to_high_precision():
    # independent optimisation of W_g written with the paper's closed forms
    n, p, g, gam = 2**24, 4, 2**12, 1 / 160
    L = 24

    def closed_y(alpha):
        tc = alpha * n / p * (L - math.log2(p / alpha) + 1)
        u = math.log2(g / (1 - alpha))
        tmax = (1 - alpha) * n / (gam * g) * (L - u + 1)

        def tg(y):
            if y >= u:
                return (1 - alpha) * n / (gam * g) * (L - y + 1)
            return tmax + n * 2 / gam * (2.0 ** -y - (1 - alpha) / g)

        return brentq(lambda y: tg(y) - tc, 0, L, xtol=1e-13)

    alphas = np.linspace(0.10, 0.25, 3001)
    work = [(1 - a) * n * (L - closed_y(a) + 1) for a in alphas]
    k = int(np.argmax(work))
    d = M.advanced_division(PAPER_PROBLEM, PAPER_MACHINE)
    assert d.alpha == pytest.approx(alphas[k], abs=1e-4)
    assert d.gpu_work == pytest.approx(work[k], rel=1e-6)
    assert d.y == pytest.approx(closed_y(d.alpha), abs=1e-9)


def test_worked_example_plan_transfers_at_level_9_or_10():
    pl = M.plan(PAPER_PROBLEM, PAPER_MACHINE)
    assert pl.transfer_level in (9, 10)
    assert pl.alpha == pytest.approx(0.16, abs=0.02)
    assert pl.y == pytest.approx(9.4, abs=0.3)
    assert pl.gpu_work_fraction == pytest.approx(0.52, abs=0.03)
    assert pl.uses_device and pl.predicted_time < pl.cpu_only_time
    # the integer split really is a split of a^transfer_level tasks
    m = 2 ** pl.transfer_level
    assert 0 < pl.split_alpha < 1
    assert pl.split_alpha * m == pytest.approx(round(pl.split_alpha * m))
    # the picture's shares: CPU alone above the transfer level, the split below it
    for level in pl.levels:
        expected = 0.0 if level.index < pl.transfer_level else 1 - pl.split_alpha
        assert level.device_fraction == pytest.approx(expected)
    assert len(pl.levels) == 25 and pl.levels[-1].leaves


# ---------------------------------------------------------------------------
# cost parsing
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, exponent, log_power", [
    ("1", 0, 0), ("n", 1, 0), ("n log n", 1, 1), ("nlogn", 1, 1), ("N Log N", 1, 1),
    ("n^2", 2, 0), ("n**2", 2, 0), ("n^1.5", 1.5, 0), ("log n", 0, 1), ("n^2 log n", 2, 1),
    ("n*log(n)", 1, 1), ("n log^2 n", 1, 2),
])
def test_parse_cost_accepts_the_documented_forms(text, exponent, log_power):
    c = M.parse_cost(text)
    assert (c.exponent, c.log_power) == (exponent, log_power)
    m = 37.0
    assert c(m) == pytest.approx(m ** exponent * math.log2(m) ** log_power)
    assert M.parse_cost(c.text) == c  # the canonical text parses back to itself


@pytest.mark.parametrize("text", ["", "n^", "n^x", "2n", "exp(n)", "n log", "sqrt n", 3])
def test_parse_cost_rejects_unknown_forms_naming_the_value(text):
    with pytest.raises(ValueError) as info:
        M.parse_cost(text)
    msg = str(info.value)
    assert repr(text) in msg and "n log n" in msg


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, name", [
    (dict(a=1, b=2, cost="n", n=8), "a = 1"),
    (dict(a=2.5, b=2, cost="n", n=8), "a = 2.5"),
    (dict(a=2, b=1, cost="n", n=8), "b = 1"),
    (dict(a=2, b=0.5, cost="n", n=8), "b = 0.5"),
    (dict(a=2, b=2, cost="n", n=0), "n = 0"),
    (dict(a=2, b=2, cost="n", n=float("nan")), "n = nan"),
    (dict(a=True, b=2, cost="n", n=8), "a = True"),
    (dict(a=2, b=2, cost="cubic", n=8), "'cubic'"),
    (dict(a=2, b=2, cost="n", n=2**63), "n = 9223372036854775808"),
    (dict(a=2, b=2, cost="n^50", n=2**40), "'n^50'"),
])
def test_problem_rejects_bad_values_naming_them(kwargs, name):
    with pytest.raises(ValueError, match="expected") as info:
        M.Problem(**kwargs)
    assert name in str(info.value)


@pytest.mark.parametrize("kwargs, name", [
    (dict(p=0, g=8, gamma=0.1), "p = 0"),
    (dict(p=4, g=0.5, gamma=0.1), "g = 0.5"),
    (dict(p=4, g=8, gamma=0), "gamma = 0"),
    (dict(p=4, g=8, gamma=-1), "gamma = -1"),
    (dict(p=4, g=8, gamma=0.1, latency_s=-1, seconds_per_unit=1e-9), "latency_s = -1"),
    (dict(p=4, g=8, gamma=0.1, latency_s=1e-5), "seconds_per_unit is None"),
    (dict(p=4, g=8, gamma=0.1, seconds_per_unit=0), "seconds_per_unit = 0"),
])
def test_machine_rejects_bad_values_naming_them(kwargs, name):
    with pytest.raises(ValueError, match="expected") as info:
        M.Machine(**kwargs)
    assert name in str(info.value)


def test_machine_allows_a_device_core_faster_than_a_cpu_core():
    m = M.Machine(p=4, g=64, gamma=2.0)
    d = M.advanced_division(M.Problem(2, 2, "n", 2**16), m)
    assert d.uses_device and 0 <= d.y <= 16 and 0 < d.gpu_work_fraction <= 1


def test_results_are_frozen():
    d = M.advanced_division(PAPER_PROBLEM, PAPER_MACHINE)
    with pytest.raises(AttributeError):
        d.alpha = 0.5


# ---------------------------------------------------------------------------
# level sums: general, continuous, equal to the plain sums at integer bounds
# ---------------------------------------------------------------------------

COSTS = ["1", "n", "n log n", "n^2", "log n", "n^1.5"]


@settings(max_examples=40, deadline=None)
@given(a=st.integers(2, 5), b=st.sampled_from([1.5, 2, 3, 4]), cost=st.sampled_from(COSTS),
       n=st.integers(1, 10**6), data=st.data())
def test_level_sums_equal_plain_sums_at_integer_bounds(a, b, cost, n, data):
    pr = M.Problem(a, b, cost, n)
    top = int(math.floor(pr.height))
    lo = data.draw(st.integers(0, top))
    hi = data.draw(st.integers(lo, top))
    f = pr.cost
    work = sum(a ** i * f(n / b ** i) for i in range(lo, hi))
    span = sum(f(n / b ** i) for i in range(lo, hi))
    assert M.level_work(pr, lo, hi) == pytest.approx(work, rel=1e-9, abs=1e-9)
    assert M.level_span(pr, lo, hi) == pytest.approx(span, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("a, b", [(2, 2), (3, 2), (4, 2), (2, 3)])
@pytest.mark.parametrize("cost", COSTS)
def test_level_sums_are_continuous_and_decreasing_in_the_lower_bound(a, b, cost):
    pr = M.Problem(a, b, cost, 5000)
    ys = np.linspace(0, pr.height, 801)
    w = np.array([M.level_work(pr, y) for y in ys])
    s = np.array([M.level_span(pr, y) for y in ys])
    for v in (w, s):
        assert np.all(np.diff(v) <= 1e-9 * v.max())          # decreasing
        assert np.max(np.abs(np.diff(v))) < 0.05 * v.max()   # no jumps on a fine grid
        assert v[-1] == pytest.approx(0, abs=1e-9 * v.max())  # empty sum at y = L


def test_total_work_of_mergesort_and_sum_by_hand():
    assert M.total_work(M.Problem(2, 2, "n", 1024)) == pytest.approx(1024 * 11)
    assert M.total_work(M.Problem(2, 2, "1", 1024)) == pytest.approx(2 * 1024 - 1)
    assert M.total_work(M.Problem(2, 2, "n", 1)) == 1  # a single leaf


# ---------------------------------------------------------------------------
# closed forms (a = b, f = n) against the general sums
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("a, n, g", [(2, 2**24, 2**12), (2, 2**10, 2**12), (3, 3**12, 500)])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.16, 0.4, 0.75])
@pytest.mark.parametrize("y", [0.0, 2.5, 7.0, 9.37, 11.99, 14.2])
def test_closed_forms_match_general_sums(a, n, g, alpha, y):
    pr, m = M.Problem(a, a, "n", n), M.Machine(4, g, 1 / 160)
    y = min(y, pr.height)
    cf = M.paper_closed_forms(pr, m, alpha, y)
    assert M.cpu_time(pr, m, alpha) == pytest.approx(cf.t_cpu, rel=1e-10)
    assert M.gpu_work(pr, m, alpha, y) == pytest.approx(cf.gpu_work, rel=1e-10)
    assert M.total_work(pr) == pytest.approx(cf.total_work, rel=1e-12)
    u = math.log(g / (1 - alpha), a)
    if (1 - alpha) * n < g:
        expected = cf.t_gpu_unsaturated
        assert M.gpu_saturated_time(pr, m, alpha) == 0.0
    else:
        assert M.gpu_saturated_time(pr, m, alpha) == pytest.approx(cf.t_gpu_max, rel=1e-10)
        expected = cf.t_gpu_saturated if y >= u else cf.t_gpu_mixed
    assert M.gpu_time(pr, m, alpha, y) == pytest.approx(expected, rel=1e-10)


def test_closed_forms_refuse_other_shapes():
    with pytest.raises(ValueError, match="a = b"):
        M.paper_closed_forms(M.Problem(3, 2, "n", 64), PAPER_MACHINE, 0.5, 2)


# ---------------------------------------------------------------------------
# y(alpha), alpha*, the three cases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1e-5, 0.01, 0.1, 0.16, 0.3, 0.6, 0.99, 1.0])
def test_y_makes_the_device_finish_with_the_cpu_or_is_clamped(alpha):
    pr, m = PAPER_PROBLEM, PAPER_MACHINE
    y = M.gpu_level(pr, m, alpha)
    tc = M.cpu_time(pr, m, alpha)
    assert 0 <= y <= 24
    if y == 0:
        assert M.gpu_time(pr, m, alpha, 0) <= tc
    elif y == 24:
        assert M.gpu_time(pr, m, alpha, 24) >= tc
    else:
        assert M.gpu_time(pr, m, alpha, y) == pytest.approx(tc, rel=1e-9)


def test_cases_follow_the_paper_conditions():
    pr, m = PAPER_PROBLEM, PAPER_MACHINE
    # (1 - alpha) n < g only for alpha > 1 - 2^-12
    assert M.gpu_case(pr, m, 1 - 2**-13) == 1
    for alpha in (0.05, 0.16, 0.5):
        tc, tmax = M.cpu_time(pr, m, alpha), M.gpu_saturated_time(pr, m, alpha)
        assert M.gpu_case(pr, m, alpha) == (2 if tc <= tmax else 3)
        y, u = M.gpu_level(pr, m, alpha), math.log2(m.g / (1 - alpha))
        assert (y >= u) == (M.gpu_case(pr, m, alpha) == 2)


@pytest.mark.parametrize("a, b, n, p, g, gamma", [
    (2, 2, 2**24, 4, 2**12, 1 / 160),
    (3, 2, 2**16, 4, 2**12, 1 / 160),
    (4, 2, 2**12, 4, 2**12, 1 / 160),
    (3, 2, 2**14, 8, 256, 1 / 20),
    (2, 3, 3**10, 2, 64, 0.25),
])
def test_advanced_division_matches_an_independent_reference(a, b, n, p, g, gamma):
    pr, m = M.Problem(a, b, "n", n), M.Machine(p, g, gamma)
    ref = _LinearCostReference(a, b, n, p, g, gamma)
    d = M.advanced_division(pr, m)
    lo = p / ref.leaves
    alphas = np.unique(np.concatenate([np.linspace(lo, 1, 1500), np.geomspace(lo, 1, 1500)]))
    works = np.array([ref.w_g(x) for x in alphas])
    assert d.alpha_min == pytest.approx(lo)
    assert d.total_work == pytest.approx(ref.total(), rel=1e-9)
    # the model's maximum is at least the grid's best and agrees with the reference there
    assert d.gpu_work == pytest.approx(ref.w_g(d.alpha), rel=1e-7)
    assert d.gpu_work >= works.max() * (1 - 1e-6)
    assert d.y == pytest.approx(ref.y(d.alpha), abs=1e-7)
    assert d.t_cpu == pytest.approx(ref.t_c(d.alpha), rel=1e-9)


# ---------------------------------------------------------------------------
# edge cases
# ---------------------------------------------------------------------------


def test_a_device_weaker_than_the_cpu_leaves_everything_on_the_cpu():
    pr, m = M.Problem(2, 2, "n", 2**20), M.Machine(p=64, g=1024, gamma=1 / 160)  # gamma*g = 6.4
    d = M.advanced_division(pr, m)
    assert (d.alpha, d.gpu_work, d.gpu_work_fraction, d.uses_device) == (1.0, 0.0, 0.0, False)
    assert "gamma*g" in d.reason and "64" in d.reason
    bd = M.basic_division(pr, m)
    assert not bd.uses_device and bd.transfer_level is None
    assert all(level.unit == "cpu" for level in bd.levels)
    for strategy in M.STRATEGIES:
        pl = M.plan(pr, m, strategy)
        assert pl.transfer_level is None and not pl.uses_device
        assert pl.predicted_time == pl.cpu_only_time


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_n_not_larger_than_p_stays_on_the_cpu(n):
    pr, m = M.Problem(2, 2, "n", n), M.Machine(p=4, g=4096, gamma=1 / 160)
    d = M.advanced_division(pr, m)
    assert d.alpha == 1.0 and d.gpu_work_fraction == 0.0 and not d.uses_device
    assert "p = 4" in d.reason
    pl = M.plan(pr, m)
    assert pl.transfer_level is None and pl.split_alpha == 1.0
    assert pl.predicted_time == pl.cpu_only_time
    if n != 3:
        # by hand: every level has at most p tasks, so one round each: f(n/2^i), plus the
        # n <= p leaves in one round
        expected = sum(n / 2 ** i for i in range(int(math.log2(n)))) + 1
        assert pl.cpu_only_time == pytest.approx(expected)


@pytest.mark.parametrize("a", [3, 4])
@pytest.mark.parametrize("cost", ["n", "1", "n log n", "n^2"])
def test_more_than_two_calls_with_halving(a, cost):
    pr, m = M.Problem(a, 2, cost, 2**14), PAPER_MACHINE
    d = M.advanced_division(pr, m)
    assert d.alpha_min == pytest.approx(4 / a ** 14)
    assert d.alpha_min <= d.alpha <= 1 and 0 <= d.y <= 14
    assert 0 < d.gpu_work <= d.total_work
    assert d.total_work == pytest.approx(
        a ** 14 + sum(a ** i * pr.cost(2 ** 14 / 2 ** i) for i in range(14)), rel=1e-9)
    if 0 < d.y < 14:
        assert M.gpu_time(pr, m, d.alpha, d.y) == pytest.approx(M.cpu_time(pr, m, d.alpha),
                                                                 rel=1e-9)
    pl = M.plan(pr, m)
    assert pl.transfer_level is not None and 0 <= pl.transfer_level <= 14
    assert pl.predicted_time <= pl.cpu_only_time


# ---------------------------------------------------------------------------
# basic division (004 §5.1)
# ---------------------------------------------------------------------------


def test_basic_division_levels_follow_the_four_cases():
    pr, m = PAPER_PROBLEM, PAPER_MACHINE
    bd = M.basic_division(pr, m)
    assert bd.level == pytest.approx(math.log2(4 * 160))
    assert bd.transfer_level == 10 and bd.uses_device
    n = 2**24
    for r in bd.levels[:-1]:
        i, f = r.index, n / 2 ** r.index
        if 2 ** i < 4:
            case, t_cpu, t_gpu = 1, f, 160 * f
        elif 2 ** i < 2**12:
            case, t_cpu, t_gpu = 2, 2 ** i / 4 * f, 160 * f
        else:
            case, t_cpu, t_gpu = 3, 2 ** i / 4 * f, 2 ** i / (2**12 / 160) * f
        assert (r.case, r.t_cpu, r.t_gpu) == (case, pytest.approx(t_cpu), pytest.approx(t_gpu))
        # under the paper's assumptions the level goes to the faster unit
        assert r.unit == ("device" if t_gpu < t_cpu else "cpu")
    leaves = bd.levels[-1]
    assert leaves.case == 4 and leaves.tasks == n
    assert leaves.t_cpu == pytest.approx(n / 4) and leaves.t_gpu == pytest.approx(n / (2**12 / 160))
    assert bd.hybrid_time == pytest.approx(sum(min(r.t_cpu, r.t_gpu) for r in bd.levels))
    assert bd.gpu_work_fraction == pytest.approx((24 - bd.level + 1) / 25)


def test_basic_plan_reports_log_a_p_over_gamma():
    pl = M.plan(M.Problem(3, 2, "n", 2**12), PAPER_MACHINE, "basic")
    assert pl.y == pytest.approx(math.log(640, 3)) and pl.alpha == 0
    assert pl.transfer_level == math.ceil(math.log(640, 3))
    assert pl.split_alpha == 0.0


def test_plan_rejects_an_unknown_strategy():
    with pytest.raises(ValueError, match="'fastest'.*advanced, basic"):
        M.plan(PAPER_PROBLEM, PAPER_MACHINE, "fastest")


# ---------------------------------------------------------------------------
# the schedule simulator
# ---------------------------------------------------------------------------

SMALL = M.Problem(2, 2, "n", 16)


def test_simulate_by_hand():
    # n = 16, p = 2, g = 4, gamma = 1/2, split at y = 1 (2 tasks: 1 CPU, 1 device), K = 2.
    # CPU: level 1, 1 task of f(8) = 8 -> 8; level 2, 2 subtrees of 4 elements, each
    #   f(4) + 2 f(2) + 4 leaves = 12, ceil(2/2) = 1 round -> 12; share 20.
    # device: level 1: 8 / (1/2) = 16; 2 subtrees in ceil(2/4) = 1 round: 12 / (1/2) = 24; 40.
    # upper: level 0, f(16) = 16.  total = max(20, 40) + 16 = 56.
    m = M.Machine(p=2, g=4, gamma=0.5)
    s = M.simulate(SMALL, m, alpha=0.5, y=1, K=2)
    assert (s.cpu_tasks, s.device_tasks, s.K) == (1, 1, 2)
    assert (s.cpu_share_time, s.device_share_time, s.upper_levels_time) == (20, 40, 16)
    assert s.total_time == 56 and s.transfer_time == 0 and s.time_unit == "unit"
    # the device does 8 + 2*12 = 32 of the tree's 16*5 = 80 units
    assert s.device_work_fraction == pytest.approx(32 / 80)


def test_simulate_with_transfers_in_seconds_by_hand():
    # as above, 1 ms per unit; the device's share is 8 int32 elements = 32 bytes;
    # one transfer = 1e-3 + 32 * 1e-6 s, one before and one after the device's 40 units.
    m = M.Machine(p=2, g=4, gamma=0.5, latency_s=1e-3, seconds_per_byte=1e-6,
                  seconds_per_unit=1e-3)
    s = M.simulate(SMALL, m, alpha=0.5, y=1, K=2, element_bytes=4)
    one = 1e-3 + 32e-6
    assert s.transfer_bytes == 64 and s.transfer_time == pytest.approx(2 * one)
    assert s.total_time == pytest.approx(one + 40e-3 + one + 16e-3)
    assert s.time_unit == "s"
    names = [ph.name for ph in s.phases]
    assert names == ["cpu share", "upload", "device share", "download", "upper levels"]
    assert s.phases[-1].end == pytest.approx(s.total_time)


def test_simulate_contention_slows_both_while_they_overlap():
    # contention 2: both run at half speed while both compute; the CPU's 20 units take
    # 40, the device has then done 20 of its 40 and finishes the rest alone: 60; + 16.
    m = M.Machine(p=2, g=4, gamma=0.5)
    s = M.simulate(SMALL, m, alpha=0.5, y=1, K=2, contention=2.0)
    assert (s.cpu_share_time, s.device_share_time, s.total_time) == (40, 60, 76)


def test_simulate_all_cpu_and_all_device_by_hand():
    m = M.Machine(p=2, g=4, gamma=0.5)
    # alpha = 1 at y = 0, K = 3, on 2 cores: level 0, 1 task of 16 -> 16; level 1, 2 tasks of
    # 8 in 1 round -> 8; level 2, 4 tasks of 4 in 2 rounds -> 8; K = 3: 8 subtrees of
    # f(2) + 2 leaves = 4 in 4 rounds -> 16.  Total 48.
    s = M.simulate(SMALL, m, alpha=1.0, y=0, K=3)
    assert s.device_tasks == 0 and s.total_time == 48 and s.device_work_fraction == 0
    # alpha = 0: the device (4 cores at speed 1/2): levels 0..2 in one round each:
    # (16 + 8 + 4) * 2 = 56; K = 3: 8 subtrees of 4 in 2 rounds: 2 * 4 * 2 = 16.  Total 72.
    s = M.simulate(SMALL, m, alpha=0.0, y=0, K=3)
    assert s.cpu_tasks == 0 and s.total_time == 72 and s.device_work_fraction == 1


@pytest.mark.parametrize("kwargs, name", [
    (dict(alpha=1.5, y=1), "alpha = 1.5"),
    (dict(alpha=0.5, y=9), "y = 9"),
    (dict(alpha=0.5, y=2, K=1), "K = 1"),
    (dict(alpha=0.5, y=1, contention=0.5), "contention = 0.5"),
    (dict(alpha=0.5, y=1, element_bytes=-4), "element_bytes = -4"),
])
def test_simulate_rejects_bad_values(kwargs, name):
    with pytest.raises(ValueError, match="expected") as info:
        M.simulate(SMALL, M.Machine(2, 4, 0.5), **kwargs)
    assert name in str(info.value)


def _neighbours(pr, s):
    a, D = pr.a, math.ceil(pr.height - 1e-9)
    m = a ** s.y
    out = [(s.y, c) for c in (s.cpu_tasks - 1, s.cpu_tasks + 1) if 0 <= c <= m]
    if s.y > 0:
        out += [(s.y - 1, s.cpu_tasks // a), (s.y - 1, -(-s.cpu_tasks // a))]
    if s.y < D:
        out.append((s.y + 1, s.cpu_tasks * a))
    return out


def test_best_split_of_the_paper_example_beats_every_split_at_levels_8_to_11():
    pr, m = PAPER_PROBLEM, PAPER_MACHINE
    best = M.best_split(pr, m).best
    for y in (8, 9, 10, 11):
        exhaustive = min(M.simulate(pr, m, alpha=c / 2**y, y=y).total_time
                         for c in range(2**y + 1))
        assert best.total_time <= exhaustive * (1 + 1e-12)


def test_best_split_on_a_user_grid_is_the_grid_minimum():
    pr, m = M.Problem(2, 2, "n", 2**12), M.Machine(4, 256, 1 / 20)
    alphas, ys = [0.0, 0.25, 0.5, 1.0], [2, 4, 6]
    search = M.best_split(pr, m, alphas=alphas, ys=ys)
    totals = [M.simulate(pr, m, alpha=x, y=y).total_time for x in alphas for y in ys]
    assert search.best.total_time == min(totals)
    assert len(search.candidates) == len(totals)


@settings(max_examples=25, deadline=None)
@given(a=st.integers(2, 4), cost=st.sampled_from(["1", "n", "n log n"]),
       exponent=st.integers(1, 14), p=st.integers(1, 16), g=st.integers(1, 4096),
       inv_gamma=st.sampled_from([0.5, 1, 4, 20, 160]),
       latency=st.sampled_from([0.0, 1e-6, 1e-3]))
def test_best_split_is_no_worse_than_its_neighbours(a, cost, exponent, p, g, inv_gamma, latency):
    n = 2 ** exponent
    pr = M.Problem(a, 2, cost, n)
    m = M.Machine(p, g, 1 / inv_gamma, latency_s=latency, seconds_per_byte=latency / 100,
                  seconds_per_unit=1e-8)
    best = M.best_split(pr, m).best
    assert best.total_time <= M.simulate(pr, m, alpha=1.0, y=0).total_time  # CPU alone
    for y, c in _neighbours(pr, best):
        other = M.simulate(pr, m, alpha=c / a ** y, y=y)
        assert best.total_time <= other.total_time * (1 + 1e-12)


# ---------------------------------------------------------------------------
# properties of the continuous model
# ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(a=st.integers(2, 4), b=st.sampled_from([1.5, 2, 3]),
       cost=st.sampled_from(["1", "n", "n log n", "n^2", "log n"]),
       n=st.integers(1, 2**20), p=st.integers(1, 64), g=st.integers(1, 2**14),
       gamma=st.floats(1e-3, 4.0))
def test_advanced_division_properties(a, b, cost, n, p, g, gamma):
    pr, m = M.Problem(a, b, cost, n), M.Machine(p, g, gamma)
    d = M.advanced_division(pr, m)
    L = math.log(n) / math.log(b)
    alpha_min = min(1.0, p / a ** L)
    assert 0.0 <= d.gpu_work <= d.total_work * (1 + 1e-12)
    assert alpha_min * (1 - 1e-9) <= d.alpha <= 1.0
    if a == b:
        assert d.alpha >= min(1.0, p / n) * (1 - 1e-9)
    assert -1e-12 <= d.y <= L + 1e-12
    assert 0.0 <= d.gpu_work_fraction <= 1.0
    if not d.uses_device:
        assert d.alpha == 1.0 and d.gpu_work == 0.0
    else:
        # alpha* is no worse than a few other fractions in range
        for x in np.linspace(alpha_min, 1, 7):
            assert d.gpu_work >= M.gpu_work(pr, m, float(x)) * (1 - 1e-9)


def test_model_imports_without_heavy_dependencies():
    code = ("import sys, hpu.model, hpu._commands.plan; "
            "print(sorted(k for k in ('numba', 'pyopencl', 'scipy', 'matplotlib') "
            "if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_planning_a_split_imports_no_scipy_optimize():
    """The model's root and maximum are its own (scipy.optimize's import took 0.33-0.39 s,
    half of a new process's first default call); a plan that uses the device solves both."""
    code = ("import sys; from hpu import model as M; "
            "d = M.advanced_division(M.Problem(a=2, b=2, cost='n', n=2**22), "
            "M.Machine(p=4, g=2**12, gamma=1/160)); "
            "assert d.uses_device and 0 < d.alpha < 1, d; "
            "print('scipy.optimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@settings(max_examples=60, deadline=None)
@given(root=st.floats(0.01, 0.99), k=st.floats(0.1, 50), power=st.floats(0.0, 3),
       width=st.floats(0.5, 64))
def test_the_models_root_agrees_with_scipy_brentq(root, k, power, width):
    """Decreasing functions like T_g(α, y) − T_c: steep, flat, convex and concave."""
    r = root * width

    def f(y):                        # decreasing, with a slope of its own at the root
        return k * (r - y) * (1.0 + power * y / width) ** power

    ours = M._root(f, 0.0, width, xtol=1e-12)
    theirs = brentq(f, 0.0, width, xtol=1e-12, rtol=4 * np.finfo(float).eps)
    assert ours == pytest.approx(theirs, abs=1e-9 * width)
    assert ours == pytest.approx(r, abs=1e-9 * width)


def test_the_models_root_needs_a_bracket():
    with pytest.raises(ValueError, match="same sign"):
        M._root(lambda y: 1.0 + y, 0.0, 1.0, xtol=1e-12)
    assert M._root(lambda y: y, 0.0, 1.0, xtol=1e-12) == 0.0


@settings(max_examples=60, deadline=None)
@given(peak=st.floats(0.0, 1.0), lo=st.floats(0.0, 0.5), width=st.floats(1e-3, 0.5),
       power=st.floats(1.0, 4.0))
def test_the_models_maximum_agrees_with_scipy_minimize_scalar(peak, lo, width, power):
    from scipy.optimize import minimize_scalar

    hi = lo + width
    x0 = lo + peak * width

    def fun(x):
        return 3.0 - abs(x - x0) ** power

    xatol = 1e-12 * max(1.0, hi)
    x, v = M._golden_max(fun, lo, hi, xatol=xatol)
    res = minimize_scalar(lambda t: -fun(t), bounds=(lo, hi), method="bounded",
                          options={"xatol": xatol})
    assert lo <= x <= hi
    assert v >= -res.fun - 1e-12 and v == fun(x)
    if power <= 2.0:                 # flatter peaks are equal in floating point over a range
        assert x == pytest.approx(x0, abs=1e-6)


@settings(max_examples=40, deadline=None)
@example(p=7, log_g=11, inv_gamma=94.0, log_n=10, a=4, cost="1")   # a narrow second peak
@example(p=1, log_g=2, inv_gamma=2.0, log_n=29, a=3, cost="1")     # y = L exactly
@given(p=st.integers(1, 16), log_g=st.integers(0, 13), inv_gamma=st.floats(1, 300),
       log_n=st.integers(10, 30), a=st.sampled_from([2, 3, 4]),
       cost=st.sampled_from(["n", "1", "n log n"]))
def test_advanced_division_matches_the_scipy_solution(p, log_g, inv_gamma, log_n, a, cost):
    """alpha* and y as a reference built on brentq and minimize_scalar find them."""
    from scipy.optimize import minimize_scalar

    pr = M.Problem(a=a, b=2, cost=cost, n=2 ** log_n)
    m = M.Machine(p=p, g=2 ** log_g, gamma=1 / inv_gamma)
    d = M.advanced_division(pr, m)
    if not d.uses_device:
        return
    lo, hi = M.alpha_bounds(pr, m)

    def y_ref(alpha):
        L = pr.height
        tc = M.cpu_time(pr, m, alpha)
        ex = lambda y: M.gpu_time(pr, m, alpha, y) - tc   # noqa: E731
        if ex(0.0) <= 0:
            return 0.0
        if ex(L) >= 0:
            return L
        return brentq(ex, 0.0, L, xtol=1e-12, rtol=4 * np.finfo(float).eps)

    grid = np.linspace(lo, hi, 400)
    best = max(M.gpu_work(pr, m, float(x), y_ref(float(x))) for x in grid)
    res = minimize_scalar(lambda x: -M.gpu_work(pr, m, x, y_ref(x)), bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-12})
    best = max(best, -res.fun)
    assert d.gpu_work >= best * (1 - 1e-9)
    # y solves T_g(alpha, y) = T_c(alpha) as brentq's does.  For huge trees T_g is flat to
    # the last bit over up to ~1e-3 of y near the root, and any point of that plateau is a
    # root: so both points, and the stretch between them, must have no residual
    tc = M.cpu_time(pr, m, d.alpha)
    L = pr.height         # log2(n) exactly: math.log(2**29, 2) is one ulp above 29
    if 0.0 < d.y < L:
        yr = y_ref(d.alpha)
        for y in (d.y, yr, 0.5 * (d.y + yr)):
            assert abs(M.gpu_time(pr, m, d.alpha, y) - tc) <= 1e-9 * max(tc, 1.0)
        assert d.y == pytest.approx(yr, rel=1e-2, abs=1e-5)
    else:
        assert d.y == y_ref(d.alpha)


# ------------------------------------------------------------------ the overlap term (issue 16)

@pytest.mark.parametrize("upload,compute,download,chunks,want", [
    (4.0, 10.0, 4.0, 1, 18.0),   # no overlap: 4 + 10 + 4
    (4.0, 10.0, 4.0, 4, 12.0),   # compute-bound: 1 + max(6, 10) + 1
    (4.0, 1.0, 4.0, 4, 8.0),     # copy-bound: 1 + max(6, 1) + 1, the copies serialise
    (3.0, 6.0, 1.0, 2, 8.0),     # 1.5 + max(2, 6) + 0.5
    (0.0, 5.0, 0.0, 8, 5.0),     # nothing to copy
])
def test_overlapped_device_time_against_hand_computed_values(upload, compute, download, chunks,
                                                             want):
    assert M.overlapped_device_time(upload, compute, download, chunks) == pytest.approx(want)


@given(u=st.floats(0, 10), d=st.floats(0, 10), w=st.floats(0, 10), c=st.integers(1, 32))
def test_overlapped_device_time_is_between_the_slowest_stage_and_no_overlap(u, d, w, c):
    t = M.overlapped_device_time(u, d, w, c)
    assert max(d, u + w) * (1 - 1e-12) - 1e-12 <= t <= (u + d + w) * (1 + 1e-12) + 1e-12


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_overlapped_device_time_rejects_bad_chunks(bad):
    with pytest.raises(ValueError, match=f"chunks = {bad!r}"):
        M.overlapped_device_time(1.0, 1.0, 1.0, bad)


def test_the_plan_prices_the_overlap_and_says_so():
    problem = M.Problem(a=2, b=2, cost="n", n=1 << 22)
    machine = M.Machine(p=4, g=1024, gamma=1 / 50, latency_s=1e-5, seconds_per_byte=1e-9,
                        seconds_per_unit=1e-9)
    one = M.plan(problem, machine, element_bytes=8)
    four = M.plan(problem, machine, element_bytes=8, chunks=4)
    assert four.uses_device and four.transfer_chunks == 4 and one.transfer_chunks == 1
    assert four.predicted_time < one.predicted_time
    assert "transfers overlapped in 4 chunks" in four.reason
    assert "overlapped" not in one.reason
    given = M.given_plan(problem, machine, alpha=0.5, y=3, element_bytes=8, chunks=4)
    sim = M.simulate(problem, machine, alpha=0.5, y=3, element_bytes=8, chunks=4)
    assert given.predicted_time == pytest.approx(sim.total_time)

# ---------------------------------------------------------------------------
# combine rates by size, the device's combine speed, contention by level (issue 14)
# ---------------------------------------------------------------------------


def test_combine_factor_interpolates_in_log_bytes_and_holds_beyond_the_ends():
    m = M.Machine(p=1, g=1, gamma=1.0, combine_factors=((2**22, 1.2), (2**20, 1.0)))
    assert m.combine_factors == ((2**20, 1.0), (2**22, 1.2))      # sorted by bytes
    # 2^21 is halfway in log2: 1.0 + 0.5 * 0.2; 2^20.5 a quarter of the way
    assert M.combine_factor(m, 2**21) == pytest.approx(1.1)
    assert M.combine_factor(m, 2**20.5) == pytest.approx(1.05)
    assert M.combine_factor(m, 1) == 1.0 and M.combine_factor(m, 0) == 1.0
    assert M.combine_factor(m, 2**30) == 1.2
    assert M.combine_factor(M.Machine(p=1, g=1, gamma=1.0), 2**30) == 1.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(combine_factors=((0, 1.0),)), "bytes > 0"),
    (dict(combine_factors=((8, -1.0),)), "factor > 0"),
    (dict(combine_factors=((8, 1.0), (8.0, 2.0))), "one size twice"),
    (dict(combine_factors=(1, 2)), "pairs"),
    (dict(combine_gamma=0.0), "combine_gamma = 0.0"),
])
def test_machine_refuses_bad_combine_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        M.Machine(p=1, g=1, gamma=1.0, **kwargs)


def test_simulate_prices_combines_by_their_size_and_the_device_by_its_combine_speed():
    # SMALL (n = 16), element_bytes 4: level 0's task holds 64 bytes, level 1's 32.
    # factors: 1 at <= 32 bytes, 2 at >= 64.  alpha = 1, y = 0, K = 2, p = 1:
    # level 0: 16 * 2 = 32; level 1: 2 tasks of 8 * 1 = 16; K = 2: 4 subtrees of
    # f(4) + 2 f(2) + 4 leaves = 12 -> 48 (subtrees keep the unit).  Total 96 (80 without).
    m = M.Machine(p=1, g=1, gamma=0.5, combine_factors=((32, 1.0), (64, 2.0)))
    s = M.simulate(SMALL, m, alpha=1.0, y=0, K=2, element_bytes=4)
    assert s.total_time == 96
    assert [lt.seconds for lt in s.level_times] == [32, 16, 48]
    # all on the device, combine speed 1/4, gamma 1/2: (32 + 16) * 4 + 48 * 2 = 288
    d = M.Machine(p=1, g=1, gamma=0.5, combine_factors=((32, 1.0), (64, 2.0)), combine_gamma=0.25)
    s = M.simulate(SMALL, d, alpha=0.0, y=0, K=2, element_bytes=4)
    assert s.total_time == 288 and s.device_work_fraction == 1
    # without the new fields: 004's model, (16 + 16) * 2 + 48 * 2 = 160
    s = M.simulate(SMALL, M.Machine(p=1, g=1, gamma=0.5), alpha=0.0, y=0, K=2, element_bytes=4)
    assert s.total_time == 160


def test_contention_falls_on_the_levels_that_run_while_both_compute():
    # as test_simulate_contention_slows_both_while_they_overlap: the CPU's share (leaf 12,
    # then combine 8) overlaps the device the whole time: 24 + 16 = 40.  The device's leaf
    # (24 units) runs while the CPU computes, until t = 40: 40 s for 20 units, then 4 alone
    # -> 44; its combine (16) runs alone after the CPU's share ended -> 16; 60 in all.
    m = M.Machine(p=2, g=4, gamma=0.5)
    s = M.simulate(SMALL, m, alpha=0.5, y=1, K=2, contention=2.0)
    got = {(lt.level, lt.side): lt.seconds for lt in s.level_times}
    assert got == {(0, "cpu"): 16, (1, "cpu"): 16, (2, "cpu"): 24, (1, "device"): 16,
                   (2, "device"): 44}


def test_contended_levels_by_hand():
    lv = [M.LevelTime(3, "combine", "cpu", 1, 2.0), M.LevelTime(4, "leaf", "cpu", 2, 4.0)]
    # starts at 1, the other side computes in [2, 5], contention 3: the leaf runs alone
    # 1..2 (1 unit), then 3 units of time slowed (1 unit of work), 2 units left alone: 6;
    # the combine runs alone: 2.  Scaled to a total of 16: 12 and 4.
    got = M.contended_levels(lv, 1.0, (2.0, 5.0), 3.0, 16.0)
    assert [(r.level, r.seconds) for r in got] == [(3, 4.0), (4, 12.0)]
    assert M.contended_levels([], 0.0, (0.0, 1.0), 2.0, 0.0) == []


def test_splits_within_the_calibrations_uncertainty_are_a_tie_settled_the_same_way():
    """Issue 14 item 4: across the spread of three calibrations of one machine (γ 0.815-0.835,
    combine γ 0.69-0.75), the model's fastest split flips between (0.5, y = 1) and
    (0.5625, y = 4), predicted within 1 % of each other; with the calibration's uncertainty
    (2 %) the tie is settled for the largest CPU share every time, and reason says so."""
    pr = M.Problem(2, 2, "n", 1 << 22)

    def picks(rel_error):
        out = {}
        for gamma in (0.815, 0.82, 0.825, 0.83, 0.835):
            for cg in (0.69, 0.70, 0.71, 0.75):
                m = M.Machine(p=1, g=1, gamma=gamma, combine_gamma=cg, seconds_per_unit=5e-9)
                pl = M.plan(pr, m, element_bytes=8, contention=1.01, rel_error=rel_error)
                out[(round(pl.split_alpha, 4), pl.transfer_level)] = pl
        return out

    assert len(picks(0.0)) == 2                  # without the uncertainty the plan flips
    settled = picks(0.02)
    assert list(settled) == [(0.5625, 4)]
    reason = settled[(0.5625, 4)].reason
    assert "within the calibration's uncertainty" in reason and "the largest CPU share" in reason
    # a lone fastest split is no tie: nothing is said
    m = M.Machine(p=1, g=1, gamma=0.83, combine_gamma=0.7, seconds_per_unit=5e-9)
    assert "tie" not in M.plan(pr, m, element_bytes=8, contention=1.01, rel_error=1e-6).reason


# ----------------------------------------------------- a GPU's measured occupancy

OCC = ((1, 1.0), (128, 1.0), (1024, 2.0), (4096, 4.0))


def test_without_an_occupancy_table_a_device_level_takes_ceil_tasks_over_g():
    m = M.Machine(p=4, g=100, gamma=0.1)
    assert [m.device_rounds(t) for t in (0, 1, 100, 101, 1000)] == [0.0, 1.0, 1.0, 2.0, 10.0]


def test_an_occupancy_table_is_interpolated_in_log_log_and_saturates_past_its_end():
    m = M.Machine(p=4, g=1024, gamma=0.1, device_occupancy=OCC)
    assert m.device_rounds(1) == 1.0 and m.device_rounds(64) == 1.0
    assert m.device_rounds(1024) == pytest.approx(2.0)
    # halfway between 1024 and 4096 in log2: halfway between 2 and 4 in log2
    assert m.device_rounds(2048) == pytest.approx(2 * math.sqrt(2))
    assert m.device_rounds(8192) == pytest.approx(8.0)      # saturated: proportional
    assert m.device_rounds(3 * 4096) == pytest.approx(12.0)


@given(st.lists(st.tuples(st.integers(1, 10**6), st.floats(0.01, 1e4)), min_size=1,
                max_size=12, unique_by=lambda p: p[0]),
       st.integers(1, 10**7), st.integers(1, 10**7))
def test_an_occupancy_table_never_makes_more_tasks_faster(table, t1, t2):
    m = M.Machine(p=4, g=64, gamma=0.1, device_occupancy=table)
    lo, hi = sorted((t1, t2))
    assert m.device_rounds(lo) <= m.device_rounds(hi) * (1 + 1e-12)


@pytest.mark.parametrize("bad, match", [
    (((0, 1.0),), "tasks >= 1"), (((1, 0.0),), "relative time > 0"),
    (((1, 1.0), (1, 2.0)), "twice"), ((1, 2), "not a sequence")])
def test_a_bad_occupancy_table_is_refused_saying_what_is_expected(bad, match):
    with pytest.raises(ValueError, match=match):
        M.Machine(p=4, g=64, gamma=0.1, device_occupancy=bad)


def test_the_plan_prices_each_piece_of_a_pipelined_level_as_its_own_launch():
    """Level y's device tasks run in ``chunks`` launches one after another when its
    download is pipelined: 8 long merges in 4 launches take 4 merges' time, not 1."""
    prob = M.Problem(a=2, b=2, cost="n", n=2**20)
    m = M.Machine(p=4, g=1024, gamma=0.5, seconds_per_unit=1e-9, latency_s=1e-5,
                  seconds_per_byte=1e-10, device_occupancy=OCC)
    one = M.simulate(prob, m, alpha=0.5, y=4, chunks=1)
    four = M.simulate(prob, m, alpha=0.5, y=4, chunks=4)
    dev1 = [t for t in one.level_times if t.level == 4 and t.side == "device"][0]
    dev4 = [t for t in four.level_times if t.level == 4 and t.side == "device"][0]
    assert dev1.tasks == dev4.tasks == 8
    assert dev4.seconds == pytest.approx(4 * dev1.seconds, rel=0.05)
    assert M._level_rounds(8, m.device_rounds, 4) == 4.0
    assert M._level_rounds(8, 2, 4) == 4.0 and M._level_rounds(8, 2, 1) == 4.0
    assert M._level_rounds(3, 10, 4) == 3.0      # never more pieces than tasks


def test_a_search_that_leaves_the_device_out_runs_the_cpu_alone_plan(monkeypatch):
    """The model gives the device work, but the integer search's best split has no device
    task: the plan is the CPU alone's -- its cut-off too.  It took the search's schedule,
    whose cut-off lay at its level y: the main mergesort's hybrid ran K = 18 (262144 tasks on
    the CPU) where the CPU alone runs K = 4, 1.5x slower."""
    pr, m = PAPER_PROBLEM, PAPER_MACHINE
    assert M.advanced_division(pr, m).uses_device
    alone = M.plan(pr, M.Machine(p=4, g=2**12, gamma=1.0))      # a device that never pays
    deep = M._simulate(pr, m, 2**18, 18, None, 4, 1.0)           # every level-18 task on the CPU
    assert deep.device_tasks == 0 and deep.K != alone.cutoff_level
    monkeypatch.setattr(M, "best_split", lambda *a, **k: M.SplitSearch(deep, ()))
    plan = M.plan(pr, m)
    assert "no integer split beats the CPU alone" in plan.reason
    assert plan.transfer_level is None and plan.split_alpha == 1.0
    assert plan.cutoff_level == M._simulate(pr, m, 1, 0, None, 4, 1.0).K
    assert plan.predicted_time == plan.cpu_only_time
