"""Robust statistics for calibration: the knee of a sweep, a ratio, a line.

Why a module of its own, with pure functions only: timings on a shared machine
are noisy and now and then wildly wrong (a page fault, another process, the
OpenCL runtime compiling behind our back make one run ten times slower).
StarPU's users lose whole runs to performance models corrupted by such spikes.
Every estimate hpu stores therefore goes through the three estimators here,
each built so that a few spikes cannot move it, and each testable on synthetic
curves without any device.

Spikes in timings are one-sided: interference makes a run slower, never ten
times faster.  The estimators lean on that and on noise being proportional
to the time: medians for repeats, a cap at the neighbours for an isolated bad
point, minima where a floor is wanted, median slopes that a minority of bad
points cannot move, and weights that follow the time (noise is relative).

- :func:`find_knee`: where a time-vs-parallelism curve stops improving (g).
- :func:`ratio_estimate`: the median of per-size time ratios (γ).
- :func:`fit_transfer`: copy time = λ + δ·bytes, δ from the large copies.
- :func:`group_samples`: raw ``(x, seconds)`` pairs -> sorted xs and the
  repeats of each, the form the profile stores them in.

Repeatability (issue 14): three quick calibrations of one machine once gave
γ from 0.95 to 1.16 and three different plans.  Two tools make a measurement
repeat: *more samples where the spread demands* (:func:`adaptive_samples`
keeps timing until the median's relative standard error, from the MAD, is
below a target or a cap is reached) and *pairing* (:func:`paired_ratio` times
the two sides of a ratio alternately and takes the median of the per-pair
ratios, so that another process slowing the machine for a second slows both
sides of a pair and cancels out).  Each returns an :class:`Estimate` carrying
its relative standard error, which the profile stores as its confidence and
:func:`within_noise` turns into "these two predictions are indistinguishable".

Pairing alone did not make γ repeat on a shared VM: each of its two cores
switches between a fast and a ~20 % slower state for a few hundred
milliseconds at a time (another tenant on the host, invisible in
``/proc/stat``), and the two sides of γ run on different cores.  A ratio
measured within 30 ms is then one sample of that state however many pairs it
takes: three quick calibrations read γ 1.34, 1.02, 1.12, each "± 0.5 %".
:func:`interleaved_ratios` spreads the pairs of every size over a fixed time in
rounds, takes each side's lower quartile over all of them (the fast state, the
machine's own speed) and sizes the error from chronological blocks of rounds,
so that a drift the pairs could not see shows in the error: nine such
measurements (2 s, three processes) read 0.98-1.04.

Pairing fails for a ratio whose two sides run different numbers of threads
(the contention: both sides at once against each alone), because other
processes take more from more threads.  :func:`quiet_rounds` keeps the rounds
that other processes left alone (their load read by :mod:`hpu._load`); the
estimate says how it was made and under what load (``Estimate.basis``,
``Estimate.outside_load``).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Knee",
    "Ratio",
    "Line",
    "group_samples",
    "point_medians",
    "despike",
    "relative_noise",
    "find_knee",
    "ratio_estimate",
    "fit_transfer",
    "weighted_median",
    "Estimate",
    "median_rel_error",
    "adaptive_samples",
    "paired_ratio",
    "interleaved_ratios",
    "combine_estimates",
    "within_noise",
    "low_quantile",
    "LOW_QUANTILE",
    "trend_at",
    "QUIET_LOAD",
    "quiet_rounds",
]


@dataclass(frozen=True)
class Knee:
    """The knee of a sweep: the first ``x`` whose time is within ``tolerance`` of the best later time."""

    x: float            # the knee's abscissa (for g: a work-item count)
    index: int          # its position in the sorted sweep
    time: float         # the smoothed time there
    floor: float        # the minimum smoothed time at or after it
    tolerance: float    # the relative tolerance used (widened when the repeats are noisier)


@dataclass(frozen=True)
class Ratio:
    """A ratio estimated as the median of per-point ratios."""

    value: float                 # the median ratio
    low: float                   # the smallest per-point ratio
    high: float                  # the largest per-point ratio
    ratios: tuple[float, ...]    # one per point, in input order


@dataclass(frozen=True)
class Line:
    """``y = intercept + slope * x``."""

    intercept: float
    slope: float

    def __call__(self, x):
        return self.intercept + self.slope * np.asarray(x, dtype=float)


def _as_float_array(values, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a 1-D sequence of numbers, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = arr[~np.isfinite(arr)][0]
        raise ValueError(f"{what} must be finite numbers, got {bad!r}")
    return arr


def point_medians(samples, what: str = "times", *, q: float = 0.5) -> np.ndarray:
    """One value per point: a number stays, a sequence of repeats becomes its median
    (its ``q``-quantile: ``q = LOW_QUANTILE`` for :func:`low_quantile`'s reading).

    Raises ``ValueError`` naming the point when a repeat list is empty or holds
    a negative or non-finite time.
    """
    out = []
    for i, s in enumerate(samples):
        if isinstance(s, (int, float, np.integer, np.floating)):
            reps = np.asarray([s], dtype=float)
        else:
            reps = np.asarray(list(s), dtype=float)
            if reps.size == 0:
                raise ValueError(f"{what}[{i}] has no repeats; expected at least one time")
        if not np.all(np.isfinite(reps)) or np.any(reps < 0):
            raise ValueError(
                f"{what}[{i}] holds {reps.tolist()!r}; expected finite times >= 0 seconds")
        out.append(float(np.median(reps)) if q == 0.5 else float(np.quantile(reps, q)))
    return np.asarray(out, dtype=float)


def group_samples(pairs: Iterable[Sequence[float]]) -> tuple[list[float], list[list[float]]]:
    """``[(x, seconds), ...]`` -> ``(xs ascending, [[seconds of each repeat at x], ...])``."""
    groups: dict[float, list[float]] = {}
    for k, pair in enumerate(pairs):
        if len(pair) != 2:
            raise ValueError(f"sample {k} is {pair!r}; expected an (x, seconds) pair")
        x, t = pair
        groups.setdefault(x, []).append(float(t))
    xs = sorted(groups)
    return xs, [groups[x] for x in xs]


def despike(values) -> np.ndarray:
    """Cap every interior point at the larger of its two neighbours; keep the ends.

    This removes an isolated upward spike (one slow point between two good
    ones) and changes nothing else: a monotone sequence comes back unchanged,
    so a clean knee is not moved, and a genuine dip (a minimum) is kept.  A
    plain running median would also remove the spike but would raise a knee
    whose right-hand neighbour is spiked.  Only upward spikes are repaired
    because timings only spike upward.  The ends are kept: a spike at the first
    point can only hide a knee there, and one at the last point cannot lower
    any later minimum.
    """
    v = np.asarray(values, dtype=float)
    out = v.copy()
    if v.size >= 3:
        out[1:-1] = np.minimum(v[1:-1], np.maximum(v[:-2], v[2:]))
    return out


def relative_noise(samples) -> float:
    """Typical relative standard error of a per-point median, from the repeats' spread.

    For each point with at least three repeats: 1.4826·MAD/median (a robust
    standard deviation; two spiked repeats out of five do not inflate it),
    times 1.2533/√repeats (the standard error of a median); the median of
    those over points.  0.0 when no point has three repeats.
    """
    errs = []
    for s in samples:
        if isinstance(s, (int, float, np.integer, np.floating)):
            continue
        r = np.asarray(list(s), dtype=float)
        if r.size < 3:
            continue
        med = float(np.median(r))
        if med <= 0:
            continue
        mad = float(np.median(np.abs(r - med)))
        errs.append(1.4826 * mad / med * 1.2533 / math.sqrt(r.size))
    return float(np.median(errs)) if errs else 0.0


def find_knee(xs, times, *, tolerance: float = 0.10) -> Knee:
    """The smallest ``x`` whose time is within ``tolerance`` of the minimum of all later times.

    ``xs`` are the swept values (e.g. work-item counts), strictly increasing;
    ``times[i]`` is one time or a sequence of repeated times at ``xs[i]``.
    Repeats are reduced to their median, isolated spikes removed by
    :func:`despike`, and then the rule of 004 §6.4 ("the value after which no
    improvement in performance was detected") is applied with a relative
    tolerance, so that noise on a flat tail does not push the knee to the end.
    When the repeats show more noise than ``tolerance`` can absorb, the
    tolerance used is widened to five standard errors of a median
    (:func:`relative_noise`): a difference within the noise is no improvement.
    The tolerance actually used is returned in the result.
    """
    if not (0 <= tolerance < 1):
        raise ValueError(f"tolerance={tolerance!r}; expected a fraction in [0, 1), e.g. 0.10")
    x = _as_float_array(xs, "xs")
    if x.size == 0:
        raise ValueError("xs is empty; expected at least one swept value")
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"xs must be strictly increasing, got {x.tolist()!r}; sort the sweep first")
    t = point_medians(times)
    if t.size != x.size:
        raise ValueError(f"xs has {x.size} values but times has {t.size}; expected one time (or repeats) per x")
    tol = max(float(tolerance), 5.0 * relative_noise(times))
    s = despike(t)
    later_min = np.minimum.accumulate(s[::-1])[::-1]
    ok = s <= (1.0 + tol) * later_min
    i = int(np.argmax(ok))        # the last point always qualifies
    return Knee(x=float(x[i]), index=i, time=float(s[i]), floor=float(later_min[i]), tolerance=tol)


def ratio_estimate(numerators, denominators) -> Ratio:
    """Median over points of ``numerator / denominator`` (each a time or repeated times).

    Used for γ = CPU time / device time of the same one-task merge: the ratio
    is meant to be constant across sizes (004 Figure 6), so the median of the
    per-size ratios is its robust estimate; a size spoiled by a spike on either
    side is simply outvoted.
    """
    num = point_medians(numerators, "numerators")
    den = point_medians(denominators, "denominators")
    if num.size == 0:
        raise ValueError("no points; expected at least one (numerator, denominator) pair")
    if num.size != den.size:
        raise ValueError(
            f"numerators has {num.size} points but denominators has {den.size}; expected equal lengths")
    if np.any(den <= 0):
        i = int(np.argmax(den <= 0))
        raise ValueError(f"denominators[{i}] is {den[i]!r}; expected a time > 0 seconds")
    r = num / den
    return Ratio(value=float(np.median(r)), low=float(r.min()), high=float(r.max()),
                 ratios=tuple(float(v) for v in r))


def weighted_median(values, weights) -> float:
    """The weighted median: the smallest value whose cumulative weight reaches half the total."""
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    if v.size == 0 or v.size != w.size:
        raise ValueError(f"values ({v.size}) and weights ({w.size}) must be non-empty and equally long")
    if np.any(w < 0) or not np.all(np.isfinite(w)) or w.sum() <= 0:
        raise ValueError("weights must be finite, >= 0 and not all zero")
    order = np.argsort(v, kind="stable")
    cw = np.cumsum(w[order])
    half = 0.5 * cw[-1]
    k = int(np.searchsorted(cw, half))
    if math.isclose(cw[k], half, rel_tol=1e-12) and k + 1 < v.size:
        return float(0.5 * (v[order][k] + v[order][k + 1]))
    return float(v[order][k])


def fit_transfer(xs, ys, *, large_fraction: float = 0.25) -> Line:
    """Copy time = λ + δ·bytes: δ from the largest copies, λ from the smallest.

    Copy times are not a straight line over five decades of sizes: copies
    that fit in a cache run at several times the bandwidth of those that do
    not (PoCL here: 43 GB/s up to a few MiB, 20 GB/s at 64 MiB).  A single
    robust line follows the many small copies and prices a large transfer at
    half its time.  hpu moves megabytes, so:

    - δ (``slope``) is the Theil–Sen slope (median of pairwise slopes) of the
      largest ``large_fraction`` of the sizes, at least three (all when fewer);
    - λ (``intercept``) is the weighted median of ``y - δ·x`` over all sizes
      with weights ``1/y²``, so the shortest copies, where latency is all
      there is, decide it.

    On a straight line with noise this recovers the line; on a bent one it
    overestimates mid-sized copies rather than underestimating large ones.
    Repeats are reduced to their lower quartiles first (:data:`LOW_QUANTILE`:
    other processes only ever add time, and a loaded machine's medians made δ
    vary 3x between quick calibrations); a whole spoiled size among the large
    ones moves δ only when it is a third of them or more.
    """
    if not (0 < large_fraction <= 1):
        raise ValueError(f"large_fraction={large_fraction!r}; expected a fraction in (0, 1]")
    x = _as_float_array(xs, "xs")
    y = point_medians(ys, "ys", q=LOW_QUANTILE)
    if x.size != y.size:
        raise ValueError(f"xs has {x.size} values but ys has {y.size}; expected one y (or repeats) per x")
    if x.size < 2 or np.unique(x).size < 2:
        raise ValueError(f"need at least two distinct xs to fit a line, got {x.tolist()!r}")
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    k = min(x.size, max(3, math.ceil(large_fraction * x.size)))
    xl, yl = x[-k:], y[-k:]
    i, j = np.triu_indices(k, k=1)
    dx = xl[j] - xl[i]
    keep = dx != 0
    if not np.any(keep):
        # all the large copies have one size: the secant from the smallest copy
        slope = float((np.median(yl) - y[0]) / (xl[-1] - x[0]))
    else:
        slope = float(np.median((yl[j] - yl[i])[keep] / dx[keep]))
    floor = max(float(np.max(y)) * 1e-9, 1e-300)
    scale = np.maximum(y, floor)
    intercept = weighted_median(y - slope * x, (scale.min() / scale) ** 2)
    return Line(intercept=float(intercept), slope=slope)


# ------------------------------------------------------------------ repeatability

#: 1.4826·MAD estimates a normal standard deviation; 1.2533/√n turns it into the
#: standard error of a median of n samples.
_MAD_TO_SD = 1.4826
_MEDIAN_SE = 1.2533


@dataclass(frozen=True)
class Estimate:
    """A robust estimate: ``value`` (a median) and its relative standard error.

    ``rel_error`` is 1.4826·MAD/median·1.2533/√samples: what the median would
    move by, relative to itself, between two runs of the same measurement
    (one standard error; two runs agree within about 2.8× that 95 % of the time).
    """

    value: float
    rel_error: float
    samples: int
    #: the share of the machine's cores other processes used while it was measured
    #: (:mod:`hpu._load`; 0.0: not recorded)
    outside_load: float = 0.0
    #: how the value was obtained, where there is a choice (e.g. the contention's
    #: "quiet rounds" or "waits removed"); "" otherwise
    basis: str = ""


#: The quantile that stands for "the time of a run nothing disturbed" (see :func:`low_quantile`).
LOW_QUANTILE = 0.25


def low_quantile(values, q: float = LOW_QUANTILE) -> float:
    """The lower quartile of repeated times: the robust estimate of an undisturbed run.

    Interference only ever adds time, so on a loaded machine the median of
    short runs drifts up with the load while their lower quartile stays near
    the undisturbed time; unlike the minimum, one lucky run does not decide it.
    """
    r = np.asarray(list(values), dtype=float)
    if r.size == 0:
        raise ValueError("no values; expected at least one time")
    return float(np.quantile(r, q))


def median_rel_error(values) -> float:
    """Relative standard error of the median of ``values``.

    0.0 for a median <= 0, for one value, or for two equal ones; ``inf`` for
    two that differ (a spread, but too few values to size it).
    """
    r = np.asarray(list(values), dtype=float)
    if r.size < 3:
        # too few to estimate a spread: unknown (inf) if they differ, none if they agree
        return math.inf if r.size == 2 and r[0] != r[1] else 0.0
    med = float(np.median(r))
    if med <= 0:
        return 0.0
    mad = float(np.median(np.abs(r - med)))
    return _MAD_TO_SD * mad / med * _MEDIAN_SE / math.sqrt(r.size)


def _check_budget(min_samples: int, max_samples: int, target: float) -> None:
    if not (isinstance(min_samples, int) and min_samples >= 1):
        raise ValueError(f"min_samples={min_samples!r}; expected an integer >= 1")
    if not (isinstance(max_samples, int) and max_samples >= min_samples):
        raise ValueError(f"max_samples={max_samples!r}; expected an integer >= min_samples "
                         f"({min_samples})")
    if not (0 < target < 1):
        raise ValueError(f"target={target!r}; expected a relative error in (0, 1), e.g. 0.02")


def adaptive_samples(run, *, min_samples: int, max_samples: int, target: float) -> list[float]:
    """Call ``run()`` (returning seconds) ``min_samples`` times, then more while noisy.

    More samples are taken, in batches of half those already taken, while the
    median's relative standard error (:func:`median_rel_error`) exceeds
    ``target`` and fewer than ``max_samples`` were taken.  A quiet measurement
    costs ``min_samples`` runs; a noisy one buys the repeats its spread needs,
    up to the cap.  No warm-up here: the caller throws its first run away.
    """
    _check_budget(min_samples, max_samples, target)
    out = [float(run()) for _ in range(min_samples)]
    while len(out) < max_samples and median_rel_error(out) > target:
        more = min(max_samples - len(out), max(1, len(out) // 2))
        out.extend(float(run()) for _ in range(more))
    return out


def _no_context(k: int):
    """The ``around`` of a measurement that wraps its rounds in nothing."""
    import contextlib

    return contextlib.nullcontext()


def _timed_pair(numerator, denominator, *, flip: bool) -> tuple[float, float]:
    """``(numerator(), denominator())`` seconds, run in that order or, with ``flip``, the
    other way round (so that neither side always runs second, e.g. with warmer caches)."""
    if flip:
        d_, n_ = float(denominator()), float(numerator())
    else:
        n_, d_ = float(numerator()), float(denominator())
    if d_ <= 0:
        raise ValueError(f"the denominator's run took {d_!r} seconds; expected a time > 0")
    return n_, d_


def paired_ratio(numerator, denominator, *, min_pairs: int, max_pairs: int,
                 target: float, around=None) -> tuple[Estimate, list[float], list[float]]:
    """The ratio ``numerator() / denominator()`` of two timed runs, measured in pairs.

    Each pair runs both sides back to back, in alternating order (num, den;
    den, num; ...) so that neither side always runs second, e.g. with warmer
    caches; its ratio is one sample.  Pairs are added as in
    :func:`adaptive_samples` while the median ratio's relative standard error
    exceeds ``target``.  Returns ``(Estimate of the ratio, numerator times,
    denominator times)``.  The estimate's value is the ratio of the two sides'
    lower quartiles (:func:`low_quantile`: interference only adds time), its
    error that of the median pair ratio, which sees the interference too and
    so errs towards caution.  ``around``: None, or ``around(k)`` giving the
    context manager that pair ``k`` runs in (as in :func:`interleaved_ratios`).
    """
    _check_budget(min_pairs, max_pairs, target)
    around = _no_context if around is None else around
    nums: list[float] = []
    dens: list[float] = []
    ratios: list[float] = []

    def one_pair():
        with around(len(ratios)):
            n_, d_ = _timed_pair(numerator, denominator, flip=len(ratios) % 2 == 1)
        nums.append(n_)
        dens.append(d_)
        ratios.append(n_ / d_)

    for _ in range(min_pairs):
        one_pair()
    while len(ratios) < max_pairs and median_rel_error(ratios) > target:
        for _ in range(min(max_pairs - len(ratios), max(1, len(ratios) // 2))):
            one_pair()
    value = low_quantile(nums) / low_quantile(dens)
    return Estimate(float(value), median_rel_error(ratios), len(ratios)), nums, dens


def interleaved_ratios(pairs, *, min_rounds: int, min_seconds: float = 0.0,
                       max_rounds: int | None = None, blocks: int = 5,
                       clock=None, around=None) -> list[tuple[Estimate, list[float], list[float]]]:
    """Several ratios ``numerator() / denominator()``, measured in rounds spread over time.

    ``pairs``: ``(numerator, denominator)`` callables returning seconds, e.g.
    one per size.  A round runs every pair once, each in the order num, den
    or den, num by the round's parity.  Rounds continue until ``min_rounds``
    ran and ``min_seconds`` passed on ``clock`` (default
    :func:`time.monotonic`), or ``max_rounds`` ran (default: unlimited once
    ``min_seconds`` has passed).  Per pair: the value is the ratio of the
    sides' lower quartiles over all rounds (:func:`low_quantile`); the error
    is that of the mean of the same ratio over ``blocks`` chronological blocks
    of rounds (std / √blocks), which sees a drift slower than one pair, or,
    with fewer than 6 rounds, the median pair ratio's (:func:`median_rel_error`).
    ``around``: None, or ``around(k)`` giving the context manager that round
    ``k`` runs in (e.g. :func:`hpu._affinity.rotating`: every thread on one core).
    Returns per pair ``(Estimate, numerator times, denominator times)``.
    """
    import time

    pairs = list(pairs)
    if not pairs:
        raise ValueError("no pairs to measure; expected at least one (numerator, denominator)")
    if not (isinstance(min_rounds, int) and min_rounds >= 1):
        raise ValueError(f"min_rounds={min_rounds!r}; expected an integer >= 1")
    if not min_seconds >= 0:
        raise ValueError(f"min_seconds={min_seconds!r}; expected seconds >= 0")
    if max_rounds is not None and not (isinstance(max_rounds, int) and max_rounds >= min_rounds):
        raise ValueError(f"max_rounds={max_rounds!r}; expected None or an integer >= min_rounds "
                         f"({min_rounds})")
    clock = time.monotonic if clock is None else clock
    around = _no_context if around is None else around
    nums: list[list[float]] = [[] for _ in pairs]
    dens: list[list[float]] = [[] for _ in pairs]
    start = clock()
    rounds = 0
    while rounds < min_rounds or (clock() - start < min_seconds
                                  and (max_rounds is None or rounds < max_rounds)):
        with around(rounds):
            for i, (num, den) in enumerate(pairs):
                n_, d_ = _timed_pair(num, den, flip=rounds % 2 == 1)
                nums[i].append(n_)
                dens[i].append(d_)
        rounds += 1
    out = []
    for ns, ds in zip(nums, dens):
        value = low_quantile(ns) / low_quantile(ds)
        b = min(blocks, rounds // 2)
        if b >= 3:
            parts = np.array_split(np.arange(rounds), b)
            ratios = [low_quantile([ns[k] for k in part]) / low_quantile([ds[k] for k in part])
                      for part in parts]
            err = float(np.std(ratios, ddof=1)) / math.sqrt(b) / value if value > 0 else math.inf
        else:
            err = median_rel_error([n_ / d_ for n_, d_ in zip(ns, ds)])
        out.append((Estimate(float(value), err, rounds), ns, ds))
    return out


#: The smallest relative error :func:`combine_estimates` believes (a floor for its weights).
MIN_REL_ERROR = 0.005


def combine_estimates(estimates) -> Estimate:
    """One estimate from several of the same quantity (e.g. γ at several sizes).

    The value is the weighted median of the values, each weighted by the
    inverse square of its relative error (floored at :data:`MIN_REL_ERROR`):
    a size that a burst of load left noisy has little say, where a plain
    median lets it tip the result whenever it lands in the middle (γ at
    2^16 keys ranged 0.64-0.96 on a loaded machine while its neighbours
    held within 3 %).  The error is the inverse-variance pooled one,
    1/√(Σ 1/e²): the repeatability of the combined value.
    """
    est = list(estimates)
    if not est:
        raise ValueError("no estimates to combine; expected at least one")
    values = [e.value for e in est]
    errs = [max(MIN_REL_ERROR, e.rel_error if math.isfinite(e.rel_error) else 1.0) for e in est]
    weights = [1.0 / (e * e) for e in errs]
    pooled = 1.0 / math.sqrt(sum(weights))
    if all(e.rel_error == 0 for e in est):
        pooled = 0.0
    return Estimate(weighted_median(values, weights), pooled, sum(e.samples for e in est))


def trend_at(xs, estimates, x0: float) -> Estimate:
    """The value at ``x0`` of the straight line through ``(log2 x, value)``, weighted.

    For a quantity that drifts with size, such as γ (here 0.89 at 2^12 keys,
    0.79 at 2^14 and 2^18: the device suffers more from cache misses than the
    CPU), any one size, or a median that picks whichever size was least
    noisy this time, jumps between runs; the line through all of them,
    evaluated at a fixed ``x0``, does not.  Weights are ``1/(error·value)²``
    (errors floored at :data:`MIN_REL_ERROR`), so a size left noisy by a
    burst of load barely pulls the line.  The returned relative error is the
    standard error of the line at ``x0`` (inverse-variance weights).  One
    size: its estimate; two: the line through both.
    """
    est = list(estimates)
    x = np.log2(_as_float_array(xs, "xs"))
    if x.size != len(est) or x.size == 0:
        raise ValueError(f"xs has {x.size} values for {len(est)} estimates; expected one x per "
                         "estimate and at least one")
    if x.size == 1 or np.ptp(x) == 0:
        return combine_estimates(est)
    v = np.asarray([e.value for e in est], dtype=float)
    err = np.asarray([max(MIN_REL_ERROR, e.rel_error if math.isfinite(e.rel_error) else 1.0)
                      for e in est])
    w = 1.0 / (err * np.maximum(np.abs(v), 1e-300)) ** 2
    xm = float(np.sum(w * x) / np.sum(w))
    sxx = float(np.sum(w * (x - xm) ** 2))
    slope = float(np.sum(w * (x - xm) * (v - np.sum(w * v) / np.sum(w))) / sxx) if sxx > 0 else 0.0
    at = math.log2(x0)
    value = float(np.sum(w * v) / np.sum(w) + slope * (at - xm))
    var = 1.0 / float(np.sum(w)) + ((at - xm) ** 2 / sxx if sxx > 0 else 0.0)
    rel = math.sqrt(var) / abs(value) if value != 0 else math.inf
    if all(e.rel_error == 0 for e in est):
        rel = 0.0
    return Estimate(value, rel, sum(e.samples for e in est))


def within_noise(a: float, b: float, rel_error: float, *, sigmas: float = 2.0) -> bool:
    """True when ``a`` and ``b`` differ by less than ``sigmas`` combined standard errors.

    ``rel_error`` is the relative standard error of each (e.g. of γ, which
    every predicted time scales with); two predictions that close cannot be
    told apart by the measurement, and a planner should choose between them by
    a fixed rule rather than by the noise.
    """
    if rel_error < 0 or not math.isfinite(rel_error):
        raise ValueError(f"rel_error={rel_error!r}; expected a finite number >= 0")
    scale = max(abs(a), abs(b))
    if scale == 0:
        return True
    return abs(a - b) <= sigmas * math.sqrt(2.0) * rel_error * scale


# ------------------------------------------------------------------ outside load

#: The share of the machine's cores other processes may use during a round that still
#: counts as quiet: a clock tick's worth of noise on a round of a tenth of a second on two
#: cores, well below the 0.5 of one other busy process there.
QUIET_LOAD = 0.15


def quiet_rounds(loads, *, quiet: float = QUIET_LOAD, min_keep: int = 3) -> list[int] | None:
    """The indices of the rounds measured on a quiet machine, or None when too few were.

    ``loads[i]`` is the share of the machine other processes used during round
    ``i`` (:func:`hpu._load.outside_share`; ``nan``, unknown, counts as quiet).
    A round run beside another process is not slowed at random but by that
    process, and the more threads it runs the more it loses (the kernel shares
    the cores per thread), so its ratios are biased, not just noisy: such
    rounds are dropped rather than down-weighted.  When fewer than
    ``min_keep`` rounds are quiet the caller has to do something else (wait
    for more rounds, or use a measure the load cannot bias): None.
    """
    if not (0 <= quiet <= 1):
        raise ValueError(f"quiet={quiet!r}; expected a share of the machine in [0, 1], e.g. 0.15")
    if not (isinstance(min_keep, int) and min_keep >= 1):
        raise ValueError(f"min_keep={min_keep!r}; expected an integer >= 1")
    keep = [i for i, x in enumerate(loads) if not (float(x) > quiet)]   # nan: not > quiet
    return keep if len(keep) >= min_keep else None
