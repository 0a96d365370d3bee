"""The HPU model of 004: how a divide-and-conquer tree splits between CPU and device.

Why this module exists
======================

A recursive function ``T(n) = a·T(n/b) + f(n)`` unrolls into a tree whose level
``i`` holds ``a**i`` independent tasks of size ``n / b**i``.  The *Hybrid
Processing Unit* (004 §3.2) is a CPU with ``p`` cores of speed 1 and a device
with ``g`` cores of speed ``γ`` (one device core does ``γ`` units of f-work in
the time a CPU core does one).  Given those five numbers the model says which
levels, and which share of each level, should run where.  Everything hpu does at
run time is decided here first, so this module is pure: numbers in, frozen
dataclasses out, no I/O, no OpenCL, no Numba, and it imports quickly.  Its one
root and one maximum (:func:`_root`, :func:`_golden_max`) are solved here rather
than with ``scipy.optimize``, whose import alone took 0.33-0.39 s on the 2-core
VM: half of a new process's first default call (issue 13); the tests check both
against SciPy's ``brentq`` and ``minimize_scalar``.

What is in it
-------------

* :func:`basic_division` (004 §5.1): whole levels go to the faster unit; the
  device takes every level from ``log_a(p/γ)`` down, with one transfer.
* :func:`advanced_division` (004 §5.2): below level ``y`` a fraction ``α`` of
  the tasks stays on the CPU and the rest runs on the device *at the same
  time*; ``y(α)`` makes both finish together (``T_g = T_c``) and
  ``α* = argmax W_g(α)`` maximises the device's work.  The paper's quantities
  are public functions: :func:`cpu_time` (``T_c``), :func:`gpu_saturated_time`
  (``T_g^max``), :func:`gpu_time` (``T_g`` in its three cases),
  :func:`gpu_level` (``y(α)``), :func:`gpu_work` (``W_g``).
* :func:`simulate` and :func:`best_split`: the continuous ``α*``, ``y`` are what
  the paper reports, but a run splits a whole number of tasks at a whole level
  and pays for transfers (``λ + δ·bytes``, 000) that 004 leaves out.  The
  simulator predicts the time of each phase of such a concrete split, and
  :func:`best_split` picks the best integer ``(α, y)`` by it.  This is what the
  runtime uses.
* :func:`plan` bundles the two for ``hpu plan`` and the decorator's ``.plan``.

Level sums with real bounds
---------------------------

The model's sums run over levels ``i`` from bounds such as ``log_a(p/α)``
that are rarely integers, and ``y`` is found by root finding, so the sums must
be continuous in their bounds.  For the accepted costs
``f(m) = m**k · (log2 m)**j`` the level terms are ``h(i) = C · r**i · P(i)``
with ``P`` a polynomial of degree ``j`` (``r = a/b**k`` for the work
``a**i f(n/b**i)``, ``r = b**-k`` for the one-task time ``f(n/b**i)``).  Such
a term has an exact *anti-difference*: ``G(x) = C · Q(x) · r**x`` with
``G(x) − G(x+1) = h(x)`` for every real ``x``.  We define
``Σ_{i=lo}^{hi−1} h(i) := G(lo) − G(hi)``.  At integer bounds this is the
ordinary sum; between them it is the smooth (analytic) continuation that the
paper's own closed forms use (e.g. ``Σ_{i=y}^{L−1} n/2**i = 2n·2**-y − 2``), so
the general sums agree with §5.2.2's closed forms for *every* real ``y``, not
only at integers.  ``log`` in ``n log n`` is base 2; a leaf costs 1 unit.

The schedule simulator
----------------------

The paper's model is continuous: a level of ``m ≥ p`` tasks costs ``m/p``
task-times.  The simulator counts whole tasks: ``m`` equal tasks on ``w``
parallel units take ``⌈m/w⌉`` task-times (exact for equal tasks under any
greedy scheduler), which matters at the top of the tree and for small shares.
On a GPU whose calibration measured it, a device level of ``m`` tasks takes
the measured ``device_rounds(m)`` task-times instead (``Machine.device_occupancy``:
a GPU runs one long serial task per compute unit at full speed, more of them
share a unit, and its throughput levels off far below ``g`` work-items at γ each).
Each share expands to a cut-off level ``K`` whose tasks solve their subtrees
(DESIGN §3); by default ``K`` is the first level where every non-empty share
has 16 tasks per core, so that whole-task rounding costs at most a few
percent.  ``contention ≥ 1`` slows both units while both compute (a device
that shares the CPU's cores, such as PoCL); per level it falls on the levels
that run meanwhile (:func:`contended_levels`).

Combines are priced apart from subtrees.  The unit (``seconds_per_unit``) and
``γ`` are measured on whole one-task sorts of cache-sized inputs, which is
what a task at ``K`` runs; the combines above ``K`` are few tasks over
megabytes.  Measured on mergesort at 2^22 keys (issue 14), the merges above
the split ran 15-30 % slower per element than the unit on the CPU, and the
device's 40 % slower than ``γ`` said.  So a combine task that touches ``B``
bytes costs ``f(m)·combine_factor(B)`` units on a CPU core
(:func:`combine_factor`: measured factors by size, interpolated in
``log2 B``) and that over ``combine_gamma`` on a device core.  Without them
(``Machine()``'s defaults) the simulator is 004's.

Units
-----

Times are in *model units* (one unit of f-work on one CPU core), as in the
paper, unless ``Machine.seconds_per_unit`` is given; then every time is in
seconds (``time_unit`` on each result says which).  Transfer costs are in
seconds, so a machine with transfer costs needs ``seconds_per_unit``.

Departures from the printed paper
---------------------------------

* §5.2.2 prints ``α`` for ``a`` in the closed forms of cases (i) and (iii)
  (see ``seeds/README.md``); :func:`paper_closed_forms` uses the corrected
  reading and exists to check the general sums.
* The paper bounds ``α ≥ p/n`` so that the CPU starts with at least ``p``
  tasks at the bottom level.  The bottom level has ``a**L = n**log_b(a)``
  tasks, so for general ``a, b`` the bound is ``α ≥ p / n**log_b(a)``; it is
  ``p/n`` when ``a = b``.
* When ``γ·g ≤ p`` (the device is not faster than the CPU in total, against
  the paper's assumption) or the tree has fewer than ``p`` leaves, everything
  stays on the CPU and the result says why in ``reason``.  ``γ ≥ 1`` (a device
  core faster than a CPU core) is allowed; the formulas need no change.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from numbers import Integral, Real

import numpy as np

__all__ = [
    "Cost",
    "parse_cost",
    "Problem",
    "Machine",
    "combine_factor",
    "level_work",
    "level_span",
    "total_work",
    "LevelTimes",
    "BasicDivision",
    "basic_division",
    "cpu_time",
    "gpu_saturated_time",
    "gpu_time",
    "gpu_level",
    "gpu_case",
    "gpu_work",
    "alpha_bounds",
    "AdvancedDivision",
    "advanced_division",
    "ClosedForms",
    "paper_closed_forms",
    "Phase",
    "Schedule",
    "cutoff_level",
    "tasks_on_cpu",
    "CPU_TASKS_PER_CORE",
    "DEVICE_TASKS_PER_CORE",
    "MAX_LEVEL_TASKS",
    "simulate",
    "TRANSFER_CHUNKS",
    "copy_chunks",
    "overlapped_device_time",
    "contended_levels",
    "SplitCandidate",
    "SplitSearch",
    "best_split",
    "LevelShare",
    "Plan",
    "plan",
    "given_plan",
    "STRATEGIES",
    "ACCEPTED_COSTS",
]

#: Strategies :func:`plan` accepts.
STRATEGIES = ("advanced", "basic")

#: The spellings of ``f(n)`` that :func:`parse_cost` understands, for messages.
ACCEPTED_COSTS = ("'1', 'n', 'log n', 'n log n' (or 'nlogn'), 'n^k' or 'n**k' with k a number, "
                  "'n^k log n'")


# ---------------------------------------------------------------------------
# the cost f(n)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    """The divide-and-combine cost ``f(m) = m**exponent · (log2 m)**log_power``.

    Call it on a size (a float or a NumPy array) to get the work in units.
    ``text`` is the canonical spelling (``"n"``, ``"n log n"``, ``"n^2"``, ``"1"``).
    """

    text: str
    exponent: float
    log_power: int = 0

    def __call__(self, m):
        m = np.asarray(m, dtype=float)
        out = m ** self.exponent
        if self.log_power:
            out = out * np.log2(m) ** self.log_power
        return float(out) if out.ndim == 0 else out


def _canonical_cost_text(exponent: float, log_power: int) -> str:
    if exponent == 0:
        base = ""
    elif exponent == 1:
        base = "n"
    else:
        k = int(exponent) if float(exponent).is_integer() else exponent
        base = f"n^{k}"
    if log_power == 0:
        return base or "1"
    log = "log n" if log_power == 1 else f"log^{log_power} n"
    return f"{base} {log}" if base else log


_COST_RE = re.compile(
    r"^(?P<n>n(?:\^(?P<k>[0-9]*\.?[0-9]+))?)?"
    r"(?P<log>log(?:\^(?P<j>[0-9]+))?(?:2)?n)?$"
)


def parse_cost(text) -> Cost:
    """Parse ``f(n)`` from text: ``"1"``, ``"n"``, ``"n log n"``, ``"n^2"``, ``"n**1.5"``...

    A :class:`Cost` passes through unchanged.  Anything else raises
    ``ValueError`` naming the value and the accepted forms.
    """
    if isinstance(text, Cost):
        return text
    if not isinstance(text, str):
        raise ValueError(
            f"cost {text!r} is not a string: expected one of {ACCEPTED_COSTS}; "
            "pass e.g. cost='n' for mergesort")
    s = text.strip().lower().replace(" ", "").replace("**", "^").replace("*", "")
    s = s.replace("log(n)", "logn").replace("log2(n)", "logn").replace("lg", "log")
    if s in ("1", "o(1)"):
        return Cost("1", 0.0, 0)
    m = _COST_RE.match(s) if s else None
    if m is None or not (m.group("n") or m.group("log")):
        raise ValueError(
            f"cost {text!r} is not understood: expected one of {ACCEPTED_COSTS}; "
            "pass e.g. cost='n' for mergesort or cost='1' for a sum")
    exponent = 0.0
    if m.group("n"):
        exponent = float(m.group("k")) if m.group("k") else 1.0
    log_power = 0
    if m.group("log"):
        log_power = int(m.group("j")) if m.group("j") else 1
    return Cost(_canonical_cost_text(exponent, log_power), exponent, log_power)


# ---------------------------------------------------------------------------
# problem and machine
# ---------------------------------------------------------------------------


def _as_number(value, name: str, expected: str, fix: str, *, integer: bool = False):
    """Return ``value`` as an int (when integral) or float, or raise a clear ValueError."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} = {value!r} is not a number: expected {expected}; {fix}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name} = {value!r} is not finite: expected {expected}; {fix}")
    if isinstance(value, Integral):
        return int(value)
    if float(value).is_integer():
        return int(value)
    if integer:
        raise ValueError(f"{name} = {value!r} is not an integer: expected {expected}; {fix}")
    return float(value)


