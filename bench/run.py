"""Reproduce 004's experiments on this machine: results.json and one PNG per figure.

What it does, in one process (004 §6.4-6.5, issue 7):

1. **Calibration** (Figures 5 and 6).  The profile the model plans with: a
   stored *measured* profile for this host and device when there is one
   (reused, and the report says so), otherwise a new calibration (quick with
   ``--quick``) that is saved where ``hpu calibrate`` would save it, so that
   hpu's runtime plans with the same numbers.  ``--calibration`` picks another
   source (``builtin`` values, a fresh ``quick``/``full`` calibration that is
   not saved, or ``--profile FILE``).
2. **Measurements** at every n: int32 keys uniform in [0, 2n) as in 004, the
   same keys for every method; ``mergesort.sequential`` (the recursive
   function on one core: the baseline of every speed-up), ``np.sort`` default
   and stable, ``mergesort.run`` on ``device="cpu"`` and ``"gpu"``, the
   hybrid run with the model's choice, and the α × y grid of Figure 7
   (``device="hybrid", alpha=α, y=y``).  Each configuration runs once untimed
   (Numba compilation, PoCL's per-shape kernel specialisation, page faults)
   and then ``--repeat`` times on a fresh copy of the keys (copied outside the
   timed region); every output, the warm-up's included, is compared with
   ``np.sort`` and a mismatch aborts the whole run before anything is written.
3. **The model** at every n from the same profile: α*, y, the integer split
   the runtime takes, its predicted time and the speed-up that implies over
   one core, and the simulator's prediction for every grid point.
4. **Output**: ``DIR/results.json`` in the format of ``notebooks/README.md``
   (checked with :func:`bench._schema.validate_results` before it is
   written; ``notebooks/03_experiments.ipynb`` plots it), plus keys of its
   own: ``anchors`` (the table below), ``model``, ``model_choice`` (the
   model's-choice runs, kept out of ``measurements`` so that Figure 7's curves
   hold grid points only), ``calibration`` (the profile's raw sweeps),
   ``settings``, ``elapsed_s`` and ``figures``; the profile itself as
   ``DIR/profile.json``; the figures as PNGs (``bench/_figures.py``); and a
   table per n on stdout.  Progress goes to stderr.

**The heterogeneous configuration** (``--fission N``, issue 14): the OpenCL
side runs on a sub-device of N compute units (``HPU_DEVICE=cpu@N``, device
fission) and Numba on the remaining cores (unless ``NUMBA_NUM_THREADS`` says
otherwise), for every method alike; the profile is the sub-device's own.  On
the usual machine, where the only device is PoCL on the CPU's own cores, this
is the one configuration where the two sides really run side by side, and so
where Figures 7, 8 and 10 can show a split beating both.  Its output goes to
``bench/out/fission-N`` unless ``--out`` says otherwise, and every figure says
which configuration it shows.  Then, in a child process (Numba's threads and the
device are fixed per process), the same options measure the default
configuration (every core, the whole device) into ``bench/out`` (``--default-out``),
and ``results.md`` there is the README's results section for both
configurations and the projection (:func:`summary_markdown`): one command,
``python bench/run.py --quick --fission 1``, makes everything the README and the
experiments notebook show (``--fission-only`` skips the default configuration).

**A projection for a discrete GPU** (:func:`projection`): what the model
predicts for mergesort on 004's two machines (their own p, g and γ, §6.4) with
a PCIe 3.0 x16 transfer cost, clearly labelled as a projection -- nothing is
measured -- in ``results["projection"]`` and ``fig11_projection.png``.  Each
number's source is in :data:`PUBLISHED` and :data:`PCIE3_X16`.

Why the model's-choice run is sometimes explicit: hpu's runtime plans with
the *active* profile (``hpu._profile.active_profile``).  When that is the
profile used here, the run is ``mergesort.run(..., device="hybrid")`` with
α and y left to the runtime (planning cost included, as a user pays it);
otherwise (``--calibration builtin`` next to a stored profile, ``--profile``)
the same choice is passed as ``alpha=``/``y=``.  ``model_choice[*].via`` says
which.

    python bench/run.py --quick                  # n = 2^16..2^22, 9 α x 6 y, under 2 minutes
    python bench/run.py                          # n = 2^20..2^26, fine grid up to 2^24 (est. 40 min)
    python bench/run.py --sizes 1048576 --alphas 0 0.5 1 --ys 1 2 --repeat 1 --out /tmp/b
    python bench/run.py --plot-only --out bench/out   # redraw the PNGs from results.json
    NUMBA_NUM_THREADS=1 python bench/run.py --quick --fission 1   # device on 1 core, Numba on 1
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere in the checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench._schema import validate_results  # noqa: E402

__all__ = ["Grid", "Settings", "WrongResult", "QUICK", "FULL", "machine_facts", "choose_profile",
           "model_predictions", "predict_point", "share_seconds", "time_method", "measure", "anchors",
           "render", "build_results", "main", "PUBLISHED", "PCIE3_X16", "projection",
           "configuration", "use_fission", "summary_markdown"]

WRITER = "bench/run.py"
ALGORITHM = "mergesort"
DTYPE = np.int32


@dataclass(frozen=True)
class Grid:
    """The (α, y) points of Figure 7 measured at one n."""

    alphas: tuple[float, ...]
    ys: tuple[int, ...]

    def points(self) -> list[tuple[float, int]]:
        return [(a, y) for y in self.ys for a in self.alphas]


@dataclass(frozen=True)
class Settings:
    """What one run measures: sizes, the fine grid (n <= ``fine_max_n``), the coarse one above."""

    sizes: tuple[int, ...]
    fine: Grid
    coarse: Grid
    fine_max_n: int
    repeat: int
    seed: int = 2014

    def grid(self, n: int) -> Grid:
        return self.fine if n <= self.fine_max_n else self.coarse

    @property
    def fig7_n(self) -> int:
        """Figure 7's n: the largest size measured on the fine grid (else the largest)."""
        fine = [n for n in self.sizes if n <= self.fine_max_n]
        return max(fine) if fine else max(self.sizes)


