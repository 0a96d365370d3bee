"""Hybrid mergesort: the model's (α, y) against each device alone, and the α × y grid.

What it measures (issue 5's benchmark, 004 §6.2 and Figure 7), in one process,
on fresh copies of the same keys (int32, uniform in [0, 2n) as in the paper):

* **methods**: ``mergesort.run`` with ``device="hybrid"`` and the model's
  (α, y); ``device="cpu"`` (Numba threads); ``device="gpu"`` (every level on
  the OpenCL device); ``mergesort.sequential`` (the recursive function on one
  core: the baseline every speedup is over); ``np.sort`` stable and default.
  Each gets one untimed warm-up (compilation, caches) and ``--repeat`` timed
  runs; the median is reported.  The CPU-only row is measured twice, before
  any OpenCL work and again after it, because on a machine where the OpenCL
  device is PoCL on the same cores the two runtimes' worker threads compete.
* **grid**: ``device="hybrid"`` at every (α, y) of ``--alphas`` × ``--ys``,
  ``--grid-repeat`` runs each (no per-point warm-up: by then everything is
  compiled), as speedup over the one-core baseline; the best point; and where
  the model's choice ranks (its median over the best point's, and how many
  grid points beat it).

* **confirm** (``--confirm R``, issue 14): the model's choice, the best grid
  point, CPU-only and device-only re-measured *paired*: R rounds, each running
  all four back to back in a rotating order, and every ratio taken per round
  and then its median, so that load from elsewhere meets all four alike and
  the verdict is not the noise of one grid cell.  The targets of issue 14 are
  checked there: the model's pick >= 1.4x faster than CPU-only, >= 1.2x faster
  than the better single side, within 1.10x of the best grid point.

The heterogeneous configuration (device fission): ``--fission N`` runs the
device side on a sub-device of N compute units (``cpu@N``; or set
``HPU_DEVICE=cpu@N``), and Numba on the remaining cores unless
``NUMBA_NUM_THREADS`` says otherwise -- for *every* method, so that CPU-only
and hybrid use the same threads.  On a 2-core machine::

    NUMBA_NUM_THREADS=1 python bench/bench_hybrid.py --fission 1 --n 4194304 --confirm 5

Every result is compared with ``np.sort(kind="stable")`` before it counts.
The machine's load average is recorded at the start and the end: other
processes on the same cores move every number here.

    python bench/bench_hybrid.py --quick                  # n = 2**20, coarse grid, ~1-2 min
    python bench/bench_hybrid.py                          # n = 2**24, alpha 0..1 by 0.1, y 2..12
    python bench/bench_hybrid.py --grid-repeat 1 --alphas 0,0.25,0.5,0.75,1 --ys 2,4,6,8,10
    python bench/bench_hybrid.py --quick --json           # the raw data as JSON
    python bench/bench_hybrid.py --out hybrid.json        # tables on stdout, JSON to a file
    python bench/bench_hybrid.py --fission 1 --confirm 5  # device on 1 core, Numba on the rest
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere in the checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from hpu._decorator import sequential_timed  # noqa: E402

DEFAULT_ALPHAS = tuple(round(0.1 * i, 1) for i in range(11))
DEFAULT_YS = tuple(range(2, 13))
QUICK_N = 1 << 20
QUICK_ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
QUICK_YS = (1, 2, 4, 6, 8)


class WrongResult(Exception):
    """A method's output differs from ``np.sort(kind="stable")``."""


def _timed(fn, fresh, want, repeat, warm_up=True):
    """Median seconds of ``repeat`` calls of ``fn(*fresh())`` (after one warm-up), all checked.

    Returns ``(median, times, last value)``; ``fn`` returns ``(sorted array, value)``.
    """
    def once():
        args = fresh()
        t0 = time.perf_counter()
        out, value = fn(*args)
        seconds = time.perf_counter() - t0
        if not np.array_equal(out, want):
            raise WrongResult(f"{fn.__name__} did not sort the keys correctly")
        return seconds, value

    if warm_up:
        once()
    times, value = [], None
    for _ in range(repeat):
        seconds, value = once()
        times.append(seconds)
    return statistics.median(times), times, value


