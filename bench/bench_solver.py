"""The CPU's subtree solver: today's native recursion against the deep-recursion-safe one.

Reported, never asserted.  Three one-core solvers of the same generated code
(:mod:`hpu._codegen`) on the same input, for mergesort, sum, the maximum
subarray and a random-pivot-free quicksort (first-element pivot, random keys):

* ``native``: the type-independent core module's recursive function, the
  solver the CPU backend ran before the explicit stack (native recursion with
  a depth counter that raises at the limit);
* ``switching``: what ``.sequential`` and the CPU backend's leaf tasks run now
  (:func:`hpu._codegen.cpu_source`): the same native recursion, whose calls at
  depth :data:`hpu._guard.NATIVE_DEPTH` continue on a growable explicit stack
  (never reached here: the question is whether the switch costs anything);
* ``explicit``: the growable explicit-stack solver ``solve__grow`` alone, from
  the root (what using it for every subtree would cost).

The three alternate within each repeat (interleaved, so that the load of other
processes falls on all of them alike) and the table shows each median and the
ratios of paired times (median, min, max over the repeats): on a loaded machine
the spread, not the median alone, says whether a difference is real.

    python bench/bench_solver.py                      # 2**20 .. 2**22, 7 repeats
    python bench/bench_solver.py --log2 20 --repeat 11 --json
    python bench/bench_solver.py --polling 20 --repeat 11   # Ctrl-C's helper thread
    python bench/bench_solver.py --stop-check 20 --repeat 15   # Ctrl-C's stop-flag read

Measured (2 cores shared with other processes, load 7-10; 7 repeats): the
switching solver's paired ratio to native had medians 0.985-1.074 (single
pairs 0.66-1.39: noise) at 2**20 and 2**22 for all four cases -- no cost
seen; the explicit stack alone was 1.05-1.10x (mergesort, whose merges
dominate), 1.6-1.8x (quicksort) and 6.5-7.8x (sum, maximum subarray) slower.
So the explicit stack only takes over below depth 5 000.  Ctrl-C's helper
thread (``--polling 20``, 9 repeats, same load): paired ratio helper/direct
median 0.883 (0.670-0.992) -- no cost seen, within the noise (the helper ran
first in each pair).  The stop flag read at every recursive call (``--stop-check 20``,
15 repeats, load ~5): mergesort paired ratio with/without 0.997 (``.sequential``,
0.88-1.11) and 0.987 (``.run(device="cpu")``); sum, one addition per call, the worst
case: 1.04-1.06x for the solver alone, ``.sequential`` too noisy at that load to say
(0.84-2.1x).
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


def _partition(a, lo, hi):
    p = a[lo]
    i = lo + 1
    for j in range(lo + 1, hi):
        if a[j] < p:
            t = a[i]
            a[i] = a[j]
            a[j] = t
            i += 1
    t = a[lo]
    a[lo] = a[i - 1]
    a[i - 1] = t
    return i - 1


@hpu.divide_and_conquer(b=2, cost="n")
def quicksort(a, lo, hi):
    if hi - lo <= 1:
        return
    m = _partition(a, lo, hi)
    quicksort(a, lo, m)
    quicksort(a, m + 1, hi)


def _cases(n, rng):
    from algorithms.maxsubarray import max_subarray_sum
    from algorithms.mergesort import mergesort
    from algorithms.sum import dc_sum

    keys = rng.integers(0, 1 << 30, n).astype(np.int32)
    vals = rng.standard_normal(n)
    ints = rng.integers(-1000, 1000, n)
    return [
        ("mergesort", mergesort, lambda: (keys.copy(), np.empty_like(keys), 0, n),
         lambda out, args: bool((args[0] == np.sort(keys)).all())),
        ("sum", dc_sum, lambda: (ints.copy(), 0, n), lambda out, args: out == ints.sum()),
        ("maxsubarray", max_subarray_sum, lambda: (vals, 0, n), lambda out, args: True),
        ("quicksort", quicksort, lambda: (keys.copy(), 0, n),
         lambda out, args: bool((args[0] == np.sort(keys)).all())),
    ]


def measure(log2s, repeat, seed):
    rows = []
    rng = np.random.default_rng(seed)
    for log2 in log2s:
        n = 1 << log2
        for name, fn, make, check in _cases(n, rng):
            fn.sequential(*make())  # compile, load the caches
            program = next(iter(fn._programs.values()))  # the one signature just called
            solvers = {
                "native": getattr(program.module, fn.spec.name),
                "switching": program.function,
                "explicit": lambda *a, m=program.cpu_module: m.solve__grow(*a, np.int64(0)),
            }
            times = {k: [] for k in solvers}
            for k, solve in solvers.items():  # warm-up and check, untimed
                args = make()
                if not check(solve(*args), args):
                    raise AssertionError(f"{name}: the {k} solver gave a wrong result")
            for _ in range(repeat):
                for k, solve in solvers.items():
                    args = make()
                    t0 = time.perf_counter()
                    solve(*args)
                    times[k].append(time.perf_counter() - t0)
            base = times["native"]
            row = {"case": name, "n": n, "repeat": repeat}
            for k, ts in times.items():
                row[f"{k}_s"] = statistics.median(ts)
                if k != "native":
                    ratios = [t / b for t, b in zip(ts, base)]
                    row[f"{k}_ratio"] = (statistics.median(ratios), min(ratios), max(ratios))
            rows.append(row)
    return rows


def measure_polling(log2, repeat, seed):
    """``mergesort.run(device="cpu")`` with the parallel drivers on a helper thread (Ctrl-C,
    :func:`hpu._cpu._interruptible`) against the same drivers called directly, interleaved."""
    import hpu._cpu as cpu
    from algorithms.mergesort import mergesort

    n = 1 << log2
    keys = np.random.default_rng(seed).integers(0, 1 << 30, n).astype(np.int32)
    helper = cpu._interruptible

    def direct(driver, start, stop, args, chunk=0):
        old = numba.set_parallel_chunksize(chunk) if chunk else None
        try:
            driver(start, stop, *args)
        finally:
            if chunk:
                numba.set_parallel_chunksize(old)

    import numba

    times = {"helper thread": [], "direct": []}
    for _ in range(repeat + 1):  # the first round is a warm-up
        for k, fn in (("helper thread", helper), ("direct", direct)):
            cpu._interruptible = fn
            a = keys.copy()
            t0 = time.perf_counter()
            mergesort.run(a, np.empty_like(a), 0, n, device="cpu")
            times[k].append(time.perf_counter() - t0)
    cpu._interruptible = helper
    h, d = times["helper thread"][1:], times["direct"][1:]
    ratios = [x / y for x, y in zip(h, d)]
    return {"n": n, "repeat": repeat, "helper_s": statistics.median(h),
            "direct_s": statistics.median(d),
            "ratio": (statistics.median(ratios), min(ratios), max(ratios))}


_STOP_CHECK = r"^[ \t]*if hpu__stop_requested\(\):\n[ \t]*hpu__stopped\(\)\n"


def _without_stop_check(source: str) -> str:
    """The generated source with the Ctrl-C stop-flag reads removed (the code before them)."""
    import re

    out, k = re.subn(_STOP_CHECK, "", source, flags=re.M)
    out, j = re.subn(r" - hpu__stop_requested\(\):", ":", out)
    if not k or not j:
        raise AssertionError("no stop-flag check found in the generated source")
    return out


def measure_stop_check(log2, repeat, seed):
    """The cost of reading the stop flag (Ctrl-C, :mod:`hpu._interrupt`) at every call of
    the recursion: ``.sequential`` and ``.run(device="cpu")`` as shipped against the same
    calls on the same source without the check, and ``.sequential`` without its helper
    thread (what it was before), interleaved in one process."""
    import hpu._interrupt as interrupt
    from algorithms.mergesort import mergesort
    from algorithms.sum import dc_sum
    from hpu._cache import load_module
    from hpu._codegen import cpu_source

    n = 1 << log2
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 1 << 30, n).astype(np.int32)
    ints = rng.integers(-1000, 1000, n)
    cases = [("mergesort", mergesort, lambda: (keys.copy(), np.empty_like(keys), 0, n)),
             ("sum", dc_sum, lambda: (ints.copy(), 0, n))]
    direct = lambda fn, *args: fn(*args)  # noqa: E731 - .sequential without the helper
    rows = []
    for name, fn, make in cases:
        fn.sequential(*make())
        fn.run(*make(), device="cpu")
        program = next(iter(fn._programs.values()))
        checked = {"core": program.module, "deep": program.deep_module}
        plain = {"core": load_module(_without_stop_check(program.source), f"{name}_nostop"),
                 "deep": load_module(_without_stop_check(cpu_source(
                     program.spec, program.closure, program.layout, program.types,
                     program.boundscheck)), f"{name}_cpu_nostop")}
        helper_call = interrupt.call

        def use(which, helper=True):
            program.module, program._cpu = which["core"], which["deep"]
            program.__dict__.pop("_cpu_backends", None)
            interrupt.call = helper_call if helper else direct

        variants = {
            "seq checked": (lambda: use(checked), lambda a: fn.sequential(*a)),
            "seq plain": (lambda: use(plain), lambda a: fn.sequential(*a)),
            "seq before": (lambda: use(plain, helper=False), lambda a: fn.sequential(*a)),
            "run checked": (lambda: use(checked), lambda a: fn.run(*a, device="cpu")),
            "run plain": (lambda: use(plain), lambda a: fn.run(*a, device="cpu")),
        }
        times = {k: [] for k in variants}
        try:
            for rep in range(repeat + 1):  # the first round is a warm-up
                for k, (setup, go) in variants.items():
                    setup()
                    args = make()
                    t0 = time.perf_counter()
                    go(args)
                    if rep:
                        times[k].append(time.perf_counter() - t0)
        finally:
            use(checked)
        row = {"case": name, "n": n, "repeat": repeat}
        for k, ts in times.items():
            row[k] = statistics.median(ts)
        for a, b in (("seq checked", "seq plain"), ("seq checked", "seq before"),
                     ("run checked", "run plain")):
            ratios = [x / y for x, y in zip(times[a], times[b])]
            row[f"{a} / {b}"] = (statistics.median(ratios), min(ratios), max(ratios))
        rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[20, 21, 22])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--polling", type=int, metavar="LOG2", default=0,
                    help="instead: the cost of the Ctrl-C helper thread on mergesort.run(2**LOG2)")
    ap.add_argument("--stop-check", type=int, metavar="LOG2", default=0,
                    help="instead: the cost of Ctrl-C's stop-flag read at every recursive call")
    a = ap.parse_args(argv)
    if a.stop_check:
        rows = measure_stop_check(a.stop_check, a.repeat, a.seed)
        if a.json:
            print(json.dumps(rows, indent=1))
            return
        for r in rows:
            print(f"{r['case']} n={r['n']} ({r['repeat']} repeats): medians "
                  + ", ".join(f"{k} {r[k] * 1e3:.1f} ms" for k in r if isinstance(r[k], float)))
            for k, v in r.items():
                if isinstance(v, tuple):
                    print(f"    {k}: paired ratio median {v[0]:.3f} (min {v[1]:.3f}, "
                          f"max {v[2]:.3f})")
        return
    if a.polling:
        r = measure_polling(a.polling, a.repeat, a.seed)
        print(json.dumps(r) if a.json else
              f"mergesort.run n={r['n']}: helper thread {r['helper_s'] * 1e3:.1f} ms, direct "
              f"{r['direct_s'] * 1e3:.1f} ms, paired ratio median {r['ratio'][0]:.3f} "
              f"(min {r['ratio'][1]:.3f}, max {r['ratio'][2]:.3f})")
        return
    rows = measure(a.log2, a.repeat, a.seed)
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'case':12} {'n':>9} {'native ms':>10} {'switch ms':>10} {'explicit ms':>12}  "
          "switch/native (med min max)   explicit/native (med min max)")
    for r in rows:
        s, e = r["switching_ratio"], r["explicit_ratio"]
        print(f"{r['case']:12} {r['n']:>9} {r['native_s'] * 1e3:>10.1f} "
              f"{r['switching_s'] * 1e3:>10.1f} {r['explicit_s'] * 1e3:>12.1f}  "
              f"{s[0]:.3f} {s[1]:.3f} {s[2]:.3f}              {e[0]:.3f} {e[1]:.3f} {e[2]:.3f}")


if __name__ == "__main__":
    main()
