"""What does the Dask backend cost and gain? Reported, never asserted.

Two measurements and one prediction, all in this one process:

* **1 vs 2 workers on this machine**: ``mergesort.run(..., cluster=Cluster(c, level=L))``
  on a ``LocalCluster`` of one worker process, then of two, each worker running
  its subtrees with ``--device`` (default ``cpu``: Numba threads), at several n;
* **the cluster path's overhead**: the same call without ``cluster=`` (a local
  run with the same device), and the difference;
* **where the upper levels are combined**: on two workers, levels ``L-1 .. 0``
  combined on the client (``Cluster(combine="client")``) against levels
  ``L-1 .. 1`` as Dask tasks on the workers (``combine="workers"``);
* **on paper**: the model's cluster level (:func:`hpu._dask.plan_cluster`) for
  4 and 16 nodes like this machine (its profile, or hpu's built-in values)
  over a 10 Gb/s link (δ = 8e-10 s/B; λ = 1 ms, the order of Dask's per-task
  scheduling cost), against one machine, at n up to 2^30.

Every result is checked against ``np.sort`` before it is reported.  Each timed
figure is the median of ``--repeat`` runs after one untimed warm-up (which
compiles on the client and on every worker).  On a machine with two cores, two
worker processes share the cores the client also uses: read the figures as the
cost of the machinery, not as a cluster's speed.

    python bench/bench_dask.py                       # n = 2^16, 2^18, 2^20
    python bench/bench_dask.py --n 65536 1048576 --repeat 5 --json
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
if str(ROOT) not in sys.path:  # run as a script from anywhere in the checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

#: a 10 Gb/s link: 1.25e9 bytes per second
TEN_GBIT_S_PER_BYTE = 8e-10
#: the order of one Dask task's scheduling round trip on a real network
PAPER_LATENCY_S = 1e-3


def _median_run(call, make, repeat, want):
    call(*make())  # warm-up: compiles here and on every worker
    times, run = [], None
    for _ in range(repeat):
        args = make()
        t0 = time.perf_counter()
        run = call(*args)
        times.append(time.perf_counter() - t0)
        if not np.array_equal(args[0], want):
            raise SystemExit("bench_dask: a result differs from np.sort; nothing reported")
    return statistics.median(times), run


def measure(ns, repeat, device, level):
    from distributed import Client, LocalCluster

    from algorithms.mergesort import mergesort
    from hpu._dask import Cluster

    rows = []
    rng = np.random.default_rng(0)
    data = {n: rng.integers(0, 2 * n, n).astype(np.int32) for n in ns}
    local = {}
    for n in ns:
        x = data[n]
        local[n], _ = _median_run(lambda a, t: mergesort.run(a, t, 0, a.size, device=device),
                                  lambda: (x.copy(), np.empty_like(x)), repeat, np.sort(x))
    for workers, combines in ((1, ("client",)), (2, ("client", "workers"))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            client = Client(cluster)
        try:
            for n, combine in ((n, c) for n in ns for c in combines):
                x = data[n]
                where = Cluster(client, level=level, combine=combine)
                secs, run = _median_run(
                    lambda a, t: mergesort.run(a, t, 0, a.size, device=device, cluster=where),
                    lambda: (x.copy(), np.empty_like(x)), repeat, np.sort(x))
                rows.append({"n": n, "workers": workers, "combine": combine, "seconds": secs,
                             "combine_on": run.cluster.combine_on,
                             "combine_tasks": sum(w.combines for w in run.cluster.workers),
                             "bytes_between_workers": sum(w.bytes_between
                                                          for w in run.cluster.workers),
                             "model_combine_seconds": {
                                 "client": run.cluster.plan.client_combine_time,
                                 "workers": run.cluster.plan.worker_combine_time},
                             "local_seconds": local[n], "overhead_seconds": secs - local[n],
                             "bytes_moved": run.cluster.bytes_moved,
                             "tasks": [w.tasks for w in run.cluster.workers],
                             "model_predicted_seconds": run.cluster.plan.predicted_time,
                             "model_local_seconds": run.cluster.plan.local_time,
                             "network": vars(run.cluster.plan.network)})
        finally:
            client.close()
            cluster.close()
    return rows


def on_paper(ns, nodes_list):
    from hpu import model
    from hpu._dask import Network, NodeProfile, plan_cluster
    from hpu._profile import active_profile

    try:
        prof = active_profile()
        machine, contention = prof.machine(), prof.contention
    except Exception:  # noqa: BLE001 - no OpenCL device: this machine's CPU alone
        import numba

        machine = model.Machine(p=numba.get_num_threads(), g=1, gamma=1e-6,
                                seconds_per_unit=2e-9)
        contention = 1.0
    net = Network(latency_s=PAPER_LATENCY_S, seconds_per_byte=TEN_GBIT_S_PER_BYTE)
    out = []
    for n in ns:
        for W in nodes_list:
            nodes = [NodeProfile(address=f"node{i}", p=machine.p, g=machine.g,
                                 gamma=machine.gamma,
                                 seconds_per_unit=machine.seconds_per_unit or 2e-9,
                                 contention=contention) for i in range(W)]
            # mergesort moves a (4 B) and tmp (4 B) per element out, both written back
            plan = plan_cluster(a=2, b=2, cost="n", n=n, element_bytes=8, in_bytes=8 * n,
                                out_bytes=8 * n, spanned=True, nodes=nodes, network=net,
                                local=machine, local_contention=contention)
            out.append({"n": n, "nodes": W, "level": plan.level,
                        "combine_on": plan.combine_on,
                        "client_combine_seconds": plan.client_combine_time,
                        "worker_combine_seconds": plan.worker_combine_time,
                        "predicted_seconds": plan.predicted_time,
                        "local_seconds": plan.local_time,
                        "speedup": plan.local_time / plan.predicted_time,
                        "bytes_moved": plan.bytes_moved, "distribute": plan.distribute})
    return out


def _pow2(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def render(rows, paper, device):
    lines = [f"mergesort (int32), workers run device={device!r}; median seconds", "",
             "| n | local | 1 worker | 2 workers | 2 workers, combines on the workers | "
             "overhead (1 worker − local) | bytes moved (2 workers: client / workers) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for n in sorted({r["n"] for r in rows}):
        one = next(r for r in rows if r["n"] == n and r["workers"] == 1)
        two = next(r for r in rows if r["n"] == n and r["workers"] == 2
                   and r["combine"] == "client")
        tw = next(r for r in rows if r["n"] == n and r["workers"] == 2
                  and r["combine"] == "workers")
        lines.append(f"| {_pow2(n)} | {one['local_seconds']:.4f} | {one['seconds']:.4f} | "
                     f"{two['seconds']:.4f} | {tw['seconds']:.4f} ({tw['combine_tasks']} "
                     f"tasks) | {one['overhead_seconds']:+.4f} | {two['bytes_moved']:,} / "
                     f"{tw['bytes_moved']:,} |")
    lines += ["", "On paper: nodes like this one over 10 Gb/s "
              f"(λ = {PAPER_LATENCY_S:g} s, δ = {TEN_GBIT_S_PER_BYTE:g} s/B)", "",
              "| n | nodes | level | predicted s | one machine s | speedup | distribute | "
              "combines (levels 1..L-1: client s / workers s) |",
              "|---|---:|---:|---:|---:|---:|---|---|"]
    for p in paper:
        lines.append(f"| {_pow2(p['n'])} | {p['nodes']} | {p['level']} | "
                     f"{p['predicted_seconds']:.4g} | {p['local_seconds']:.4g} | "
                     f"{p['speedup']:.2f}x | {'yes' if p['distribute'] else 'declines'} | "
                     f"{p['combine_on']} ({p['client_combine_seconds']:.3g} / "
                     f"{p['worker_combine_seconds']:.3g}) |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1 << 16, 1 << 18, 1 << 20])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu", "hybrid"])
    ap.add_argument("--level", type=int, default=3,
                    help="the distribution level (forced: the model would decline here)")
    ap.add_argument("--paper-n", type=int, nargs="+", default=[1 << 24, 1 << 27, 1 << 30])
    ap.add_argument("--json", action="store_true")
    o = ap.parse_args(argv)
    rows = measure(o.n, o.repeat, o.device, o.level)
    paper = on_paper(o.paper_n, (4, 16))
    if o.json:
        print(json.dumps({"measured": rows, "paper": paper}, indent=1))
    else:
        print(render(rows, paper, o.device))


if __name__ == "__main__":
    main()
