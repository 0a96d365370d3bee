"""Functional mergesort (issue 17) against the shipped in-place mergesort, CPU path.
Reported, never asserted.

The functional mergesort is the issue's text as a person writes it: slices in, a
new array out of every call (``a.copy()`` at the leaves, ``np.empty`` in the
merge).  hpu runs such a function on the CPU as the function compiled by Numba
(``hpu._functional``: Numba allocating each call's array), its top K levels as Python
and the a^K subtrees below on ``numba.get_num_threads()`` threads (``FanOut``; the
child reports K and the subtrees); the shipped in-place mergesort
(``algorithms.mergesort.sort``) runs breadth-first on Numba threads with one scratch
buffer.  Goals from the issue: functional time <= 1.5x
the in-place one, functional peak memory <= 4x the input.

Each variant runs in its own child process (so that peak resident memory,
``ru_maxrss``, is its own): one untimed warm-up on 4096 keys (compilation), then
``--repeat`` timed sorts of fresh copies of the same 2**N random int32 keys; the
child reports the median seconds and the peak RSS growth over the process's RSS
before the first timed sort, both checked against ``np.sort`` first.

    python bench/bench_functional.py                 # N = 24, 3 repeats
    python bench/bench_functional.py --log2n 20 --repeat 5 --json
    python bench/bench_functional.py --log2n 22 --device   # + its device form: hybrid, gpu
    python bench/bench_functional.py --log2n 16 --repeat 3 --device --cold

Every child also reports its first call (the warm-up: compiling included, ``first_call_s``);
``--cold`` gives each child empty hpu and PoCL caches, so that figure is a first call on a
fresh machine (its timed sorts may compile again for the larger size: use ``--repeat 3``,
whose median leaves that out).
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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import hpu  # noqa: E402

GOAL_TIME = 1.5
GOAL_MEMORY = 4.0


def merge(left, right):
    out = np.empty(len(left) + len(right), left.dtype)
    i = 0
    j = 0
    k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        out[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        out[k] = right[j]
        j += 1
        k += 1
    return out


@hpu.divide_and_conquer
def msort(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    return merge(msort(a[:m]), msort(a[m:]))


_last = {}


def _variant(name):
    if name == "functional":
        def run(x):
            r = msort.run(x, device="cpu")
            _last.update(K=r.K, subtrees=r.cpu_tasks, reason=r.reason)
            return r.value

        return run
    if name in ("functional-hybrid", "functional-gpu"):
        # the device form (hpu._functional_dps): breadth-first, the model's split or the
        # device alone
        device = name.split("-")[1]

        def run(x):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # "the model keeps everything on the CPU"
                r = msort.run(x, device=device)
            _last.update(K=r.K, cpu_tasks=r.cpu_tasks, gpu_tasks=r.gpu_tasks,
                         fallbacks=r.fallbacks, alpha=r.alpha, y=r.y)
            return r.value

        return run
    from algorithms.mergesort import sort

    return lambda x: sort(x, device="cpu")


def child(name, log2n, repeat):
    import resource

    sort = _variant(name)
    small = np.random.default_rng(1).integers(0, 1 << 30, 4096, dtype=np.int32)
    t0 = time.perf_counter()
    first = sort(small.copy())
    first_call = time.perf_counter() - t0
    assert np.array_equal(first, np.sort(small))
    x = np.random.default_rng(0).integers(0, 1 << 30, 1 << log2n, dtype=np.int32)
    want = np.sort(x)
    seconds = []
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(repeat):
        y = x.copy()
        t0 = time.perf_counter()
        out = sort(y)
        seconds.append(time.perf_counter() - t0)
        assert np.array_equal(out, want)
        del out, y
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": statistics.median(seconds), "all_seconds": seconds,
                      "first_call_s": first_call,
                      "peak_growth_MB": (peak - before) * 1024 / 1e6, **_last}))


def measure(name, log2n, repeat, cold=False):
    import tempfile

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    if cold:                            # empty caches: the first call compiles everything
        fresh = tempfile.mkdtemp(prefix="hpu-bench-cold-")
        env.update(HPU_CACHE_DIR=os.path.join(fresh, "hpu"),
                   POCL_CACHE_DIR=os.path.join(fresh, "pocl"))
    out = subprocess.run([sys.executable, __file__, "--child", name, "--log2n", str(log2n),
                          "--repeat", str(repeat)], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{name} child failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2n", type=int, default=24)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", action="store_true")
    p.add_argument("--device", action="store_true",
                   help="also the functional mergesort's device form (hpu._functional_dps): "
                        "device='hybrid' (the model's split) and device='gpu'")
    p.add_argument("--cold", action="store_true",
                   help="each child with empty hpu and PoCL caches (first_call_s: a fresh "
                        "machine's first call)")
    p.add_argument("--child", choices=["functional", "inplace", "functional-hybrid",
                                       "functional-gpu"], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.log2n, args.repeat)
        return
    input_mb = (1 << args.log2n) * 4 / 1e6
    f = measure("functional", args.log2n, args.repeat, args.cold)
    i = measure("inplace", args.log2n, args.repeat, args.cold)
    report = {
        "n": 1 << args.log2n, "input_MB": input_mb, "functional": f, "inplace": i,
        "time_ratio": f["seconds"] / i["seconds"],
        "functional_memory_over_input": f["peak_growth_MB"] / input_mb,
        "inplace_memory_over_input": i["peak_growth_MB"] / input_mb,
        "goals": {"time_ratio": f"<= {GOAL_TIME}", "functional_memory_over_input":
                  f"<= {GOAL_MEMORY}"},
        "note": "functional: the top K levels as Python, the subtrees compiled by Numba on "
                "Numba's thread count (hpu._functional.FanOut); in-place: breadth-first on "
                "Numba threads",
    }
    if args.device:
        for name in ("functional-hybrid", "functional-gpu"):
            report[name] = measure(name, args.log2n, args.repeat, args.cold)
            report[name]["time_over_inplace"] = report[name]["seconds"] / i["seconds"]
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"n = {report['n']:,} int32 ({input_mb:.0f} MB)")
    for name in ("functional", "inplace"):
        r = report[name]
        print(f"  {name:10s} {r['seconds']:.3f} s (median of {len(r['all_seconds'])}), "
              f"peak RSS growth {r['peak_growth_MB']:.0f} MB "
              f"({r['peak_growth_MB'] / input_mb:.1f}x the input), first call "
              f"{r['first_call_s']:.1f} s")
    for name in ("functional-hybrid", "functional-gpu"):
        if name in report:
            r = report[name]
            print(f"  {name:17s} {r['seconds']:.3f} s ({r['time_over_inplace']:.2f}x in-place), "
                  f"peak RSS growth {r['peak_growth_MB']:.0f} MB "
                  f"({r['peak_growth_MB'] / input_mb:.1f}x), alpha={r['alpha']}, y={r['y']}, "
                  f"K={r['K']}, tasks cpu {r['cpu_tasks']} / device {r['gpu_tasks']}, "
                  f"fallbacks {r['fallbacks'] or 'none'}, first call {r['first_call_s']:.1f} s")
    if "reason" in f:
        print(f"  functional: K={f['K']}, {f['subtrees']} subtrees: {f['reason']}")
    print(f"  functional / in-place time: {report['time_ratio']:.2f} (goal <= {GOAL_TIME}); "
          f"functional memory {report['functional_memory_over_input']:.1f}x the input "
          f"(goal <= {GOAL_MEMORY})")


if __name__ == "__main__":
    main()
