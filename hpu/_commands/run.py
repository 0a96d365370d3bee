"""``hpu run``: sort (or sum, or count) random data on every device, check it, time it.

This is the command a newcomer runs first, so it has to show the whole story
in one table: the hybrid split the HPU model chose (α, y, K, tasks per side,
transfer bytes, fallbacks), the CPU alone, the OpenCL device alone, the
one-core recursive function (004's baseline, ``.sequential``) and NumPy, each
as the median of ``--repeat`` runs after an untimed warm-up, with its speedup
over the one-core baseline.  What the runs call is compiled first by the same
command on a few keys in a child process (:func:`_compile_in_child`), so that
this process times code loaded from the caches, as every later run does.

Nothing is reported unless it is right: every result of every run (warm-up
included) is compared with an independent NumPy reference, and a mismatch is
one line on stderr and exit status 1.  The data are the paper's: keys uniform
in ``[0, 2n)`` (clipped to the dtype's range), except for ``maxsubarray``,
whose keys are uniform in ``[-n, n)`` for signed and float dtypes (all-positive
data would make its answer the plain total).

Exit codes follow :mod:`hpu.cli`: 0 ok, 1 a wrong result, 2 a bad value, 3 an
environment problem (no OpenCL device for ``--device gpu``, not enough memory).
Numba, PyOpenCL and the algorithms are imported inside :func:`main`, so that
``hpu --help`` stays fast.
"""
from __future__ import annotations

import json
import math
import re
import statistics
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["NAME", "HELP", "ALGORITHMS", "algorithm_names", "DEVICES", "DTYPES",
           "add_arguments", "main", "Options", "parse_options", "make_data", "inversions_reference",
           "max_subarray_reference", "MethodResult", "render_text"]

NAME = "run"
HELP = ("run a ready algorithm on random data: hybrid, CPU, OpenCL, one core and NumPy, "
        "checked and timed")

#: the hpu devices a run compares (``--device all`` runs all three)
DEVICES = ("hybrid", "cpu", "gpu")
DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64")
from hpu._options import STRATEGIES  # noqa: E402 - the one list of strategies

_HPU_LABELS = {
    "hybrid": "hybrid (CPU + OpenCL)",
    "cpu": "cpu (Numba threads)",
    "gpu": "gpu (OpenCL only)",
}
_BASELINE = "sequential"
_BASELINE_LABEL = "sequential (1 core, recursive)"


class _BadValue(Exception):
    """A flag's value is unusable; the message is the one line to print (exit 2)."""


class _Mismatch(Exception):
    """A method's result differs from the reference; the message says where (exit 1)."""


# ----------------------------------------------------------------------------- options