def _run_facts(run):
    return {"alpha": run.alpha, "y": run.y, "K": run.K, "cpu_tasks": run.cpu_tasks,
            "gpu_tasks": run.gpu_tasks, "fallbacks": list(run.fallbacks),
            "transfer_bytes": int(sum(t.bytes for t in run.transfers))}


def model_choice(n, cl_device=None):
    """What the model chooses for mergesort on n int32 keys: integer split and the plan."""
    from algorithms.mergesort import mergesort

    a = np.zeros(n, np.int32)
    plan = mergesort.options(cl_device=cl_device).plan(a, np.empty_like(a), 0, n)
    alpha, y = (plan.split_alpha, plan.transfer_level) if plan.uses_device else (1.0, 0)
    return {"alpha": alpha, "y": y, "continuous_alpha": plan.alpha, "continuous_y": plan.y,
            "predicted_speedup_over_cpu": plan.speedup, "reason": plan.reason}


#: issue 14's targets for the heterogeneous configuration, as (summary key, bound, wording)
TARGETS = (
    ("model_speedup_over_cpu", 1.4, "model's pick >= 1.4x faster than CPU-only"),
    ("model_speedup_over_better_side", 1.2, "model's pick >= 1.2x faster than the better single side"),
    ("best_speedup_over_model", 1 / 1.10, "model's pick within 1.10x of the best grid point"),
)


