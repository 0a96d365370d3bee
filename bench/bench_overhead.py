"""What a call costs beyond its work: small calls, contention, memory, the first call (issue 13).

Reported as ratios next to the issue's targets, never asserted.  Everything
timed in this process runs interleaved (one run of each contender per round,
fresh copies of the same input, outside the timing), after a warm-up, and the
table shows medians; every result is checked against NumPy first.

1. **Small calls** (``--n``, default 4096 int32 keys, mergesort):
   ``.sequential``; ``device="cpu"``; the default call (the planner's choice
   with the calibration profile); ``device="gpu"``.  Targets: CPU run ≤ 1.3×
   ``.sequential``, default call ≤ 1.15× the CPU run, device run ≤ 3× the CPU run.
2. **Cheap combines and contention** (``--large``, default 2**24): sum and
   maximum subarray, ``device="cpu"`` against their ``.sequential``, quiet and
   under a background load of ``--load`` busy processes (default 2); and
   mergesort's slowdown under that load, hpu's next to ``.sequential``'s.
   Targets: ≥ 1.6× ``.sequential`` quiet (2 cores), ≥ 1.0× loaded; hpu's
   mergesort slowdown ≤ 2× ``.sequential``'s.
3. **Memory** (``--memory M``, default 26): peak resident memory of a child
   process that sorts 2**M int32 keys on the device path and on the CPU path
   (``resource.getrusage`` maxrss), each with the call's snapshot of the arrays
   it writes (the default, ``keep_inputs=True``) and without (``:nokeep``).
   Target: device path ≤ 1.25× the CPU path.
4. **First call**: a new process's import and first call with warm caches (the
   on-disk Numba/OpenCL caches filled by an earlier process), and with cold ones
   (empty cache folders), split into import, specialisation and the rest of the
   call; medians of ``--first-repeats`` processes.  Targets: warm ≤ 0.3 s,
   cold ≤ 3 s.

    python bench/bench_overhead.py                      # everything, default sizes
    python bench/bench_overhead.py --quick              # fewer rounds, 2**22 memory (<= 5 min quiet)
    python bench/bench_overhead.py --only small,first --json

The load average (``os.getloadavg``) before and after each section is printed
with it: on a shared machine the figures are only as good as that.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere in the checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from hpu._decorator import sequential_timed  # noqa: E402

TARGETS = {
    "small.cpu_vs_sequential": ("<=", 1.3),
    "small.default_vs_cpu": ("<=", 1.15),
    "small.gpu_vs_cpu": ("<=", 3.0),
    "quiet.sum_speedup": (">=", 1.6),
    "quiet.maxsub_speedup": (">=", 1.6),
    "loaded.sum_speedup": (">=", 1.0),
    "loaded.maxsub_speedup": (">=", 1.0),
    "loaded.mergesort_slowdown_vs_sequential": ("<=", 2.0),
    "memory.gpu_vs_cpu": ("<=", 1.25),
    "first.warm_s": ("<=", 0.3),
    "first.cold_s": ("<=", 3.0),
}


def _load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def interleaved(contenders: dict, fresh, rounds: int, warmup: int = 2) -> dict[str, float]:
    """Median seconds of each contender ``f(args)``; ``fresh()`` makes the args (untimed)."""
    times = {k: [] for k in contenders}
    for r in range(warmup + rounds):
        for name, f in contenders.items():
            args = fresh()
            t0 = time.perf_counter()
            f(*args)
            dt = time.perf_counter() - t0
            if r >= warmup:
                times[name].append(dt)
    return {k: statistics.median(v) for k, v in times.items()}


# ---------------------------------------------------------------- 1. small calls
def small_calls(n: int, rounds: int) -> dict:
    from algorithms.mergesort import mergesort

    x = np.random.default_rng(1).integers(0, 1 << 30, n).astype(np.int32)
    want = np.sort(x, kind="stable")
    cpu, gpu = mergesort.options(device="cpu"), mergesort.options(device="gpu")
    sequential_timed(mergesort, x.copy(), np.empty_like(x), 0, n)  # the solver, no copy
    fns = {
        "sequential": lambda a, t: mergesort.sequential(a, t, 0, n),
        "cpu": lambda a, t: cpu(a, t, 0, n),
        "default": lambda a, t: mergesort(a, t, 0, n),
        "gpu": lambda a, t: gpu(a, t, 0, n),
    }
    for name, f in fns.items():  # checked first (and compiled)
        a = x.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(a, np.empty_like(a))
        if not np.array_equal(a, want):
            raise SystemExit(f"bench_overhead: {name} sorted {n} keys wrongly")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        med = interleaved(fns, lambda: (x.copy(), np.empty_like(x)), rounds, warmup=5)
        plans = {k: f.run(x.copy(), np.empty_like(x), 0, n).plan for k, f in
                 (("cpu", cpu), ("default", mergesort), ("gpu", gpu))}
    return {
        "n": n,
        "seconds": med,
        "small.cpu_vs_sequential": med["cpu"] / med["sequential"],
        "small.default_vs_cpu": med["default"] / med["cpu"],
        "small.gpu_vs_cpu": med["gpu"] / med["cpu"],
        "plans": {k: {"K": p.cutoff_level, "uses_device": p.uses_device, "reason": p.reason}
                  for k, p in plans.items()},
    }


# ---------------------------------------------------------------- 2. contention
def _busy(k: int):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]


def _stop(procs) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def cheap_and_contention(n: int, rounds: int, load: int) -> dict:
    from algorithms.maxsubarray import max_subarray_sum
    from algorithms.mergesort import mergesort
    from algorithms.sum import dc_sum

    rng = np.random.default_rng(2)
    xs = rng.integers(-1000, 1000, n).astype(np.int64)
    xm = rng.integers(0, 1 << 30, n).astype(np.int32)
    s_cpu = dc_sum.options(device="cpu")
    m_cpu = max_subarray_sum.options(device="cpu")
    ms_cpu = mergesort.options(device="cpu")
    if s_cpu(xs.copy(), 0, n) != int(xs.sum()):
        raise SystemExit("bench_overhead: the sum is wrong")
    if m_cpu(xs, 0, n) != max_subarray_sum.sequential(xs, 0, n):
        raise SystemExit("bench_overhead: the maximum subarray is wrong")
    a = xm.copy()
    ms_cpu(a, np.empty_like(a), 0, n)
    if not np.array_equal(a, np.sort(xm)):
        raise SystemExit("bench_overhead: mergesort sorted wrongly")

    sequential_timed(dc_sum, xs, 0, n)             # the solvers they time, copying nothing
    sequential_timed(max_subarray_sum, xs, 0, n)
    sequential_timed(mergesort, xm.copy(), np.empty_like(xm), 0, n)

    def measure():
        sums = interleaved({"sequential": lambda a: dc_sum.sequential(a, 0, n),
                            "cpu": lambda a: s_cpu(a, 0, n)}, lambda: (xs.copy(),), rounds)
        maxs = interleaved({"sequential": lambda a: max_subarray_sum.sequential(a, 0, n),
                            "cpu": lambda a: m_cpu(a, 0, n)}, lambda: (xs,), rounds)
        sorts = interleaved({"sequential": lambda a, t: mergesort.sequential(a, t, 0, n),
                             "cpu": lambda a, t: ms_cpu(a, t, 0, n)},
                            lambda: (xm.copy(), np.empty_like(xm)), rounds)
        return sums, maxs, sorts

    out = {"n": n, "load_processes": load, "quiet_load": _load()}
    q = measure()
    procs = _busy(load)
    try:
        time.sleep(0.5)
        out["loaded_load"] = _load()
        ld = measure()
    finally:
        _stop(procs)
    for tag, (sums, maxs, sorts) in (("quiet", q), ("loaded", ld)):
        out[f"{tag}.seconds"] = {"sum": sums, "maxsub": maxs, "mergesort": sorts}
        out[f"{tag}.sum_speedup"] = sums["sequential"] / sums["cpu"]
        out[f"{tag}.maxsub_speedup"] = maxs["sequential"] / maxs["cpu"]
        out[f"{tag}.mergesort_speedup"] = sorts["sequential"] / sorts["cpu"]
    slow_hpu = ld[2]["cpu"] / q[2]["cpu"]
    slow_seq = ld[2]["sequential"] / q[2]["sequential"]
    out["loaded.mergesort_slowdown_hpu"] = slow_hpu
    out["loaded.mergesort_slowdown_sequential"] = slow_seq
    out["loaded.mergesort_slowdown_vs_sequential"] = slow_hpu / slow_seq
    return out


# ---------------------------------------------------------------- 3. memory
_MEMORY_CHILD = r"""
import resource, sys, warnings
import numpy as np
from algorithms.mergesort import mergesort
path, m = sys.argv[1], int(sys.argv[2])
device, _, mode = path.partition(":")  # "gpu:nokeep": keep_inputs=False
n = 1 << m
# only the sort's own arrays: no reference copy (it would count in the peak); checked after
# the peak is read, by chunks: sorted, and the same sum and extremes as before
a = np.random.default_rng(3).integers(0, 1 << 30, n, dtype=np.int32)  # no int64 temporary
tmp = np.empty_like(a)
before = (int(a.sum(dtype=np.int64)), int(a.min()), int(a.max()))
if path != "none":
    warnings.simplefilter("ignore")
    mergesort.options(device=device, keep_inputs=mode != "nokeep")(a, tmp, 0, n)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if path != "none":
    step = 1 << 20
    for i in range(0, n, step):
        c = a[i:i + step + 1]
        assert np.all(c[1:] >= c[:-1]), "not sorted"
    assert before == (int(a.sum(dtype=np.int64)), int(a[0]), int(a[-1])), "keys changed"