def add_arguments(parser) -> None:
    parser.add_argument("algorithm", metavar="ALGORITHM",
                        help=f"one of {', '.join(algorithm_names())} (the modules of algorithms/)")
    parser.add_argument("--n", default="2^20", metavar="N",
                        help="number of keys, an integer >= 1 such as 1000000 or 2^24 "
                             "(default 2^20)")
    parser.add_argument("--device", default="all", metavar="D",
                        help="hybrid, cpu, gpu or all (default all); the one-core baseline "
                             "and NumPy always run too, for the speedups")
    parser.add_argument("--alpha", default=None, metavar="A",
                        help="the hybrid's CPU share of level y's tasks, in [0, 1] "
                             "(default: the HPU model's choice)")
    parser.add_argument("--y", default=None, metavar="Y",
                        help="the hybrid's transfer level, an integer >= 0 "
                             "(default: the HPU model's choice)")
    parser.add_argument("--strategy", default=None, metavar="S",
                        help="how the hybrid split is chosen: advanced (004 5.2, default), "
                             "basic (5.1), minmax (sampled c(k), g(k)) or adaptive (the "
                             "rates of earlier runs, see `hpu history`)")
    parser.add_argument("--cl-device", default=None, metavar="D",
                        help="OpenCL device: 'gpu', 'cpu', 'P:D' or part of a name "
                             "(see `hpu devices`); default HPU_DEVICE or the first GPU, else PoCL")
    parser.add_argument("--dtype", default="int32", metavar="T",
                        help=f"key type: {', '.join(DTYPES)} (default int32)")
    parser.add_argument("--seed", default="0", metavar="S",
                        help="seed of the random data, an integer >= 0 (default 0)")
    parser.add_argument("--repeat", default="3", metavar="R",
                        help="timed runs per method after one warm-up; the median is shown "
                             "(default 3; --repeat 1 for large n)")
    parser.add_argument("--cluster", default=None, metavar="C",
                        help="run the hpu devices' top levels on a Dask cluster: local:N "
                             "(N worker processes here) or a scheduler address such as "
                             "tcp://host:8786; the model may decline and run locally")
    parser.add_argument("--cluster-level", default=None, metavar="L",
                        help="with --cluster: distribute at this level of the tree whatever "
                             "the model says (default: the model decides)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--explain", action="store_true",
                        help="also set the plan's predicted time of each level and phase beside "
                             "the measured one (the hybrid's last run, else the only device's)")
    parser.add_argument("--trace", default=None, metavar="FILE",
                        help="write the last timed run of the leading device (hybrid, else "
                             "cpu, else gpu) as a Chrome/Perfetto trace JSON to FILE "
                             "(open it in https://ui.perfetto.dev)")


def _bad(flag: str, text, expected: str, example: str) -> _BadValue:
    return _BadValue(f"{flag} {text!r} is not valid: expected {expected}; pass e.g. "
                     f"{flag} {example}")


def _parse_int(text, flag: str, expected: str, example: str, minimum: int) -> int:
    s = str(text).strip().replace("_", "")
    m = re.fullmatch(r"(\d+)\s*(?:\^|\*\*)\s*(\d+)", s)
    try:
        if m:
            if int(m.group(2)) > 64:
                raise ValueError
            value = int(m.group(1)) ** int(m.group(2))
        elif re.fullmatch(r"[+-]?\d+", s):
            value = int(s)
        else:
            raise ValueError
    except ValueError:
        raise _bad(flag, text, expected, example) from None
    if value < minimum:
        raise _bad(flag, text, expected, example)
    return value


@dataclass(frozen=True)
class Options:
    """The validated command line."""

    algorithm: str
    n: int
    devices: tuple[str, ...]
    alpha: float | None
    y: int | None
    strategy: str
    cl_device: str | None
    dtype: str
    seed: int
    repeat: int
    json: bool
    cluster: str | None = None
    cluster_level: int | None = None
    explain: bool = False


