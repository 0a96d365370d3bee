"""An in-place mergesort that allocates its merge buffer (issue 17), one process.
Reported, never asserted.

The function is the textbook one on index bounds, ``tmp = np.empty(hi - lo, a.dtype)``
after its two calls (``hpu/_scratch_form.py``, guide §10).  Before the scratch form hpu ran
it compiled as written, as one call (its merge loop is its own); now its allocation is
carved from one buffer and it runs breadth-first like the shipped in-place mergesort
(``algorithms.mergesort.sort``, which is given its scratch array).  Each round sorts fresh
copies of the same 2**N random int32 keys with

* ``form``: ``msort_tmp.run(x, 0, n, device=...)`` (the scratch form);
* ``as written``: ``msort_tmp.sequential(x, 0, n)`` (the function compiled by Numba, one
  call: what ran before);
* ``shipped``: ``algorithms.mergesort.sort(x, device=...)``;

in a rotating order, after one warm-up each; the table gives the medians and the median of
the per-round ratios.  Every result is checked against ``np.sort``.

    python bench/bench_scratch.py                  # 2**22 keys, 5 rounds, device cpu
    python bench/bench_scratch.py --log2n 20 --rounds 7 --device hybrid --json
    python bench/bench_scratch.py --shape gfg       # mergeSort(arr, l, r), lists of zeros
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
def msort_tmp(a, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    msort_tmp(a, lo, mid)
    msort_tmp(a, mid, hi)
    tmp = np.empty(hi - lo, a.dtype)
    i, j = lo, mid
    for k in range(hi - lo):
        if j >= hi or (i < mid and a[i] <= a[j]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    a[lo:hi] = tmp


def merge(arr, l, m, r):
    n1 = m - l + 1
    n2 = r - m
    L = [0] * (n1)
    R = [0] * (n2)
    for i in range(0, n1):
        L[i] = arr[l + i]
    for j in range(0, n2):
        R[j] = arr[m + 1 + j]
    i = 0
    j = 0
    k = l
    while i < n1 and j < n2:
        if L[i] <= R[j]:
            arr[k] = L[i]
            i += 1
        else:
            arr[k] = R[j]
            j += 1
        k += 1
    while i < n1:
        arr[k] = L[i]
        i += 1
        k += 1
    while j < n2:
        arr[k] = R[j]
        j += 1
        k += 1


@hpu.divide_and_conquer
def mergeSort(arr, l, r):
    if l < r:
        m = l + (r - l) // 2
        mergeSort(arr, l, m)
        mergeSort(arr, m + 1, r)
        merge(arr, l, m, r)


#: shape -> (function, its bounds for n elements)
SHAPES = {"tmp": (msort_tmp, lambda n: (0, n)), "gfg": (mergeSort, lambda n: (0, n - 1))}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2n", type=int, default=22)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--device", default="cpu", choices=["cpu", "gpu", "hybrid"])
    p.add_argument("--shape", default="tmp", choices=sorted(SHAPES),
                   help="tmp: np.empty(hi - lo) after the calls; gfg: the most-read "
                        "tutorial's mergeSort(arr, l, r), its merge copying into lists of "
                        "zeros [0] * n1")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    fn, bounds = SHAPES[args.shape]
    n = 1 << args.log2n
    x = np.random.default_rng(0).integers(-2**31, 2**31 - 1, n).astype(np.int32)
    want = np.sort(x, kind="stable")

    def form():
        y = x.copy()
        run = fn.run(y, *bounds(n), device=args.device)
        return y, run

    def as_written():
        y = x.copy()
        fn.sequential(y, *bounds(n))
        return y, None

    def shipped():
        return mergesort.sort(x, device=args.device), None

    sides = {"form": form, "as written": as_written, "shipped": shipped}
    times: dict[str, list[float]] = {k: [] for k in sides}
    runs = []
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
                runs.append(run)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = {k: statistics.median(a / b for a, b in zip(times[k], times["shipped"]))
             for k in sides}
    last = runs[-1]
    out = {"n": n, "device": args.device, "shape": args.shape, "rounds": args.rounds,
           "median_s": med,
           "ratio_to_shipped": ratio, "form_K": last.K, "form_cpu_tasks": last.cpu_tasks,
           "form_gpu_tasks": last.gpu_tasks}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"n = 2**{args.log2n} int32, {args.shape}, device={args.device}, "
              f"{args.rounds} rounds "
              f"(form: K={last.K}, {last.cpu_tasks} CPU / {last.gpu_tasks} device leaf tasks)")
        for k in sides:
            print(f"  {k:10s} {med[k]:.3f} s   {ratio[k]:.2f}x shipped")
    return out


if __name__ == "__main__":
    main()
