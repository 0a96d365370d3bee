"""How fast is hpu's CPU mergesort? Reported, never asserted.

Sorts one array of ``--n`` random int32 keys (default 2**24) with

* hpu: ``algorithms.mergesort.mergesort.run(a, tmp, 0, n, device="cpu")``,
  the user's recursive function run breadth-first on Numba threads;
* two hand-written Numba breadth-first mergesorts (``bench/_baselines.py``):
  one doing exactly hpu's work with the same helpers, which hpu's generated
  code should match (goal: hpu ≤ 1.10× its time), and a tuned one whose
  merges ping-pong between two buffers instead of copying back;
* ``mergesort.sequential``: the same recursive function compiled by Numba on
  one core, the paper's baseline (hpu's speedup over it; goal ≥ 1.8× on 2 cores);
* ``np.sort(kind="stable")`` (goal: hpu faster) and the default ``np.sort``.

All of them run in this one process, on fresh copies of the same keys, after
one untimed warm-up each (compilation, caches); the table shows the median of
``--repeat`` timed runs and every ratio is a ratio of those medians.  Each
result is checked against ``np.sort`` before anything is reported.

Two further measurements run in child processes, because they are about a
process's whole life: ``--peak-memory N`` (peak resident memory of a process
that sorts 2**N int32 keys with ``sort(x)``, against 3× the input + 300 MB) and
``--first-call`` (the first ``sort`` call in a new process once the on-disk
cache is warm).

    python bench/bench_cpu.py                 # n = 2**24, 3 repeats
    python bench/bench_cpu.py --n 1048576 --repeat 5 --json
    python bench/bench_cpu.py --peak-memory 26 --first-call
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere in the checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from hpu._decorator import sequential_timed  # noqa: E402

GOAL_VS_HAND_WRITTEN = 1.10
GOAL_SPEEDUP = 1.8


def _time(fn, make_input, repeat):
    """Median seconds of ``repeat`` calls after one warm-up; each call gets a fresh input."""
    fn(*make_input())  # warm-up: compilation, caches, page faults of the scratch buffer
    times = []
    result = None
    for _ in range(repeat):
        args = make_input()
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
        result = out if out is not None else args[0]
    return statistics.median(times), times, result


def measure(n, repeat, seed):
    import numba

    from algorithms.mergesort import mergesort
    from bench._baselines import breadth_first_mergesort, breadth_first_same_merge

    keys = np.random.default_rng(seed).integers(0, 1 << 30, n, dtype=np.int32)
    want = np.sort(keys, kind="stable")
    scratch = np.empty_like(keys)
    sequential_timed(mergesort, keys.copy(), scratch, 0, n)   # the solver it times, no copy

    def fresh():
        return keys.copy(), scratch

    def hpu_cpu(a, t):
        mergesort.run(a, t, 0, a.size, device="cpu")

    methods = {
        "hpu mergesort.run(device='cpu')": hpu_cpu,
        "hand-written breadth-first, same merge": breadth_first_same_merge,
        "hand-written breadth-first, ping-pong": breadth_first_mergesort,
        "mergesort.sequential (1 core)": lambda a, t: mergesort.sequential(a, t, 0, a.size),
        "np.sort(kind='stable')": lambda a, t: np.sort(a, kind="stable"),
        "np.sort (default)": lambda a, t: np.sort(a),
    }
    rows = {}
    for name, fn in methods.items():
        median, times, result = _time(fn, fresh, repeat)
        if not np.array_equal(result, want):
            raise SystemExit(f"{name} did not sort the keys correctly; nothing is reported")
        rows[name] = {"median_s": median, "times_s": times}

    hpu_s = rows["hpu mergesort.run(device='cpu')"]["median_s"]
    ratios = {
        "hpu / hand-written (same merge)": hpu_s / rows["hand-written breadth-first, same merge"]["median_s"],
        "hpu / hand-written (ping-pong)": hpu_s / rows["hand-written breadth-first, ping-pong"]["median_s"],
        "speedup over sequential": rows["mergesort.sequential (1 core)"]["median_s"] / hpu_s,
        "np.sort stable / hpu": rows["np.sort(kind='stable')"]["median_s"] / hpu_s,
        "np.sort default / hpu": rows["np.sort (default)"]["median_s"] / hpu_s,
    }
    return {
        "n": n,
        "dtype": "int32",
        "repeat": repeat,
        "seed": seed,
        "threads": numba.get_num_threads(),
        "cpus": os.cpu_count(),
        "methods": rows,
        "ratios": ratios,
        "goals": {
            "hpu / hand-written (same merge)": f"<= {GOAL_VS_HAND_WRITTEN}",
            "speedup over sequential": f">= {GOAL_SPEEDUP} on 2 cores",
            "np.sort stable / hpu": "> 1",
        },
    }


# ------------------------------------------------------------ child processes

_MEMORY_CHILD = """
import resource, sys, numpy as np
from algorithms.mergesort import sort
n = 1 << int(sys.argv[1])
x = np.random.default_rng(0).integers(0, 1 << 30, n, dtype=np.int32)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
y = sort(x, device="cpu")
assert (y[1:] >= y[:-1]).all()
print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

