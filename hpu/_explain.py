"""Predicted against measured: the plan's time for each level and phase beside the run's.

Why
===

The planner chooses a split from predicted times (:func:`hpu.model.simulate`);
a plan that runs in twice its predicted time, or a choice that flips between
calibrations, is only diagnosable when the prediction and the measurement are
set side by side where they differ: per level, per phase, per side.  A
:class:`hpu.Run` carries the :class:`hpu.model.Plan` it executed
(``run.plan``, whose ``level_times`` are the model's per-level prediction)
and its measured :class:`hpu._run.LevelRecord` s, so :func:`explain` needs
nothing else (except, for a plan made in model units such as
``device="cpu"``'s, the seconds one unit takes).

What is compared
================

The model prices a level above the cut-off ``K`` as ``⌈m/w⌉·f(n/b**i)`` (the
divide and the combine) at the combine's measured rate for its size and, on
the device, the device's combine speed (:func:`hpu.model.combine_factor`), and
level ``K`` as whole subtrees; each share's contention falls on the levels
that run while the other side computes (:func:`hpu.model.contended_levels`),
so a row's error is that level's own.  It does not price
the runtime's bookkeeping phases ``count`` and ``fill`` (which tasks are base
cases, the children's parameters).  So a row's ``predicted_s`` is the model's
time on the ``combine`` and ``leaf`` rows, ``0`` on ``count``/``fill`` rows
(what the model assumes they cost), and a transfer row's is ``λ + δ·bytes``.
The measured ``download`` includes waiting for the device's kernels (the
host's clock stops when the copy returns), so its error says little alone.
The totals compare ``plan.predicted_time`` with ``run.seconds`` (the two sides
overlap, so rows do not add up to the total).
"""
from __future__ import annotations

from dataclasses import dataclass

from hpu._run import PHASES

__all__ = ["ExplainRow", "Explanation", "explain"]

_SIDES = ("cpu", "device", "link")


@dataclass(frozen=True)
class ExplainRow:
    """One phase of one level on one side: tasks planned and run, seconds predicted and measured.

    ``level`` is ``None`` on transfer rows (``phase`` ``"upload"`` or
    ``"download"``, ``side`` ``"link"``).  ``predicted_s`` is ``None`` when the
    plan's time unit is not seconds and no ``seconds_per_unit`` was given.
    """

    level: int | None
    phase: str
    side: str
    tasks_planned: int
    tasks_run: int
    predicted_s: float | None
    measured_s: float

    @property
    def error(self) -> float | None:
        """``(measured − predicted) / predicted`` (None without a positive prediction)."""
        if self.predicted_s is None or self.predicted_s <= 0:
            return None
        return (self.measured_s - self.predicted_s) / self.predicted_s


@dataclass(frozen=True)
class Explanation:
    """Every row, and the run's total predicted and measured (``predicted_total_s`` None:
    the plan is in model units and no ``seconds_per_unit`` was known)."""

    rows: tuple[ExplainRow, ...]
    predicted_total_s: float | None
    measured_total_s: float
    device: str
    alpha: float | None
    y: int | None
    K: int

    @property
    def error(self) -> float | None:
        """The total's relative error, ``(measured − predicted) / predicted``."""
        p = self.predicted_total_s
        return None if p is None or p <= 0 else (self.measured_total_s - p) / p

    def phase_totals(self) -> dict[tuple[str, str], tuple[float | None, float]]:
        """``{(phase, side): (predicted s, measured s)}`` summed over the levels."""
        out: dict[tuple[str, str], tuple[float | None, float]] = {}
        for r in self.rows:
            p, m = out.get((r.phase, r.side), (0.0, 0.0))
            p = None if p is None or r.predicted_s is None else p + r.predicted_s
            out[(r.phase, r.side)] = (p, m + r.measured_s)
        return out

    def table(self) -> str:
        """A fixed-width table for a terminal: one line per row, per phase and the total."""
        def num(v):
            return "-" if v is None else f"{v:.6f}"

        def pct(p, m):
            if p is None or p <= 0:
                return "-" if p is None or m == 0 else "unpriced"
            return f"{100 * (m - p) / p:+.1f} %"

        head = ("level", "phase", "side", "tasks planned", "tasks run", "predicted s",
                "measured s", "error")
        body = [("-" if r.level is None else str(r.level), r.phase, r.side,
                 str(r.tasks_planned), str(r.tasks_run), num(r.predicted_s), num(r.measured_s),
                 pct(r.predicted_s, r.measured_s)) for r in self.rows]
        per_phase = [("all", phase, side, "", "", num(p), num(m), pct(p, m))
                     for (phase, side), (p, m) in self.phase_totals().items()]
        total = [("total", "run", "", "", "", num(self.predicted_total_s),
                  num(self.measured_total_s), pct(self.predicted_total_s, self.measured_total_s))]
        widths = [max(len(row[i]) for row in (head, *body, *per_phase, *total))
                  for i in range(len(head))]

        def fmt(row):
            return "  ".join(c.rjust(w) if i not in (1, 2) else c.ljust(w)
                             for i, (c, w) in enumerate(zip(row, widths))).rstrip()

        rule = fmt(tuple("-" * w for w in widths))
        y = "-" if self.y is None else self.y
        alpha = "-" if self.alpha is None else f"{self.alpha:.4g}"
        return "\n".join([f"predicted vs measured ({self.device}: alpha = {alpha}, y = {y}, "
                          f"K = {self.K}); error = (measured - predicted) / predicted",
                          fmt(head), rule, *(fmt(r) for r in body), rule,
                          *(fmt(r) for r in per_phase), rule, *(fmt(r) for r in total)])