def parse_options(args) -> Options:
    """Check every flag; raise :class:`_BadValue` with the one line to print."""
    algorithm = str(args.algorithm).strip().lower()
    if algorithm not in algorithm_names():
        raise _BadValue(f"algorithm {args.algorithm!r} is unknown: expected one of "
                        f"{', '.join(algorithm_names())}; pass e.g. `hpu run mergesort --n "
                        "1000000`")
    n = _parse_int(args.n, "--n", "an integer >= 1 below 2^63 (number of keys)", "1000000", 1)
    if n >= 2**63:      # (NumPy's largest array; the plan's n is an int64 too)
        raise _bad("--n", args.n, "an integer >= 1 below 2^63 (number of keys)", "1000000")
    device = str(args.device).strip().lower()
    if device not in (*DEVICES, "all"):
        raise _bad("--device", args.device, f"one of {', '.join(DEVICES)}, all", "hybrid")
    devices = DEVICES if device == "all" else (device,)
    alpha = None
    if args.alpha is not None:
        try:
            alpha = float(args.alpha)
        except ValueError:
            alpha = math.nan
        if not 0.0 <= alpha <= 1.0:  # NaN fails too
            raise _bad("--alpha", args.alpha, "a number in [0, 1] (the CPU's share of level "
                       "y's tasks)", "0.25")
    y = None
    if args.y is not None:
        y = _parse_int(args.y, "--y", "an integer >= 0 (the transfer level)", "4", 0)
    if (alpha is not None or y is not None) and "hybrid" not in devices:
        flag = "--alpha" if alpha is not None else "--y"
        raise _BadValue(f"{flag} sets the hybrid split, but --device {device} runs no hybrid; "
                        f"pass --device hybrid (or all), or drop {flag}")
    if args.cl_device is not None and not str(args.cl_device).strip():
        raise _bad("--cl-device", args.cl_device, "a device as `hpu devices` lists them "
                   "('gpu', 'cpu', 'P:D' or part of a name)", "gpu")
    given = getattr(args, "strategy", None)
    strategy = "advanced" if given is None else str(given).strip().lower()
    if strategy not in STRATEGIES:
        raise _bad("--strategy", given, f"one of {', '.join(STRATEGIES)}", "advanced")
    if given is not None and (alpha is not None or y is not None):
        flag = "--alpha" if alpha is not None else "--y"
        raise _BadValue(f"--strategy {given} chooses the hybrid split, and {flag} gives it "
                        f"(the strategy would be ignored); pass one of them")
    if given is not None and "hybrid" not in devices:
        raise _BadValue(f"--strategy {given} chooses the hybrid split, but --device {device} "
                        "runs no hybrid; pass --device hybrid (or all), or drop --strategy")
    dtype = str(args.dtype).strip().lower()
    if dtype not in DTYPES:
        raise _bad("--dtype", args.dtype, f"one of {', '.join(DTYPES)}", "int32")
    seed = _parse_int(args.seed, "--seed", "an integer >= 0", "0", 0)
    repeat = _parse_int(args.repeat, "--repeat", "an integer >= 1 (timed runs per method)",
                        "3", 1)
    cluster = getattr(args, "cluster", None)
    if cluster is not None and not (str(cluster).startswith(("local:", "tcp://", "tls://",
                                                             "inproc://", "ucx://"))):
        raise _bad("--cluster", cluster, "local:N or a scheduler address", "local:2")
    if cluster is not None and str(cluster).startswith("local:"):
        workers = str(cluster)[len("local:"):]
        if not (workers.isdigit() and int(workers) >= 1):
            raise _bad("--cluster", cluster, "local:N with N >= 1 worker processes, or a "
                       "scheduler address", "local:2")
    level = getattr(args, "cluster_level", None)
    if level is not None:
        if cluster is None:
            raise _BadValue("--cluster-level needs --cluster; pass e.g. --cluster local:2")
        level = _parse_int(level, "--cluster-level", "an integer >= 0 (a level of the tree)",
                           "3", 0)
    return Options(algorithm, n, devices, alpha, y, strategy, args.cl_device, dtype, seed,
                   repeat, bool(args.json), cluster, level,
                   bool(getattr(args, "explain", False)))


# ----------------------------------------------------------------------- algorithms

def _registry():
    """The algorithm plug-ins (``algorithms/``), imported only when a command needs them."""
    from hpu._commands import _plugins

    try:
        return _plugins.registry()
    except _plugins._PluginError as err:  # pragma: no cover - installed without algorithms
        raise _BadValue(str(err)) from None


def algorithm_names() -> tuple[str, ...]:
    """What ``hpu run`` and ``hpu plan`` accept: every module of ``algorithms/``."""
    return _registry().names()


def make_data(algorithm: str, n: int, dtype, seed: int):
    """The random keys of a run, as the algorithm's module makes them (uniform in ``[0, 2n)``
    by default, clipped to the dtype's range)."""
    return _registry().get(algorithm).make_input(n, dtype, seed)


def inversions_reference(x) -> int:
    """The number of pairs ``i < j`` with ``x[i] > x[j]`` (``algorithms.inversions``)."""
    from algorithms.inversions import reference_count

    return reference_count(x)