_FIRST_CALL_CHILD = """
import time
t0 = time.perf_counter()
import numpy as np
from algorithms.mergesort import sort
t1 = time.perf_counter()
sort(np.arange(100000, 0, -1, dtype=np.int32), device="cpu")
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def _child(code, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"child process failed:\n{out.stderr}")
    return [float(v) for v in out.stdout.split()]


def peak_memory(log2_n):
    """Peak RSS (ru_maxrss, KiB on Linux) of a process sorting 2**log2_n int32 keys."""
    before_kib, peak_kib = _child(_MEMORY_CHILD, str(log2_n))
    input_mb = (1 << log2_n) * 4 / 1e6
    return {
        "n": 1 << log2_n,
        "input_MB": input_mb,
        "rss_before_sort_MB": before_kib * 1024 / 1e6,
        "peak_rss_MB": peak_kib * 1024 / 1e6,
        "goal_MB": 3 * input_mb + 300,
    }


def first_call():
    """Seconds for import and for the first ``sort`` in a new process, cache warmed first."""
    _child(_FIRST_CALL_CHILD)  # fills the on-disk cache if it was cold
    import_s, call_s = _child(_FIRST_CALL_CHILD)
    return {"import_s": import_s, "first_call_s": call_s}


# ------------------------------------------------------------------ output


def print_tables(report):
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if "methods" in report:
        r = report
        table = Table(title=f"Sorting n = {r['n']:,} int32 keys: median of {r['repeat']} "
                            f"after a warm-up ({r['threads']} Numba threads, {r['cpus']} CPUs)")
        table.add_column("method")
        table.add_column("median s", justify="right")
        table.add_column("runs s", justify="right")
        table.add_column("time ÷ hpu", justify="right")
        hpu_s = r["methods"]["hpu mergesort.run(device='cpu')"]["median_s"]
        for name, row in r["methods"].items():
            table.add_row(name, f"{row['median_s']:.3f}",
                          " ".join(f"{t:.3f}" for t in row["times_s"]),
                          f"{row['median_s'] / hpu_s:.2f}×")
        console.print(table)
        ratios = Table(title="Ratios (of medians)")
        ratios.add_column("ratio")
        ratios.add_column("value", justify="right")
        ratios.add_column("goal")
        for name, value in r["ratios"].items():
            ratios.add_row(name, f"{value:.2f}", r["goals"].get(name, ""))
        console.print(ratios)
    if "peak_memory" in report:
        m = report["peak_memory"]
        console.print(f"peak memory sorting {m['n']:,} int32 ({m['input_MB']:.0f} MB) with sort(x): "
                      f"{m['peak_rss_MB']:.0f} MB peak RSS ({m['rss_before_sort_MB']:.0f} MB before "
                      f"sorting, input included); goal ≤ {m['goal_MB']:.0f} MB")
    if "first_call" in report:
        f = report["first_call"]
        console.print(f"new process, warm cache: import {f['import_s']:.2f} s, "
                      f"first sort call {f['first_call_s']:.2f} s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1 << 24, help="keys to sort (default 2**24)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per method (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of tables")
    parser.add_argument("--peak-memory", type=int, metavar="LOG2_N", default=None,
                        help="also measure peak memory sorting 2**LOG2_N keys in a child process")
    parser.add_argument("--first-call", action="store_true",
                        help="also time the first call in a new process with a warm cache")
    parser.add_argument("--skip-timing", action="store_true", help="only the child-process measurements")
    args = parser.parse_args(argv)
    if args.n < 2 or args.repeat < 1:
        parser.error(f"--n must be >= 2 and --repeat >= 1, got --n {args.n} --repeat {args.repeat}")

    report = {}
    if not args.skip_timing:
        report.update(measure(args.n, args.repeat, args.seed))
    if args.peak_memory is not None:
        report["peak_memory"] = peak_memory(args.peak_memory)
    if args.first_call:
        report["first_call"] = first_call()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_tables(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