@dataclass(frozen=True)
class Problem:
    """A divide-and-conquer problem ``T(n) = a·T(n/b) + f(n)``, ``T(1) = 1``.

    ``a`` recursive calls (integer ≥ 2), each on a ``1/b`` share of the size
    (``b > 1``), divide-and-combine cost ``cost`` (text or :class:`Cost`), input
    size ``n ≥ 1``.
    """

    a: int
    b: float
    cost: Cost
    n: int

    def __post_init__(self):
        a = _as_number(self.a, "a", "an integer >= 2 (the number of recursive calls)",
                       "pass a = 2 for two recursive calls", integer=True)
        if a < 2:
            raise ValueError(f"a = {self.a!r} is too small: expected an integer >= 2 "
                             "(a divide-and-conquer step makes at least two recursive calls); "
                             "pass a = 2 or more")
        b = _as_number(self.b, "b", "a number > 1 (the factor by which the size shrinks)",
                       "pass b = 2 when each call gets half the input")
        if b <= 1:
            raise ValueError(f"b = {self.b!r} is too small: expected a number > 1 (the factor "
                             "by which the size shrinks per level); pass b = 2 for halves")
        n = _as_number(self.n, "n", "an integer >= 1 (the input size)",
                       "pass the number of elements, e.g. n = 16777216", integer=True)
        if n < 1:
            raise ValueError(f"n = {self.n!r} is too small: expected an integer >= 1 "
                             "(the input size); pass the number of elements")
        if n >= 2**63:
            raise ValueError(f"n = {self.n!r} is too large: expected an integer below 2^63 "
                             "(an addressable input size); pass a smaller n")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "cost", parse_cost(self.cost))
        try:
            work = total_work(self)
        except OverflowError:
            work = math.inf
        if not math.isfinite(work):
            raise ValueError(f"n = {n} with a = {a}, b = {b} and cost {self.cost.text!r} makes "
                             "more work than a float can hold: expected a total below 1e308 "
                             "units; pass a smaller n or a cheaper cost")

    @property
    def height(self) -> float:
        """``L = log_b n``: the number of levels above the leaves (real)."""
        return _tree(self).L

    @property
    def leaves(self) -> float:
        """``a**L = n**log_b(a)``: the number of leaves (real)."""
        return _tree(self).leaves


@dataclass(frozen=True)
class Machine:
    """The Hybrid Processing Unit of 004 §3.2, plus the transfer cost of 000.

    ``p`` CPU cores of speed 1, ``g`` device cores (the observed degree of
    parallelism) of speed ``gamma`` each (``gamma < 1`` in the paper; ``>= 1``
    is allowed).  ``latency_s`` (λ) and ``seconds_per_byte`` (δ) price one
    host↔device transfer as ``λ + δ·bytes``.  ``seconds_per_unit`` is the CPU
    time of one unit of f-work; when None, times are in model units and the
    transfer cost must be zero.
    """

    p: float
    g: float
    gamma: float
    latency_s: float = 0.0
    seconds_per_byte: float = 0.0
    seconds_per_unit: float | None = None
    #: ``((bytes, factor), ...)``: a combine task touching ``bytes`` costs ``factor`` times
    #: ``f(m)`` units on a CPU core (see :func:`combine_factor`); ``()``: always 1
    combine_factors: tuple[tuple[float, float], ...] = ()
    #: one device core's speed on combines relative to one CPU core's (None: ``gamma``)
    combine_gamma: float | None = None
    #: ``((tasks, relative time), ...)``: a device level of ``tasks`` equal tasks takes
    #: ``relative time`` times one such task alone (calibration's solver sweep on a GPU,
    #: :func:`device_rounds`); ``()``: 004's ``⌈tasks/g⌉``
    device_occupancy: tuple[tuple[float, float], ...] = ()

    def __post_init__(self):
        p = _as_number(self.p, "p", "a number >= 1 (CPU cores)", "pass p = os.cpu_count()")
        if p < 1:
            raise ValueError(f"p = {self.p!r} is too small: expected a number >= 1 (CPU cores); "
                             "pass p = 1 or more")
        g = _as_number(self.g, "g", "a number >= 1 (the device's degree of parallelism)",
                       "pass g from `hpu calibrate`, e.g. g = 4096")
        if g < 1:
            raise ValueError(f"g = {self.g!r} is too small: expected a number >= 1 (the device's "
                             "degree of parallelism); pass g = 1 or more")
        gamma = _as_number(self.gamma, "gamma", "a number > 0 (device core speed / CPU core speed)",
                           "pass e.g. gamma = 1/160")
        if gamma <= 0:
            raise ValueError(f"gamma = {self.gamma!r} is not positive: expected a number > 0 "
                             "(one device core's speed relative to one CPU core); "
                             "pass e.g. gamma = 1/160")
        for name in ("latency_s", "seconds_per_byte"):
            v = _as_number(getattr(self, name), name, "a number >= 0 (seconds)",
                           f"pass {name} = 0 to ignore transfers")
            if v < 0:
                raise ValueError(f"{name} = {getattr(self, name)!r} is negative: expected a "
                                 f"number >= 0 (seconds); pass {name} = 0 to ignore transfers")
            object.__setattr__(self, name, float(v))
        spu = self.seconds_per_unit
        if spu is not None:
            spu = _as_number(spu, "seconds_per_unit", "a number > 0 or None",
                             "pass the CPU seconds of one unit of f-work, or None for model units")
            if spu <= 0:
                raise ValueError(f"seconds_per_unit = {self.seconds_per_unit!r} is not positive: "
                                 "expected a number > 0 or None; pass None for model units")
            spu = float(spu)
        elif self.latency_s or self.seconds_per_byte:
            raise ValueError(
                f"latency_s = {self.latency_s!r} and seconds_per_byte = {self.seconds_per_byte!r} "
                "are seconds but seconds_per_unit is None (model units): expected both "
                "in the same unit; pass seconds_per_unit, or zero transfer costs")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "g", g)
        object.__setattr__(self, "gamma", float(gamma))
        object.__setattr__(self, "seconds_per_unit", spu)
        object.__setattr__(self, "combine_factors", _check_factors(self.combine_factors))
        cg = self.combine_gamma
        if cg is not None:
            cg = _as_number(cg, "combine_gamma", "a number > 0 or None",
                            "pass None to use gamma for combines too")
            if cg <= 0:
                raise ValueError(f"combine_gamma = {self.combine_gamma!r} is not positive: "
                                 "expected a number > 0 (one device core's speed on combines "
                                 "relative to one CPU core); pass None to use gamma")
            object.__setattr__(self, "combine_gamma", float(cg))
        object.__setattr__(self, "device_occupancy", _check_occupancy(self.device_occupancy))

    def device_rounds(self, tasks: float) -> float:
        """How many times one task's time a device level of ``tasks`` equal tasks takes.

        Without a measured table, 004's ``⌈tasks/g⌉``: ``g`` work-items each at speed γ,
        whatever their number.  A GPU is not like that for hpu's tasks, which are long
        serial merges and subtree solvers: one task per compute unit runs at the speed
        of one task alone, several share a unit's issue slots and memory, and the
        whole device's throughput levels off long before the element-wise sum's knee
        (an H200: 157 ns per key per task up to 2 tasks per unit, 323 ns at 8).  The
        table (``device_occupancy``, measured by calibration with hpu's own solver) is
        interpolated in log-log between its points and, past its last one, grows in
        proportion to the tasks (the device is saturated).
        """
        if tasks <= 0:
            return 0.0
        table = self.device_occupancy
        if not table:
            return _rounds(tasks, self.g)
        t0, r0 = table[0]
        if tasks <= t0:
            return r0
        tl, rl = table[-1]
        if tasks >= tl:
            return rl * tasks / tl
        x = math.log(tasks)
        for (ta, ra), (tb, rb) in zip(table, table[1:]):
            if tasks <= tb:
                w = (x - math.log(ta)) / (math.log(tb) - math.log(ta))
                return math.exp(math.log(ra) + w * (math.log(rb) - math.log(ra)))
        return rl  # pragma: no cover - the loop always returns

    @property
    def device_combine_speed(self) -> float:
        """The device core's speed on combines: ``combine_gamma``, else ``gamma``."""
        return self.gamma if self.combine_gamma is None else self.combine_gamma

    @property
    def time_unit(self) -> str:
        """``"s"`` when ``seconds_per_unit`` is set, else ``"unit"`` (model units)."""
        return "unit" if self.seconds_per_unit is None else "s"

    @property
    def unit_scale(self) -> float:
        """Multiply model units by this to get ``time_unit``."""
        return 1.0 if self.seconds_per_unit is None else self.seconds_per_unit


def _check_factors(table) -> tuple[tuple[float, float], ...]:
    """``Machine.combine_factors`` checked and sorted by bytes."""
    fix = "pass combine_factors=() for a size-independent combine cost"
    try:
        pairs = [(float(b), float(f)) for b, f in table]
    except (TypeError, ValueError):
        raise ValueError(f"combine_factors = {table!r} is not a sequence of (bytes, factor) "
                         f"pairs: expected e.g. ((1048576, 1.0), (33554432, 1.25)); {fix}") from None
    for b, f in pairs:
        if not (math.isfinite(b) and b > 0 and math.isfinite(f) and f > 0):
            raise ValueError(f"combine_factors has the pair ({b!r}, {f!r}): expected bytes > 0 "
                             f"and a factor > 0, both finite; {fix}")
    pairs.sort()
    if len({b for b, _ in pairs}) != len(pairs):
        raise ValueError(f"combine_factors = {table!r} names one size twice: expected one "
                         f"factor per size; {fix}")
    return tuple(pairs)


def _check_occupancy(table) -> tuple[tuple[float, float], ...]:
    """``Machine.device_occupancy`` checked, sorted by tasks and made non-decreasing (a
    level of more tasks never takes less time than one of fewer: it does their work too;
    a measured dip is noise)."""
    fix = "pass device_occupancy=() for 004's ceil(tasks/g)"
    try:
        pairs = sorted((float(t), float(r)) for t, r in table)
    except (TypeError, ValueError):
        raise ValueError(f"device_occupancy = {table!r} is not a sequence of (tasks, relative "
                         f"time) pairs: expected e.g. ((1, 1.0), (1024, 2.1)); {fix}") from None
    for t, r in pairs:
        if not (math.isfinite(t) and t >= 1 and math.isfinite(r) and r > 0):
            raise ValueError(f"device_occupancy has the pair ({t!r}, {r!r}): expected tasks >= 1 "
                             f"and a relative time > 0, both finite; {fix}")
    if len({t for t, _ in pairs}) != len(pairs):
        raise ValueError(f"device_occupancy = {table!r} names one task count twice: expected "
                         f"one time per count; {fix}")
    out, top = [], 0.0
    for t, r in pairs:
        top = max(top, r)
        out.append((t, top))
    return tuple(out)