def max_subarray_reference(a):
    """(total, best prefix, best suffix, best) from prefix sums (``algorithms.maxsubarray``)."""
    from algorithms.maxsubarray import reference

    return reference(a)


@dataclass(frozen=True)
class _Algorithm:
    """How ``hpu run`` runs, checks and compares one ready algorithm on one input."""

    name: str
    dc: Any                                   # the DivideAndConquer
    fresh: Callable[[Any], tuple]             # x -> the function's arguments (private copies)
    output: Callable[[tuple, Any], Any]       # (arguments, returned value) -> compared output
    expected: Callable[[Any], Any]            # x -> the reference output
    check: Callable[[Any, Any], str | None]   # (got, want) -> None, or where they differ
    reference_label: str
    numpy_methods: tuple = ()                 # ((key, label, fn(x) -> output), ...)


def _algorithm(name: str, x) -> _Algorithm:
    alg = _registry().get(name)
    p = alg.prepare(x)
    return _Algorithm(name, alg.function, p.args, p.output, p.expected, p.check,
                      alg.reference_label, p.numpy_methods)


# ----------------------------------------------------------------------- measuring

@dataclass(frozen=True)
class MethodResult:
    """One row of the table: a method's median time, its runs, and its last hpu Run."""

    key: str
    label: str
    seconds: float                     # median of ``times``
    times: tuple[float, ...]
    run: Any = None                    # the last ``hpu.Run`` (hpu methods only)
    speedup: float | None = None       # one-core baseline's median / this median


def _measure(key, label, call, make_args, output, check, repeat) -> MethodResult:
    """One untimed warm-up, then ``repeat`` timed calls on fresh arguments; all checked."""
    def once():
        args = make_args()
        t0 = time.perf_counter()
        value = call(args)
        seconds = time.perf_counter() - t0
        run = value if key in DEVICES else None
        got = output(args, run.value if run is not None else value)
        problem = check(got)
        if problem is not None:
            raise _Mismatch(f"{label}: {problem}")
        return seconds, run

    once()  # compiles (Numba, OpenCL), faults the pages in
    times, run = [], None
    for _ in range(repeat):
        seconds, run = once()
        times.append(seconds)
    return MethodResult(key, label, statistics.median(times), tuple(times), run)


def _transfer_bytes(run) -> int:
    return int(sum(t.bytes for t in run.transfers)) if run is not None else 0


def _run_dict(run) -> dict:
    return {
        "alpha": run.alpha, "y": run.y, "K": run.K,
        "cpu_tasks": run.cpu_tasks, "gpu_tasks": run.gpu_tasks,
        "transfer_bytes": _transfer_bytes(run),
        "transfers": [{"direction": t.direction, "bytes": t.bytes, "seconds": t.seconds}
                      for t in run.transfers],
        "fallbacks": list(run.fallbacks),
        **_cluster_dict(run),
    }


def _cluster_dict(run) -> dict:
    c = getattr(run, "cluster", None)  # hpu._dask.ClusterRun
    if c is None:
        return {}
    return {"cluster": {"scheduler": c.scheduler, "distributed": c.distributed,
                        "reason": c.reason, "level": c.level, "bytes_moved": c.bytes_moved,
                        "workers": [vars(w) for w in c.workers]}}


