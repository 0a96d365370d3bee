"""Base cases written with NumPy reductions (``a.sum()``, ``np.max(a)``, ``np.sum(a > 0)``):
hpu against the plain function, one process.  Reported, never asserted.

Until hpu read these as loops (``hpu._reductions``) such functions were refused at
decoration; now they run breadth-first on the CPU's threads and on the OpenCL device.
Three functions, each with a base case of at most 64 elements:

* ``total``: ``return a.sum()``, the halves' sums added;
* ``top``: ``return np.max(a)``, the larger of the halves' kept;
* ``positives``: ``return np.sum(a > 0)``, an element-wise argument counted.

Each round runs the plain function (``f.py_func``: Python's recursion, NumPy's reductions)
and hpu on each device asked for, in a rotating order, on the same float64 array; the
table gives the medians after one warm-up (compilation) and the median of the per-round
ratios plain / hpu.  Every answer is checked against the plain function's, exactly (hpu adds
a base case's floats in NumPy's pairwise order, :meth:`hpu._reductions._Reductions.pairwise`).

    python bench/bench_reductions.py                        # 2**22 floats, 5 rounds, cpu
    python bench/bench_reductions.py --n 1048576 --devices cpu,gpu --json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import hpu  # noqa: E402


@hpu.divide_and_conquer
def total(a):
    if len(a) <= 64:
        return a.sum()
    m = len(a) // 2
    return total(a[:m]) + total(a[m:])


@hpu.divide_and_conquer
def top(a):
    if len(a) <= 64:
        return np.max(a)
    m = len(a) // 2
    return max(top(a[:m]), top(a[m:]))


@hpu.divide_and_conquer
def positives(a):
    if len(a) <= 64:
        return np.sum(a > 0)
    m = len(a) // 2
    return positives(a[:m]) + positives(a[m:])


FUNCTIONS = {"total": total, "top": top, "positives": positives}


def _same(got, want) -> bool:
    return got == want


def measure(f, x, devices, rounds: int) -> dict:
    want = f.py_func(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        for d in devices:                                        # compiles
            assert _same(f.options(device=d)(x[:5000]), f.py_func(x[:5000]))
        sides = ["plain"] + list(devices)
        times = {s: [] for s in sides}
        for r in range(rounds):
            for s in sides[r % len(sides):] + sides[:r % len(sides)]:
                call = f.py_func if s == "plain" else f.options(device=s)
                t0 = time.perf_counter()
                got = call(x)
                times[s].append(time.perf_counter() - t0)
                assert _same(got, want), (f.__name__, s, got, want)
    out = {s: {"median_s": statistics.median(v), "all_s": v} for s, v in times.items()}
    for d in devices:
        out[d]["speedup"] = statistics.median(p / h for p, h in zip(times["plain"], times[d]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.n < 1 or args.rounds < 1:
        ap.error(f"--n {args.n} --rounds {args.rounds}: both must be >= 1")
    devices = [d for d in args.devices.split(",") if d]
    bad = [d for d in devices if d not in ("cpu", "gpu", "hybrid")]
    if bad or not devices:
        ap.error(f"--devices {args.devices!r}: expected a comma-separated list of cpu, gpu, "
                 "hybrid")
    x = np.random.default_rng(1).normal(size=args.n)
    report = {"n": args.n, "rounds": args.rounds, "devices": devices,
              "functions": {k: measure(f, x, devices, args.rounds)
                            for k, f in FUNCTIONS.items()}}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"n = {args.n} float64, {args.rounds} rounds, medians after a warm-up")
    for name, r in report["functions"].items():
        cells = [f"plain {r['plain']['median_s']:.4f} s"]
        cells += [f"{d} {r[d]['median_s']:.4f} s ({r[d]['speedup']:.1f}x)" for d in devices]
        print(f"  {name:10s} " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
