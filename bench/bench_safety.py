"""What does the bounds-checked mode cost? Reported, never asserted.

Sorts ``--n`` random int32 keys with ``algorithms.mergesort`` on ``device="cpu"``
and with ``.sequential``, once as shipped and once decorated with
``boundscheck=True`` (every ``a[i]`` of the function and its helpers checked).
Runs are *paired*: each pair times both variants back to back on fresh copies
of the same keys, alternating which goes first, so that a burst of load from
other processes hits both; the report gives the median of the per-pair ratios
and their spread (min, max), because on a shared machine a single ratio means
little.  Each result is checked against ``np.sort``.

It also measures what the always-on checks cost (``//``/``%`` by zero,
float -> int, the recursion depth counter): the compiled recursive function
of the CPU module as generated before issue 11 (``_body(checked=False)``, the
form the device's source still uses) against the checked one, paired the
same way (``default_cost`` in the report).

With ``--device`` it measures the OpenCL device's error channel instead
(``device_cost``): mergesort on ``device="gpu"``, kernels translated without
the channel (``hpu._opencl._levels.ERROR_CHANNEL = False``) against with it,
paired and interleaved the same way, comparing the kernels' own time (the sum
of the runs' device phase times, from OpenCL's profiling events).

    python bench/bench_safety.py --n 4194304 --pairs 7
    python bench/bench_safety.py --device --n 1048576 --pairs 9
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


def _variants():
    import hpu
    from algorithms import mergesort as M

    checked = hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"), boundscheck=True)(
        M.mergesort.py_func)
    shipped = hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"), boundscheck=False)(
        M.mergesort.py_func)
    return shipped, checked


def _runner(f, how):
    if how == "sequential":
        return lambda a, t: f.sequential(a, t, 0, len(a))
    return lambda a, t: f.run(a, t, 0, len(a), device="cpu")


def paired(x, base, other, pairs):
    ref = np.sort(x)
    for fn in (base, other):  # warm-up: compilation and caches
        a = x.copy()
        fn(a, np.empty_like(a))
        assert (a == ref).all()
    ratios, tb, to = [], [], []
    for k in range(pairs):
        order = [(base, tb), (other, to)] if k % 2 == 0 else [(other, to), (base, tb)]
        for fn, sink in order:
            a = x.copy()
            t = np.empty_like(a)
            t0 = time.perf_counter()
            fn(a, t)
            sink.append(time.perf_counter() - t0)
            assert (a == ref).all()
        ratios.append(to[-1] / tb[-1])
    return {"base_median_s": statistics.median(tb), "checked_median_s": statistics.median(to),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "pairs": pairs}


def default_cost(x, pairs):
    """Paired: the recursive mergesort without the always-on checks vs with them."""
    from algorithms import mergesort as M
    from hpu import _cache, _codegen

    n = len(x)
    M.mergesort.sequential(x.copy(), np.empty_like(x), 0, n)
    prog = next(iter(M.mergesort._programs.values()))
    spec, clo, lay = prog.spec, prog.closure, prog.layout
    plain_src = ("\n".join(_codegen._header(spec, clo, "unchecked, for bench_safety")) + "\n"
                 + _codegen._body(spec, clo, lay).text())
    plain = getattr(_cache.load_module(plain_src, f"{spec.name}_unchecked"), spec.name)
    checked = getattr(_cache.load_module(_codegen.core_source(spec, clo, lay, False),
                                         spec.name), spec.name)
    return paired(x, lambda a, t: plain(a, t, 0, n), lambda a, t: checked(a, t, 0, n), pairs)


def device_cost(x, pairs):
    """Paired: mergesort's device kernels without the error channel vs with it."""
    import hpu
    from algorithms import mergesort as M
    from hpu._opencl import _levels

    n = len(x)
    ref = np.sort(x)
    variants = []
    for channel in (False, True):   # each decorated copy compiles its own kernels once
        f = hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))(M.mergesort.py_func)
        _levels.ERROR_CHANNEL = channel
        try:
            a = x.copy()
            f.run(a, np.empty_like(a), 0, n, device="gpu")
            assert (a == ref).all()
        finally:
            _levels.ERROR_CHANNEL = True
        variants.append(f)

    def kernel_seconds(f):
        a = x.copy()
        run = f.run(a, np.empty_like(a), 0, n, device="gpu")
        assert (a == ref).all()
        return sum(lv.gpu_seconds for lv in run.levels), run.seconds

    kb, ko, wb, wo, ratios = [], [], [], [], []
    for k in range(pairs):
        order = [(0, kb, wb), (1, ko, wo)] if k % 2 == 0 else [(1, ko, wo), (0, kb, wb)]
        for which, ks, ws in order:
            kt, wt = kernel_seconds(variants[which])
            ks.append(kt)
            ws.append(wt)
        ratios.append(ko[-1] / kb[-1])
    return {"kernel_base_median_s": statistics.median(kb),
            "kernel_checked_median_s": statistics.median(ko),
            "wall_base_median_s": statistics.median(wb),
            "wall_checked_median_s": statistics.median(wo),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "ratios": ratios, "pairs": pairs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", action="store_true",
                        help="measure the OpenCL device's error channel (device_cost) only")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    x = np.random.default_rng(args.seed).integers(0, 1 << 30, args.n).astype(np.int32)
    if args.device:
        print(json.dumps({"n": args.n, "device_cost": device_cost(x, args.pairs)}, indent=1))
        return 0
    shipped, checked = _variants()
    report = {"n": args.n}
    for how in ("cpu", "sequential"):
        report[how] = paired(x, _runner(shipped, how), _runner(checked, how), args.pairs)
    report["default_cost"] = default_cost(x, args.pairs)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