@dataclass(frozen=True)
class _Report:
    options: Options
    rows: tuple[MethodResult, ...]
    skipped: dict = field(default_factory=dict)
    opencl_device: str | None = None
    threads: int = 1
    reference: str = ""
    data: str = ""
    warnings: tuple[str, ...] = ()

    def main_run(self):
        """The run whose split the report leads with: the hybrid's, else the only device's."""
        runs = {r.key: r.run for r in self.rows if r.run is not None}
        for key in DEVICES:
            if key in runs:
                return runs[key]
        return None

    def fallbacks(self) -> list[str]:
        seen: list[str] = []
        for r in self.rows:
            if r.run is not None:
                seen += [f for f in r.run.fallbacks if f not in seen]
        return seen

    def to_dict(self) -> dict:
        o = self.options
        methods = {}
        for r in self.rows:
            d = {"label": r.label, "seconds": r.seconds, "times": list(r.times),
                 "speedup": r.speedup}
            if r.run is not None:
                d.update(_run_dict(r.run))
            methods[r.key] = d
        run = self.main_run()
        return {
            "algorithm": o.algorithm, "n": o.n, "dtype": o.dtype, "seed": o.seed,
            "repeat": o.repeat, "threads": self.threads, "data": self.data,
            "devices": list(o.devices), "opencl_device": self.opencl_device,
            "strategy": o.strategy,
            "alpha": None if run is None else run.alpha,
            "y": None if run is None else run.y,
            "K": None if run is None else run.K,
            "cpu_tasks": None if run is None else run.cpu_tasks,
            "gpu_tasks": None if run is None else run.gpu_tasks,
            "transfer_bytes": _transfer_bytes(run),
            "fallbacks": self.fallbacks(),
            "warnings": list(self.warnings),
            "baseline": _BASELINE,
            "methods": methods,
            "skipped": dict(self.skipped),
            "reference": self.reference,
            "verified": True,
            **({"explain": _explain_dict(run, o.cl_device)} if o.explain else {}),
        }


class _Progress:
    """What ``hpu run`` is doing, on stderr with rich, while it does it (the whole run can
    take tens of seconds: data, reference, compiling, timed runs).  Shown only on a
    terminal and not with ``--json``; it disappears when done, so the report is unchanged."""

    def __init__(self, o: Options, steps: int):
        self._bar = None
        if o.json or not sys.stderr.isatty():
            return
        try:
            from rich.console import Console
            from rich.progress import (BarColumn, Progress, SpinnerColumn, TextColumn,
                                       TimeElapsedColumn)
        except ImportError:  # pragma: no cover - rich is a dependency
            return
        self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                             TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self._task = self._bar.add_task(f"hpu run {o.algorithm} --n {o.n}", total=steps)

    def __enter__(self):
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()

    def step(self, text: str, advance: int = 0) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=text, advance=advance)


def _measure_all(o: Options, cl_name: str | None, skipped: dict) -> _Report:
    import numba
    import numpy as np

    devices = [d for d in o.devices if d not in skipped]
    steps = 2 + len(devices) + 1 + 2  # data, reference, devices, baseline, NumPy (at most 2)
    with _Progress(o, steps) as progress:
        progress.step(f"making {o.n} {o.dtype} keys")
        x = make_data(o.algorithm, o.n, o.dtype, o.seed)
        alg = _algorithm(o.algorithm, x)
        progress.step("computing the reference", advance=1)
        want = alg.expected(x)
        progress.step("", advance=1)

        def check(got):
            return alg.check(got, want)

        def measured(key, label, call, make_args, output):
            progress.step(f"{label}: warm-up (compiles on first use), then {o.repeat} timed")
            row = _measure(key, label, call, make_args, output, check, o.repeat)
            progress.step(label, advance=1)
            return row

        rows = []
        for dev in devices:
            options = {"device": dev, "strategy": o.strategy, "cl_device": o.cl_device}
            if dev == "hybrid":
                options.update(alpha=o.alpha, y=o.y)
            if o.cluster is not None:
                from hpu._dask import Cluster

                options["cluster"] = Cluster(o.cluster, level=o.cluster_level)
            rows.append(measured(dev, _HPU_LABELS[dev],
                                 lambda args, options=options: alg.dc.run(*args, **options),
                                 lambda: alg.fresh(x), alg.output))
        from hpu._decorator import sequential_timed

        sequential_timed(alg.dc, *alg.fresh(x))   # the solver it times, copying nothing
        rows.append(measured(_BASELINE, _BASELINE_LABEL, lambda args: alg.dc.sequential(*args),
                             lambda: alg.fresh(x), alg.output))
        for key, label, fn in alg.numpy_methods:
            rows.append(measured(key, label, lambda args, fn=fn: fn(args[0]), lambda: (x,),
                                 lambda args, value: value))
    base = next(r.seconds for r in rows if r.key == _BASELINE)
    rows = [MethodResult(r.key, r.label, r.seconds, r.times, r.run,
                         base / r.seconds if r.seconds > 0 else None) for r in rows]
    span = "[-n, n)" if o.algorithm == "maxsubarray" and np.dtype(o.dtype).kind != "u" \
        else "[0, 2n)"
    return _Report(o, tuple(rows), dict(skipped), cl_name, numba.get_num_threads(),
                   alg.reference_label, f"uniform in {span}, clipped to {o.dtype}")