def confirm(sorts, fresh, want, rounds):
    """Paired re-measurement: ``rounds`` rounds of every sort in ``sorts`` (name -> fn),
    back to back in a rotating order; per-round times, and per-round ratios' medians.

    Returns ``{"times_s": {name: [...]}, "median_s": {name: m}, "ratio": {(a, b): median of
    a/b per round}}``; the ratio of two methods from the same rounds is what the
    targets are checked on (a burst of load meets both).
    """
    names = list(sorts)
    times = {k: [] for k in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            _, ts, _ = _timed(sorts[k], fresh, want, 1, warm_up=False)
            times[k].append(ts[0])
    ratio = {}
    for a in names:
        for b in names:
            if a != b:
                ratio[f"{a}/{b}"] = statistics.median(x / y for x, y in zip(times[a], times[b]))
    return {"rounds": rounds, "times_s": times,
            "median_s": {k: statistics.median(v) for k, v in times.items()}, "ratio": ratio}


def check_targets(ratio) -> list[dict]:
    """issue 14's targets from paired ratios (``confirm``'s ``ratio``)."""
    better_side = min(ratio["cpu/model"], ratio["gpu/model"])  # the faster single side, over model
    values = {"model_speedup_over_cpu": ratio["cpu/model"],
              "model_speedup_over_better_side": better_side,
              "best_speedup_over_model": ratio["best/model"]}
    return [{"target": words, "value": values[key], "bound": bound,
             "met": values[key] >= bound} for key, bound, words in TARGETS]


def measure(n, repeat, grid_repeat, alphas, ys, seed, cl_device=None, progress=None,
            confirm_rounds=0):
    import numba

    from algorithms.mergesort import mergesort
    from hpu._opencl._device import describe_device, select_device, use_remaining_cores

    # the thread rule for every method, before any is timed: beside a CPU sub-device
    # Numba has the remaining cores, CPU-only included (NUMBA_NUM_THREADS still wins)
    use_remaining_cores(select_device(cl_device))

    keys = np.random.default_rng(seed).integers(0, 2 * n, n, dtype=np.int32)
    want = np.sort(keys, kind="stable")
    scratch = np.empty_like(keys)
    sequential_timed(mergesort, keys.copy(), scratch, 0, n)   # the solver it times, no copy

    def fresh():
        return keys.copy(), scratch

    def hpu(**options):
        def sort(a, t):
            run = mergesort.options(cl_device=cl_device, **options).run(a, t, 0, a.size)
            return a, run
        sort.__name__ = f"mergesort.run({', '.join(f'{k}={v!r}' for k, v in options.items())})"
        return sort

    def sequential(a, t):
        mergesort.sequential(a, t, 0, a.size)
        return a, None

    def np_stable(a, t):
        return np.sort(a, kind="stable"), None

    def np_default(a, t):
        return np.sort(a), None

    say = progress or (lambda *_: None)
    load_start = os.getloadavg()
    methods = {}
    # CPU-side methods first, before the process has touched OpenCL
    order = [
        ("sequential", "mergesort.sequential (1 core, recursive)", sequential),
        ("numpy_stable", "np.sort(kind='stable')", np_stable),
        ("numpy_default", "np.sort (default kind)", np_default),
        ("cpu", "cpu: Numba threads (before any OpenCL work)", hpu(device="cpu")),
        ("gpu", "gpu: every level on OpenCL", hpu(device="gpu")),
        ("hybrid_model", "hybrid, the model's (alpha, y)", hpu(device="hybrid")),
        ("cpu_after_opencl", "cpu: Numba threads (after the OpenCL runs)", hpu(device="cpu")),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the model keeps everything on the CPU" at α = 1
        for key, label, fn in order:
            say(f"{label} ...")
            median, times, run = _timed(fn, fresh, want, repeat)
            row = {"label": label, "median_s": median, "times_s": times}
            if run is not None:
                row.update(_run_facts(run))
            methods[key] = row
        base = methods["sequential"]["median_s"]
        for row in methods.values():
            row["speedup"] = base / row["median_s"]

        grid = []
        for y in ys:
            for alpha in alphas:
                say(f"grid alpha={alpha} y={y} ...")
                median, times, run = _timed(hpu(device="hybrid", alpha=alpha, y=y), fresh, want,
                                            grid_repeat, warm_up=False)
                point = {"alpha_asked": alpha, "y_asked": y, "median_s": median,
                         "times_s": times, "speedup": base / median}
                point.update(_run_facts(run))
                grid.append(point)

    model_s = methods["hybrid_model"]["median_s"]
    best = min(grid, key=lambda p: p["median_s"]) if grid else None
    summary = {
        "model_alpha": methods["hybrid_model"]["alpha"],
        "model_y": methods["hybrid_model"]["y"],
        "hybrid_model_over_cpu": model_s / methods["cpu"]["median_s"],
        "hybrid_model_over_gpu": model_s / methods["gpu"]["median_s"],
    }
    if best is not None:
        summary.update({
            "best_alpha": best["alpha_asked"], "best_y": best["y_asked"],
            "best_median_s": best["median_s"], "best_speedup": best["speedup"],
            "model_over_best": model_s / best["median_s"],
            "model_rank": 1 + sum(1 for p in grid if p["median_s"] < model_s),
            "grid_points": len(grid),
            "best_over_cpu": best["median_s"] / methods["cpu"]["median_s"],
        })
    confirmed = None
    if confirm_rounds and best is not None:
        say(f"confirm: {confirm_rounds} paired rounds of cpu, gpu, model and best ...")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            confirmed = confirm({"cpu": hpu(device="cpu"), "gpu": hpu(device="gpu"),
                                 "model": hpu(device="hybrid"),
                                 "best": hpu(device="hybrid", alpha=best["alpha_asked"],
                                             y=best["y_asked"])}, fresh, want, confirm_rounds)
        confirmed["targets"] = check_targets(confirmed["ratio"])
    dev = select_device(cl_device)
    return {
        "n": n, "dtype": "int32", "data": "uniform in [0, 2n)", "seed": seed,
        "repeat": repeat, "grid_repeat": grid_repeat,
        "threads": numba.get_num_threads(), "cpus": os.cpu_count(),
        "opencl_device": describe_device(dev),
        "opencl_device_is_cpu": bool(dev.type & 2),  # CL_DEVICE_TYPE_CPU
        "load_average_start": list(load_start), "load_average_end": list(os.getloadavg()),
        "model": model_choice(n, cl_device),
        "methods": methods, "alphas": list(alphas), "ys": list(ys), "grid": grid,
        "summary": summary, "confirm": confirmed, "verified": True,
    }


# ------------------------------------------------------------------ output

def _table(header, rows, right=()):
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]

    def fmt(r):
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return [fmt(header), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


def render(report) -> str:
    r = report
    size = f"2^{r['n'].bit_length() - 1}" if r["n"] & (r["n"] - 1) == 0 else str(r["n"])
    lines = [
        f"mergesort, n = {r['n']:,} ({size}) int32 keys uniform in [0, 2n); median of "
        f"{r['repeat']} after a warm-up; {r['threads']} Numba threads on {r['cpus']} CPUs",
        f"OpenCL device: {r['opencl_device']}"
        + (" (a CPU device: it shares the same cores)" if r["opencl_device_is_cpu"] else ""),
        f"load average: {', '.join(f'{v:.2f}' for v in r['load_average_start'])} at the start, "
        f"{', '.join(f'{v:.2f}' for v in r['load_average_end'])} at the end",
        "",
    ]
    rows = []
    for row in r["methods"].values():
        split = ""
        if "K" in row:
            split = (f"alpha={row['alpha']:.3g} y={row['y']} K={row['K']} "
                     f"tasks cpu/gpu {row['cpu_tasks']}/{row['gpu_tasks']}")
            if row["fallbacks"]:
                split += f" FALLBACK: {'; '.join(row['fallbacks'])}"
        rows.append([row["label"], f"{row['median_s']:.3f}",
                     " ".join(f"{t:.3f}" for t in row["times_s"]),
                     f"{row['speedup']:.2f}x", split])
    lines += _table(["method", "median s", "runs s", "vs 1 core", "split"], rows, right={1, 3})
    m = r["model"]
    lines += ["", f"model: alpha = {m['alpha']:.4g}, y = {m['y']} (continuous alpha* = "
                  f"{m['continuous_alpha']:.4f}, y = {m['continuous_y']:.3f}; predicted "
                  f"{m['predicted_speedup_over_cpu']:.2f}x over the CPU alone)",
              f"       {m['reason']}"]
    if r["grid"]:
        alphas, ys = r["alphas"], r["ys"]
        cell = {(p["alpha_asked"], p["y_asked"]): p for p in r["grid"]}
        best = min(r["grid"], key=lambda p: p["median_s"])
        lines += ["", f"alpha x y grid (004 Figure 7): speedup over the one-core baseline, "
                      f"median of {r['grid_repeat']} run(s) per point; * = best"]
        header = ["y \\ alpha", *(f"{a:g}" for a in alphas)]
        rows = []
        for y in ys:
            row = [str(y)]
            for a in alphas:
                p = cell[(a, y)]
                row.append(f"{p['speedup']:.2f}" + ("*" if p is best else ""))
            rows.append(row)
        lines += _table(header, rows, right=set(range(1, len(header))))
        s = r["summary"]
        lines += [
            "",
            f"best grid point: alpha = {s['best_alpha']:g}, y = {s['best_y']}: "
            f"{s['best_median_s']:.3f} s, {s['best_speedup']:.2f}x over one core, "
            f"{s['best_over_cpu']:.2f}x the CPU-only time",
            f"model's choice (alpha = {s['model_alpha']:.4g}, y = {s['model_y']}): "
            f"{s['model_over_best']:.2f}x the best grid point's time; "
            f"rank {s['model_rank']} of {s['grid_points'] + 1} "
            f"({s['hybrid_model_over_cpu']:.2f}x the CPU-only time, "
            f"{s['hybrid_model_over_gpu']:.2f}x the GPU-only time)",
        ]
    c = r.get("confirm")
    if c:
        lines += ["", f"paired re-measurement ({c['rounds']} rounds of cpu, gpu, model, best; "
                      "ratios are medians of per-round ratios):"]
        lines += [f"  {k:<6} median {v:.3f} s" for k, v in c["median_s"].items()]
        for t in c["targets"]:
            lines.append(f"  {'MET ' if t['met'] else 'MISS'} {t['target']}: {t['value']:.3f} "
                         f"(needs >= {t['bound']:.3f})")
    lines.append("verified: every timed result equals np.sort(kind='stable')")
    return "\n".join(lines)


def _floats(text):
    return tuple(float(v) for v in text.split(",") if v.strip())


def _ints(text):
    return tuple(int(v) for v in text.split(",") if v.strip())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=None, help="keys to sort (default 2**24; "
                        "2**20 with --quick)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed runs per method, after one warm-up (default 3)")
    parser.add_argument("--grid-repeat", type=int, default=None,
                        help="timed runs per grid point (default: --repeat)")
    parser.add_argument("--alphas", type=_floats, default=None,
                        help="comma-separated alphas (default 0,0.1,...,1; quick 0,0.25,...,1)")
    parser.add_argument("--ys", type=_ints, default=None,
                        help="comma-separated transfer levels (default 2..12; quick 1,2,4,6,8)")
    parser.add_argument("--no-grid", action="store_true", help="only the methods table")
    parser.add_argument("--quick", action="store_true", help="n = 2**20 and a coarse grid")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cl-device", default=None, help="OpenCL device (see `hpu devices`); "
                        "default HPU_DEVICE or the first usable one")
    parser.add_argument("--fission", type=int, default=None, metavar="N",
                        help="run the device side on a sub-device of N compute units of "
                             "--cl-device (default 'cpu'), Numba on the remaining cores")
    parser.add_argument("--confirm", type=int, default=0, metavar="R",
                        help="re-measure model, best grid point, CPU-only and device-only in R "
                             "paired rounds and check issue 14's targets (default 0: off)")
    parser.add_argument("--json", action="store_true", help="print the raw data as JSON")
    parser.add_argument("--out", default=None, help="also write the raw data as JSON to this file")
    args = parser.parse_args(argv)
    n = args.n if args.n is not None else (QUICK_N if args.quick else 1 << 24)
    alphas = args.alphas if args.alphas is not None else (QUICK_ALPHAS if args.quick
                                                         else DEFAULT_ALPHAS)
    ys = args.ys if args.ys is not None else (QUICK_YS if args.quick else DEFAULT_YS)
    grid_repeat = args.grid_repeat if args.grid_repeat is not None else args.repeat
    if args.no_grid:
        alphas, ys = (), ()
    if n < 2 or args.repeat < 1 or grid_repeat < 1:
        parser.error(f"--n must be >= 2 and --repeat/--grid-repeat >= 1, got --n {n} "
                     f"--repeat {args.repeat} --grid-repeat {grid_repeat}")
    if any(not 0.0 <= a <= 1.0 for a in alphas) or any(y < 0 for y in ys):
        parser.error(f"--alphas must lie in [0, 1] and --ys be >= 0, got {alphas} and {ys}")

    if args.fission is not None:
        if args.fission < 1:
            parser.error(f"--fission must be >= 1 compute units, got {args.fission}")
        args.cl_device = f"{args.cl_device or 'cpu'}@{args.fission}"
    if args.confirm < 0:
        parser.error(f"--confirm must be >= 0 rounds, got {args.confirm}")

    def progress(msg):
        if not args.json:
            print(f"  {msg}", file=sys.stderr, flush=True)

    try:
        report = measure(n, args.repeat, grid_repeat, alphas, ys, args.seed, args.cl_device,
                         progress, confirm_rounds=args.confirm)
    except WrongResult as err:
        print(f"bench_hybrid: {err}; nothing is reported", file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
