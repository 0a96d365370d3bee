"""Overlapped copies on the forced-copy path: chunks 1 against 4, measured and predicted.

Why this bench
==============

A device with its own memory copies its share in pieces pipelined with its kernels
(:attr:`hpu._opencl._backend.OpenCLBackend.transfer_chunks`, 003) and the model
prices that overlap (:func:`hpu.model.overlapped_device_time`).  PoCL shares the
host's memory, so a run there copies nothing; this bench forces the copy path
the way the tests' ``discrete`` fixture does (``OpenCLBackend.unified_memory``
answers False, so the backend *and* the planner see a device with its own memory)
and measures mergesort hybrid at one split with the data copied in 1 piece and in
``--chunks`` pieces:

* paired and interleaved: ``--rounds`` rounds, each running both variants back to
  back in alternating order, one process, fresh copies of the same keys; the
  ratio is the median over rounds of the per-round ratio;
* beside each, the plan's predicted time (the planner prices the same overlap the
  run does) and the run's measured transfer seconds and bytes.

Read the figures with care: PoCL's "copies" are memcpy on the same cores the
kernels and Numba run on, so an overlap can gain little or lose (the copy competes
with the compute it should hide), unlike a discrete GPU's DMA engine; other
processes on the machine move every number (the load average is recorded).

    NUMBA_NUM_THREADS=1 HPU_DEVICE=cpu@1 python bench/bench_overlap.py            # 2^22
    python bench/bench_overlap.py --n 1048576 --rounds 5 --alpha 0.5 --y 3 --json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere in the checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def measure(n, chunks, rounds, alpha, y, seed, cl_device=None, progress=None):
    import numba

    from algorithms.mergesort import mergesort
    from hpu._opencl._backend import OpenCLBackend
    from hpu._opencl._device import describe_device, select_device, use_remaining_cores

    use_remaining_cores(select_device(cl_device))
    say = progress or (lambda *_: None)
    keys = np.random.default_rng(seed).integers(0, 2 * n, n, dtype=np.int32)
    want = np.sort(keys, kind="stable")
    scratch = np.empty_like(keys)
    sort = mergesort.options(cl_device=cl_device, device="hybrid", alpha=alpha, y=y)

    forced, pieces = OpenCLBackend.unified_memory, OpenCLBackend.transfer_chunks
    # the copy path, for the backend and the planner alike (tests/conftest.py's `discrete`)
    OpenCLBackend.unified_memory = classmethod(lambda cls, device: False)
    variants = (1, chunks)
    times = {c: [] for c in variants}
    facts = {}
    load_start = os.getloadavg()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")

            def once(c):
                OpenCLBackend.transfer_chunks = c
                a = keys.copy()
                t0 = time.perf_counter()
                run = sort.run(a, scratch, 0, n)
                seconds = time.perf_counter() - t0
                if not np.array_equal(a, want):
                    raise SystemExit(f"bench_overlap: chunks={c} did not sort correctly")
                return seconds, run

            for c in variants:  # warm-up: compiles, builds the transfer queue
                once(c)
            for r in range(rounds):
                for c in (variants if r % 2 == 0 else variants[::-1]):
                    seconds, run = once(c)
                    times[c].append(seconds)
                    facts[c] = {
                        "predicted_s": run.plan.predicted_time,
                        "plan_transfer_chunks": run.plan.transfer_chunks,
                        "transfer_s": sum(t.seconds for t in run.transfers),
                        "transfer_bytes": int(sum(t.bytes for t in run.transfers)),
                        "reason": run.plan.reason, "alpha": run.alpha, "y": run.y,
                        "gpu_tasks": run.gpu_tasks, "time_unit": run.plan.time_unit}
                say(f"round {r + 1}/{rounds}: " + ", ".join(
                    f"{c} chunk(s) {times[c][-1]:.3f} s" for c in variants))
    finally:
        OpenCLBackend.unified_memory, OpenCLBackend.transfer_chunks = forced, pieces
    ratio = statistics.median(b / a for a, b in zip(times[1], times[chunks]))
    rows = {str(c): {"median_s": statistics.median(times[c]), "times_s": times[c], **facts[c]}
            for c in variants}
    return {
        "n": n, "dtype": "int32", "seed": seed, "alpha": alpha, "y": y, "rounds": rounds,
        "chunks": chunks, "threads": numba.get_num_threads(), "cpus": os.cpu_count(),
        "opencl_device": describe_device(select_device(cl_device)), "cl_device": cl_device,
        "forced_copy_path": True,
        "load_average_start": list(load_start), "load_average_end": list(os.getloadavg()),
        "variants": rows, "paired_ratio": ratio,
        "predicted_ratio": rows[str(chunks)]["predicted_s"] / rows["1"]["predicted_s"],
        "verified": True,
    }


def render(r) -> str:
    out = [f"overlapped copies (forced copy path): mergesort n={r['n']} at alpha={r['alpha']} "
           f"y={r['y']}, {r['threads']} Numba thread(s), device {r['opencl_device']}",
           f"load average {r['load_average_start'][0]:.2f} at the start, "
           f"{r['load_average_end'][0]:.2f} at the end", "",
           f"{'chunks':>6} {'median s':>9} {'predicted s':>12} {'copies s':>9} {'bytes':>11}"]
    for c, v in r["variants"].items():
        out.append(f"{c:>6} {v['median_s']:>9.3f} {v['predicted_s']:>12.4g} "
                   f"{v['transfer_s']:>9.3f} {v['transfer_bytes']:>11}")
    out.append("")
    out.append(f"{r['chunks']} chunks / 1 chunk, paired over {r['rounds']} rounds: measured "
               f"{r['paired_ratio']:.3f}, predicted {r['predicted_ratio']:.3f}")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 22, help="keys (default 2^22)")
    parser.add_argument("--chunks", type=int, default=4, help="pieces to compare with 1")
    parser.add_argument("--rounds", type=int, default=7, help="paired rounds (default 7)")
    parser.add_argument("--alpha", type=float, default=0.5, help="the split (default 0.5)")
    parser.add_argument("--y", type=int, default=3, help="the split level (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cl-device", default=None,
                        help="the OpenCL device (default HPU_DEVICE, else hpu's choice)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args(argv)
    if args.chunks < 2 or args.rounds < 1 or not 0 <= args.alpha < 1:
        parser.error("--chunks must be >= 2, --rounds >= 1 and --alpha in [0, 1) (the device "
                     f"needs a share), got {args.chunks}, {args.rounds}, {args.alpha}")

    def progress(msg):
        if not args.json:
            print(f"  {msg}", file=sys.stderr, flush=True)

    report = measure(args.n, args.chunks, args.rounds, args.alpha, args.y, args.seed,
                     args.cl_device, progress)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