#: ``0`` turns off :func:`_compile_in_child` (the child itself runs with it off).
ENV_COMPILE_IN_CHILD = "HPU_RUN_COMPILE_IN_CHILD"

#: The child's problem size: every level kind and both sides of a split, in well under a second.
_CHILD_N = 4096


def _compile_in_child(o: Options, skipped: dict) -> None:
    """Run the same command on :data:`_CHILD_N` keys in a child process first, so that its
    compiled code is in the caches before this process times anything.

    Why: machine code that Numba compiles in a process ran 20-30 % slower in that process
    than the same code loaded from the cache by a later one (the 2-core VM: the README's sort
    CPU-only 0.27-0.30 s on a fresh machine, 0.22 s after; guide §6, bench/README).  The
    report would show a new machine's first run slower than every later run and than the
    plan predicts; this process now loads what the child compiled, as later ones do.  The
    hybrid row's child run splits at (0.5, 1), so that both sides' code is built.  Best effort:
    a child that fails or is turned off (``HPU_RUN_COMPILE_IN_CHILD=0``) leaves the
    compiling to the warm-up, as before.  Not with ``--cluster`` (its workers compile).
    """
    import os
    import tempfile

    from hpu import _child

    if os.environ.get(ENV_COMPILE_IN_CHILD, "1") == "0" or o.cluster is not None:
        return
    devices = [d for d in o.devices if d not in skipped]
    if not devices:
        return
    device = devices[0] if len(devices) == 1 else "all"
    args = ["-m", "hpu", "run", o.algorithm, "--n", str(min(o.n, _CHILD_N)), "--device", device,
            "--dtype", o.dtype, "--repeat", "1", "--json"]
    if device in ("hybrid", "all"):
        args += ["--alpha", "0.5", "--y", "1"]
    if o.cl_device is not None:
        args += ["--cl-device", str(o.cl_device)]
    with tempfile.TemporaryDirectory(prefix="hpu-run-child-") as history:
        # the child's tiny forced split must not reach the adaptive strategy's rates, nor
        # calibrate (its split is given)
        _child.run_quietly(*args, timeout=900, **{ENV_COMPILE_IN_CHILD: "0",
                                                  "HPU_HISTORY_DIR": history,
                                                  "HPU_NO_AUTOCALIBRATE": "1"})


# ------------------------------------------------------------------------- output

def _bytes_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _split_text(run) -> str:
    if run is None:
        return ""
    if run.device == "python" or run.alpha is None:
        return "the plain Python function"
    if run.device == "cpu" or (run.alpha == 1.0 and run.gpu_tasks == 0):
        return f"K={run.K}, all on the CPU"
    y = "-" if run.y is None else run.y
    return f"alpha={run.alpha:.3g}, y={y}, K={run.K}"


