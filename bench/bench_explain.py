"""Predicted against measured, per level and phase, for hybrid mergesort (issue 14 item 3).

Runs ``mergesort.run`` with the model's own plan (or ``--alpha``/``--y``)
``--repeat`` times on fresh copies of the same keys (int32, uniform in
[0, 2n)), checks each result against ``np.sort(kind="stable")``, and prints
:func:`hpu._explain.explain` of the run with the median time: each level's
and phase's predicted seconds beside the measured ones, per side, the totals
per phase and the run's, with the relative errors.  The load average at the
start and the end is printed too: other processes on the same cores make
every measured time longer than the model predicts.

The heterogeneous configuration of issue 14 (the device on one core, Numba on
the other)::

    NUMBA_NUM_THREADS=1 python bench/bench_explain.py --fission 1 --n 4194304
    NUMBA_NUM_THREADS=1 python bench/bench_explain.py --fission 1 --alpha 0.5625 --y 4
    python bench/bench_explain.py --n 1048576 --json     # the rows as JSON
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere in the checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def _int(text: str) -> int:
    text = str(text).strip()
    return 2 ** int(text[2:]) if text.startswith("2^") else int(text)


def measure(n: int, repeat: int, seed: int, cl_device=None, alpha=None, y=None) -> dict:
    from algorithms.mergesort import mergesort
    from hpu._explain import explain
    from hpu._opencl._device import select_device, use_remaining_cores
    from hpu._profile import active_profile

    use_remaining_cores(select_device(cl_device))  # the thread rule, as bench_hybrid does
    keys = np.random.default_rng(seed).integers(0, 2 * n, n, dtype=np.int32)
    want = np.sort(keys, kind="stable")
    scratch = np.empty_like(keys)
    options = {"cl_device": cl_device}
    if alpha is not None:
        options.update(alpha=alpha, y=y)
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the model's "everything on the CPU" note
        for i in range(repeat + 1):      # the first compiles and is not counted
            a = keys.copy()
            run = mergesort.options(**options).run(a, scratch, 0, n)
            if not np.array_equal(a, want):
                raise SystemExit(f"bench_explain: run {i} sorted {n} keys wrongly; "
                                 "nothing is reported")
            if i:
                runs.append(run)
    runs.sort(key=lambda r: r.seconds)
    median = runs[len(runs) // 2]
    prof = active_profile(cl_device, autocalibrate=False)
    e = explain(median, seconds_per_unit=prof.cpu_seconds_per_element)
    return {
        "n": n, "repeat": repeat, "seed": seed, "cl_device": cl_device,
        "numba_threads": int(__import__("numba").get_num_threads()),
        "profile": {"gamma": prof.gamma, "contention": prof.contention,
                    "latency_s": prof.latency_s, "seconds_per_byte": prof.seconds_per_byte,
                    "cpu_seconds_per_element": prof.cpu_seconds_per_element,
                    "combine_rates": [list(r) for r in prof.combine_rates],
                    "combine_gamma": prof.combine_gamma,
                    "created": prof.created},
        "plan_reason": median.plan.reason,
        "seconds": [r.seconds for r in runs],
        "explanation": e,
    }


def to_json(report: dict) -> dict:
    e = report["explanation"]
    out = {k: v for k, v in report.items() if k != "explanation"}
    out.update(predicted_s=e.predicted_total_s, measured_s=e.measured_total_s, error=e.error,
               alpha=e.alpha, y=e.y, K=e.K,
               rows=[{"level": r.level, "phase": r.phase, "side": r.side,
                      "tasks_planned": r.tasks_planned, "tasks_run": r.tasks_run,
                      "predicted_s": r.predicted_s, "measured_s": r.measured_s,
                      "error": r.error} for r in e.rows])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="2^22", help="keys (default 2^22)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cl-device", default=None, help="OpenCL device (default HPU_DEVICE)")
    parser.add_argument("--fission", type=int, default=None, metavar="N",
                        help="the device side on a sub-device of N compute units")
    parser.add_argument("--alpha", type=float, default=None)
    parser.add_argument("--y", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    n = _int(args.n)
    if n < 2 or args.repeat < 1:
        parser.error(f"--n must be >= 2 and --repeat >= 1, got {args.n} and {args.repeat}")
    if (args.alpha is None) != (args.y is None):
        parser.error("--alpha and --y go together; pass both or neither")
    if args.fission is not None:
        if args.fission < 1:
            parser.error(f"--fission must be >= 1 compute units, got {args.fission}")
        args.cl_device = f"{args.cl_device or 'cpu'}@{args.fission}"
    load0 = os.getloadavg()[0]
    report = measure(n, args.repeat, args.seed, args.cl_device, args.alpha, args.y)
    report["load_average"] = [load0, os.getloadavg()[0]]
    if args.json:
        print(json.dumps(to_json(report), indent=2))
        return 0
    p = report["profile"]
    print(f"mergesort n = {n}, {report['numba_threads']} Numba thread(s), device "
          f"{args.cl_device or 'default'}; profile gamma = {p['gamma']:.3g}, combine gamma = "
          f"{p['combine_gamma'] if p['combine_gamma'] is None else format(p['combine_gamma'], '.3g')}, "
          f"contention = {p['contention']:.3g} ({p['created']}); load average {load0:.2f} -> "
          f"{report['load_average'][1]:.2f}")
    print(f"plan: {report['plan_reason']}")
    print("runs s: " + " ".join(f"{s:.4f}" for s in report["seconds"]) + " (the median's table)")
    print(report["explanation"].table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
