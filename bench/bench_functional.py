"""Functional mergesort (issue 17) against the shipped in-place mergesort, CPU path.
Reported, never asserted.

The functional mergesort is the issue's text as a person writes it: slices in, a
new array out of every call (``a.copy()`` at the leaves, ``np.empty`` in the
merge).  On the CPU hpu runs such a function, from 2**20 elements
(``hpu._decorator.FORM_ON_CPU_MIN``), as its in-place form (``hpu._functional_dps``: one
buffer of twice the input, breadth-first on Numba's threads, the child reports K and the
levels); below that, or with ``K=``, as the function compiled by Numba (``hpu._functional``:
Numba allocating each call's array), its top K levels as Python and the a^K subtrees below
on ``numba.get_num_threads()`` threads (``FanOut``; ``--fanout`` measures it at the same
size).  The shipped in-place mergesort (``algorithms.mergesort.sort``) runs breadth-first on
Numba threads with one scratch buffer.  Goals from the issue: functional time <= 1.5x the
in-place one, functional peak memory <= 4x the input.

Each variant runs in its own child process (so that peak resident memory is its own: the
peak resident set, ``VmHWM``, restarted before the timed sorts where Linux allows, else
``ru_maxrss``): one untimed warm-up on 4096 keys (compilation; the in-place form also one
at the full size, whose memory still counts), then
``--repeat`` timed sorts of fresh copies of the same 2**N random int32 keys; the
child reports the median seconds and the peak RSS growth over the process's RSS
before them (before the full-size warm-up, for the in-place form), each sort checked
against ``np.sort``.  The growth includes the fresh copy of the input each sort is given
(1x): a sort's own memory is the figure less one.

    python bench/bench_functional.py                 # N = 24, 3 repeats
    python bench/bench_functional.py --log2n 20 --repeat 5 --json
    python bench/bench_functional.py --log2n 22 --device   # + its device form: hybrid, gpu
    python bench/bench_functional.py --log2n 16 --repeat 3 --device --cold
    python bench/bench_functional.py --paired 7        # time only: both in one process

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
from hpu._decorator import FORM_ON_CPU_MIN  # noqa: E402

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
        # device="cpu": from 2**20 elements its in-place form breadth-first on the CPU's
        # threads (hpu._decorator.FORM_ON_CPU_MIN), below that the compiled fan-out
        def run(x):
            r = msort.run(x, device="cpu")
            _last.clear()               # (the warm-up's small call ran the fan-out)
            if len(r.levels) > 1:       # breadth-first: the in-place form
                _last.update(K=r.K, cpu_tasks=r.cpu_tasks, levels=len(r.levels))
            else:
                _last.update(K=r.K, subtrees=r.cpu_tasks, reason=r.reason)
            return r.value

        return run
    if name == "functional-fanout":
        # the compiled function fanned out (hpu._functional.FanOut), as device="cpu" runs an
        # array below hpu._decorator.FORM_ON_CPU_MIN: K given, as the fan-out picks it
        import numba

        from hpu._functional import fanout_levels

        def run(x):
            K = fanout_levels(x.size, 2, 2.0, numba.get_num_threads())[0]
            r = msort.run(x, device="cpu", K=K)
            _last.update(K=r.K, subtrees=r.cpu_tasks)
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


def _status_kb(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _rss_kb():
    """The resident set now (KiB), or the peak so far where /proc is not there."""
    import resource

    now = _status_kb("VmRSS:")
    return now if now is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak():
    """Linux: the peak resident set restarts from now (``clear_refs`` 5), so a warm-up's
    peak does not hide the timed sorts'."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_kb():
    import resource

    hwm = _status_kb("VmHWM:")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(name, log2n, repeat):

    sort = _variant(name)
    small = np.random.default_rng(1).integers(0, 1 << 30, 4096, dtype=np.int32)
    t0 = time.perf_counter()
    first = sort(small.copy())
    first_call = time.perf_counter() - t0
    assert np.array_equal(first, np.sort(small))
    x = np.random.default_rng(0).integers(0, 1 << 30, 1 << log2n, dtype=np.int32)
    want = np.sort(x)
    seconds = []
    before = _rss_kb()
    if name == "functional" and x.size >= FORM_ON_CPU_MIN:
        # the in-place form compiles at this size: once, before the timed sorts (what it
        # keeps of the compiler's memory still counts: `before` is taken ahead of it)
        assert np.array_equal(sort(x.copy()), want)
        import gc

        gc.collect()
    _reset_peak()
    for _ in range(repeat):
        y = x.copy()
        t0 = time.perf_counter()
        out = sort(y)
        seconds.append(time.perf_counter() - t0)
        assert np.array_equal(out, want)
        del out, y
    peak = _peak_kb()
    print(json.dumps({"seconds": statistics.median(seconds), "all_seconds": seconds,
                      "first_call_s": first_call,
                      "peak_growth_MB": (peak - before) * 1024 / 1e6, **_last}))