def render_text(report: _Report) -> str:
    """The table and the hybrid's split, for a terminal."""
    o = report.options
    header = ("method", "median s", "runs s", "speedup vs 1 core", "split")
    lines_rows = []
    for r in report.rows:
        speedup = "-" if r.speedup is None else f"{r.speedup:.2f}x"
        lines_rows.append((r.label, f"{r.seconds:.4f}", " ".join(f"{t:.4f}" for t in r.times),
                           speedup, _split_text(r.run)))
    for key, why in report.skipped.items():
        lines_rows.append((_HPU_LABELS.get(key, key), "-", "-", "-", f"skipped: {why}"))
    widths = [max(len(row[i]) for row in (header, *lines_rows)) for i in range(len(header))]
    right = {1, 3}

    def fmt(row):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    size = f"2^{o.n.bit_length() - 1}" if o.n > 1 and o.n & (o.n - 1) == 0 else None
    out = [
        f"{o.algorithm}: n = {o.n:,}{f' ({size})' if size else ''} {o.dtype} keys "
        f"({report.data}, seed {o.seed}); median of {o.repeat} run(s) after a warm-up; "
        f"{report.threads} Numba threads",
        f"OpenCL device: {report.opencl_device or 'none used'}",
        "",
        fmt(header),
        fmt(tuple("-" * w for w in widths)),
        *(fmt(row) for row in lines_rows),
        "",
    ]
    run = report.main_run()
    if run is not None:
        # bytes only: a download's seconds include waiting for the device's kernels
        transfers = ", ".join(f"{t.direction} {_bytes_text(t.bytes)}"
                              for t in run.transfers) or "none"
        if run.transfers and _transfer_bytes(run) == 0:
            transfers += " (zero-copy: the device shares the host's memory)"
        who = "hybrid" if run.device == "hybrid" else run.device
        y = "-" if run.y is None else run.y
        out.append(f"{who}: alpha = {run.alpha:.4g} (CPU share of level y's tasks), y = {y}, "
                   f"K = {run.K}; level-K tasks: cpu {run.cpu_tasks}, gpu {run.gpu_tasks}")
        if run.plan is not None:  # which strategy chose the split, and why (issue 16)
            out.append(f"split chosen by strategy {run.plan.strategy!r}: {run.plan.reason}")
        out.append(f"transfers: {transfers}")
        if getattr(run, "cluster", None) is not None:
            c = run.cluster
            out.append(f"cluster {c.scheduler}: {c.reason}")
            out.extend(f"  {w.address}: {w.tasks} tasks, {w.seconds:.4f} s, "
                       f"{_bytes_text(w.bytes_sent + w.bytes_received)} moved"
                       for w in c.workers)
    fallbacks = report.fallbacks()
    out.append("fallbacks: " + ("; ".join(fallbacks) if fallbacks else "none"))
    for w in report.warnings:
        out.append(f"note: {w}")
    out.append(f"verified: every result of every run equals {report.reference}")
    if o.explain:
        out.append("")
        out.append("no hpu run to explain" if run is None
                   else _explanation(run, o.cl_device).table())
    return "\n".join(out)


def _explanation(run, cl_device):
    """:func:`hpu._explain.explain` of ``run``; a plan in model units (``--device cpu``) is
    priced with the stored profile's seconds per unit, when one was measured."""
    from hpu._explain import explain

    spu = None
    if run.plan is not None and run.plan.time_unit != "s":
        try:
            from hpu import _profile

            prof = _profile.active_profile(cl_device, autocalibrate=False)
            spu = prof.cpu_seconds_per_element if prof.source == "measured" else None
        except Exception:  # no OpenCL or no profile: the rows say "-" for predicted
            spu = None
    return explain(run, seconds_per_unit=spu)


def _explain_dict(run, cl_device) -> dict | None:
    if run is None:
        return None
    e = _explanation(run, cl_device)
    return {"predicted_s": e.predicted_total_s, "measured_s": e.measured_total_s,
            "error": e.error,
            "rows": [{"level": r.level, "phase": r.phase, "side": r.side,
                      "tasks_planned": r.tasks_planned, "tasks_run": r.tasks_run,
                      "predicted_s": r.predicted_s, "measured_s": r.measured_s,
                      "error": r.error} for r in e.rows]}


# --------------------------------------------------------------------------- main