_EIGHTHS = tuple(k / 8 for k in range(9))
_TENTHS = tuple(round(k / 10, 1) for k in range(11))
_QUARTERS = (0.0, 0.25, 0.5, 0.75, 1.0)

#: --quick: a few minutes on two cores, most of it the grid at 2^22
QUICK = Settings(sizes=tuple(1 << k for k in (16, 18, 20, 22)), fine=Grid(_EIGHTHS, (1, 2, 3, 4, 5, 6)),
                 coarse=Grid(_EIGHTHS, (1, 2, 3, 4, 5, 6)), fine_max_n=1 << 22, repeat=3)
#: the full run: 004's range of n (2^20..2^26); the fine grid up to 2^24 (Figure 7's n, as in
#: 004), a coarse one above, where each run takes seconds (an estimated 40 minutes on two cores)
FULL = Settings(sizes=tuple(1 << k for k in range(20, 27)), fine=Grid(_TENTHS, tuple(range(1, 13))),
                coarse=Grid(_QUARTERS, (2, 4, 6, 8, 10, 12)), fine_max_n=1 << 24, repeat=3)


class WrongResult(Exception):
    """A method's output differs from ``np.sort`` of the same keys."""


# ----------------------------------------------------------------- progress

class _Say:
    """Progress lines on stderr, each with the seconds since the start."""

    def __init__(self, quiet: bool = False):
        self.t0 = time.perf_counter()
        self.quiet = quiet

    def __call__(self, msg: str) -> None:
        if not self.quiet:
            print(f"[{time.perf_counter() - self.t0:7.1f} s] {msg}", file=sys.stderr, flush=True)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def _log2(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else f"{n:,}"


# --------------------------------------------------------------- the machine

def _load_average():
    """1, 5 and 15 minute load averages: other work on the same cores moves every number here."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def machine_facts(device) -> dict:
    """CPU model, cores, the OpenCL device (``pyopencl.Device``), Python and package versions."""
    import llvmlite
    import matplotlib
    import numba
    import pyopencl
    import scipy

    import hpu

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts = {
        "cpu": cpu,
        "cores": os.cpu_count() or 1,
        "numba_threads": numba.get_num_threads(),
        "opencl_device": _device_label(device) if device is not None else None,
        "opencl_platform": device.platform.name.strip() if device is not None else None,
        "opencl_driver": device.driver_version.strip() if device is not None else None,
        "opencl_device_type": pyopencl.device_type.to_string(device.type) if device is not None else None,
        "opencl_compute_units": int(device.max_compute_units) if device is not None else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": {"hpu": hpu.__version__, "numpy": np.__version__, "numba": numba.__version__,
                     "llvmlite": llvmlite.__version__, "pyopencl": pyopencl.VERSION_TEXT,
                     "scipy": scipy.__version__, "matplotlib": matplotlib.__version__},
        "load_average_end": _load_average(),
    }
    return facts


def _device_label(device) -> str:
    from hpu._opencl._device import device_label

    return device_label(device)


# ------------------------------------------------------------- configuration

def use_fission(units: int, environ=None) -> str:
    """Ask for a sub-device of ``units`` compute units: ``HPU_DEVICE`` becomes ``<device>@units``.

    ``<device>`` is what ``HPU_DEVICE`` held (default ``cpu``).  Returns the new
    value.  Raises ValueError when ``units`` < 1 or ``HPU_DEVICE`` already asks
    for a sub-device.
    """
    env = os.environ if environ is None else environ
    if not isinstance(units, int) or units < 1:
        raise ValueError(f"--fission {units!r}: expected a number of compute units >= 1")
    base = (env.get("HPU_DEVICE") or "").strip() or "cpu"
    if "@" in base:
        raise ValueError(f"--fission {units} with HPU_DEVICE={base!r}, which already asks for a "
                         "sub-device; use one or the other")
    env["HPU_DEVICE"] = f"{base}@{units}"
    return env["HPU_DEVICE"]


def configuration(device) -> dict:
    """Which configuration a run measures: ``default`` or ``heterogeneous`` (a sub-device).

    ``label`` is the line every figure carries.
    """
    import numba

    from hpu._opencl._device import sub_device_units

    units = sub_device_units(device) if device is not None else None
    threads = numba.get_num_threads()
    if units is None:
        return {"kind": "default", "device_spec": os.environ.get("HPU_DEVICE") or None,
                "numba_threads": threads, "device_units": None,
                "label": f"default configuration: {threads} Numba threads beside the whole device"}
    return {"kind": "heterogeneous", "device_spec": os.environ.get("HPU_DEVICE") or None,
            "numba_threads": threads, "device_units": units,
            "label": (f"heterogeneous configuration (device fission): the device on {units} "
                      f"compute unit(s), Numba on {threads} thread(s)")}


# ------------------------------------------------------ projection (published)

#: 004's machines as the paper measured them (§6.4, Table 2): p = CPU cores,
#: g = work-items at the knee of Figure 5, 1/γ from Figure 6.
PUBLISHED = {
    "HPU1": {"p": 4, "g": 4096, "inv_gamma": 160,
             "what": "Core 2 Extreme Q6850 + Radeon HD 5970 (004 §6.4, Table 2; a PCIe 2.0 "
                     "card there)"},
    "HPU2": {"p": 4, "g": 1200, "inv_gamma": 65,
             "what": "AMD A6-3650 + Radeon HD 6530D (004 §6.4, Table 2; integrated there, "
                     "projected here as if behind PCIe)"},
}

#: PCIe 3.0 x16: 8 GT/s per lane with 128b/130b encoding (PCI-SIG, PCI Express Base
#: Specification 3.0) = 15.75 GB/s per direction in theory; 12 GB/s is what pinned-memory
#: copies typically reach (assumed here, about 3/4 of the theoretical rate); 10 µs per
#: transfer is an assumed driver latency, the order of one kernel launch.
PCIE3_X16 = {"seconds_per_byte": 1 / 12e9, "latency_s": 10e-6,
             "what": "PCIe 3.0 x16: 12 GB/s (of 15.75 GB/s theoretical, PCI-SIG 3.0), 10 µs latency "
                     "(assumed)"}

#: The projection's sizes: 004's range of n (2^16..2^26).
PROJECTION_SIZES = tuple(1 << k for k in range(16, 27))


def projection(cpu_seconds_per_unit: float, *, sizes=PROJECTION_SIZES, machines=None,
               transfer=None) -> dict:
    """What the model predicts for mergesort on a discrete GPU: a projection, nothing measured.

    For each of ``machines`` (default :data:`PUBLISHED`: 004's own p, g, γ)
    and each n: the model's plan with the ``transfer`` cost (default
    :data:`PCIE3_X16`) and without it (004's model leaves transfers out),
    the predicted speed-up over one core, α*, y and the runtime's integer
    split.  ``cpu_seconds_per_unit`` prices the model's work in seconds,
    which only matters next to the transfer cost: the caller passes this
    machine's measured one-core speed (``Profile.cpu_seconds_per_element``),
    so the CPU cores are assumed as fast as this machine's.
    """
    from hpu import model

    machines = PUBLISHED if machines is None else machines
    transfer = PCIE3_X16 if transfer is None else transfer
    if not (cpu_seconds_per_unit > 0 and math.isfinite(cpu_seconds_per_unit)):
        raise ValueError(f"cpu_seconds_per_unit={cpu_seconds_per_unit!r}; expected seconds > 0, "
                         "e.g. a profile's cpu_seconds_per_element")
    out = {"label": "PROJECTION from published parameters, not a measurement",
           "transfer": dict(transfer), "cpu_seconds_per_unit": cpu_seconds_per_unit,
           "cpu_source": "this machine's measured one-core mergesort (the profile)",
           "machines": {}}
    for name, m in machines.items():
        rows = []
        for n in sizes:
            row = {"n": n}
            for key, lat, spb in (("with_transfer", transfer["latency_s"], transfer["seconds_per_byte"]),
                                  ("without_transfer", 0.0, 0.0)):
                mach = model.Machine(p=m["p"], g=m["g"], gamma=1.0 / m["inv_gamma"], latency_s=lat,
                                     seconds_per_byte=spb, seconds_per_unit=cpu_seconds_per_unit)
                plan = model.plan(_problem(n), mach, element_bytes=ELEMENT_BYTES)
                row[key] = {"predicted_speedup": plan.sequential_time / plan.predicted_time,
                            "predicted_speedup_over_cpu": plan.speedup,
                            "alpha": plan.alpha, "y": plan.y, "uses_device": plan.uses_device,
                            "split_alpha": plan.split_alpha, "transfer_level": plan.transfer_level}
            rows.append(row)
        out["machines"][name] = {**m, "rows": rows}
    return out


# --------------------------------------------------------------- the profile

CALIBRATIONS = ("auto", "stored", "quick", "full", "builtin")


def choose_profile(mode: str, *, quick: bool, path=None, say=print):
    """The calibration profile to plan with, and a sentence saying where it came from.

    ``mode``: ``auto`` (the stored measured profile, else calibrate -- quickly
    when ``quick`` -- and save it as ``hpu calibrate`` would), ``stored``
    (only the stored one), ``quick``/``full`` (calibrate now, do not save),
    ``builtin`` (hpu's conservative built-in values).  ``path``: read this
    profile file instead (any mode).
    """
    from hpu import calibrate as cal
    from hpu._errors import ProfileError
    from hpu._profile import (
        Profile,
        autocalibrate_disabled,
        current_key,
        load_profile,
        profile_path,
        read_profile,
        save_profile,
    )

    if path is not None:
        profile = read_profile(path)
        note = f"read from {path} ({profile.source}, created {profile.created})"
        if profile.key != current_key():
            note += "; it was made for another host, device, driver or hpu version"
        return profile, note
    if mode == "builtin":
        return Profile.builtin(), "hpu's built-in values (nothing measured): Figures 5 and 6 are empty"
    if mode in ("auto", "stored"):
        stored = load_profile()          # a stale or corrupt one raises ProfileError: never used silently
        if stored is not None and stored.source == "measured":
            return stored, (f"reused the stored measured profile {profile_path()} "
                            f"({'quick' if stored.quick else 'full'} calibration of {stored.created})")
        if mode == "stored":
            raise ProfileError(f"there is no stored measured profile at {profile_path()}; run "
                               "`hpu calibrate`, or pass --calibration auto or quick")
    full = mode == "full" or (mode == "auto" and not quick)
    say(f"calibrating ({'full' if full else 'quick'}): 004's Figures 5 and 6 ...")
    t0 = time.perf_counter()
    profile = cal.calibrate(quick=not full, progress=False)
    note = f"calibrated now ({'full' if full else 'quick'}, {time.perf_counter() - t0:.0f} s)"
    if mode == "auto" and not autocalibrate_disabled():
        saved = save_profile(profile)
        note += f" and saved to {saved}, where hpu's runtime reads it"
    else:
        note += "; not saved"
    return profile, note


def _active_is(profile) -> bool:
    """True when hpu's runtime would plan with ``profile`` (so alpha=None, y=None uses it)."""
    from hpu._errors import HpuError
    from hpu._profile import active_profile

    try:
        return active_profile(autocalibrate=False) == profile
    except HpuError:
        return False


# ------------------------------------------------------------------ the model

def _problem(n: int):
    from algorithms.mergesort import mergesort
    from hpu import model

    spec = mergesort._parse()
    return model.Problem(a=spec.a, b=spec.b, cost=spec.cost, n=n)


#: bytes per element of the arrays a task moves (a and tmp), as ``DivideAndConquer.plan`` counts them
ELEMENT_BYTES = 2 * np.dtype(DTYPE).itemsize


def model_predictions(profile, n: int) -> dict:
    """The model's plan for n keys from ``profile`` (the grid's predictions come later).

    The same computation as ``mergesort.plan(a, tmp, 0, n)`` when ``profile``
    is the active one: ``hpu._plan.model_plan`` with the profile's machine, its
    contention and the bytes of ``a`` and ``tmp`` per element, then its fixed costs
    weighed as a run weighs them (``hpu._plan._finish``: a problem too small to pay for
    a parallel level runs as one task).  ``choice_alpha``/``choice_y`` are what the runtime runs for that plan
    (``hpu._hybrid.choose_split``: α = 1 at y = 0 when the device is left out).
    """
    from hpu import _overheads
    from hpu._plan import _finish, model_plan  # the planner a run uses

    plan = model_plan(_problem(n), profile.machine(), "advanced", ELEMENT_BYTES,
                      profile.contention, profile.time_rel_error)
    plan = _finish(plan, _overheads.overheads_of(profile), small=True)
    if plan.uses_device and plan.transfer_level is not None:
        choice_alpha, choice_y = float(plan.split_alpha), int(plan.transfer_level)
    else:
        choice_alpha, choice_y = 1.0, 0
    return {
        "n": n, "time_unit": plan.time_unit, "strategy": plan.strategy,
        "alpha": plan.alpha, "y": plan.y, "gpu_work_fraction": plan.gpu_work_fraction,
        "transfer_level": plan.transfer_level, "split_alpha": plan.split_alpha,
        "cutoff_level": plan.cutoff_level, "uses_device": plan.uses_device,
        "choice_alpha": choice_alpha, "choice_y": choice_y,
        "predicted_s": plan.predicted_time, "sequential_s": plan.sequential_time,
        "cpu_only_s": plan.cpu_only_time, "device_only_s": plan.device_only_time,
        "predicted_speedup": plan.sequential_time / plan.predicted_time,
        "predicted_speedup_over_cpu": plan.speedup,
        "reason": plan.reason, "grid": [],
    }


def predict_point(profile, n: int, alpha: float, y: int) -> dict:
    """The simulator's time for the split (α, y) of n keys, and its speed-up over one core.

    ``y`` should be the level the run split at (``Run.y``: the runtime clamps
    a requested y to its cut-off level); it is also kept within the tree.
    """
    from hpu import model

    problem = _problem(n)
    machine = profile.machine()
    y = max(0, min(int(y), math.ceil(problem.height - 1e-9)))
    s = model.simulate(problem, machine, alpha=alpha, y=y, element_bytes=ELEMENT_BYTES,
                       contention=profile.contention)
    seq = model.total_work(problem) * machine.unit_scale
    return {"alpha": alpha, "y": y, "predicted_s": s.total_time, "predicted_speedup": seq / s.total_time}


# ------------------------------------------------------------------- timing

def _mergesort():
    """The algorithm under test (a function, so that tests can substitute a broken one)."""
    from algorithms.mergesort import mergesort

    return mergesort


def share_seconds(run) -> tuple[float, float]:
    """The CPU's and the device's seconds in the levels both work on (``level >= run.y``).

    ``leaf`` and ``combine`` records only, as ``notebooks/README.md`` defines
    ``cpu_share_s``/``device_share_s``; ``y`` is 0 for ``device="gpu"``.
    """
    y = run.y or 0
    rows = [r for r in run.levels if r.level >= y and r.phase in ("leaf", "combine")]
    return sum(r.cpu_seconds for r in rows), sum(r.gpu_seconds for r in rows)


def _call(method: str, a, tmp, alpha=None, y=None):
    """Run one method on ``a`` (``tmp`` is scratch); return (sorted output, Run or None)."""
    sorter = _mergesort()
    n = a.size
    if method == "sequential":
        sorter.sequential(a, tmp, 0, n)
        return a, None
    if method == "np.sort":
        return np.sort(a), None
    if method == "np.sort stable":
        return np.sort(a, kind="stable"), None
    if method in ("cpu", "gpu"):
        return a, sorter.run(a, tmp, 0, n, device=method)
    if method == "hybrid":
        return a, sorter.run(a, tmp, 0, n, device="hybrid", alpha=alpha, y=y)
    raise ValueError(f"unknown method {method!r}")


def _plan_seconds(sorter, keys, repeat: int = 3) -> float:
    """Median seconds of ``sorter.plan`` for these keys: what a run with α, y left to the model
    spends planning (profile lookup and the model) before it sorts anything."""
    a, tmp = np.empty_like(keys), np.empty_like(keys)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sorter.plan(a, tmp, 0, a.size)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _describe(method, alpha, y, n) -> str:
    split = "" if method != "hybrid" else (
        " with the model's alpha, y" if alpha is None else f" alpha={alpha:g} y={y}")
    return f"{method}{split} at n = {n:,}"


def time_method(method: str, keys, expected, repeat: int, *, alpha=None, y=None) -> dict:
    """One untimed warm-up and ``repeat`` timed runs of ``method``, each on a fresh copy of ``keys``.

    Returns the record of ``notebooks/README.md`` (without ``n``) plus the
    last run's split (``run_alpha``, ``run_y``, ``K``, tasks, transfer bytes,
    fallbacks).  Raises :class:`WrongResult` when any run's output differs from
    ``expected``.
    """
    n = keys.size
    a = np.empty_like(keys)
    tmp = np.empty_like(keys)
    seconds, shares, runs = [], [], []
    for rep in range(repeat + 1):               # rep 0 is the warm-up
        np.copyto(a, keys)                      # outside the timed region
        t0 = time.perf_counter()
        out, run = _call(method, a, tmp, alpha, y)
        elapsed = time.perf_counter() - t0
        if not np.array_equal(out, expected):
            which = "warm-up" if rep == 0 else f"repeat {rep}"
            if out.shape == expected.shape:
                bad = int(np.argmax(out != expected))
                where = f"first difference at index {bad}: {out[bad]}, np.sort gives {expected[bad]}"
            else:
                where = f"shape {out.shape}, np.sort gives {expected.shape}"
            raise WrongResult(f"{_describe(method, alpha, y, n)} sorted wrongly ({which}; {where})")
        if rep:
            seconds.append(elapsed)
            if run is not None:
                shares.append(share_seconds(run))
                runs.append(run)
    record = {"method": method, "alpha": alpha, "y": y, "seconds": seconds,
              "median_s": statistics.median(seconds), "cpu_share_s": None, "device_share_s": None}
    if method in ("gpu", "hybrid"):
        record["cpu_share_s"] = statistics.median(s[0] for s in shares)
        record["device_share_s"] = statistics.median(s[1] for s in shares)
    if runs:
        last = runs[-1]
        record.update({"run_alpha": last.alpha, "run_y": last.y, "K": last.K,
                       "cpu_tasks": last.cpu_tasks, "gpu_tasks": last.gpu_tasks,
                       "transfer_bytes": int(sum(t.bytes for t in last.transfers)),
                       "fallbacks": sorted({f for r in runs for f in r.fallbacks})})
    return record


def measure(settings: Settings, profile, say=print):
    """Time every method and grid point at every n; return (measurements, model_choice, model)."""
    from hpu._hybrid import HpuPerformanceWarning

    via_runtime = _active_is(profile)
    rng = np.random.default_rng(settings.seed)
    sorter = _mergesort()
    measurements, choices, models = [], [], []
    for n in settings.sizes:
        keys = rng.integers(0, 2 * n, n).astype(DTYPE)
        expected = np.sort(keys)
        grid = settings.grid(n)
        predicted = model_predictions(profile, n)
        models.append(predicted)
        configs = [("sequential", None, None), ("np.sort", None, None), ("np.sort stable", None, None),
                   ("cpu", None, None), ("gpu", None, None), ("model", None, None)]
        configs += [("hybrid", a, y) for a, y in grid.points()]
        total = len(configs)
        for k, (method, alpha, y) in enumerate(configs, 1):
            with warnings.catch_warnings():
                # "the model keeps everything on the CPU" is a decision, recorded in "model"
                warnings.simplefilter("ignore", HpuPerformanceWarning)
                if method == "model":
                    ask = (None, None) if via_runtime else (predicted["choice_alpha"], predicted["choice_y"])
                    rec = time_method("hybrid", keys, expected, settings.repeat, alpha=ask[0], y=ask[1])
                    rec.update(alpha=rec["run_alpha"], y=rec["run_y"] if rec["run_y"] is not None else 0,
                               via="runtime" if via_runtime else "explicit",
                               plan_s=_plan_seconds(sorter, keys) if via_runtime else None)
                else:
                    rec = time_method(method, keys, expected, settings.repeat, alpha=alpha, y=y)
            rec = {"n": n, **rec}
            (choices if method == "model" else measurements).append(rec)
            if method == "hybrid":
                point = predict_point(profile, n, alpha, rec["run_y"])
                point["y_requested"] = y
                predicted["grid"].append(point)
            label = method if method != "hybrid" else f"hybrid alpha={alpha:g} y={y}"
            if method == "model":
                label = f"hybrid, model's choice (alpha={rec['alpha']:.3g}, y={rec['y']}, {rec['via']}"
                label += f"; planning {1e3 * rec['plan_s']:.1f} ms)" if rec["plan_s"] is not None else ")"
            say(f"n = {_log2(n)} [{k}/{total}] {label}: {1e3 * rec['median_s']:.2f} ms")
            for f in rec.get("fallbacks", ()):
                say(f"  warning: {f}")
    return measurements, choices, models


# ------------------------------------------------------------------ reports

ANCHOR_ROWS = (
    ("sequential", "one core (mergesort.sequential)"),
    ("np.sort", "np.sort (default)"),
    ("np.sort stable", "np.sort (stable)"),
    ("cpu", "hpu, CPU only"),
    ("gpu", "hpu, GPU only"),
    ("model", "hpu hybrid, model's choice"),
    ("best", "hpu hybrid, best grid point"),
)


def anchors(measurements, choices) -> list[dict]:
    """Per n: each anchor's median, its (α, y) where it has one, and its speed-up over one core."""
    out = []
    for n in sorted({m["n"] for m in measurements}):
        recs = {m["method"]: m for m in measurements if m["n"] == n and m["method"] != "hybrid"}
        hybrid = [m for m in measurements if m["n"] == n and m["method"] == "hybrid"]
        recs["best"] = min(hybrid, key=lambda m: m["median_s"])
        model = [c for c in choices if c["n"] == n]
        if model:
            recs["model"] = model[0]
        base = recs["sequential"]["median_s"]
        rows = {}
        for key, label in ANCHOR_ROWS:
            if key in recs:
                m = recs[key]
                rows[key] = {"label": label, "median_s": m["median_s"], "speedup": base / m["median_s"],
                             "alpha": m["alpha"], "y": m["y"]}
        out.append({"n": n, "rows": rows})
    return out


def render(results) -> str:
    """The stdout table: the anchors at each n, and the model's prediction."""
    lines = []
    models = {m["n"]: m for m in results.get("model", [])}
    choices = {c["n"]: c for c in results.get("model_choice", [])}
    for block in results["anchors"]:
        n = block["n"]
        lines.append(f"n = {_log2(n)} ({n:,} int32 keys in [0, 2n)), median of {results['repeats']} "
                     f"after a warm-up")
        lines.append(f"  {'method':<32} {'alpha':>6} {'y':>3} {'median':>11} {'speed-up':>9}")
        for key, _ in ANCHOR_ROWS:
            r = block["rows"].get(key)
            if r is None:
                continue
            a = "-" if r["alpha"] is None else f"{r['alpha']:.3g}"
            y = "-" if r["y"] is None else str(r["y"])
            lines.append(f"  {r['label']:<32} {a:>6} {y:>3} {1e3 * r['median_s']:>8.2f} ms "
                         f"{r['speedup']:>8.2f}x")
        m = models.get(n)
        if m is not None:
            cont = (f"alpha* = {m['alpha']:.3g}, y = {m['y']:.3g}" if m["alpha"] < 1
                    else "alpha* = 1 (everything on the CPU)")
            split = (f"alpha = {m['choice_alpha']:.3g} at y = {m['choice_y']}" if m["uses_device"]
                     else "none (the CPU alone)")
            lines.append(f"  model: {cont}; the runtime's split: {split}; predicted speed-up "
                         f"{m['predicted_speedup']:.2f}x over one core")
        c = choices.get(n)
        if c is not None and c.get("plan_s") is not None:
            lines.append(f"  the model's-choice run left alpha and y to hpu's runtime: its time includes "
                         f"planning, {1e3 * c['plan_s']:.2f} ms per call")
        lines.append("")
    return "\n".join(lines)


def build_results(*, settings: Settings, quick: bool, profile, profile_note: str, device,
                  measurements, choices, models, elapsed_s: float, created: str,
                  load_average_start=None) -> dict:
    """The results dict of ``notebooks/README.md``, plus this script's own keys."""
    summary = profile.summary()
    prof = {k: summary[k] for k in ("p", "g", "gamma", "latency_s", "seconds_per_byte",
                                    "cpu_seconds_per_element", "device_shares_cpu", "source")}
    prof.update({k: summary[k] for k in ("device", "platform", "driver_version", "device_kind",
                                         "compute_units", "host", "created", "quick")})
    prof["contention"] = profile.contention
    prof["combine_gamma"] = profile.combine_gamma
    prof["combine_rates"] = [list(r) for r in profile.combine_rates]
    prof["time_rel_error"] = profile.time_rel_error
    machine = machine_facts(device)
    machine["load_average_start"] = load_average_start
    return {
        "schema": 1,
        "created": created,
        "configuration": configuration(device),
        "projection": projection(profile.cpu_seconds_per_element),
        "writer": WRITER,
        "quick": quick,
        "machine": machine,
        "profile": prof,
        "algorithm": ALGORITHM,
        "dtype": np.dtype(DTYPE).name,
        "repeats": settings.repeat,
        "measurements": measurements,
        # --- this script's own keys (the notebook ignores them)
        "elapsed_s": elapsed_s,
        "settings": {"sizes": list(settings.sizes), "fine_grid": asdict(settings.fine),
                     "coarse_grid": asdict(settings.coarse), "fine_max_n": settings.fine_max_n,
                     "repeat": settings.repeat, "seed": settings.seed, "fig7_n": settings.fig7_n,
                     "keys": "int32 uniform in [0, 2n)", "element_bytes": ELEMENT_BYTES},
        "anchors": anchors(measurements, choices),
        "model_choice": choices,
        "model": models,
        "calibration": {"note": profile_note, "source": profile.source,
                        "sweeps": asdict(profile.sweeps)},
    }


# ------------------------------------------------------- the README's section

def _fmt_s(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds >= 0.01 else f"{1e3 * seconds:.2f} ms"


def summary_markdown(configs, *, figures_base: str = "docs/results") -> str:
    """A README-ready section from ``results.json`` dicts, one per configuration, plus the projection.

    For each configuration (its label, date, machine and load average, the
    profile's γ, combine γ, contention and confidence): the largest n's
    anchors (seconds and speed-up over one core), the model's pick against the
    best grid point and the better single side, and the figures' paths under
    ``figures_base/<folder>``; then the projection for a discrete GPU from the
    first configuration's results, labelled as such, with its sources and
    the transfer cost it assumes.  Pure: the caller writes it to a file.
    """
    configs = [c for c in configs if c]
    if not configs:
        raise ValueError("no results to summarise; expected at least one results.json dict")
    first = configs[0]
    day = first["created"][:10]
    m = first["machine"]
    lines = [f"## Results on this machine ({day})", "",
             f"`python bench/run.py --quick --fission 1` on {m['cpu']} ({m['cores']} cores), "
             f"OpenCL {m['opencl_device']} ({m['opencl_platform']}, driver {m['opencl_driver']}), "
             f"hpu {m['packages']['hpu']}.  Speed-ups are over the one-core recursive mergesort "
             "compiled by Numba; medians after a warm-up; every output checked against `np.sort`.",
             ""]
    for res in configs:
        conf = res.get("configuration", {"label": "default configuration", "kind": "default"})
        prof = res["profile"]
        block = res["anchors"][-1]
        n = block["n"]
        rows = block["rows"]
        load = res["machine"].get("load_average_start") or [math.nan]
        load_end = res["machine"].get("load_average_end") or [math.nan]
        extra = []
        if prof.get("combine_gamma") is not None:
            extra.append(f"combine γ = {prof['combine_gamma']:.3g}")
        if prof.get("contention") is not None:
            extra.append(f"contention = {prof['contention']:.3g}")
        if prof.get("time_rel_error"):
            extra.append(f"predicted times ± {100 * prof['time_rel_error']:.2g} %")
        lines += [f"### {conf['label'][0].upper()}{conf['label'][1:]}", "",
                  f"Measured {res['created']} ({res['repeats']} timed runs per point, load average "
                  f"{load[0]:.2f} at the start, {load_end[0]:.2f} at the end); profile "
                  f"{prof['source']}{' (quick)' if prof.get('quick') else ''}: p = {prof['p']}, "
                  f"g = {prof['g']}, γ = {prof['gamma']:.3g}"
                  + (", " + ", ".join(extra) if extra else "") + ".", "",
                  f"| n = {_log2(n)} int32 | α | y | time | speed-up |", "|---|---|---|---|---|"]
        for key, label in ANCHOR_ROWS:
            r = rows.get(key)
            if r is None:
                continue
            a = "-" if r["alpha"] is None else f"{r['alpha']:.3g}"
            y = "-" if r["y"] is None else str(r["y"])
            lines.append(f"| {label} | {a} | {y} | {_fmt_s(r['median_s'])} | {r['speedup']:.2f}x |")
        lines.append("")
        if "model" in rows and "best" in rows:
            model_s, best_s = rows["model"]["median_s"], rows["best"]["median_s"]
            singles = [rows[k]["median_s"] for k in ("cpu", "gpu") if k in rows]
            said = (f"The model's pick ran {model_s / best_s:.3f}x the best grid point's time")
            if singles:
                said += (f" and gave {min(singles) / model_s:.2f}x the speed of the better single side "
                         f"({'CPU' if rows.get('cpu', {}).get('median_s') == min(singles) else 'device'} "
                         "only)")
            models = {mm["n"]: mm for mm in res.get("model", [])}
            if n in models:
                said += (f"; predicted {_fmt_s(models[n]['predicted_s'])}, measured "
                         f"{_fmt_s(model_s)} "
                         f"({100 * (model_s - models[n]['predicted_s']) / models[n]['predicted_s']:+.1f} %)")
            lines += [said + ".", ""]
        folder = "default" if conf.get("kind") == "default" else f"fission-{conf.get('device_units')}"
        for name in sorted(res.get("figures", {})):
            if name.startswith(("fig7", "fig8", "fig10")):
                lines.append(f"![{name} ({folder})]({figures_base}/{folder}/{Path(res['figures'][name]).name})")
        lines.append("")
    proj = first.get("projection")
    if proj:
        t = proj["transfer"]
        lines += ["### Projection for a discrete GPU (not a measurement)", "",
                  f"{proj['label']}: the model's predicted speed-up over one core for mergesort on "
                  "004's two machines, with their published p, g and 1/γ, CPU cores as fast as this "
                  f"machine's ({proj['cpu_source']}: {1e9 * proj['cpu_seconds_per_unit']:.2f} ns per "
                  f"unit), and a transfer cost of λ + δ·bytes per copy with {t['what']} "
                  f"(λ = {1e6 * t['latency_s']:.3g} µs, δ = {t['seconds_per_byte']:.3g} s/byte).", ""]
        names = list(proj["machines"])
        lines.append("| n | " + " | ".join(f"{k}: with transfers | {k}: without" for k in names) + " |")
        lines.append("|---|" + "---|---|" * len(names))
        sizes = [r["n"] for r in proj["machines"][names[0]]["rows"]]
        for i, n in enumerate(sizes):
            cells = []
            for k in names:
                r = proj["machines"][k]["rows"][i]
                cells += [f"{r['with_transfer']['predicted_speedup']:.2f}x",
                          f"{r['without_transfer']['predicted_speedup']:.2f}x"]
            lines.append(f"| {_log2(n)} | " + " | ".join(cells) + " |")
        lines.append("")
        for k in names:
            mm = proj["machines"][k]
            lines.append(f"- {k}: p = {mm['p']}, g = {mm['g']}, 1/γ = {mm['inv_gamma']}: {mm['what']}")
        lines.append("")
    return "\n".join(lines)


def _default_configuration(args, out: Path, device_env, say) -> Path | None:
    """Measure the default configuration too, in a child process (Numba's threads and the
    device are fixed per process): the same options, the whole device, every core."""
    import subprocess

    argv = [sys.executable, str(Path(__file__).resolve()), "--out", str(out),
            "--calibration", args.calibration]
    if args.quick:
        argv.append("--quick")
    for flag, values in (("--sizes", args.sizes), ("--alphas", args.alphas), ("--ys", args.ys)):
        if values:
            argv += [flag, *map(str, values)]
    if args.repeat is not None:
        argv += ["--repeat", str(args.repeat)]
    argv += ["--seed", str(args.seed)]
    if args.quiet:
        argv.append("--quiet")
    env = dict(os.environ)
    env.pop("NUMBA_NUM_THREADS", None)   # the default configuration uses every core
    if device_env is None:
        env.pop("HPU_DEVICE", None)
    else:
        env["HPU_DEVICE"] = device_env
    say(f"the default configuration next (every core, the whole device): {out}")
    done = subprocess.run(argv, env=env)
    if done.returncode != 0:
        say(f"the default configuration's run failed (exit status {done.returncode})")
        return None
    return out


# --------------------------------------------------------------------- main

def _size(text: str) -> int:
    t = text.strip().replace("**", "^")
    try:
        if "^" in t:
            base, exp = t.split("^")
            value = int(base) ** int(exp)
        else:
            value = int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size: expected an integer such as "
                                         "1048576 or 2^20") from None
    if value < 64:
        raise argparse.ArgumentTypeError(f"size {value} is too small: expected at least 64 keys")
    return value


def _alpha(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"alpha {text!r} is not a fraction: expected a number in [0, 1]")
    return v


def _level(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 1:
        raise argparse.ArgumentTypeError(f"y {text!r} is not a transfer level: expected an integer >= 1")
    return v


def _settings(args) -> Settings:
    base = QUICK if args.quick else FULL
    sizes = tuple(sorted(set(args.sizes))) if args.sizes else base.sizes
    fine, coarse, fine_max = base.fine, base.coarse, base.fine_max_n
    if args.alphas or args.ys:            # one grid for every size
        fine = coarse = Grid(tuple(sorted(set(args.alphas))) if args.alphas else fine.alphas,
                             tuple(sorted(set(args.ys))) if args.ys else fine.ys)
        fine_max = max(sizes)
    elif args.sizes and args.quick:
        fine_max = max(sizes)
    return Settings(sizes=sizes, fine=fine, coarse=coarse, fine_max_n=fine_max,
                    repeat=args.repeat if args.repeat is not None else base.repeat,
                    seed=args.seed)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__.split("\n\n")[0],
        epilog="Writes DIR/results.json, DIR/profile.json and DIR/fig*.png; a table per n on stdout, "
               "progress on stderr.")
    p.add_argument("--quick", action="store_true",
                   help="n = 2^16..2^22, alpha in eighths, y = 1..6: under 2 minutes on two cores")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder (default bench/out; with --fission N, bench/out/fission-N)")
    p.add_argument("--sizes", nargs="+", type=_size, metavar="N",
                   help="numbers of keys, e.g. 1048576 or 2^20 (default 2^20..2^26; quick 2^16..2^22)")
    p.add_argument("--alphas", nargs="+", type=_alpha, metavar="A",
                   help="the grid's CPU shares (default 0, 0.1, .., 1 up to 2^24 and 0, .25, .., 1 above;"
                        " quick 0, 1/8, .., 1); given, one grid for every size")
    p.add_argument("--ys", nargs="+", type=_level, metavar="Y",
                   help="the grid's transfer levels (default 1..12 up to 2^24 and 2, 4, .., 12 above; "
                        "quick 1..6)")
    p.add_argument("--repeat", type=int, default=None, metavar="R",
                   help="timed runs per configuration after one warm-up (default 3)")
    p.add_argument("--calibration", choices=CALIBRATIONS, default="auto",
                   help="where the profile comes from: auto (the stored measured one, else calibrate "
                        "and save), stored, quick or full (calibrate now, not saved), builtin")
    p.add_argument("--profile", default=None, metavar="FILE",
                   help="read the calibration profile from FILE instead")
    p.add_argument("--seed", type=int, default=2014, help="seed of the keys (default 2014)")
    p.add_argument("--plot-only", action="store_true",
                   help="redraw the figures from DIR/results.json and DIR/profile.json; measure nothing")
    p.add_argument("--fission", type=int, default=None, metavar="N",
                   help="the heterogeneous configuration: the OpenCL side on a sub-device of N "
                        "compute units (HPU_DEVICE=<device>@N), Numba on the remaining cores; "
                        "output to bench/out/fission-N unless --out is given")
    p.add_argument("--fission-only", action="store_true",
                   help="with --fission: do not measure the default configuration afterwards "
                        "(it is not measured either when --profile names the sub-device's profile)")
    p.add_argument("--default-out", default=None, metavar="DIR",
                   help="with --fission: where the default configuration's results go (default "
                        "bench/out, or DIR/default with --out DIR); results.md, the README's "
                        "section for both configurations, is written there")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def _plot_only(out: Path, say) -> int:
    from bench import _figures
    from hpu._profile import read_profile

    path = out / "results.json"
    results = validate_results(json.loads(path.read_text()), where=str(path))
    profile = read_profile(out / "profile.json")
    results["figures"] = _figures.draw_all(results, profile, out)
    path.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    say(f"redrew {len(results['figures'])} figures in {out}")
    return 0


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: expected an integer >= 1")
    say = _Say(args.quiet)
    # a --profile FILE is one device's profile (the sub-device's): the default configuration
    # needs its own, so it is measured only when the profile comes from --calibration
    both = (args.fission is not None and not args.fission_only and not args.plot_only
            and args.profile is None)
    if both and args.default_out is None:
        args.default_out = str(ROOT / "bench" / "out" if args.out is None
                               else Path(args.out) / "default")
    if args.out is None:
        args.out = str(ROOT / "bench" / "out" / (f"fission-{args.fission}" if args.fission else ""))
    out = Path(args.out)
    device_env = os.environ.get("HPU_DEVICE")
    if args.fission is not None and not args.plot_only:
        try:
            spec = use_fission(args.fission)
        except ValueError as err:
            parser.error(str(err))
        say(f"heterogeneous configuration: HPU_DEVICE={spec}")
    if args.plot_only:
        return _plot_only(out, say)
    settings = _settings(args)

    from bench import _figures
    from hpu._errors import HpuError
    from hpu._opencl._device import select_device, use_remaining_cores
    from hpu._profile import save_profile

    created = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    load_start = _load_average()
    try:
        device = select_device()
        use_remaining_cores(device)     # every method alike: beside a CPU sub-device, the rest
        profile, note = choose_profile(args.calibration, quick=args.quick, path=args.profile, say=say)
    except HpuError as err:
        print(f"bench/run.py: {err}", file=sys.stderr)
        return 3
    say(f"profile: {note}")
    say(f"p = {profile.p}, g = {profile.g}, gamma = {profile.gamma:.4g}, "
        f"lambda = {profile.latency_s:.3g} s, delta = {profile.seconds_per_byte:.3g} s/B; "
        f"OpenCL device: {_device_label(device)}")
    points = sum(len(settings.grid(n).points()) for n in settings.sizes)
    say(f"measuring n = {', '.join(_log2(n) for n in settings.sizes)}: {points} grid points and 6 anchors "
        f"per n, {settings.repeat} timed run(s) each after a warm-up")
    try:
        measurements, choices, models = measure(settings, profile, say)
    except WrongResult as err:
        print(f"bench/run.py: {err}. Nothing was written; hpu produced a wrong result, "
              "please report it with this message.", file=sys.stderr)
        return 1
    results = build_results(settings=settings, quick=args.quick, profile=profile, profile_note=note,
                            device=device, measurements=measurements, choices=choices, models=models,
                            elapsed_s=say.elapsed, created=created, load_average_start=load_start)
    validate_results(results, where="bench/run.py's results")
    out.mkdir(parents=True, exist_ok=True)
    save_profile(profile, out / "profile.json")
    results["figures"] = _figures.draw_all(results, profile, out)
    results["elapsed_s"] = say.elapsed
    (out / "results.json").write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    print(render(results))
    print(f"profile: {note}")
    machine = results["machine"]
    print(f"machine: {machine['cpu']}, {machine['cores']} cores, {machine['numba_threads']} Numba "
          f"threads; OpenCL {machine['opencl_device']} ({machine['opencl_platform']}, driver "
          f"{machine['opencl_driver']})")
    if load_start is not None:
        print(f"load average (1 min): {load_start[0]:.2f} at the start, {machine['load_average_end'][0]:.2f} "
              "at the end")
    print(results["configuration"]["label"])
    print(f"wrote {out / 'results.json'} and {len(results['figures'])} figures "
          f"({', '.join(sorted(results['figures']))}) in {out}")
    print(f"elapsed: {results['elapsed_s']:.1f} s")
    if both:
        default_out = _default_configuration(args, Path(args.default_out), device_env, say)
        configs = [results]
        if default_out is not None:
            configs.insert(0, json.loads((default_out / "results.json").read_text()))
        md = Path(args.default_out) / "results.md"
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(summary_markdown(configs) + "\n")
        print(f"wrote {md}: the README's results section for "
              f"{'both configurations' if default_out is not None else 'the heterogeneous one'} and "
              f"the projection (figures to copy into docs/results/default and "
              f"docs/results/fission-{args.fission}); total elapsed {say.elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
