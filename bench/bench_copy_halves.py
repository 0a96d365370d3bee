"""The tutorials' mergesort -- copies of its halves, merged back by three ``while`` loops
and a counter ``k`` -- breadth-first with one buffer (``hpu/_copy_halves.py``), one process.
Reported, never asserted.

Before the copy-halves form hpu ran it compiled as written, as one call on one core (its
merge loops are its own; since ``hpu/_outline.py`` a fan-out of that over the cores).  Each
round sorts fresh copies of the same 2**N random int32 keys with

* ``form``: ``tutorial.run(x, device=...)`` (the copy-halves form, breadth-first);
* ``as written``: ``tutorial.sequential(x)`` (the function compiled by Numba, one call);
* ``shipped``: ``algorithms.mergesort.sort(x, device=...)``;

in a rotating order, after one warm-up each; the table gives the medians and the median of
the per-round ratios.  Every result is checked against ``np.sort``.

    python bench/bench_copy_halves.py                  # 2**22 keys, 5 rounds, device cpu
    python bench/bench_copy_halves.py --log2n 20 --rounds 7 --device hybrid --json
    python bench/bench_copy_halves.py --shape two-indices   # arr[i + j]: checked by marks
    python bench/bench_copy_halves.py --shape helper        # merge(arr, L, R), written out
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
from algorithms import mergesort  # noqa: E402


@hpu.divide_and_conquer
def tutorial(arr):
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        tutorial(L)
        tutorial(R)
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


@hpu.divide_and_conquer
def two_indices(arr):
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        two_indices(L)
        two_indices(R)
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


def merge(arr, left, right):
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            arr[k] = left[i]
            i += 1
        else:
            arr[k] = right[j]
            j += 1
        k += 1
    while i < len(left):
        arr[k] = left[i]
        i += 1
        k += 1
    while j < len(right):
        arr[k] = right[j]
        j += 1
        k += 1


@hpu.divide_and_conquer
def with_helper(arr):
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid].copy()
        R = arr[mid:].copy()
        with_helper(L)
        with_helper(R)
        merge(arr, L, R)


SHAPES = {"counter": tutorial, "two-indices": two_indices, "helper": with_helper}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2n", type=int, default=22)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--device", default="cpu", choices=["cpu", "gpu", "hybrid"])
    p.add_argument("--shape", default="counter", choices=sorted(SHAPES),
                   help="the merge: at a counter k (the tutorials'), at i + j (checked by "
                        "marks), or in a helper merge(arr, L, R)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    fn = SHAPES[args.shape]
    n = 1 << args.log2n
    x = np.random.default_rng(0).integers(-2**31, 2**31 - 1, n).astype(np.int32)
    want = np.sort(x, kind="stable")

    def form():
        y = x.copy()
        return y, fn.run(y, device=args.device)

    def as_written():
        y = x.copy()
        fn.sequential(y)
        return y, None

    def shipped():
        return mergesort.sort(x, device=args.device), None

    sides = {"form": form, "as written": as_written, "shipped": shipped}
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
            if run is not None:
                last = run
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = {k: statistics.median(a / b for a, b in zip(times[k], times["shipped"]))
             for k in sides}
    out = {"n": n, "device": args.device, "shape": args.shape, "rounds": args.rounds,
           "median_s": med,
           "ratio_to_shipped": ratio, "form_cpu_tasks": last.cpu_tasks,
           "form_gpu_tasks": last.gpu_tasks, "fallbacks": list(last.fallbacks)}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"n = 2**{args.log2n} int32, {args.shape} merge, device={args.device}, "
              f"{args.rounds} rounds "
              f"(form: {last.cpu_tasks} CPU / {last.gpu_tasks} device leaf tasks)")
        for k in sides:
            print(f"  {k:10s} {med[k]:.3f} s   {ratio[k]:.2f}x shipped")
    return out


if __name__ == "__main__":
    main()
