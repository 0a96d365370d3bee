"""Recursion written for Python lists (issue 17): hpu against the plain function, one process.
Reported, never asserted.

Three functions as tutorials print them, each given a Python list of ints:

* ``qsort``: the textbook quicksort, three list comprehensions and ``+``;
* ``lsort``: mergesort on list slices, a helper that ``append``s and ``extend``s;
* ``merge_sort``: the in-place mergesort most tutorials print (``L = arr[:mid]``,
  both halves sorted, merged back into ``arr``), a list the function writes to.

``merge_sort`` runs as the copy-halves form (``hpu._copy_halves``, guide §10: its copies
made after its calls from one buffer, breadth-first on the CPU's threads, the list's ints
as an array written back into the list); ``lsort`` and ``qsort`` have
in-place forms (``hpu._functional_dps``: the list merge written into one buffer;
``hpu._functional_partition``: the comprehensions' pieces written at their places), which
run breadth-first on the CPU's threads on ``device="cpu"`` too.  The plain function is ``f.py_func`` (Python's own
recursion).  Each round runs both on fresh copies of the same list, in alternating
order; the table gives the medians after one warm-up (compilation) and the median of
the per-round ratios.  Both results are checked against ``sorted``.

    python bench/bench_lists.py                    # 10**6 ints, 5 rounds
    python bench/bench_lists.py --n 200000 --rounds 7 --json
    python bench/bench_lists.py --ks 0,1,2,3       # lsort fanned out at each K instead

``--ks``: ``lsort`` with ``K`` given (the top K levels as Python, the 2**K subtrees
compiled on Numba's threads) against ``K=0`` (one call, what hpu picks for list
functions) and the plain function, the Ks in a rotating order each round.

``--devices cpu,gpu,hybrid``: ``lsort`` on each device -- ``cpu`` the one compiled call,
``gpu`` and ``hybrid`` its device form (the list merge written into one buffer, checked
as it grows: guide §10), breadth-first on the OpenCL device and the CPU's threads --
against the plain function, in a rotating order each round; each side's median and the
median of its per-round ratio to ``cpu``::

    python bench/bench_lists.py --n 1048576 --rounds 5 --devices cpu,gpu,hybrid
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import hpu  # noqa: E402


@hpu.divide_and_conquer
def qsort(arr):
    if len(arr) <= 1:
        return arr
    pivot = arr[len(arr) // 2]
    left = [x for x in arr if x < pivot]
    middle = [x for x in arr if x == pivot]
    right = [x for x in arr if x > pivot]
    return qsort(left) + middle + qsort(right)


def merge_lists(left, right):
    result = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    result.extend(left[i:])
    result.extend(right[j:])
    return result


@hpu.divide_and_conquer
def lsort(arr):
    if len(arr) <= 1:
        return arr
    mid = len(arr) // 2
    return merge_lists(lsort(arr[:mid]), lsort(arr[mid:]))


@hpu.divide_and_conquer
def merge_sort(arr):
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid]
        R = arr[mid:]
        merge_sort(L)
        merge_sort(R)
        i = j = k = 0
        while i < len(L) and j < len(R):
            if L[i] <= R[j]:
                arr[k] = L[i]
                i += 1
            else:
                arr[k] = R[j]
                j += 1
            k += 1
        while i < len(L):
            arr[k] = L[i]
            i += 1
            k += 1
        while j < len(R):
            arr[k] = R[j]
            j += 1
            k += 1


def _sorted_by(f, plain: bool):
    """A call of ``f`` (plain: its Python original) returning the sorted list."""
    fn = f.py_func if plain else (lambda xs: f.run(xs, device="cpu").value)
    if f is merge_sort:
        def in_place(xs):
            fn(xs)
            return xs
        return in_place
    return fn


def measure(f, xs, rounds: int) -> dict:
    want = sorted(xs)
    hpu_call, plain_call = _sorted_by(f, False), _sorted_by(f, True)
    assert hpu_call(list(xs[:1000])) == sorted(xs[:1000])           # compiles
    times = {"hpu": [], "plain": []}
    for r in range(rounds):
        order = ("hpu", "plain") if r % 2 == 0 else ("plain", "hpu")
        for side in order:
            call = hpu_call if side == "hpu" else plain_call
            ys = list(xs)
            t0 = time.perf_counter()
            out = call(ys)
            times[side].append(time.perf_counter() - t0)
            assert out == want, (f.__name__, side)
    ratios = [p / h for h, p in zip(times["hpu"], times["plain"])]
    run = f.run(list(xs[:1000]), device="cpu")
    return {"hpu_s": statistics.median(times["hpu"]), "plain_s": statistics.median(times["plain"]),
            "speedup": statistics.median(ratios), "all_hpu_s": times["hpu"],
            "all_plain_s": times["plain"],
            "reason": run.reason or (run.plan.reason if run.plan is not None else None)}


def measure_ks(xs, ks, rounds: int) -> dict:
    want = sorted(xs)
    sides = [f"K={k}" for k in ks] + ["plain"]
    for k in ks:
        assert lsort.run(list(xs[:5000]), device="cpu", K=k).value == sorted(xs[:5000])
    times = {s: [] for s in sides}
    for r in range(rounds):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:
            ys = list(xs)
            t0 = time.perf_counter()
            out = (lsort.py_func(ys) if side == "plain"
                   else lsort.run(ys, device="cpu", K=int(side[2:])).value)
            times[side].append(time.perf_counter() - t0)
            assert out == want, side
    return {s: {"median_s": statistics.median(t), "all_s": t} for s, t in times.items()}


def measure_devices(xs, devices, rounds: int) -> dict:
    want = sorted(xs)
    sides = list(devices) + ["plain"]
    for d in devices:                       # compiles, and checks the device form ran
        run = lsort.run(list(xs[:5000]), device=d)
        assert run.value == sorted(xs[:5000]) and run.fallbacks == [], (d, run.fallbacks)
    times = {s: [] for s in sides}
    for r in range(rounds):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:
            ys = list(xs)
            t0 = time.perf_counter()
            out = lsort.py_func(ys) if side == "plain" else lsort.run(ys, device=side).value
            times[side].append(time.perf_counter() - t0)
            assert out == want, side
    base = times.get("cpu")
    report = {}
    for side, t in times.items():
        report[side] = {"median_s": statistics.median(t), "all_s": t}
        if base is not None:
            report[side]["cpu_over_this"] = statistics.median(
                [c / x for c, x in zip(base, t)])
    return report


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10**6)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.add_argument("--ks", help="comma-separated K values: lsort fanned out at each")
    p.add_argument("--devices", help="comma-separated devices (cpu, gpu, hybrid): lsort on each")
    args = p.parse_args(argv)
    if args.n < 1 or args.rounds < 1:
        p.error(f"--n {args.n} and --rounds {args.rounds} must be at least 1")
    xs = [int(v) for v in np.random.default_rng(0).integers(0, 10**9, args.n)]
    if args.devices:
        devices = args.devices.split(",")
        bad = [d for d in devices if d not in ("cpu", "gpu", "hybrid")]
        if bad or not devices:
            p.error(f"--devices {args.devices!r}: expected cpu, gpu or hybrid separated by "
                    "commas, e.g. cpu,gpu,hybrid")
        report = {"n": args.n, "rounds": args.rounds,
                  "lsort": measure_devices(xs, devices, args.rounds)}
        if args.json:
            print(json.dumps(report, indent=2))
            return
        print(f"lsort on {args.n:,} listed ints, {args.rounds} rotating rounds, medians")
        for side, r in report["lsort"].items():
            ratio = (f"   cpu/this {r['cpu_over_this']:.2f}" if "cpu_over_this" in r else "")
            print(f"  {side:6s} {r['median_s']:.3f} s{ratio}")
        return
    if args.ks:
        try:
            ks = [int(k) for k in args.ks.split(",")]
        except ValueError:
            p.error(f"--ks {args.ks!r}: expected integers >= 0 separated by commas, e.g. 0,1,2")
        if any(k < 0 for k in ks):
            p.error(f"--ks {args.ks!r}: K must be >= 0")
        report = {"n": args.n, "rounds": args.rounds, "lsort": measure_ks(xs, ks, args.rounds)}
        if args.json:
            print(json.dumps(report, indent=2))
            return
        print(f"lsort on {args.n:,} listed ints, {args.rounds} rounds, medians")
        for side, r in report["lsort"].items():
            print(f"  {side:6s} {r['median_s']:.3f} s")
        return
    report = {"n": args.n, "rounds": args.rounds,
              "functions": {f.__name__: measure(f, xs, args.rounds)
                            for f in (qsort, lsort, merge_sort)}}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.n:,} ints in a list, {args.rounds} alternating rounds, medians")
    for name, r in report["functions"].items():
        print(f"  {name:10s} hpu {r['hpu_s']:.3f} s   plain Python {r['plain_s']:.3f} s   "
              f"plain/hpu {r['speedup']:.2f} (median of the rounds' ratios)")
    for name, r in report["functions"].items():
        print(f"  {name}: {r['reason'] or 'its in-place form, breadth-first on the CPU threads'}")


if __name__ == "__main__":
    main()