print(peak)
"""


def memory(m: int) -> dict:
    out = {"m": m}
    for path in ("none", "cpu", "gpu", "cpu:nokeep", "gpu:nokeep"):
        r = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, path, str(m)],
                           capture_output=True, text=True, cwd=ROOT, env=_env())
        if r.returncode:
            raise SystemExit(f"bench_overhead: the memory child ({path}) failed:\n{r.stderr}")
        out[f"peak_mib.{path}"] = int(r.stdout.split()[-1]) / 1024.0
    out["memory.gpu_vs_cpu"] = out["peak_mib.gpu"] / out["peak_mib.cpu"]
    # like for like without the call's copies, and against the CPU path without them
    out["memory.gpu_vs_cpu_nokeep"] = out["peak_mib.gpu:nokeep"] / out["peak_mib.cpu:nokeep"]
    out["memory.gpu_vs_cpu_without_copy"] = out["peak_mib.gpu"] / out["peak_mib.cpu:nokeep"]
    return out


# ---------------------------------------------------------------- 4. first call
_FIRST_CHILD = r"""
import sys, time, warnings
t0 = time.perf_counter()
import numpy as np
from algorithms.mergesort import mergesort
t1 = time.perf_counter()
x = np.random.default_rng(4).integers(0, 1 << 30, 4096).astype(np.int32)
warnings.simplefilter("ignore")
f = mergesort if sys.argv[1] == "default" else mergesort.options(device=sys.argv[1])
a = x.copy()
t2 = time.perf_counter()
mergesort._program_for(a, np.empty_like(a), 0, a.size)  # the specialisation, as the call makes it
t3 = time.perf_counter()
f(a, np.empty_like(a), 0, a.size)
t4 = time.perf_counter()
assert np.array_equal(a, np.sort(x))
print(t1 - t0, t3 - t2, t4 - t3)
"""


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in
                                                       env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def _first(path: str, env) -> dict:
    """One new process: seconds to import, to specialise (load or compile the generated
    module, type it) and for the rest of the first call (device, translation, plan, run)."""
    r = subprocess.run([sys.executable, "-c", _FIRST_CHILD, path], capture_output=True,
                       text=True, cwd=ROOT, env=env)
    if r.returncode:
        raise SystemExit(f"bench_overhead: the first-call child failed:\n{r.stderr}")
    imp, spec, call = (float(v) for v in r.stdout.split()[-3:])
    return {"import_s": imp, "specialize_s": spec, "rest_of_call_s": call,
            "total_s": imp + spec + call}


def _median_of(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def first_call(paths=("cpu", "default", "gpu"), repeats: int = 3) -> dict:
    """Medians over ``repeats`` new processes each (the machine is noisy), warm and cold.

    Warm: the caches an earlier process filled (generated modules and Numba's machine
    code, the device's translation and probe records, PoCL's binaries), the user's
    calibration profile in place.  Cold: empty cache folders (the profile stays: a
    calibration is not a first call's cost)."""
    out = {}
    for path in paths:
        _first(path, _env())  # fill the caches
        out[f"warm.{path}"] = _median_of([_first(path, _env()) for _ in range(repeats)])
        cold_runs = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix="hpu-cold-") as cold:
                env = _env(XDG_CACHE_HOME=cold, HPU_CACHE_DIR=os.path.join(cold, "hpu"),
                           NUMBA_CACHE_DIR=os.path.join(cold, "numba"),
                           POCL_CACHE_DIR=os.path.join(cold, "pocl"),
                           PYOPENCL_CACHE_DIR=os.path.join(cold, "pyopencl"))
                cold_runs.append(_first(path, env))
        out[f"cold.{path}"] = _median_of(cold_runs)
    out["repeats"] = repeats
    out["first.warm_s"] = max(v["total_s"] for k, v in out.items() if k.startswith("warm."))
    out["first.cold_s"] = max(v["total_s"] for k, v in out.items() if k.startswith("cold."))
    return out


