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


def point_medians(samples, what: str = "times") -> np.ndarray:
    """One value per point: a number stays, a sequence of repeats becomes its median.

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
        out.append(float(np.median(reps)))
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
    overestimates mid-sized copies rather than underestimating large ones.  Repeats are reduced to medians first; a whole spoiled size
    among the large ones moves δ only when it is a third of them or more.
    """
    if not (0 < large_fraction <= 1):
        raise ValueError(f"large_fraction={large_fraction!r}; expected a fraction in (0, 1]")
    x = _as_float_array(xs, "xs")
    y = point_medians(ys, "ys")
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