def _opencl_device(o: Options, skipped: dict) -> str | None:
    """The description of the OpenCL device the runs will use, or None without one.

    A ``--cl-device`` that matches nothing usable is a bad value (exit 2).  No
    usable device at all: ``--device gpu`` is an environment problem (the
    error propagates, exit 3); with ``all``, the GPU-only row is skipped and
    the hybrid falls back to the CPU (its Run says so).
    """
    if not any(d in ("hybrid", "gpu") for d in o.devices):
        return None
    from hpu._errors import DeviceUnavailableError
    from hpu._opencl._device import describe_device, select_device

    try:
        return describe_device(select_device(o.cl_device))
    except DeviceUnavailableError as err:
        if o.cl_device is not None:
            raise _BadValue(f"--cl-device {o.cl_device!r}: {err}") from None
        if o.devices == ("gpu",):
            raise
        if "gpu" in o.devices:
            skipped["gpu"] = f"no usable OpenCL device ({err})"
        return None


def main(args) -> int:
    from hpu._decorator import ENV_DISABLE, _disabled

    if _disabled():
        # every decorated function is its plain Python self: no split, no device to measure
        print(f"hpu run: error: {ENV_DISABLE}={os.environ.get(ENV_DISABLE)!r} makes every "
              "decorated function run as plain Python, so there is no hpu run to measure; "
              f"unset {ENV_DISABLE} (or set it to 0)", file=sys.stderr)
        return 2
    try:
        o = parse_options(args)
    except _BadValue as err:
        print(f"hpu run: error: {err}", file=sys.stderr)
        return 2
    skipped: dict[str, str] = {}
    try:
        cl_name = _opencl_device(o, skipped)
    except _BadValue as err:
        print(f"hpu run: error: {err}", file=sys.stderr)
        return 2
    _compile_in_child(o, skipped)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = _measure_all(o, cl_name, skipped)
    except _Mismatch as err:
        print(f"hpu run: error: wrong result for {o.algorithm} with n={o.n}, --dtype {o.dtype}, "
              f"--seed {o.seed}: {err}", file=sys.stderr)
        return 1
    except (MemoryError, ValueError) as err:
        # (NumPy refuses an array of more bytes than an address holds with a ValueError)
        if isinstance(err, ValueError) and "too big" not in str(err) \
                and "Maximum allowed size" not in str(err):
            raise
        print(f"hpu run: error: not enough memory for n={o.n} {o.dtype} keys (the run needs "
              f"several copies of the data); pass a smaller --n", file=sys.stderr)
        return 3
    from hpu._hybrid import HpuPerformanceWarning

    seen: list[str] = []
    for w in caught:
        if not issubclass(w.category, HpuPerformanceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        text = str(w.message)
        if text not in seen and not any(f in text for f in report.fallbacks()):
            seen.append(text)  # once, not once per run; fallbacks are listed on their own
    report = _Report(report.options, report.rows, report.skipped, report.opencl_device,
                     report.threads, report.reference, report.data, tuple(seen))
    trace = getattr(args, "trace", None)
    if trace is not None:
        run = report.main_run()
        if run is None:
            print(f"hpu run: error: --trace {trace}: no hpu device ran (all were skipped: "
                  f"{'; '.join(report.skipped.values())}); pass --device cpu", file=sys.stderr)
            return 3
        try:
            written = run.trace(trace)
        except (OSError, ValueError) as err:    # (hpu.SettingError: a folder, a device)
            print(f"hpu run: error: --trace {trace!r}: cannot write the trace ({err}); pass "
                  "a writable file's path", file=sys.stderr)
            return 2
        print(f"hpu run: trace of the {run.device} run written to {written}", file=sys.stderr)
    if o.json:
        print(json.dumps(report.to_dict()))
    else:
        print(render_text(report))
    return 0


def __getattr__(name: str):
    if name == "ALGORITHMS":  # the registry's names, read when asked (not at import)
        return algorithm_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
