"""The Dask backend (:mod:`hpu._dask`) on a LocalCluster of two worker processes.

Every result is compared with NumPy (or plain Python) on the same input; the
workers run each level-D subtree with hpu's own devices (``"cpu"``, ``"gpu"``
and ``"hybrid"`` at splits that put leaves and combines on the OpenCL device).
Functions defined in this module reach the workers by value, and a fresh
interpreter that cannot import this module loads and runs them.  Sizes are
small: the cluster's round trips, not the work, dominate.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("distributed")

import hpu  # noqa: E402
from hpu import _dask  # noqa: E402
from hpu._dask import Cluster, ClusterUnavailableError, Network, NodeProfile  # noqa: E402
from hpu._hybrid import HpuPerformanceWarning  # noqa: E402

pytestmark = pytest.mark.opencl

FEW = settings(max_examples=4, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture,
                                      HealthCheck.too_slow])

#: the workers' own device paths: CPU, device only, and hybrid splits that put leaves
#: and combines on the OpenCL device
WORKER_DEVICES = [
    {"device": "cpu"},
    {"device": "gpu"},
    {"device": "hybrid", "alpha": 0.5, "y": 1},
    {"device": "hybrid", "alpha": 0.0, "y": 2},
]


# ---------------------------------------------------------------- user functions

def merge(a, tmp, lo, mid, hi):
    i, j = lo, mid
    for k in range(lo, hi):
        if j >= hi or (i < mid and a[i] <= a[j]):
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
    for k in range(lo, hi):
        a[k] = tmp[k]


@hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
def user_sort(a, tmp, lo, hi):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    user_sort(a, tmp, lo, mid)
    user_sort(a, tmp, mid, hi)
    merge(a, tmp, lo, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def first_argmax(a, lo, hi):
    """An absolute index: wrong if a worker rebased lo/hi to its slice."""
    if hi - lo == 1:
        return lo
    mid = (lo + hi) // 2
    left = first_argmax(a, lo, mid)
    right = first_argmax(a, mid, hi)
    if a[right] > a[left]:
        return right
    return left


@hpu.divide_and_conquer(b=2, cost="1")
def scale_odd(a, lo, hi):
    """No span: whole arrays travel and only changed elements come back."""
    if hi - lo == 1:
        if a[lo] % 2 != 0:
            a[lo] = a[lo] * 3
        return a[lo]
    mid = (lo + hi) // 2
    left = scale_odd(a, lo, mid)
    right = scale_odd(a, mid, hi)
    return left + right


# ---------------------------------------------------------------- the cluster

@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        c = Client(cluster)
    yield c
    _dask.close_clients()  # those hpu opened for the scheduler's address
    c.close()
    cluster.close()


def _at(client, level=3):
    return Cluster(client, level=level)


# ------------------------------------------------------------------ correctness

@pytest.mark.parametrize("opts", WORKER_DEVICES, ids=lambda o: "-".join(map(str, o.values())))
def test_user_function_sorts_exactly_on_the_cluster(client, opts):
    @FEW
    @given(n=st.integers(0, 3000), seed=st.integers(0, 2**32 - 1))
    def check(n, seed):
        x = np.random.default_rng(seed).integers(-1000, 1000, n).astype(np.int32)
        want = np.sort(x, kind="stable")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            run = user_sort.run(x, np.empty_like(x), 0, n, cluster=_at(client), **opts)
        np.testing.assert_array_equal(x, want)
        assert run.cluster is not None and run.cluster.distributed
        if n >= 8:  # the tree reaches level 3: both workers got a range
            assert sum(w.tasks for w in run.cluster.workers) == 8
            assert run.cluster.bytes_moved > 0
        assert run.fallbacks == [] or all("on tcp" in f for f in run.fallbacks)

    check()


def test_a_function_returning_new_arrays_runs_on_the_client_and_says_so(client):
    """A cluster call always returns a ClusterRun; here ``cluster`` is None (the workers ran
    nothing) and the warning says why, not that the array was of the wrong kind."""
    from functional_examples import msort as f     # returns a new array (guide §10)

    x = np.random.default_rng(4).integers(-1000, 1000, 5000)
    with pytest.warns(HpuPerformanceWarning, match="Dask cluster runs the breadth-first"):
        run = f.run(x, cluster=_at(client))
    assert np.array_equal(run.value, np.sort(x)) and run.cluster is None
    assert "not one non-empty" not in " ".join(run.fallbacks)


@pytest.mark.parametrize("opts", WORKER_DEVICES[:3], ids=lambda o: o["device"])
def test_absolute_indices_survive_the_spans(client, opts):
    @FEW
    @given(n=st.integers(1, 2000), seed=st.integers(0, 2**32 - 1), level=st.integers(1, 4))
    def check(n, seed, level):
        x = np.random.default_rng(seed).normal(size=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            run = first_argmax.run(x, 0, n, cluster=_at(client, level), **opts)
        assert run.value == int(np.argmax(x))

    check()


def test_without_span_only_changed_elements_come_back(client):
    @FEW
    @given(n=st.integers(1, 2000), seed=st.integers(0, 2**32 - 1))
    def check(n, seed):
        x = np.random.default_rng(seed).integers(-50, 50, n).astype(np.int64)
        want = np.where(x % 2 != 0, x * 3, x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            run = scale_odd.run(x, 0, n, cluster=_at(client, 2), device="cpu")
        np.testing.assert_array_equal(x, want)
        assert run.value == int(want.sum())

    check()


def _shipped():
    from algorithms.inversions import count_inversions
    from algorithms.maxsubarray import max_subarray
    from algorithms.mergesort import sort
    from algorithms.mergesort3 import sort3
    from algorithms.sum import total

    def inversions_ref(x):
        return sum(int((x[i] > x[i + 1:]).sum()) for i in range(len(x)))

    def maxsub_ref(x):
        best, cur = -np.inf, 0
        for v in x.tolist():
            cur = max(v, cur + v)
            best = max(best, cur)
        pre = np.cumsum(x)
        return (int(x.sum()), int(pre.max()), int(np.cumsum(x[::-1]).max()), int(best))

    return [
        ("sort", sort, lambda x: np.sort(x, kind="stable"), lambda got: got),
        ("sort3", sort3, lambda x: np.sort(x, kind="stable"), lambda got: got),
        ("total", total, lambda x: int(x.astype(np.int64).sum()), int),
        ("count_inversions", count_inversions, inversions_ref, int),
        ("max_subarray", max_subarray, maxsub_ref,
         lambda got: (got.total, got.best_prefix, got.best_suffix, got.best)),
    ]


@pytest.mark.parametrize("name, opts", [
    ("sort", WORKER_DEVICES[0]), ("sort3", WORKER_DEVICES[0]), ("total", WORKER_DEVICES[0]),
    ("count_inversions", WORKER_DEVICES[0]), ("max_subarray", WORKER_DEVICES[0]),
    ("total", WORKER_DEVICES[2]), ("max_subarray", WORKER_DEVICES[3]),
], ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_every_shipped_algorithm_matches_numpy(client, name, opts):
    _, fn, ref, view = next(s for s in _shipped() if s[0] == name)

    @settings(max_examples=2, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(n=st.integers(2, 1500), seed=st.integers(0, 2**32 - 1))
    def check(n, seed):
        x = np.random.default_rng(seed).integers(-500, 500, n).astype(np.int32)
        keep = x.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            got, run = fn(x, return_run=True, cluster=_at(client, 2), **opts)
        np.testing.assert_array_equal(x, keep)  # the wrappers never modify their input
        want = ref(x)
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(view(got), want)
        else:
            assert view(got) == want
        assert run.cluster.distributed and run.cluster.level <= 2  # a short tree ends sooner
        leaf = next(r for r in run.levels if r.phase == "leaf")
        assert sum(w.tasks for w in run.cluster.workers) == leaf.tasks

    check()


# ------------------------------------------------------------------ shipping

def test_the_decorated_object_round_trips_and_recurses_through_itself():
    blob = _dask.dumps_function(user_sort)
    again = _dask.loads_function(blob)
    assert isinstance(again, hpu.DivideAndConquer) and again is not user_sort
    assert again.py_func.__globals__["user_sort"] is again  # the recursion: one object
    x = np.random.default_rng(0).integers(0, 100, 300).astype(np.int32)
    want = np.sort(x)
    again.run(x, np.empty_like(x), 0, x.size, device="cpu")
    np.testing.assert_array_equal(x, want)


def test_a_process_that_cannot_import_this_module_runs_its_function(tmp_path):
    blob = tmp_path / "fn.bin"
    blob.write_bytes(_dask.dumps_function(first_argmax))
    script = textwrap.dedent(f"""
        import sys, numpy as np
        assert "test_dask" not in sys.modules
        from hpu._dask import loads_function
        f = loads_function(open({str(blob)!r}, "rb").read())
        x = np.array([3.0, 9.0, -1.0, 9.0, 2.0])
        print(f.run(x, 0, 5, device="cpu").value)
    """)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(hpu.__file__)))
    env = {**os.environ, "PYTHONPATH": repo}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "1"
    # by value, not by reference: the same interpreter cannot import this module
    imp = subprocess.run([sys.executable, "-c", "import test_dask"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert imp.returncode != 0 and "ModuleNotFoundError" in imp.stderr


# ------------------------------------------------------------------ faults

def test_a_worker_killed_mid_run_is_recomputed_elsewhere(client, monkeypatch):
    monkeypatch.setenv(_dask.FAULT_ENV, "1")
    before = set(client.scheduler_info(n_workers=-1)["workers"])
    x = np.random.default_rng(7).integers(0, 10**6, 4000).astype(np.int32)
    want = np.sort(x)
    with pytest.warns(HpuPerformanceWarning, match="was lost"):
        run = user_sort.run(x, np.empty_like(x), 0, x.size, cluster=_at(client), device="cpu")
    np.testing.assert_array_equal(x, want)
    lost = [f for f in run.fallbacks if "was lost mid-run" in f]
    assert len(lost) == 1 and any(w in lost[0] for w in before)
    monkeypatch.delenv(_dask.FAULT_ENV)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it for the next tests


def test_no_workers_runs_locally_with_a_warning(monkeypatch):
    from distributed import Client, LocalCluster

    monkeypatch.setattr(_dask, "CONNECT_TIMEOUT_S", 0.5)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cl, \
            Client(cl) as c:
        x = np.random.default_rng(3).normal(size=100)
        with pytest.warns(HpuPerformanceWarning, match="no workers"):
            run = first_argmax.run(x, 0, x.size, cluster=c, device="cpu")
    assert run.value == int(np.argmax(x))
    assert not run.cluster.distributed and "no workers" in run.fallbacks[0]


def test_an_unreachable_scheduler_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_dask, "CONNECT_TIMEOUT_S", 1.0)
    x = np.zeros(4)
    with pytest.raises(ClusterUnavailableError, match=r"tcp://127\.0\.0\.1:9.*local:N"):
        first_argmax.run(x, 0, 4, cluster="tcp://127.0.0.1:9", device="cpu")


@pytest.mark.parametrize("bad, err, match", [
    (42, TypeError, "expected a dask.distributed.Client"),
    ("local:0", ValueError, "N >= 1"),
    ("local:x", ValueError, "local:N"),
    # (distributed's own "missing port number in address ''", naming neither)
    ("bogus", ValueError, r"cluster='bogus' is not a scheduler address .*'local:2'"),
    ("", ValueError, r"cluster='' is not a scheduler address"),
    ("tcp://", ValueError, r"cluster='tcp://' is not a scheduler address"),
])
def test_bad_cluster_targets_name_the_fix(bad, err, match):
    with pytest.raises(err, match=match):
        first_argmax.run(np.zeros(4), 0, 4, cluster=bad, device="cpu")


def test_a_bad_level_names_the_fix():
    with pytest.raises(ValueError, match="level=-1"):
        Cluster("local:1", level=-1)


# ------------------------------------------------------------------ the model

def _node(addr, spu=2e-9):
    return NodeProfile(address=addr, p=2, g=2, gamma=0.5, seconds_per_unit=spu)


def _plan(network, n=1 << 24, nodes=None, **kw):
    from hpu import model

    local = model.Machine(p=2, g=2, gamma=0.5, seconds_per_unit=2e-9)
    return _dask.plan_cluster(a=2, b=2, cost="n", n=n, element_bytes=8, in_bytes=8 * n,
                              out_bytes=4 * n, spanned=True,
                              nodes=nodes or [_node(f"w{i}") for i in range(16)],
                              network=network, local=local, **kw)


def test_the_plan_distributes_when_the_network_is_fast():
    plan = _plan(Network(latency_s=1e-4, seconds_per_byte=1e-10))
    assert plan.distribute and not plan.forced
    assert plan.predicted_time < plan.local_time
    assert 2 ** plan.level >= _dask.TASKS_PER_WORKER * 16
    assert abs(sum(plan.shares) - 1) < 1e-12


def test_the_plan_declines_when_moving_data_costs_more_than_it_saves():
    plan = _plan(Network(latency_s=1e-3, seconds_per_byte=1e-6))
    assert not plan.distribute
    assert "not worth it" in plan.reason and "ran locally" in plan.reason
    forced = _plan(Network(latency_s=1e-3, seconds_per_byte=1e-6), level=4)
    assert forced.distribute and forced.forced and forced.level == 4


def test_shares_follow_the_nodes_speeds():
    plan = _plan(Network(latency_s=1e-4, seconds_per_byte=1e-10),
                 nodes=[_node("fast", 1e-9), _node("slow", 2e-9)])
    fast, slow = plan.shares
    assert fast == pytest.approx(2 * slow, rel=0.05)


def test_a_declining_cluster_runs_locally_and_says_why(client):
    x = np.random.default_rng(5).normal(size=64)  # microseconds of work: never worth a trip
    _dask._told_local.discard(first_argmax.__name__)
    with pytest.warns(HpuPerformanceWarning, match="not worth it"):
        run = first_argmax.run(x, 0, x.size, cluster=client, device="cpu")
    assert run.value == int(np.argmax(x))
    assert not run.cluster.distributed and run.cluster.plan is not None
    assert run.cluster.workers == () and run.fallbacks == []


def test_a_scheduler_address_works_like_a_client(client):
    x = np.random.default_rng(11).integers(0, 99, 500).astype(np.int32)
    want = np.sort(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        run = user_sort.run(x, np.empty_like(x), 0, x.size,
                            cluster=Cluster(client.scheduler.address, level=2), device="cpu")
    np.testing.assert_array_equal(x, want)
    assert run.cluster.scheduler == client.scheduler.address


# ------------------------------------------------------------------ the command

def test_hpu_run_on_the_cluster_verifies_and_reports_it(client, capsys):
    import json

    from hpu.cli import main

    code = main(["run", "inversions", "--n", "3000", "--device", "cpu", "--repeat", "1",
                 "--cluster", client.scheduler.address, "--cluster-level", "2", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out.strip().splitlines()[-1])
    cluster = report["methods"]["cpu"]["cluster"]
    assert report["verified"] and cluster["distributed"] and cluster["level"] == 2
    assert sum(w["tasks"] for w in cluster["workers"]) == 4 and cluster["bytes_moved"] > 0


@pytest.mark.parametrize("argv, match", [
    (["--cluster", "host:8786"], "--cluster"),
    (["--cluster-level", "2"], "needs --cluster"),
    (["--cluster", "local:2", "--cluster-level", "-1"], "--cluster-level"),
])
def test_hpu_run_refuses_bad_cluster_flags(argv, match, capsys):
    from hpu.cli import main

    assert main(["run", "sum", "--n", "100", *argv]) == 2
    assert match in capsys.readouterr().err


def test_hpu_info_shows_the_cluster(client, capsys):
    import json

    from hpu.cli import main

    assert main(["info", "--cluster", client.scheduler.address, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["cluster"]["scheduler"] == client.scheduler.address
    assert len(info["cluster"]["workers"]) == 2 and len(info["cluster"]["nodes"]) == 2
    # info says everything and why, and exits 3: a cluster asked for and not reached is an
    # error, as a device asked for by name and not there (it exited 0)
    assert main(["info", "--cluster", "local:x"]) == 3
    captured = capsys.readouterr()
    assert "local:N" in captured.out and "hpu info: error: --cluster 'local:x'" in captured.err


def test_hpu_calibrate_refuses_a_bad_cluster(capsys):
    from hpu.cli import main

    assert main(["calibrate", "--cluster", "local:0"]) == 2
    assert "N >= 1" in capsys.readouterr().err


def test_signed_zeros_come_back_bit_for_bit(client):
    x = np.array([0.0, -0.0, 1.5, -0.0, 0.0, -2.0, 0.0, -0.0] * 40)
    want = np.sort(x, kind="stable")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        user_sort.run(x, np.empty_like(x), 0, x.size, cluster=_at(client, 2), device="cpu")
    np.testing.assert_array_equal(x.view(np.uint64), want.view(np.uint64))


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def reciprocal_sum(a, lo, hi):
    if hi - lo == 1:
        return 1 / a[lo]
    mid = (lo + hi) // 2
    left = reciprocal_sum(a, lo, mid)
    right = reciprocal_sum(a, mid, hi)
    return left + right


def test_the_functions_own_error_is_raised_and_the_inputs_are_untouched(client):
    x = np.arange(1, 301, dtype=np.int64)
    x[250] = 0
    keep = x.copy()
    # K=0 on the workers: each subtree runs as the compiled recursive function (a
    # ZeroDivisionError inside a parallel leaf level is not reliably raised by the local
    # CPU path itself; see the report of this change)
    with pytest.raises(ZeroDivisionError):
        reciprocal_sum.run(x, 0, x.size, cluster=_at(client, 2), device="cpu", K=0)
    np.testing.assert_array_equal(x, keep)


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def mark_then_divide(a, b, lo, hi):
    """The divide writes ``a`` (on the client, above the distribution level); a leaf on a
    worker divides by ``b``."""
    if hi - lo == 1:
        return 10 // b[lo]
    a[lo] = a[lo] + 1
    mid = (lo + hi) // 2
    left = mark_then_divide(a, b, lo, mid)
    right = mark_then_divide(a, b, mid, hi)
    return left + right


@pytest.mark.parametrize("combine", ["client", "workers"])
def test_an_error_on_a_worker_leaves_the_arrays_the_client_wrote_as_they_were(client,
                                                                             combine):
    a = np.arange(64, dtype=np.int64)
    b = np.ones(64, dtype=np.int64)
    b[45] = 0
    keep = a.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        with pytest.raises(ZeroDivisionError):
            mark_then_divide.run(a, b, 0, a.size, device="cpu", K=0,
                                 cluster=Cluster(client, level=2, combine=combine))
        np.testing.assert_array_equal(a, keep)  # the client's divides were put back
        b[45] = 1
        assert mark_then_divide.run(a, b, 0, a.size, device="cpu", K=0,
                                    cluster=Cluster(client, level=2)).value == 640
        want = keep.copy()
        mark_then_divide.py_func(want, b, 0, want.size)
        np.testing.assert_array_equal(a, want)


def test_keep_inputs_false_on_the_cluster_copies_nothing(client, monkeypatch):
    from hpu import _snapshot

    taken = []
    real = _snapshot.Snapshot.take.__func__

    def spy(cls, program, values, keep=True):
        snap = real(cls, program, values, keep)
        taken.append(snap)
        return snap

    monkeypatch.setattr(_snapshot.Snapshot, "take", classmethod(spy))
    a = np.arange(64, dtype=np.int64)
    b = np.ones(64, dtype=np.int64)
    b[45] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        with pytest.raises(ZeroDivisionError):
            mark_then_divide.options(keep_inputs=False, device="cpu", K=0,
                                     cluster=Cluster(client, level=2)).run(a, b, 0, a.size)
    assert taken and not any(s.kept for s in taken)
    assert not (a == np.arange(64)).all()  # as far as the run got: the client's divides


def test_a_range_lost_for_good_is_redone_here(monkeypatch):
    import dask
    from distributed import Client, LocalCluster

    monkeypatch.setenv(_dask.FAULT_ENV, "always")
    x = np.random.default_rng(9).integers(-99, 99, 700).astype(np.int32)
    want = np.sort(x)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # distributed's own, about the kill
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cl, Client(cl) as c:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                run = user_sort.run(x, np.empty_like(x), 0, x.size, cluster=Cluster(c, level=1),
                                    device="cpu")
    np.testing.assert_array_equal(x, want)
    redone = [f for f in run.fallbacks if "redone on this machine" in f]
    assert len(redone) == 1 and "KilledWorker" in redone[0]
    assert any(issubclass(w.category, HpuPerformanceWarning) for w in seen)
    assert any(w.address == "client" for w in run.cluster.workers)


def test_local_n_starts_worker_processes_here(client):
    from algorithms.sum import total

    x = np.random.default_rng(4).integers(-9, 9, 1000).astype(np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        got, run = total(x, return_run=True, cluster=Cluster("local:1", level=1), device="cpu")
    assert got == int(x.sum()) and run.cluster.distributed
    assert len(run.cluster.workers) == 1


# ------------------------------------------------------- combines on the workers

@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def gap_sum(a, lo, hi):
    """The children skip the middle element, which the combine reads and writes: a parent's
    span is not covered by its children's, so the client sends the gap's originals."""
    if hi - lo <= 2:
        s = 0
        for k in range(lo, hi):
            s += a[k]
        return s
    mid = (lo + hi) // 2
    left = gap_sum(a, lo, mid)
    right = gap_sum(a, mid + 1, hi)
    a[mid] = a[mid] * 2
    return left + right + a[mid]


def _on_workers(client, level=3, **kw):
    return Cluster(client, level=level, combine="workers", **kw)


def _parents(run):
    """Combine tasks expected on the workers: every task of levels 1..K-1 (the root stays)."""
    return sum(r.cpu_tasks for r in run.levels
               if r.phase == "combine" and 1 <= r.level < run.cluster.level)


@pytest.mark.parametrize("opts", WORKER_DEVICES, ids=lambda o: "-".join(map(str, o.values())))
def test_combines_as_tasks_sort_exactly(client, opts):
    @FEW
    @given(n=st.integers(0, 3000), seed=st.integers(0, 2**32 - 1), level=st.integers(2, 4))
    def check(n, seed, level):
        x = np.random.default_rng(seed).integers(-1000, 1000, n).astype(np.int32)
        want = np.sort(x, kind="stable")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            run = user_sort.run(x, np.empty_like(x), 0, n, cluster=_on_workers(client, level),
                                **opts)
        np.testing.assert_array_equal(x, want)
        c = run.cluster
        if c.level >= 2:  # a tree that reaches level 2 has parents below the root
            assert c.combine_on == "workers" and c.combine_level == 1
            assert sum(w.combines for w in c.workers) == _parents(run) > 0
            leaf = next(r for r in run.levels if r.phase == "leaf")
            assert sum(w.tasks for w in c.workers) == leaf.cpu_tasks
        assert "combined as Dask tasks on the workers" in c.reason
        assert run.fallbacks == [] or all("on tcp" in f for f in run.fallbacks)

    check()


@pytest.mark.parametrize("fn, make, ref", [
    (first_argmax, lambda r, n: r.normal(size=n), lambda x: int(np.argmax(x))),
    (scale_odd, lambda r, n: r.integers(-50, 50, n).astype(np.int64),
     lambda x: int(np.where(x % 2 != 0, x * 3, x).sum())),
    (gap_sum, lambda r, n: r.integers(-50, 50, n).astype(np.int64), None),
], ids=["absolute-indices", "no-span", "uncovered-span"])
def test_combines_as_tasks_match_plain_python(client, fn, make, ref):
    @FEW
    @given(n=st.integers(1, 2000), seed=st.integers(0, 2**32 - 1), level=st.integers(2, 4))
    def check(n, seed, level):
        x = make(np.random.default_rng(seed), n)
        plain = x.copy()
        want = fn.py_func(plain, 0, n) if ref is None else ref(x)
        if ref is not None and fn is scale_odd:
            plain = np.where(x % 2 != 0, x * 3, x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            run = fn.run(x, 0, n, cluster=_on_workers(client, level), device="cpu")
        assert run.value == want
        np.testing.assert_array_equal(x, plain)

    check()


@pytest.mark.parametrize("name", ["sort", "sort3", "total", "count_inversions", "max_subarray"])
def test_shipped_algorithms_with_combines_as_tasks(client, name):
    _, fn, ref, view = next(s for s in _shipped() if s[0] == name)
    x = np.random.default_rng(21).integers(-500, 500, 1500).astype(np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        got, run = fn(x, return_run=True, cluster=_on_workers(client, 3), device="cpu")
    want = ref(x)
    if isinstance(want, np.ndarray):
        np.testing.assert_array_equal(view(got), want)
    else:
        assert view(got) == want
    assert run.cluster.combine_on == "workers"
    assert sum(w.combines for w in run.cluster.workers) == _parents(run)


def test_the_plan_puts_combines_on_the_workers_above_a_byte_threshold(client):
    x = np.random.default_rng(8).integers(0, 10**6, 2000).astype(np.int32)
    want = np.sort(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        run = user_sort.run(x, np.empty_like(x), 0, x.size, device="cpu",
                            cluster=Cluster(client, level=3, combine_bytes=x.nbytes))
    np.testing.assert_array_equal(x, want)
    plan = run.cluster.plan
    assert plan.combine_on == "workers" and run.cluster.combine_on == "workers"
    assert f"at least Cluster(combine_bytes={x.nbytes})" in plan.reason
    assert sum(w.combines for w in run.cluster.workers) == 6
    y = np.random.default_rng(8).integers(0, 10**6, 2000).astype(np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        run = user_sort.run(y, np.empty_like(y), 0, y.size, device="cpu",
                            cluster=Cluster(client, level=3, combine_bytes=10 * y.nbytes))
    np.testing.assert_array_equal(y, want)
    assert run.cluster.combine_on == "client" and "below Cluster(combine_bytes=" in \
        run.cluster.plan.reason
    assert all(w.combines == 0 for w in run.cluster.workers)


def test_the_model_combines_on_many_workers_and_on_the_client_for_few():
    net = Network(latency_s=1e-4, seconds_per_byte=1e-10)
    many = _plan(net)  # 16 workers, the client's 2 cores
    assert many.combine_on == "workers" and many.combine_level == 1
    assert many.worker_combine_time < many.client_combine_time
    assert "combined as Dask tasks on the workers" in many.reason
    few = _plan(net, nodes=[_node("w0"), _node("w1")], level=4)
    assert few.combine_on == "client" and few.combine_level == 4
    assert few.worker_combine_time >= few.client_combine_time
    assert "combined on the client: the model predicts" in few.reason
    forced = _plan(net, nodes=[_node("w0"), _node("w1")], level=4, combine="workers")
    assert forced.combine_on == "workers" and "Cluster(combine='workers')" in forced.reason
    root_only = _plan(net, level=1, combine="workers")
    assert root_only.combine_on == "client" and "only the root" in root_only.reason


@pytest.mark.parametrize("kw, match", [
    ({"combine": "gpu"}, "combine='gpu'"),
    ({"combine_bytes": -1}, "combine_bytes=-1"),
    ({"combine_bytes": 1.5}, "combine_bytes=1.5"),
])
def test_bad_combine_options_name_the_fix(kw, match):
    with pytest.raises(ValueError, match=match):
        Cluster("local:1", **kw)


def test_a_worker_killed_in_the_combine_phase_is_recomputed(client, monkeypatch):
    monkeypatch.setenv(_dask.FAULT_ENV, "combine")
    before = set(client.scheduler_info(n_workers=-1)["workers"])
    x = np.random.default_rng(17).integers(0, 10**6, 4000).astype(np.int32)
    want = np.sort(x)
    with pytest.warns(HpuPerformanceWarning, match="was lost"):
        run = user_sort.run(x, np.empty_like(x), 0, x.size, cluster=_on_workers(client),
                            device="cpu")
    np.testing.assert_array_equal(x, want)
    lost = [f for f in run.fallbacks if "was lost mid-run" in f]
    assert len(lost) == 1 and any(w in lost[0] for w in before)
    assert "recomputed by Dask from their inputs" in lost[0]
    assert sum(w.combines for w in run.cluster.workers) == 6
    monkeypatch.delenv(_dask.FAULT_ENV)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it for the next tests


def test_combines_lost_for_good_are_redone_here(monkeypatch):
    import dask
    from distributed import Client, LocalCluster

    monkeypatch.setenv(_dask.FAULT_ENV, "always")
    x = np.random.default_rng(19).integers(-99, 99, 700).astype(np.int32)
    want = np.sort(x)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # distributed's own, about the kill
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cl, Client(cl) as c:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                run = user_sort.run(x, np.empty_like(x), 0, x.size, device="cpu",
                                    cluster=Cluster(c, level=2, combine="workers"))
    np.testing.assert_array_equal(x, want)
    redone = [f for f in run.fallbacks if "redone on this machine" in f]
    # level 1's two parents, both above the one range that every attempt kills
    assert len(redone) == 2 and all("KilledWorker" in f for f in redone)
    assert any(issubclass(w.category, HpuPerformanceWarning) for w in seen)
    assert any(w.address == "client" and w.combines for w in run.cluster.workers)


# ------------------------------------------------------- options on the workers

HERE = os.path.abspath(__file__)


@hpu.divide_and_conquer(b=2, cost="1", boundscheck=True)
def poke(a, idx, lo, hi):
    if hi - lo == 1:
        a[lo + idx[lo]] += 1   # LINE_POKE
        return
    mid = (lo + hi) // 2
    poke(a, idx, lo, mid)
    poke(a, idx, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1")
def poke_default(a, idx, lo, hi):
    if hi - lo == 1:
        a[lo + idx[lo]] += 1   # LINE_POKE_DEFAULT
        return
    mid = (lo + hi) // 2
    poke_default(a, idx, lo, mid)
    poke_default(a, idx, mid, hi)


def _line(tag: str) -> int:
    with open(HERE) as fh:
        for k, text in enumerate(fh, 1):
            if text.rstrip().endswith(f"# {tag}"):
                return k
    raise AssertionError(tag)


@pytest.mark.parametrize("combine", ["client", "workers"])
def test_a_bounds_error_on_a_worker_names_the_users_line(client, combine):
    @settings(max_examples=3, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(n=st.integers(8, 200), where=st.integers(0, 10**6), over=st.integers(0, 50))
    def check(n, where, over):
        a = np.zeros(n, np.int64)
        idx = np.zeros(n, np.int64)     # each task its own element: a[lo]
        idx[where % n] = n + over - where % n  # one index past the end, in some range
        keep = a.copy()
        with pytest.raises(IndexError) as err:
            poke.run(a, idx, 0, n, cluster=Cluster(client, level=2, combine=combine),
                     device="cpu")
        msg = str(err.value)
        assert msg.startswith(f"{HERE}:{_line('LINE_POKE')}: a[lo + idx[lo]]: index {n + over} ")
        assert f"out of bounds for length {n}" in msg
        np.testing.assert_array_equal(a, keep)  # nothing written into the caller's arrays

    check()


def test_the_clients_hpu_boundscheck_reaches_the_workers(client, monkeypatch):
    # the workers were started without HPU_BOUNDSCHECK: the client's setting decides
    monkeypatch.setenv("HPU_BOUNDSCHECK", "1")
    a = np.zeros(64, np.int64)
    idx = np.zeros(64, np.int64)
    idx[50] = 20
    with pytest.raises(IndexError, match=rf"^{HERE}:{_line('LINE_POKE_DEFAULT')}: .*index 70 "):
        poke_default.run(a, idx, 0, 64, cluster=Cluster(client, level=2), device="cpu")


@hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
def deep_count(a, lo, hi):
    if hi - lo == 1:
        return 1
    mid = (lo + hi) // 2
    return deep_count(a, lo, mid) + deep_count(a, mid, hi)


def test_the_clients_max_depth_reaches_the_workers(client, monkeypatch):
    a = np.zeros(4096)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HpuPerformanceWarning)
        assert deep_count.run(a, 0, a.size, cluster=Cluster(client, level=2), device="cpu",
                              K=0).value == a.size
        monkeypatch.setenv("HPU_MAX_DEPTH", "4")  # the subtrees below level 2 are 10 deep
        with pytest.raises(RecursionError, match="deep_count"):
            deep_count.run(a, 0, a.size, cluster=Cluster(client, level=2), device="cpu", K=0)