def combine_factor(machine: Machine, nbytes: float) -> float:
    """How many times ``f(m)`` units one combine task touching ``nbytes`` costs on a CPU core.

    Why: the unit of work (``seconds_per_unit``) is measured on one-task sorts
    small enough to stay in the cache, while the combines near the root of a
    large tree are single tasks over megabytes (issue 14: mergesort's upper
    merges ran 15-30 % slower per element than that unit).  Calibration times
    the combine at a few task sizes (``hpu._profile.Profile.combine_rates``);
    between them the factor is interpolated linearly in ``log2(bytes)``, beyond
    them it is the nearest measured one.  No table: 1 (004's model).
    """
    table = machine.combine_factors
    if not table:
        return 1.0
    if nbytes <= table[0][0]:
        return table[0][1]
    if nbytes >= table[-1][0]:
        return table[-1][1]
    x = math.log2(nbytes)
    for (b0, f0), (b1, f1) in zip(table, table[1:]):
        if nbytes <= b1:
            t = (x - math.log2(b0)) / (math.log2(b1) - math.log2(b0))
            return f0 + t * (f1 - f0)
    return table[-1][1]  # pragma: no cover - the loop always returns


# ---------------------------------------------------------------------------
# level sums (exact anti-differences, continuous in their bounds)
# ---------------------------------------------------------------------------


def _antidifference(r: float, p: list[float]) -> list[float]:
    """Coefficients of ``Q`` with ``Q(x)·r**x − Q(x+1)·r**(x+1) = P(x)·r**x``."""
    j = len(p) - 1
    if r == 1.0:
        q = [0.0] * (j + 2)
        for l in range(j, -1, -1):  # noqa: E741 - the coefficient's degree
            s = sum(q[m] * math.comb(m, l) for m in range(l + 2, j + 2))
            q[l + 1] = -(p[l] + s) / (l + 1)
        return q
    q = [0.0] * (j + 1)
    for l in range(j, -1, -1):  # noqa: E741
        s = sum(q[m] * math.comb(m, l) for m in range(l + 1, j + 1))
        q[l] = (p[l] + r * s) / (1.0 - r)
    return q


@dataclass(frozen=True)
class _GeometricPolySum:
    """``Σ_{i=lo}^{hi−1} scale · r**i · P(i)`` for real bounds, via its anti-difference."""

    scale: float
    r: float
    q: tuple[float, ...]

    @classmethod
    def make(cls, scale: float, r: float, poly: list[float]) -> "_GeometricPolySum":
        if abs(r - 1.0) < 1e-9:
            r = 1.0
        return cls(scale, r, tuple(_antidifference(r, poly)))

    def _g(self, x: float) -> float:
        qx = 0.0
        for c in reversed(self.q):
            qx = qx * x + c
        return self.scale * qx * (1.0 if self.r == 1.0 else self.r ** x)

    def __call__(self, lo: float, hi: float) -> float:
        return self._g(lo) - self._g(hi)


@dataclass(frozen=True)
class _Tree:
    """Per-problem constants: height, leaves and the two level sums."""

    L: float           # log_b n
    D: int             # internal levels of the integer tree: 0 .. D-1
    leaves: float      # a**L
    work: _GeometricPolySum   # Σ a**i f(n/b**i)
    span: _GeometricPolySum   # Σ f(n/b**i)


@lru_cache(maxsize=256)
def _tree(problem: Problem) -> _Tree:
    a, b, n, cost = problem.a, problem.b, problem.n, problem.cost
    L = math.log(n) / math.log(b)
    if abs(L - round(L)) < 1e-9:
        L = float(round(L))
    D = max(0, math.ceil(L - 1e-9))
    leaves = float(a) ** L
    k, j = cost.exponent, cost.log_power
    # P(x) = (log2 n − x·log2 b)**j, expanded
    A, B = math.log2(n), math.log2(b)
    poly = [math.comb(j, l) * A ** (j - l) * (-B) ** l for l in range(j + 1)]
    scale = float(n) ** k
    work = _GeometricPolySum.make(scale, a / b ** k, poly)
    span = _GeometricPolySum.make(scale, b ** (-k), poly)
    return _Tree(L, D, leaves, work, span)


def level_work(problem: Problem, lo: float, hi: float | None = None) -> float:
    """``Σ_{i=lo}^{hi−1} a**i · f(n/b**i)``: the f-work of levels ``lo..hi−1``.

    ``hi`` defaults to ``L = log_b n``.  Real bounds are allowed (see the module
    docstring); at integer bounds this is the ordinary sum.  Leaves excluded.
    """
    t = _tree(problem)
    return t.work(float(lo), t.L if hi is None else float(hi))


def level_span(problem: Problem, lo: float, hi: float | None = None) -> float:
    """``Σ_{i=lo}^{hi−1} f(n/b**i)``: one task per level, the time of an unsaturated unit."""
    t = _tree(problem)
    return t.span(float(lo), t.L if hi is None else float(hi))


def total_work(problem: Problem) -> float:
    """The work of the whole tree, ``n**log_b(a) + Σ_{i=0}^{L−1} a**i f(n/b**i)`` units."""
    t = _tree(problem)
    return t.leaves + t.work(0.0, t.L)


def _log_a(problem: Problem, x: float) -> float:
    return math.log(x) / math.log(problem.a)


# ---------------------------------------------------------------------------
# basic division (004 §5.1)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelTimes:
    """One level of the basic division: its size and the time on each unit.

    ``case`` is 004 §5.1's case: 1 (fewer than ``p`` tasks), 2 (fewer than
    ``g``), 3 (at least both), 4 (the leaves).  ``unit`` is where the basic
    strategy runs it: ``"cpu"`` or ``"device"``.
    """

    index: int
    tasks: float
    size: float
    work: float
    case: int
    t_cpu: float
    t_gpu: float
    unit: str


@dataclass(frozen=True)
class BasicDivision:
    """004 §5.1: levels from ``transfer_level`` down run on the device.

    ``level`` is the continuous ``log_a(p/γ)``; ``transfer_level`` the first
    integer level on the device (None when the device is not used).  Times
    (``cpu_only_time``, ``device_only_time``, ``hybrid_time``) sum the per-level
    times, without transfers, in ``time_unit``.
    """

    level: float
    transfer_level: int | None
    uses_device: bool
    levels: tuple[LevelTimes, ...]
    cpu_only_time: float
    device_only_time: float
    hybrid_time: float
    gpu_work_fraction: float
    time_unit: str
    reason: str


def basic_division(problem: Problem, machine: Machine) -> BasicDivision:
    """The basic hybrid division of 004 §5.1, one record per level plus the leaves.

    A level of ``m`` tasks of cost ``c`` takes ``max(1, m/p)·c`` on the CPU and
    ``max(1, m/g)·c/γ`` on the device (the paper's four cases in one formula).
    """
    t = _tree(problem)
    p, g, gamma = machine.p, machine.g, machine.gamma
    a = problem.a
    level = _log_a(problem, p / gamma)
    scale = machine.unit_scale
    if gamma * g <= p:
        uses, first = False, None
        reason = (f"gamma*g = {gamma * g:g} <= p = {p}: the device is not faster than the CPU "
                  "at any level, so every level stays on the CPU")
    elif level > t.L:
        uses, first = False, None
        reason = (f"log_a(p/gamma) = {level:.3g} is below the tree's leaves (L = {t.L:.3g}): "
                  "no level has enough tasks for the device, so everything stays on the CPU")
    else:
        uses, first = True, max(0, math.ceil(level - 1e-9))
        reason = (f"levels >= log_a(p/gamma) = {level:.3g} run faster on the device "
                  f"(a^i/p >= 1/gamma); one transfer at level {first}")
    records = []
    for i in range(t.D + 1):
        leaves = i == t.D
        tasks = t.leaves if leaves else float(a) ** i
        size = 1.0 if leaves else problem.n / problem.b ** i
        c = 1.0 if leaves else problem.cost(size)
        if leaves:
            case = 4
        elif tasks < p:
            case = 1
        elif tasks < g:
            case = 2
        else:
            case = 3
        t_cpu = max(1.0, tasks / p) * c * scale
        t_gpu = max(1.0, tasks / g) * c / gamma * scale
        unit = "device" if uses and i >= first else "cpu"
        records.append(LevelTimes(i, tasks, size, tasks * c, case, t_cpu, t_gpu, unit))
    cpu_only = sum(r.t_cpu for r in records)
    dev_only = sum(r.t_gpu for r in records)
    hybrid = sum(r.t_gpu if r.unit == "device" else r.t_cpu for r in records)
    frac = 0.0
    if uses:
        lo = max(0.0, level)
        frac = (t.leaves + t.work(lo, t.L)) / total_work(problem)
    return BasicDivision(level, first, uses, tuple(records), cpu_only, dev_only, hybrid,
                         frac, machine.time_unit, reason)


# ---------------------------------------------------------------------------
# advanced division (004 §5.2)
# ---------------------------------------------------------------------------


def alpha_bounds(problem: Problem, machine: Machine) -> tuple[float, float]:
    """``(α_min, 1)`` with ``α_min = p / n**log_b(a)`` (``p/n`` when ``a = b``), capped at 1.

    Below ``α_min`` the CPU's share would start the bottom level with fewer than
    ``p`` tasks (004 §5.2.1).
    """
    return min(1.0, machine.p / _tree(problem).leaves), 1.0


def _check_alpha(alpha) -> float:
    a = _as_number(alpha, "alpha", "a number in [0, 1] (the CPU's share of the tasks)",
                   "pass e.g. alpha = 0.16")
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"alpha = {alpha!r} is outside [0, 1]: expected the CPU's share of the "
                         "tasks; pass a fraction such as 0.16")
    return float(a)


def _cpu_level(problem: Problem, machine: Machine, alpha: float) -> float:
    """``log_a(p/α)`` clamped to ``[0, L]``: where the CPU's share has ``p`` tasks."""
    if alpha <= 0.0:
        return _tree(problem).L
    return min(max(_log_a(problem, machine.p / alpha), 0.0), _tree(problem).L)


def _gpu_level_saturated(problem: Problem, machine: Machine, alpha: float) -> float:
    """``u = log_a(g/(1−α))``: where the device's share has ``g`` tasks (inf when α = 1)."""
    if alpha >= 1.0:
        return math.inf
    return _log_a(problem, machine.g / (1.0 - alpha))


def cpu_time(problem: Problem, machine: Machine, alpha: float) -> float:
    """``T_c(α) = (α/p)·(n**log_b a + Σ_{i=log_a(p/α)}^{L−1} a**i f(n/b**i))``, model units.

    The time the CPU's share takes from the leaves up to the level where it has
    ``p`` tasks left.
    """
    alpha = _check_alpha(alpha)
    t = _tree(problem)
    c = _cpu_level(problem, machine, alpha)
    return alpha / machine.p * (t.leaves + t.work(c, t.L))