def paired(log2n, rounds):
    """Time only, in one process: ``rounds`` rounds, each the functional sort then the
    in-place one on fresh copies of the same keys (one warm-up round first); the medians
    and the median of the rounds' ratios -- the ratio of two children is at the mercy of
    what else the machine runs while each of them does."""
    functional, inplace = _variant("functional"), _variant("inplace")
    x = np.random.default_rng(0).integers(0, 1 << 30, 1 << log2n, dtype=np.int32)
    want = np.sort(x)
    times = {"functional": [], "inplace": []}
    for r in range(rounds + 1):
        for name, sort in (("functional", functional), ("inplace", inplace)):
            y = x.copy()
            t0 = time.perf_counter()
            out = sort(y)
            if r:
                times[name].append(time.perf_counter() - t0)
            assert np.array_equal(out, want)
            del out, y
    ratios = [f / i for f, i in zip(times["functional"], times["inplace"])]
    return {"functional_s": statistics.median(times["functional"]),
            "inplace_s": statistics.median(times["inplace"]),
            "ratio_of_medians": statistics.median(times["functional"])
            / statistics.median(times["inplace"]),
            "median_paired_ratio": statistics.median(ratios), "rounds": rounds, **times}


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
    p.add_argument("--fanout", action="store_true",
                   help="also the compiled fan-out (what device='cpu' runs below 2**20 "
                        "elements, or with K=)")
    p.add_argument("--paired", type=int, metavar="ROUNDS",
                   help="time only: ROUNDS interleaved rounds of both sorts in this one "
                        "process (medians, and the median of the rounds' ratios)")
    p.add_argument("--child", choices=["functional", "inplace", "functional-hybrid",
                                       "functional-gpu", "functional-fanout"],
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.log2n, args.repeat)
        return
    if args.paired:
        r = paired(args.log2n, args.paired)
        if args.json:
            print(json.dumps(r, indent=2))
            return
        print(f"n = {1 << args.log2n:,} int32, {r['rounds']} interleaved rounds in one process: "
              f"functional {r['functional_s']:.3f} s, in-place {r['inplace_s']:.3f} s "
              f"(medians): {r['ratio_of_medians']:.2f}x; median of the rounds' ratios "
              f"{r['median_paired_ratio']:.2f} (goal <= {GOAL_TIME})")
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
    if args.fanout:
        report["functional-fanout"] = measure("functional-fanout", args.log2n, args.repeat,
                                              args.cold)
        report["functional-fanout"]["time_over_inplace"] = (
            report["functional-fanout"]["seconds"] / i["seconds"])
        report["functional-fanout"]["memory_over_input"] = (
            report["functional-fanout"]["peak_growth_MB"] / input_mb)
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
    if "functional-fanout" in report:
        r = report["functional-fanout"]
        print(f"  fan-out    {r['seconds']:.3f} s ({r['time_over_inplace']:.2f}x in-place), "
              f"peak RSS growth {r['peak_growth_MB']:.0f} MB ({r['memory_over_input']:.1f}x), "
              f"K={r['K']}, {r['subtrees']} subtrees")
    for name in ("functional-hybrid", "functional-gpu"):
        if name in report:
            r = report[name]
            print(f"  {name:17s} {r['seconds']:.3f} s ({r['time_over_inplace']:.2f}x in-place), "
                  f"peak RSS growth {r['peak_growth_MB']:.0f} MB "
                  f"({r['peak_growth_MB'] / input_mb:.1f}x), alpha={r['alpha']}, y={r['y']}, "
                  f"K={r['K']}, tasks cpu {r['cpu_tasks']} / device {r['gpu_tasks']}, "
                  f"fallbacks {r['fallbacks'] or 'none'}, first call {r['first_call_s']:.1f} s")
    if "subtrees" in f:
        print(f"  functional: the fan-out, K={f['K']}, {f['subtrees']} subtrees: {f['reason']}")
    else:
        print(f"  functional: the in-place form, K={f['K']}, {f['levels']} levels, "
              f"{f['cpu_tasks']} tasks at the cut-off")
    print(f"  functional / in-place time: {report['time_ratio']:.2f} (goal <= {GOAL_TIME}); "
          f"functional memory {report['functional_memory_over_input']:.1f}x the input "
          f"(goal <= {GOAL_MEMORY})")


if __name__ == "__main__":
    main()
