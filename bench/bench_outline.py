"""A mergesort with its merge loops in the function itself -- the tutorials' one, merging
at ``i + j``, with an insertion sort at 16 elements, which reads ``arr`` (so the copy-halves
form does not take it: bench_copy_halves.py) -- fanned out over the CPU's cores, one process.
Reported, never asserted.

Its merge loops are its own, so before ``hpu/_outline.py`` its top levels would have merged
element by element as Python: it ran as one compiled call, on one core.  Now each loop is a
compiled helper in the fan-out's top levels.  Each round sorts fresh copies of the same
2**N random int32 keys with

* ``fan-out``: ``copy_sort.run(x, device="cpu")`` (the plan's ``K``, loops outlined);
* ``one call``: ``copy_sort.run(x, device="cpu", K=0)`` (what ran before);
* ``shipped``: ``algorithms.mergesort.sort(x, device="cpu")``;

in a rotating order, after one warm-up each; the table gives the medians and the median of
the per-round ratios.  Every result is checked against ``np.sort``.

    python bench/bench_outline.py                  # 2**22 keys, 5 rounds
    python bench/bench_outline.py --log2n 20 --rounds 7 --json
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

import numba  # noqa: E402
import numpy as np  # noqa: E402

import hpu  # noqa: E402
from algorithms import mergesort  # noqa: E402


@hpu.divide_and_conquer
def copy_sort(arr):
    if len(arr) <= 16:                  # insertion sort: it reads arr, so not copy-halves
        for i in range(1, len(arr)):
            v = arr[i]
            j = i - 1
            while j >= 0 and arr[j] > v:
                arr[j + 1] = arr[j]
                j -= 1
            arr[j + 1] = v
    else:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        copy_sort(L)
        copy_sort(R)
        i = j = 0
        while i < len(L) and j < len(R):
            if L[i] <= R[j]:
                arr[i + j] = L[i]
                i += 1
            else:
                arr[i + j] = R[j]
                j += 1
        while i < len(L):
            arr[i + j] = L[i]
            i += 1
        while j < len(R):
            arr[i + j] = R[j]
            j += 1


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2n", type=int, default=22)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    n = 1 << args.log2n
    x = np.random.default_rng(0).integers(-2**31, 2**31 - 1, n).astype(np.int32)
    want = np.sort(x, kind="stable")

    def fan_out():
        y = x.copy()
        return y, copy_sort.run(y, device="cpu")

    def one_call():
        y = x.copy()
        return y, copy_sort.run(y, device="cpu", K=0)

    def shipped():
        return mergesort.sort(x, device="cpu"), None

    sides = {"fan-out": fan_out, "one call": one_call, "shipped": shipped}
    times: dict[str, list[float]] = {k: [] for k in sides}
    last = None
    for f in sides.values():                 # warm-up: compilation
        f()
    for r in range(args.rounds):
        names = list(sides)
        names = names[r % len(names):] + names[:r % len(names)]
        for name in names:
            t0 = time.perf_counter()
            y, run = sides[name]()
            times[name].append(time.perf_counter() - t0)
            assert np.array_equal(y, want), name
            if name == "fan-out":
                last = run
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = {k: statistics.median(a / b for a, b in zip(times[k], times["one call"]))
             for k in sides}
    out = {"n": n, "rounds": args.rounds, "threads": numba.get_num_threads(),
           "median_s": med, "ratio_to_one_call": ratio, "K": last.K,
           "subtrees": last.cpu_tasks, "reason": last.reason}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"n = 2**{args.log2n} int32, {out['threads']} threads, {args.rounds} rounds "
              f"(fan-out: K={last.K}, {last.cpu_tasks} compiled subtrees)")
        for k in sides:
            print(f"  {k:9s} {med[k]:.3f} s   {ratio[k]:.2f}x one call")
    return out


if __name__ == "__main__":
    main()