def gpu_saturated_time(problem: Problem, machine: Machine, alpha: float) -> float:
    """``T_g^max(α)``: how long the device's share keeps all ``g`` cores busy, bottom up.

    Zero when the share never saturates the device (case (i):
    ``(1−α)·n**log_b a < g``).
    """
    alpha = _check_alpha(alpha)
    t = _tree(problem)
    if (1.0 - alpha) * t.leaves < machine.g:
        return 0.0
    u = _gpu_level_saturated(problem, machine, alpha)
    return (1.0 - alpha) / (machine.gamma * machine.g) * (t.leaves + t.work(u, t.L))


def gpu_time(problem: Problem, machine: Machine, alpha: float, y: float) -> float:
    """``T_g(α, y)``: the device's time from the leaves up to level ``y`` (004 §5.2.1).

    Case (i), ``(1−α)·n**log_b a < g``: never saturated,
    ``(1/γ)(1 + Σ_{i=y}^{L−1} f(n/b**i))``.  Otherwise saturated below
    ``u = log_a(g/(1−α))``: for ``y ≥ u`` (case (ii))
    ``(1−α)/(γg)·(n**log_b a + Σ_{i=y}^{L−1} a**i f(n/b**i))``, for ``y < u``
    (case (iii)) ``T_g^max + (1/γ)·Σ_{i=y}^{u−1} f(n/b**i)``.  Continuous and
    decreasing in ``y``.
    """
    alpha = _check_alpha(alpha)
    t = _tree(problem)
    y = float(y)
    gamma, g = machine.gamma, machine.g
    if (1.0 - alpha) * t.leaves < g:
        return (1.0 + t.span(y, t.L)) / gamma
    u = _gpu_level_saturated(problem, machine, alpha)
    if y >= u:
        return (1.0 - alpha) / (gamma * g) * (t.leaves + t.work(y, t.L))
    return gpu_saturated_time(problem, machine, alpha) + t.span(y, u) / gamma


def gpu_case(problem: Problem, machine: Machine, alpha: float) -> int:
    """004 §5.2.1's case for ``α``: 1 never saturated, 2 always saturated, 3 both."""
    alpha = _check_alpha(alpha)
    if (1.0 - alpha) * _tree(problem).leaves < machine.g:
        return 1
    if cpu_time(problem, machine, alpha) <= gpu_saturated_time(problem, machine, alpha):
        return 2
    return 3


def gpu_level(problem: Problem, machine: Machine, alpha: float) -> float:
    """``y(α)``: the level the device reaches while the CPU reaches ``p`` tasks.

    Solves ``T_g(α, y) = T_c(α)`` for ``y`` in ``[0, L]`` with Brent's method.
    ``T_g`` decreases in ``y``, so there is at most one root.  When there is
    none the result is clamped: ``0`` when the device finishes its whole share
    up to the root before the CPU is done (``T_g(α, 0) ≤ T_c``), ``L`` when it
    cannot even finish its leaves in that time (``T_g(α, L) ≥ T_c``); then it
    does only its leaves and the CPU waits for it.
    """
    alpha = _check_alpha(alpha)
    t = _tree(problem)
    tc = cpu_time(problem, machine, alpha)
    if t.L <= 0.0:
        return 0.0

    def excess(y):
        return gpu_time(problem, machine, alpha, y) - tc

    if excess(0.0) <= 0.0:
        return 0.0
    if excess(t.L) >= 0.0:
        return t.L
    return _root(excess, 0.0, t.L, xtol=1e-12)


def _root(f, a: float, b: float, *, xtol: float, rtol: float = 4 * np.finfo(float).eps,
          maxiter: int = 200) -> float:
    """The root of ``f`` in ``[a, b]`` where ``f(a)`` and ``f(b)`` differ in sign.

    False position with the Illinois modification (the end that stays put has
    its value halved, so both ends close in: superlinear, and never outside the
    bracket), a bisection step wherever rounding puts the secant point outside
    it.  Stops when the bracket is narrower than ``xtol + rtol·|x|``.  Used
    instead of ``scipy.optimize.brentq`` for its import time (module docstring).
    """
    fa, fb = float(f(a)), float(f(b))
    if fa == 0.0:
        return float(a)
    if fb == 0.0:
        return float(b)
    if (fa > 0) == (fb > 0):
        raise ValueError(f"f(a) = {fa!r} and f(b) = {fb!r} have the same sign; expected a "
                         "bracket of the root")
    side = 0
    x = a
    for _ in range(maxiter):
        x = (a * fb - b * fa) / (fb - fa)
        if not (min(a, b) < x < max(a, b)):
            x = 0.5 * (a + b)
        fx = float(f(x))
        if fx == 0.0:
            return float(x)
        if (fx > 0) == (fb > 0):        # x replaces b; a stayed put
            b, fb = x, fx
            if side == -1:
                fa *= 0.5
            side = -1
        else:                           # x replaces a; b stayed put
            a, fa = x, fx
            if side == 1:
                fb *= 0.5
            side = 1
        if abs(b - a) <= xtol + rtol * abs(x):
            break
    return float(x)


#: 1/φ: the share of the interval a golden-section step keeps.
_INV_PHI = (math.sqrt(5.0) - 1.0) / 2.0


def _golden_max(fun, lo: float, hi: float, *, xatol: float) -> tuple[float, float]:
    """``(x, fun(x))`` at the maximum of a unimodal ``fun`` on ``[lo, hi]``.

    Golden-section search to a bracket narrower than ``xatol`` (about
    ``1.44·log2(width/xatol)`` evaluations).  Used instead of
    ``scipy.optimize.minimize_scalar(method="bounded")`` for its import time.
    """
    a, b = float(lo), float(hi)
    c = b - _INV_PHI * (b - a)
    d = a + _INV_PHI * (b - a)
    fc, fd = fun(c), fun(d)
    while b - a > xatol:
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - _INV_PHI * (b - a)
            fc = fun(c)
        else:
            a, c, fc = c, d, fd
            d = a + _INV_PHI * (b - a)
            fd = fun(d)
    return (c, fc) if fc >= fd else (d, fd)


def gpu_work(problem: Problem, machine: Machine, alpha: float, y: float | None = None) -> float:
    """``W_g(α) = (1−α)·(n**log_b a + Σ_{i=y(α)}^{L−1} a**i f(n/b**i))`` units.

    ``y`` defaults to :func:`gpu_level`.
    """
    alpha = _check_alpha(alpha)
    t = _tree(problem)
    if y is None:
        y = gpu_level(problem, machine, alpha)
    return (1.0 - alpha) * (t.leaves + t.work(float(y), t.L))


@dataclass(frozen=True)
class AdvancedDivision:
    """The advanced division of 004 §5.2 at ``α* = argmax W_g``.

    ``alpha``: the CPU's share of the tasks below ``y``; ``y``: the level the
    device reaches (continuous, in ``[0, L]``; ``L`` when the device is not
    used); ``gpu_work``/``total_work``
    in units of f-work; ``t_cpu`` = ``T_c(α*)``, ``t_gpu`` = ``T_g(α*, y)``,
    ``t_gpu_max`` = ``T_g^max(α*)`` in ``time_unit``; ``case`` 1/2/3 as in
    §5.2.1 (0 when the device is not used); ``alpha_min`` the lower end of
    the search; ``uses_device``/``reason`` say whether and why.
    """

    alpha: float
    y: float
    gpu_work: float
    total_work: float
    gpu_work_fraction: float
    t_cpu: float
    t_gpu: float
    t_gpu_max: float
    case: int
    alpha_min: float
    uses_device: bool
    time_unit: str
    reason: str


def _maximise(fun, lo: float, hi: float, points: int = 97) -> float:
    """argmax of ``fun`` on ``[lo, hi]``: a coarse grid, then a bounded search at each of its peaks.

    ``W_g(α)`` can have two peaks -- the end ``α_min`` (the device takes every leaf) and
    a narrow one where ``y(α)`` falls to 0 -- and the grid may see the narrow one only as a
    point lower than the end: so every local maximum of the grid is refined, not only the
    grid's best.
    """
    if hi - lo <= 0.0:
        return lo
    grid = np.union1d(np.linspace(lo, hi, points),
                      np.geomspace(max(lo, 1e-300), hi, points) if lo > 0 else [])
    grid = grid[(grid >= lo) & (grid <= hi)]
    values = [fun(x) for x in grid]
    k = int(np.argmax(values))
    best_x, best_v = float(grid[k]), values[k]
    last = len(grid) - 1
    peaks = [k for k in range(len(grid))
             if values[k] >= values[max(k - 1, 0)] and values[k] >= values[min(k + 1, last)]]
    for k in sorted(peaks, key=lambda k: values[k], reverse=True)[:4]:
        left, right = float(grid[max(k - 1, 0)]), float(grid[min(k + 1, last)])
        if right > left:
            x, v = _golden_max(fun, left, right, xatol=1e-12 * max(1.0, right))
            if v > best_v:
                best_x, best_v = float(x), v
    return best_x


def advanced_division(problem: Problem, machine: Machine) -> AdvancedDivision:
    """004 §5.2 for any ``a ≥ 2``, ``b > 1``, cost: ``α* = argmax W_g(α)`` on ``[α_min, 1]``.

    Everything stays on the CPU (``alpha = 1``, no device work, ``reason``
    says why) when ``γ·g ≤ p`` or the tree has at most ``p`` leaves.
    """
    t = _tree(problem)
    W = total_work(problem)
    scale = machine.unit_scale
    lo, hi = alpha_bounds(problem, machine)

    def cpu_only(reason: str) -> AdvancedDivision:
        return AdvancedDivision(1.0, t.L, 0.0, W, 0.0, cpu_time(problem, machine, 1.0) * scale,
                                0.0, 0.0, 0, lo, False, machine.time_unit, reason)

    if machine.gamma * machine.g <= machine.p:
        return cpu_only(f"gamma*g = {machine.gamma * machine.g:g} <= p = {machine.p}: the device "
                        "is not faster than the CPU in total, so everything stays on the CPU")
    if lo >= 1.0:
        return cpu_only(f"the tree has {t.leaves:g} leaf task(s), not more than p = {machine.p} "
                        "CPU cores: the CPU never has p tasks to spare, so everything stays on "
                        "the CPU")
    alpha = _maximise(lambda x: gpu_work(problem, machine, x), lo, hi)
    y = gpu_level(problem, machine, alpha)
    wg = gpu_work(problem, machine, alpha, y)
    case = gpu_case(problem, machine, alpha)
    names = {1: "never saturated", 2: "saturated throughout", 3: "saturated, then not"}
    reason = (f"alpha* = {alpha:.4g} maximises the device's work: the device ({names[case]}, "
              f"case {'i' * case}) reaches level y = {y:.4g} "
              "while the CPU keeps its p cores busy")
    return AdvancedDivision(alpha, y, wg, W, wg / W, cpu_time(problem, machine, alpha) * scale,
                            gpu_time(problem, machine, alpha, y) * scale,
                            gpu_saturated_time(problem, machine, alpha) * scale, case, lo,
                            True, machine.time_unit, reason)