# ---------------------------------------------------------------- report
def _verdict(key: str, value: float) -> str:
    op, goal = TARGETS[key]
    ok = value <= goal if op == "<=" else value >= goal
    return f"{'meets' if ok else 'MISSES'} target {op} {goal:g}"


def report(results: dict) -> str:
    lines = []
    for section, res in results.items():
        lines.append(f"== {section}")
        for k, v in res.items():
            if k in TARGETS:
                lines.append(f"  {k:45s} {v:8.3f}   {_verdict(k, v)}")
            elif isinstance(v, float):
                lines.append(f"  {k:45s} {v:8.3f}")
            else:
                lines.append(f"  {k:45s} {v}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4096, help="keys of the small calls")
    ap.add_argument("--large", type=int, default=1 << 24, help="size of the cheap combines")
    ap.add_argument("--memory", type=int, default=26, help="sort 2**M int32 keys for memory")
    ap.add_argument("--rounds", type=int, default=31, help="timed rounds of the small calls")
    ap.add_argument("--large-rounds", type=int, default=5, help="timed rounds at --large")
    ap.add_argument("--load", type=int, default=2, help="busy processes of the background load")
    ap.add_argument("--first-repeats", type=int, default=5,
                    help="new processes per first-call figure (medians)")
    ap.add_argument("--only", default="small,contention,memory,first",
                    help="comma-separated sections")
    ap.add_argument("--quick", action="store_true",
                    help="fewer rounds and a smaller memory sort (--memory 22); the cheap "
                         "combines stay at 2**24, the size of their targets")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = ap.parse_args(argv)
    if args.quick:
        args.memory = 22
        args.rounds, args.large_rounds = min(args.rounds, 21), min(args.large_rounds, 3)
        args.first_repeats = min(args.first_repeats, 3)
    only = set(args.only.split(","))
    results: dict = {}
    for name, fn in (("small", lambda: small_calls(args.n, args.rounds)),
                     ("contention", lambda: cheap_and_contention(args.large, args.large_rounds,
                                                                 args.load)),
                     ("memory", lambda: memory(args.memory)),
                     ("first", lambda: first_call(repeats=args.first_repeats))):
        if name not in only:
            continue
        before = _load()
        res = fn()
        res["load_before_after"] = f"{before} / {_load()}"
        results[name] = res
        if not args.json:
            print(report({name: res}), flush=True)
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