def explain(run, *, seconds_per_unit: float | None = None) -> Explanation:
    """Set ``run.plan``'s predicted time of each level, phase and side beside ``run``'s.

    ``seconds_per_unit``: the seconds of one model unit, needed only when the
    plan was made in model units (``device="cpu"`` plans with Numba's threads;
    pass the profile's ``cpu_seconds_per_element``); ignored for a plan in
    seconds.  Raises ``ValueError`` for a run without a plan (``HPU_DISABLE``).
    """
    plan = getattr(run, "plan", None)
    if plan is None:
        raise ValueError(f"run.plan is None (device={run.device!r}): expected a run made by hpu's "
                         "runtime, which records the plan it executed; a run under HPU_DISABLE=1 "
                         "has no plan to compare with -- unset HPU_DISABLE")
    if plan.time_unit == "s":
        scale: float | None = 1.0
    elif seconds_per_unit is not None:
        scale = float(seconds_per_unit)
        if not scale > 0:
            raise ValueError(f"seconds_per_unit = {seconds_per_unit!r} is not positive: expected "
                             "the seconds one model unit takes (a profile's "
                             "cpu_seconds_per_element); pass a number > 0")
    else:
        scale = None

    predicted: dict[tuple[int, str, str], float] = {}
    for lt in plan.level_times:
        key = (lt.level, lt.phase, lt.side)
        predicted[key] = predicted.get(key, 0.0) + lt.seconds
    measured: dict[tuple[int, str, str], list] = {}
    for rec in run.levels:
        for side, tasks, secs in (("cpu", rec.cpu_tasks, rec.cpu_seconds),
                                  ("device", rec.gpu_tasks, rec.gpu_seconds)):
            if tasks or secs:
                acc = measured.setdefault((rec.level, rec.phase, side), [0, 0.0])
                acc[0] += tasks
                acc[1] += secs

    def planned_tasks(level: int, phase: str, side: str) -> int:
        if level >= len(plan.tasks):
            return 0
        cpu, dev = plan.tasks[level]
        if phase in ("count", "fill"):
            # the host counts and fills every task of a level, the device's share included
            return cpu + dev if side == "cpu" else 0
        return cpu if side == "cpu" else dev

    keys = set(measured) | {k for k, v in predicted.items() if v > 0 or k[1] == "leaf"}
    order = {p: i for i, p in enumerate(PHASES)}
    rows = []
    for level, phase, side in sorted(keys, key=lambda k: (k[0], order.get(k[1], 9),
                                                          _SIDES.index(k[2]))):
        got = measured.get((level, phase, side), (0, 0.0))
        pred = predicted.get((level, phase, side), 0.0)
        rows.append(ExplainRow(level, phase, side, planned_tasks(level, phase, side), got[0],
                               None if scale is None else pred * scale, got[1]))
    if plan.uses_device or run.transfers:
        one_way = None if scale is None else plan.transfer_one_way * scale
        for phase, direction in (("upload", "host->device"), ("download", "device->host")):
            secs = sum(t.seconds for t in run.transfers if t.direction == direction)
            count = sum(1 for t in run.transfers if t.direction == direction)
            rows.append(ExplainRow(None, phase, "link", int(plan.uses_device), count,
                                   None if one_way is None else
                                   (one_way if plan.uses_device else 0.0), secs))
    total = None if scale is None else plan.predicted_time * scale
    return Explanation(tuple(rows), total, float(run.seconds), run.device, run.alpha, run.y,
                       run.K)