@dataclass(frozen=True)
class ClosedForms:
    """§5.2.2's closed forms for ``a = b``, ``f = n`` (with ``a`` for the misprinted ``α``)."""

    t_cpu: float
    t_gpu_max: float
    t_gpu_unsaturated: float   # case (i)
    t_gpu_saturated: float     # case (ii)
    t_gpu_mixed: float         # case (iii)
    gpu_work: float
    total_work: float


def paper_closed_forms(problem: Problem, machine: Machine, alpha: float, y: float) -> ClosedForms:
    """The closed forms of 004 §5.2.2, for checking the general sums (tests only).

    Valid for ``a = b`` and ``f(n) = n``; every case's formula is returned
    whatever ``α`` and ``y`` are, and the caller picks the one that applies.
    Cases (i) and (iii) use the corrected reading of ``seeds/README.md``:
    ``n·a/(a−1)·a**−y − 1/(a−1)`` and ``n·a/(γ(a−1))·(a**−y − (1−α)/g)``.
    """
    if problem.a != problem.b or problem.cost.exponent != 1 or problem.cost.log_power != 0:
        raise ValueError(f"paper_closed_forms needs a = b and cost 'n', got a = {problem.a}, "
                         f"b = {problem.b}, cost {problem.cost.text!r}; use the general functions")
    a, n = problem.a, problem.n
    p, g, gam = machine.p, machine.g, machine.gamma
    L = math.log(n) / math.log(a)
    la = lambda x: math.log(x) / math.log(a)  # noqa: E731
    t_c = alpha * n / p * (L - la(p / alpha) + 1)
    t_max = (1 - alpha) * n / (gam * g) * (L - la(g / (1 - alpha)) + 1)
    t_i = (1 / gam) * (n * a / (a - 1) * a ** -y - 1 / (a - 1))
    t_ii = (1 - alpha) * n / (gam * g) * (L - y + 1)
    t_iii = t_max + n * a / (gam * (a - 1)) * (a ** -y - (1 - alpha) / g)
    w_g = (1 - alpha) * n * (L - y + 1)
    return ClosedForms(t_c, t_max, t_i, t_ii, t_iii, w_g, n * (L + 1))


# ---------------------------------------------------------------------------
# schedule simulator (integer split, cut-off level, transfers)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """One interval of a simulated run: ``unit`` is ``"cpu"``, ``"device"`` or ``"link"``."""

    name: str
    unit: str
    start: float
    end: float


@dataclass(frozen=True)
class LevelTime:
    """The predicted time of one level's work on one side (in ``time_unit``).

    ``phase`` is ``"combine"`` for a level above the cut-off ``K`` (the model's
    ``f(n/b**i)`` per task: divide and combine) and ``"leaf"`` at ``K`` (each
    task solves its whole subtree); ``side`` is ``"cpu"`` or ``"device"``.
    ``seconds`` includes the contention the side meets while the other side
    computes, on the levels that run meanwhile (:func:`contended_levels`), and a
    combine's size-dependent rate (:func:`combine_factor`).  The runtime's bookkeeping phases (``count``, ``fill``) are
    not priced by the model.
    """

    level: int
    phase: str
    side: str
    tasks: int
    seconds: float


@dataclass(frozen=True)
class Schedule:
    """The predicted time of one concrete split (in ``time_unit``).

    At level ``y`` the ``a**y`` tasks split: ``cpu_tasks`` on the CPU, the
    ``device_tasks`` after them on the device (``alpha = cpu_tasks / a**y``).
    Each side expands its share to the cut-off level ``K``, whose tasks solve
    their whole subtrees.  ``cpu_share_time`` and ``device_share_time`` are the
    two shares' durations as run together (with contention);
    ``transfer_time`` is both transfers; ``upper_levels_time`` the CPU's levels
    ``y−1..0`` after the join; ``total_time`` the end of the run.
    """

    alpha: float
    y: int
    K: int
    cpu_tasks: int
    device_tasks: int
    cpu_share_time: float
    device_share_time: float
    transfer_time: float
    upper_levels_time: float
    total_time: float
    device_work_fraction: float
    transfer_bytes: int
    time_unit: str
    phases: tuple[Phase, ...] = field(repr=False)
    #: the predicted time of each level on each side, levels ``0..K`` (see :class:`LevelTime`)
    level_times: tuple[LevelTime, ...] = field(default=(), repr=False)


#: Whole-subtree tasks per CPU core at the cut-off level K (load balance for ``prange``).
CPU_TASKS_PER_CORE = 8
#: Whole-subtree tasks per unit of ``g`` at the cut-off level K.
DEVICE_TASKS_PER_CORE = 2
#: Never expand beyond this many tasks at the cut-off level (parameter memory).
MAX_LEVEL_TASKS = 1 << 20


def tasks_on_cpu(alpha: float, m: int) -> int:
    """``⌈α·m⌉``: how many of a level's ``m`` tasks the CPU keeps under the split ``α``.

    The one definition of the split's rounding: the planner, the simulator and
    the runtime all call it.  No floating-point overshoot when ``α = c/m`` exactly.
    """
    x = alpha * m
    r = round(x)
    if abs(x - r) <= 1e-9 * max(1.0, x):
        return int(r)
    return int(math.ceil(x))


def _rounds(tasks: int, workers) -> float:
    """Rounds of equal tasks on ``workers`` parallel units: ``⌈tasks/workers⌉`` (0 for none);
    ``workers`` may instead be a function of the tasks (:meth:`Machine.device_rounds`)."""
    if callable(workers):
        return workers(tasks)
    return 0.0 if tasks <= 0 else float(math.ceil(tasks / workers - 1e-12))


@dataclass(frozen=True)
class _Integer:
    """The integer tree the simulator walks: per-level f and per-task subtree work."""

    f: tuple[float, ...]        # f(n/b**i), i = 0..D-1
    subtree: tuple[float, ...]  # work of one task's subtree at level K, K = 0..D


@lru_cache(maxsize=256)
def _integer(problem: Problem) -> _Integer:
    t = _tree(problem)
    f = tuple(float(problem.cost(problem.n / problem.b ** i)) for i in range(t.D))
    sub = []
    for K in range(t.D + 1):
        below = t.work(float(K), t.L) if K < t.L else 0.0
        sub.append((t.leaves + below) / float(problem.a) ** K)
    return _Integer(f, tuple(sub))


def _check_level(value, name: str, lo: int, hi: int) -> int:
    v = _as_number(value, name, f"an integer level in [{lo}, {hi}]",
                   f"pass {name} between {lo} and {hi}", integer=True)
    if not lo <= v <= hi:
        raise ValueError(f"{name} = {value!r} is outside the tree: expected an integer level in "
                         f"[{lo}, {hi}]; pass {name} between {lo} and {hi}")
    return v


def cutoff_level(problem: Problem, machine: Machine, y: int, cpu_tasks: int, device_tasks: int,
                 *, cpu_per_core: int = CPU_TASKS_PER_CORE,
                 device_per_core: int = DEVICE_TASKS_PER_CORE,
                 max_tasks: int = MAX_LEVEL_TASKS) -> int:
    """The cut-off level K: the shallowest ``K ≥ y`` where each non-empty share has enough tasks.

    "Enough" is ``cpu_per_core × p`` whole-subtree tasks on the CPU and
    ``device_per_core × g`` on the device, so that they keep every core busy;
    capped at the leaves and at the first level with ``max_tasks`` tasks.
    This is the only place K is chosen: the planner calls it and the runtime
    executes the plan's K.
    """
    t = _tree(problem)
    a = problem.a
    for K in range(y, t.D + 1):
        grow = a ** (K - y)
        cpu_ok = cpu_tasks == 0 or cpu_tasks * grow >= cpu_per_core * machine.p
        dev_ok = device_tasks == 0 or device_tasks * grow >= device_per_core * machine.g
        if (cpu_ok and dev_ok) or a ** K >= max_tasks:
            return K
    return t.D


def _level_rounds(m: int, workers, pieces: int) -> float:
    """:func:`_rounds` of a level launched in ``pieces`` consecutive kernels (the pieces a
    pipelined copy cuts the cut-off level and level ``y`` into; one queue runs them one
    after another, so each piece costs its own rounds: a level of 84 merges in four
    launches took four merges' time on an H200, not one)."""
    c = max(1, min(int(pieces), int(m)))
    if c == 1:
        return _rounds(m, workers)
    cuts = [(m * j) // c for j in range(c + 1)]
    return sum(_rounds(b - a, workers) for a, b in zip(cuts, cuts[1:]))


def _side_terms(it: _Integer, a: int, tasks: int, y: int, K: int, workers, speed: float,
                combine: tuple[float, ...] | None, combine_speed: float | None, pieces: int):
    """``(level, tasks, time)`` of one share's levels ``y..K`` (the subtrees at ``K``), the
    one pricing :func:`_side_time` and :func:`_side_levels` share."""
    combine = it.f if combine is None else combine
    cs = speed if combine_speed is None else combine_speed
    for i in range(y, K + 1):
        m = tasks * a ** (i - y)
        cost = combine[i] / cs if i < K else it.subtree[K] / speed
        r = _level_rounds(m, workers, pieces) if i in (y, K) else _rounds(m, workers)
        yield i, m, r * cost


def _side_time(it: _Integer, a: int, tasks: int, y: int, K: int, workers,
               speed: float, combine: tuple[float, ...] | None = None,
               combine_speed: float | None = None, pieces: int = 1) -> tuple[float, float]:
    """(time, work) of one share: levels ``K−1..y`` level by level, subtrees at ``K``.

    ``combine[i]``: the time of one task of level ``i`` at speed 1 (default ``f(n/b**i)``;
    :func:`_combine_costs` adds the size-dependent rate); ``combine_speed`` the side's speed
    on combines (default ``speed``).  ``work`` is f-work, whatever the rates.
    ``pieces``: levels ``y`` and ``K`` run in that many launches (:func:`_level_rounds`).
    """
    if tasks == 0:
        return 0.0, 0.0
    time = work = 0.0
    for i, m, t in _side_terms(it, a, tasks, y, K, workers, speed, combine, combine_speed,
                               pieces):
        time += t
        work += m * (it.f[i] if i < K else it.subtree[K])
    return time, work


def _side_levels(it: _Integer, a: int, tasks: int, y: int, K: int, workers,
                 speed: float, side: str, factor: float,
                 combine: tuple[float, ...] | None = None,
                 combine_speed: float | None = None, pieces: int = 1) -> list[LevelTime]:
    """:func:`_side_time`'s terms one level at a time, each scaled by ``factor``."""
    if tasks == 0:
        return []
    return [LevelTime(i, "combine" if i < K else "leaf", side, m, factor * t)
            for i, m, t in _side_terms(it, a, tasks, y, K, workers, speed, combine,
                                       combine_speed, pieces)]


def _combine_costs(problem: Problem, machine: Machine, element_bytes: int) -> tuple[float, ...]:
    """One task's combine time per level at speed 1: ``f(n/b**i)·combine_factor(bytes)``,
    with ``bytes = element_bytes · n/b**i`` (what the task's slices hold)."""
    it = _integer(problem)
    if not machine.combine_factors:
        return it.f
    return tuple(fi * combine_factor(machine, element_bytes * problem.n / problem.b ** i)
                 for i, fi in enumerate(it.f))


def contended_levels(levels: list[LevelTime], start: float, other: tuple[float, float],
                     contention: float, total: float) -> list[LevelTime]:
    """One share's levels with the contention charged where it happens, summing to ``total``.

    The share runs its levels bottom-up (the cut-off level ``K`` first, then
    ``K−1``, ..., ``y``) from ``start``; while the other side computes (the
    interval ``other``) each runs ``contention`` times slower.  So a share whose
    partner finishes first pays the contention on its leaves, not on its
    combines at the end (issue 14: spreading it evenly over-predicted the
    device's upper merges by 40 % when the CPU's share ended first).  The
    stretched times are then scaled to ``total``, the share's duration as the
    simulator computed it, so the rows add up to the schedule's phases.
    """
    if not levels:
        return []
    o0, o1 = other
    t = start
    stretched = {}
    for lt in sorted(levels, key=lambda r: -r.level):
        work, used = lt.seconds, 0.0
        if work > 0 and t < o0:           # alone before the other side starts
            step = min(work, o0 - t)
            work, used, t = work - step, used + step, t + step
        if work > 0 and t < o1:           # slowed while both compute
            step = min(work * contention, o1 - t)
            work, used, t = work - step / contention, used + step, t + step
        used += work                      # alone after the other side ends
        t += work
        stretched[lt.level] = used
    got = sum(stretched.values())
    k = total / got if got > 0 else 1.0
    return [replace(lt, seconds=stretched[lt.level] * k) for lt in levels]


def _overlap(cpu: float, dev_start: float, dev: float, contention: float) -> tuple[float, float]:
    """End times of the CPU share (from 0) and the device share (from ``dev_start``).

    While both compute, both run ``contention`` times slower.
    """
    if cpu <= 0.0 or dev <= 0.0 or cpu <= dev_start:
        return cpu, dev_start + dev
    left = cpu - dev_start
    if left <= dev:
        cpu_end = dev_start + contention * left
        return cpu_end, cpu_end + (dev - left)
    dev_end = dev_start + contention * dev
    return dev_end + (left - dev), dev_end


#: Pieces a device with its own memory copies its share in, each overlapping the kernels of
#: the others (003); :attr:`hpu._opencl._backend.OpenCLBackend.transfer_chunks` starts here.
TRANSFER_CHUNKS = 4


def copy_chunks(*, unified: bool, span: bool, chunks: int = TRANSFER_CHUNKS) -> int:
    """The pieces a run copies the device's data in: ``chunks`` when its copies are pipelined
    with its kernels, else 1 (one upload before, one download after).

    They are pipelined when the device has memory of its own (not ``unified``: a device
    sharing the host's memory copies nothing, so there is nothing to overlap), the
    function says which data its tasks touch (``span``: a ``span=`` or NumPy-slice
    function, so a piece of the data can be matched to a range of tasks), and ``chunks``
    > 1.  The backend decides with this function and the planner predicts with it, so a
    plan cannot price an overlap the run does not do, nor miss one it does.
    """
    return int(chunks) if (not unified and span and int(chunks) > 1) else 1


def overlapped_device_time(upload: float, compute: float, download: float,
                           chunks: int) -> float:
    """The device share's time from its first upload to its last download when its data
    moves in ``chunks`` equal pieces pipelined with its kernels (003)::

        upload/c + max((c − 1)/c · (upload + download), compute) + download/c

    Only the first piece's upload comes before any kernel and only the last piece's
    download after the last; in between the copies of the other pieces (one transfer
    queue: uploads and downloads share it, so their times add) run while the kernels
    compute, and the slower of the two sets the pace.  ``chunks = 1`` is
    ``upload + compute + download``: no overlap.  All times in one unit.
    """
    if isinstance(chunks, bool) or not isinstance(chunks, Integral) or chunks < 1:
        raise ValueError(f"chunks = {chunks!r} must be an int >= 1: the pieces the device's "
                         "data is copied in; pass chunks = 1 for no overlap")
    for name, v in (("upload", upload), ("compute", compute), ("download", download)):
        if not (isinstance(v, Real) and v >= 0 and math.isfinite(v)):
            raise ValueError(f"{name} = {v!r} must be a finite number >= 0 (a duration); "
                             f"pass {name} = 0 for none")
    c = int(chunks)
    rest = (c - 1) / c * (upload + download)
    return upload / c + max(rest, compute) + download / c


def _simulate(problem: Problem, machine: Machine, cpu_tasks: int, y: int, K: int | None,
              element_bytes: int, contention: float, chunks: int = 1) -> Schedule:
    t = _tree(problem)
    it = _integer(problem)
    a = problem.a
    m = a ** y
    dev_tasks = m - cpu_tasks
    if K is None:
        K = cutoff_level(problem, machine, y, cpu_tasks, dev_tasks)
    scale = machine.unit_scale
    comb = _combine_costs(problem, machine, element_bytes)
    dcs = machine.device_combine_speed
    cpu_t, _ = _side_time(it, a, cpu_tasks, y, K, machine.p, 1.0, comb)
    dev_t, dev_w = _side_time(it, a, dev_tasks, y, K, machine.device_rounds, machine.gamma,
                              comb, dcs, chunks)
    cpu_t *= scale
    dev_t *= scale
    if dev_tasks > 0:
        elements = min(problem.n, math.ceil(dev_tasks * problem.n / problem.b ** y))
        nbytes = int(elements * element_bytes)
        one_way = machine.latency_s + machine.seconds_per_byte * nbytes
    else:
        nbytes, one_way = 0, 0.0
    # the overlap term (overlapped_device_time): with the device's data copied in ``chunks``
    # pieces only the first upload piece is before the device's compute and only the last
    # download piece after it; in between the other copies and the kernels overlap.
    # chunks = 1: one upload before, one download after (no overlap).
    lead = tail = one_way / chunks
    body = overlapped_device_time(one_way, dev_t, one_way, chunks) - lead - tail
    cpu_end, dev_end = _overlap(cpu_t, lead, body, contention)
    join = max(cpu_end, dev_end + tail if dev_tasks > 0 else 0.0)
    upper = sum(_rounds(a ** i, machine.p) * comb[i] for i in range(y)) * scale
    total = join + upper
    phases = [Phase("cpu share", "cpu", 0.0, cpu_end)]
    if dev_tasks > 0:
        phases += [Phase("upload", "link", 0.0, lead),
                   Phase("device share", "device", lead, dev_end),
                   Phase("download", "link", dev_end, dev_end + tail)]
    if y > 0:
        phases.append(Phase("upper levels", "cpu", join, total))
    # per level: the upper levels on the CPU, then each share's levels with its contention
    levels = [LevelTime(i, "combine" if i < K else "leaf", "cpu", a ** i,
                        _rounds(a ** i, machine.p) * (comb[i] if i < K else it.subtree[K]) * scale)
              for i in range(min(y, K))]
    # (the contention falls on the levels that run while the other side computes: a
    # share's leaves run first, its combines last, often alone)
    levels += contended_levels(
        _side_levels(it, a, cpu_tasks, y, K, machine.p, 1.0, "cpu", scale, comb),
        0.0, (lead, dev_end) if dev_tasks > 0 else (0.0, 0.0), contention, cpu_end)
    levels += contended_levels(
        _side_levels(it, a, dev_tasks, y, K, machine.device_rounds, machine.gamma, "device",
                     scale, comb, dcs, pieces=chunks),
        lead, (0.0, cpu_end) if cpu_tasks > 0 else (0.0, 0.0), contention, dev_end - lead)
    return Schedule(
        alpha=cpu_tasks / m, y=y, K=K, cpu_tasks=cpu_tasks, device_tasks=dev_tasks,
        cpu_share_time=cpu_end, device_share_time=(dev_end - lead) if dev_tasks else 0.0,
        transfer_time=2 * one_way, upper_levels_time=upper, total_time=total,
        device_work_fraction=dev_w / (t.leaves + t.work(0.0, t.L)) if dev_tasks else 0.0,
        transfer_bytes=2 * nbytes, time_unit=machine.time_unit, phases=tuple(phases),
        level_times=tuple(sorted(levels, key=lambda r: (r.level, r.side))))


def _check_run_options(element_bytes, contention) -> tuple[int, float]:
    eb = _as_number(element_bytes, "element_bytes", "an integer >= 0 (bytes per element)",
                    "pass element_bytes = 4 for int32 data", integer=True)
    if eb < 0:
        raise ValueError(f"element_bytes = {element_bytes!r} is negative: expected an integer >= 0;"
                         " pass element_bytes = 4 for int32 data")
    c = _as_number(contention, "contention", "a number >= 1 (slow-down while both units run)",
                   "pass contention = 1 when CPU and device do not share resources")
    if c < 1:
        raise ValueError(f"contention = {contention!r} is below 1: expected a slow-down factor "
                         ">= 1; pass contention = 1 when CPU and device do not share resources")
    return eb, float(c)


def simulate(problem: Problem, machine: Machine, *, alpha: float, y: int, K: int | None = None,
             element_bytes: int = 4, contention: float = 1.0, chunks: int = 1) -> Schedule:
    """Predict the phases of a run split at integer level ``y``.

    The ``a**y`` tasks at level ``y`` split: ``⌈α·a**y⌉`` on the CPU, the rest
    on the device.  Both shares run at the same time, each level by level from
    ``K−1`` up to ``y`` with the tasks at ``K`` (default :func:`cutoff_level`)
    solving their subtrees.  A level of ``m`` equal tasks of cost ``c`` takes
    ``⌈m/p⌉·c`` on the CPU and ``⌈m/g⌉·c/γ`` on the device (whole tasks per
    core: exact for equal tasks under any greedy scheduler).  The device's
    share costs one upload before and one download after, ``λ + δ·bytes``
    each, with bytes = ``element_bytes`` × its elements (``a**y−⌈α a**y⌉``
    tasks of ``n/b**y`` elements, at most ``n``).  While both compute they
    run ``contention`` times slower.  Then the CPU runs levels ``y−1..0``.
    A combine task of level ``i`` costs ``f(n/b**i)·combine_factor(bytes)``
    units (bytes = ``element_bytes·n/b**i``) and runs at ``combine_gamma`` on the
    device (:class:`Machine`; both default to 004's ``f`` and ``γ``).

    ``chunks`` > 1 models the overlap of a device with its own memory
    (:attr:`hpu._opencl._backend.OpenCLBackend.transfer_chunks`; :func:`copy_chunks`
    says when a run does it): the data moves in ``chunks`` equal pieces pipelined with
    the kernels, so the device's share takes :func:`overlapped_device_time`
    ``u/C + max((C − 1)/C·(u + w), d) + w/C`` from its first upload to its last
    download (``u``, ``w`` the upload and download, ``d`` its compute) instead of
    ``u + d + w``; ``phases`` then show only the first upload piece and the last
    download piece outside the device's compute.
    """
    alpha = _check_alpha(alpha)
    eb, c = _check_run_options(element_bytes, contention)
    D = _tree(problem).D
    y = _check_level(y, "y", 0, D)
    if K is not None:
        K = _check_level(K, "K", y, D)
    chunks = _check_chunks(chunks)
    return _simulate(problem, machine, tasks_on_cpu(alpha, problem.a ** y), y, K, eb, c, chunks)


def _check_chunks(chunks) -> int:
    if isinstance(chunks, bool) or not isinstance(chunks, Integral) or chunks < 1:
        raise ValueError(f"chunks = {chunks!r} must be an int >= 1: the pieces the device's "
                         "data is copied in; pass chunks = 1 for no overlap")
    return int(chunks)


def _overlap_note(problem: Problem, machine: Machine, chosen: Schedule, eb: int, c: float,
                  chunks: int) -> str:
    """What ``plan.reason`` says of a split whose copies are pipelined (empty otherwise)."""
    if chunks <= 1 or chosen.device_tasks == 0:
        return ""
    serial = _simulate(problem, machine, chosen.cpu_tasks, chosen.y, chosen.K, eb, c, 1)
    unit = "model units" if machine.time_unit == "unit" else "s"
    return (f"; transfers overlapped in {chunks} chunks with the device's kernels "
            f"(predicted {chosen.total_time:.4g} {unit}, {serial.total_time:.4g} {unit} "
            "with one upload before and one download after)")


@dataclass(frozen=True)
class SplitCandidate:
    """One evaluated split: level ``y``, ``cpu_tasks`` of ``a**y``, and its predicted time."""

    y: int
    cpu_tasks: int
    alpha: float
    total_time: float


@dataclass(frozen=True)
class SplitSearch:
    """:func:`best_split`'s answer: the best :class:`Schedule` and every split it tried."""

    best: Schedule
    candidates: tuple[SplitCandidate, ...] = field(repr=False)


def _better(s: Schedule, best: Schedule) -> bool:
    """Order of splits: shorter total time, then fewer bytes moved (the more balanced of equals)."""
    return (s.total_time, s.transfer_bytes) < (best.total_time, best.transfer_bytes)


def best_split(problem: Problem, machine: Machine, *, K: int | None = None, element_bytes: int = 4,
               contention: float = 1.0, alphas=None, ys=None, chunks: int = 1) -> SplitSearch:
    """The integer split ``(α, y)`` with the smallest simulated time.

    Default search: every level ``y`` in ``0..D`` with ``α`` over
    ``{0, 1/m, ..., 1}`` (``m = a**y``) when ``m ≤ 64``, else over 65 evenly
    spaced task counts; then a pattern search from the best point with
    task-count steps halving down to 1 and moves to ``y ± 1`` at the same
    ``α``, until no neighbour is better: one task more or less, the level
    below with ``a`` times the tasks, the level above with ``⌊c/a⌋`` or
    ``⌈c/a⌉`` of them.  With ``alphas`` and/or ``ys`` given, exactly that grid is
    evaluated (no refinement).  Of equally fast splits the one moving fewer
    bytes wins (equal totals arise when the device's time is set by its
    unsaturated levels; fewer bytes then means a better balanced split).  A
    ``K`` deeper than a candidate's ``y`` is used as given; shallower ones
    fall back to the default cut-off.  ``chunks``: the pieces the device's data is
    copied in (:func:`copy_chunks`; every candidate is priced with that overlap).
    """
    eb, c = _check_run_options(element_bytes, contention)
    chunks = _check_chunks(chunks)
    D = _tree(problem).D
    a = problem.a
    if K is not None:
        K = _check_level(K, "K", 0, D)
    seen: dict[tuple[int, int], Schedule] = {}

    def evaluate(y: int, cpu: int) -> Schedule:
        key = (y, cpu)
        if key not in seen:
            k = K if K is not None and K >= y else None
            seen[key] = _simulate(problem, machine, cpu, y, k, eb, c, chunks)
        return seen[key]

    user_grid = alphas is not None or ys is not None
    levels = list(range(D + 1)) if ys is None else [_check_level(v, "y", 0, D) for v in ys]
    if not levels:
        raise ValueError("ys is empty: expected at least one level; pass ys=None for all levels")
    user_alphas = None if alphas is None else [_check_alpha(v) for v in alphas]
    if user_alphas is not None and not user_alphas:
        raise ValueError("alphas is empty: expected at least one fraction; pass alphas=None")
    best: Schedule | None = None
    for y in levels:
        m = a ** y
        if user_alphas is not None:
            counts = sorted({tasks_on_cpu(v, m) for v in user_alphas})
        elif m <= 64:
            counts = range(m + 1)
        else:
            counts = sorted({round(j * m / 64) for j in range(65)})
        for cpu in counts:
            s = evaluate(y, cpu)
            if best is None or _better(s, best):
                best = s
    if not user_grid:
        y, cpu = best.y, best.cpu_tasks
        step = max(1, a ** y // 64)
        while True:
            moved = False
            moves = [(y, cpu - step), (y, cpu + step)]
            if step == 1:
                if y > 0:
                    moves += [(y - 1, cpu // a), (y - 1, -(-cpu // a))]
                if y < D:
                    moves.append((y + 1, cpu * a))
            for ny, ncpu in moves:
                if 0 <= ncpu <= a ** ny:
                    s = evaluate(ny, ncpu)
                    if _better(s, best):
                        best, y, cpu, moved = s, ny, ncpu, True
                        break
            if not moved:
                if step == 1:
                    break
                step = max(1, step // 2)
    cands = tuple(SplitCandidate(k[0], k[1], s.alpha, s.total_time) for k, s in seen.items())
    return SplitSearch(best, cands)


# ---------------------------------------------------------------------------
# plan: what `hpu plan` and `.plan()` report
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelShare:
    """One level of the chosen division: its work and the share the device runs."""

    index: int
    leaves: bool
    tasks: float
    size: float
    work: float
    device_fraction: float


@dataclass(frozen=True)
class Plan:
    """What the model chose, and why.

    ``alpha`` and ``y`` are the model's continuous values (advanced: ``α*`` and
    ``y(α*)``; basic: ``0`` and ``log_a(p/γ)``); ``gpu_work_fraction`` the
    device's share of the work by the continuous model.  ``transfer_level`` is
    the integer level the runtime splits at (None: the device is not used),
    with ``split_alpha`` (``cpu_tasks / a**transfer_level``) and ``cutoff_level``
    ``K`` from the simulator.  Times in ``time_unit``: ``predicted_time`` of
    that split, ``cpu_only_time`` (all ``p`` cores, no device),
    ``device_only_time`` (everything on the device, transfers included),
    ``sequential_time`` (one core), ``t_cpu``/``t_gpu`` the model's ``T_c``
    and ``T_g`` (advanced) or the per-level sums (basic).  ``levels`` has one
    :class:`LevelShare` per level for pictures.
    """

    strategy: str
    alpha: float
    y: float
    transfer_level: int | None
    gpu_work_fraction: float
    split_alpha: float
    cutoff_level: int | None
    predicted_time: float
    cpu_only_time: float
    device_only_time: float
    sequential_time: float
    t_cpu: float
    t_gpu: float
    time_unit: str
    p: float
    g: float
    gamma: float
    n: int
    a: int
    b: float
    cost: str
    height: float
    uses_device: bool
    reason: str
    levels: tuple[LevelShare, ...] = field(repr=False)
    #: ``(cpu, device)`` tasks per level ``0..cutoff_level`` of the balanced tree: the split
    #: the run executes (levels above ``transfer_level`` are the CPU's; a real tree with base
    #: cases above K has fewer tasks, in the same proportions).
    tasks: tuple[tuple[int, int], ...] = ()
    #: the predicted phases of the chosen split (cpu share, upload, device share, download,
    #: upper levels), in ``time_unit``
    phases: tuple[Phase, ...] = field(default=(), repr=False)
    #: levels ``0..cutoff_level`` whose CPU leaf/combine phase runs on the calling thread
    #: (too little work to pay for a parallel region; :func:`hpu._overheads.serial_levels`).
    #: How the run executes the plan, not the model's division: left out of ``==``.
    serial_levels: tuple[int, ...] = field(default=(), compare=False)
    #: the predicted time of each level on each side of the chosen split (:class:`LevelTime`),
    #: what ``hpu run --explain`` sets beside the measured times
    level_times: tuple[LevelTime, ...] = field(default=(), repr=False)
    #: the transfer cost of the chosen split, one way (``λ + δ·bytes``, in ``time_unit``)
    transfer_one_way: float = 0.0
    #: what a measured strategy measured (``hpu._strategies``): ``"minmax"``: ``(k, c(k),
    #: g(m−k))`` per sampled split, in seconds; ``"adaptive"``: ``(cpu_rate, device_rate)``
    #: per remembered run, in problems per second; empty for the model's strategies
    samples: tuple[tuple[float, ...], ...] = field(default=(), repr=False)
    #: the pieces the device's data is copied in, pipelined with its kernels
    #: (:func:`copy_chunks`; 1: one upload before, one download after)
    transfer_chunks: int = 1
    #: bytes of host memory the run is predicted to allocate at its peak, and how that was
    #: predicted (a functional function's device form, :mod:`hpu._functional_dps`: probes on
    #: prefixes of its input); None where the plan does not predict it.  Not the division:
    #: left out of ``==``.
    peak_memory: int | None = field(default=None, compare=False)
    memory_basis: str = field(default="", compare=False)

    @property
    def speedup(self) -> float:
        """``cpu_only_time / predicted_time``: the gain over the CPU alone."""
        return self.cpu_only_time / self.predicted_time if self.predicted_time > 0 else 1.0

    def to_dict(self) -> dict:
        """A JSON-ready dict (``levels`` as a list of dicts, ``speedup`` added)."""
        d = asdict(self)
        d["levels"] = [asdict(v) for v in self.levels]
        d["speedup"] = self.speedup
        return d


def _level_shares(problem: Problem, first: int | None, device_fraction: float):
    t = _tree(problem)
    out = []
    for i in range(t.D + 1):
        leaves = i == t.D
        tasks = t.leaves if leaves else float(problem.a) ** i
        size = 1.0 if leaves else problem.n / problem.b ** i
        work = tasks * (1.0 if leaves else problem.cost(size))
        frac = device_fraction if first is not None and i >= first else 0.0
        out.append(LevelShare(i, leaves, tasks, size, work, frac))
    return tuple(out)


#: A device slower than the CPU (γ·g <= p) is still given a share when the simulator
#: predicts at least this gain from both sides working at once (issue 14: PoCL on one
#: core beside Numba on the other); below it, 004's rule stands and the CPU works alone.
WEAK_DEVICE_MIN_GAIN = 1.05


def plan(problem: Problem, machine: Machine, strategy: str = "advanced", *, element_bytes: int = 4,
         contention: float = 1.0, rel_error: float = 0.0, chunks: int = 1) -> Plan:
    """The division for ``problem`` on ``machine`` by ``strategy`` (``"advanced"`` or ``"basic"``).

    Advanced: ``α*``, ``y`` from :func:`advanced_division`, the integer split
    from :func:`best_split` (the device is left out when the model keeps
    everything on the CPU, or when no split beats the CPU alone).  Basic:
    :func:`basic_division`'s level, simulated with ``α = 0`` at its
    ``transfer_level``.  ``rel_error``: the relative standard error of a
    predicted time (``Profile.time_rel_error``); a split whose predicted gain
    over the CPU alone lies within it (:func:`hpu._stats.within_noise`) is a
    tie, settled the same way every time -- the CPU alone -- and ``reason``
    says so, so that calibrations of one machine do not flip the plan; so are
    splits predicted within it of the fastest split (:func:`_settle_ties`: the
    largest ``α``, then the shallowest ``y``).  ``chunks``: the
    pieces the run copies the device's data in (:func:`copy_chunks`); every split, the
    device alone included, is priced with that overlap, and ``reason`` says so.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy = {strategy!r} is unknown: expected one of "
                         f"{', '.join(STRATEGIES)}; pass strategy='advanced'")
    eb, c = _check_run_options(element_bytes, contention)
    chunks = _check_chunks(chunks)
    t = _tree(problem)
    scale = machine.unit_scale
    cpu_only = _simulate(problem, machine, 1, 0, None, eb, c)
    dev_only = _simulate(problem, machine, 0, 0, None, eb, c, chunks)
    seq = total_work(problem) * scale
    if strategy == "advanced":
        div = advanced_division(problem, machine)
        alpha, y, frac, reason = div.alpha, div.y, div.gpu_work_fraction, div.reason
        t_cpu, t_gpu = div.t_cpu, div.t_gpu
        chosen = cpu_only
        if div.uses_device:
            search = best_split(problem, machine, element_bytes=eb, contention=c,
                                chunks=chunks)
            chosen, tie = _settle_ties(problem, machine, search, eb, c, rel_error, chunks)
            reason += tie
            if chosen.device_tasks == 0:
                # the CPU alone, as every other "everything on the CPU" plan runs it: the
                # search's best without the device could be one at a deep level y (K = 18,
                # 262144 tasks on the CPU: the main mergesort's hybrid ran 1.5x slower)
                chosen = cpu_only
                reason += ("; but no integer split beats the CPU alone in the simulator, "
                           "so the run keeps everything on the CPU")
        elif machine.gamma * machine.g <= machine.p and t.leaves > machine.p:
            # γ·g <= p says the device is not faster than the CPU; working at the same time
            # their speeds still add up (a sub-device beside Numba on the other cores: issue 14)
            search = best_split(problem, machine, element_bytes=eb, contention=c,
                                chunks=chunks)
            found, tie = _settle_ties(problem, machine, search, eb, c, rel_error, chunks)
            if found.device_tasks > 0 and found.total_time * WEAK_DEVICE_MIN_GAIN < cpu_only.total_time:
                chosen = found
                reason += (f"; but both sides working at once beat the CPU alone in the simulator "
                           f"({cpu_only.total_time / found.total_time:.3g}x at alpha = "
                           f"{found.alpha:.3g}, y = {found.y}), so the run splits there") + tie
    else:
        div = basic_division(problem, machine)
        alpha, y, frac, reason = 0.0, div.level, div.gpu_work_fraction, div.reason
        t_cpu = sum(r.t_cpu for r in div.levels if r.unit == "cpu")
        t_gpu = sum(r.t_gpu for r in div.levels if r.unit == "device")
        chosen = cpu_only
        if div.uses_device:
            chosen = _simulate(problem, machine, 0, div.transfer_level, None, eb, c, chunks)
    if chosen.device_tasks > 0 and rel_error > 0:
        from hpu._stats import within_noise

        if within_noise(chosen.total_time, cpu_only.total_time, rel_error):
            reason += (f"; the split's predicted gain ({cpu_only.total_time / chosen.total_time:.3g}x)"
                       f" is within the calibration's uncertainty (±{100 * rel_error:.2g} % per "
                       "prediction), a tie, which the plan always settles for the CPU alone")
            chosen = cpu_only
    reason += _overlap_note(problem, machine, chosen, eb, c, chunks)
    return _plan_of(problem, machine, strategy, chosen, alpha=alpha, y=y, frac=frac,
                    reason=reason, t_cpu=t_cpu, t_gpu=t_gpu, cpu_only=cpu_only,
                    dev_only=dev_only, seq=seq, chunks=chunks)


def _settle_ties(problem: Problem, machine: Machine, search: SplitSearch, eb: int, c: float,
                 rel_error: float, chunks: int = 1) -> tuple[Schedule, str]:
    """The split to run among those predicted within the calibration's uncertainty of the best.

    Splits whose predicted times differ by less than the measurement can tell
    apart (:func:`hpu._stats.within_noise` with ``rel_error``) are a tie: which
    is fastest is then decided by the noise of one calibration, and three
    calibrations of one machine gave three plans (issue 14).  A tie is settled
    by a fixed order instead: the largest CPU share ``α`` (the fewest bytes
    moved and the least work on the side the model knows less well), then the
    shallowest ``y``.  Returns the schedule and a sentence for ``reason``
    (empty when the fastest split stands alone or ``rel_error`` is 0).
    """
    best = search.best
    if rel_error <= 0 or best.device_tasks == 0:
        return best, ""
    from hpu._stats import within_noise

    near = [cand for cand in search.candidates
            if cand.cpu_tasks < problem.a ** cand.y
            and within_noise(cand.total_time, best.total_time, rel_error, sigmas=1.0)]
    pick = min(near, key=lambda cand: (-cand.alpha, cand.y, cand.cpu_tasks), default=None)
    if pick is None or len(near) < 2:
        return best, ""
    chosen = _simulate(problem, machine, pick.cpu_tasks, pick.y, None, eb, c, chunks)
    return chosen, (f"; {len(near)} splits are predicted within the calibration's uncertainty "
                    f"(±{100 * rel_error:.2g} % per prediction) of the fastest, a tie settled "
                    f"the same way every time: the largest CPU share, then the shallowest level "
                    f"(alpha = {chosen.alpha:.3g}, y = {chosen.y})")


def _split_tasks(problem: Problem, s: Schedule) -> tuple[tuple[int, int], ...]:
    a = problem.a
    out = [(a ** i, 0) for i in range(min(s.y, s.K))]
    for i in range(min(s.y, s.K), s.K + 1):
        grow = a ** (i - s.y)
        out.append((s.cpu_tasks * grow, s.device_tasks * grow))
    return tuple(out)


def _plan_of(problem, machine, strategy, chosen, *, alpha, y, frac, reason, t_cpu, t_gpu,
             cpu_only, dev_only, seq, split_alpha=None, chunks=1) -> Plan:
    t = _tree(problem)
    uses = chosen.device_tasks > 0
    first = chosen.y if uses else None
    levels = _level_shares(problem, first, chosen.device_tasks / problem.a ** chosen.y)
    if split_alpha is None:
        split_alpha = chosen.alpha if uses else 1.0
    return Plan(
        strategy=strategy, alpha=alpha, y=y, transfer_level=first, gpu_work_fraction=frac,
        split_alpha=split_alpha, cutoff_level=chosen.K,
        predicted_time=chosen.total_time, cpu_only_time=cpu_only.total_time,
        device_only_time=dev_only.total_time, sequential_time=seq, t_cpu=t_cpu, t_gpu=t_gpu,
        time_unit=machine.time_unit, p=machine.p, g=machine.g, gamma=machine.gamma,
        n=problem.n, a=problem.a, b=problem.b, cost=problem.cost.text, height=t.L,
        uses_device=uses, reason=reason, levels=levels, tasks=_split_tasks(problem, chosen),
        phases=chosen.phases, level_times=chosen.level_times,
        transfer_one_way=chosen.transfer_time / 2,
        transfer_chunks=chunks if uses else 1)


def given_plan(problem: Problem, machine: Machine, *, alpha: float, y: int | None,
               K: int | None = None, element_bytes: int = 4, contention: float = 1.0,
               reason: str = "the split was given", chunks: int = 1) -> Plan:
    """The plan of a split chosen by the caller (strategy ``"given"``).

    ``alpha`` of level ``y``'s tasks stay on the CPU (``⌈α·a**y⌉``, as
    :func:`tasks_on_cpu` rounds), the rest go to the device; ``y`` beyond the
    tree is clamped to its depth and, with ``K`` given, to ``K`` (the split
    cannot start below the cut-off).  ``y=None`` means level 0.  ``K=None``:
    :func:`cutoff_level`.  ``split_alpha`` is ``alpha`` exactly as given.  ``chunks``:
    the pieces the run copies the device's data in (:func:`copy_chunks`).
    """
    alpha = _check_alpha(alpha)
    eb, c = _check_run_options(element_bytes, contention)
    chunks = _check_chunks(chunks)
    D = _tree(problem).D
    yy = 0 if y is None else min(int(y), D)
    given_K = None if K is None else int(K)
    if K is not None:
        K = min(int(K), D)   # the model's tree ends at D; a deeper K is kept as given below
        yy = min(yy, K)
    if y is not None and int(y) > yy:
        # (said: the report beside it names the y given)
        reason += (f"; y = {int(y)} is below the tree's last level, so the transfer is at "
                   f"level {yy}")
    cpu = tasks_on_cpu(alpha, problem.a ** yy)
    chosen = _simulate(problem, machine, cpu, yy, K, eb, c, chunks)
    cpu_only = _simulate(problem, machine, 1, 0, K, eb, c)
    dev_only = _simulate(problem, machine, 0, 0, K, eb, c, chunks)
    reason += _overlap_note(problem, machine, chosen, eb, c, chunks)
    plan = _plan_of(problem, machine, "given", chosen, alpha=alpha, y=float(yy),
                    frac=chosen.device_work_fraction, reason=reason, t_cpu=chosen.cpu_share_time,
                    t_gpu=chosen.device_share_time, cpu_only=cpu_only, dev_only=dev_only,
                    seq=total_work(problem) * machine.unit_scale, split_alpha=alpha,
                    chunks=chunks)
    if given_K is not None and given_K > D:
        # the caller's K stands (a real tree may be deeper than the model's); the run stops
        # where every task is a base case
        plan = replace(plan, cutoff_level=given_K)
    return plan
