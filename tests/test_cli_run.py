"""``hpu run``: every device checked against NumPy, the JSON contract, bad values, wrong results.

The command is called in-process (``hpu.cli.main``) on small inputs; the
model's built-in profile is used (``HPU_NO_AUTOCALIBRATE=1``) so that no test
calibrates.  Timings are printed by the command but never asserted.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpu.cli import main
from hpu._commands import run as run_cmd


@pytest.fixture(autouse=True)
def _no_calibration(monkeypatch):
    monkeypatch.setenv("HPU_NO_AUTOCALIBRATE", "1")


def _json(capsys, *argv):
    code = main(["run", *argv, "--json", "--repeat", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _check_contract(d, n, dtype, methods):
    assert d["verified"] is True
    assert d["n"] == n and d["dtype"] == dtype
    assert set(d["methods"]) == set(methods)
    for key in ("alpha", "y", "K", "opencl_device", "fallbacks", "baseline", "reference",
                "devices", "seed", "repeat", "threads"):
        assert key in d
    base = d["methods"]["sequential"]["seconds"]
    for key, m in d["methods"].items():
        assert m["seconds"] > 0 and len(m["times"]) == 1
        assert m["seconds"] == sorted(m["times"])[len(m["times"]) // 2]
        assert math.isclose(m["speedup"], base / m["seconds"], rel_tol=1e-9), key
    assert d["methods"]["sequential"]["speedup"] == pytest.approx(1.0)


SORT_ROWS = {"sequential", "numpy", "numpy_default"}


def test_all_devices_json_contract(capsys):
    d = _json(capsys, "mergesort", "--n", "2000")
    _check_contract(d, 2000, "int32", {"hybrid", "cpu", "gpu"} | SORT_ROWS)
    assert d["opencl_device"]  # the OpenCL device used, described
    assert d["devices"] == ["hybrid", "cpu", "gpu"]
    m = d["methods"]
    # the level-K tasks were all solved, by someone
    for dev in ("hybrid", "cpu", "gpu"):
        assert m[dev]["cpu_tasks"] + m[dev]["gpu_tasks"] >= 1
    assert m["cpu"]["gpu_tasks"] == 0 and m["cpu"]["alpha"] == 1.0
    assert m["gpu"]["cpu_tasks"] == 0 and m["gpu"]["alpha"] == 0.0
    # the top-level split is the hybrid's
    assert (d["alpha"], d["y"], d["K"]) == (m["hybrid"]["alpha"], m["hybrid"]["y"],
                                            m["hybrid"]["K"])
    assert d["fallbacks"] == []


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_each_device_alone(capsys, device):
    d = _json(capsys, "mergesort", "--n", "4097", "--device", device, "--seed", "3")
    _check_contract(d, 4097, "int32", {device} | SORT_ROWS)
    assert d["seed"] == 3


def test_alpha_and_y_are_echoed_and_both_sides_work(capsys):
    d = _json(capsys, "mergesort", "--n", "4097", "--device", "hybrid", "--alpha", "0.5",
              "--y", "2")
    assert d["alpha"] == 0.5 and d["y"] == 2
    hybrid = d["methods"]["hybrid"]
    assert hybrid["cpu_tasks"] > 0 and hybrid["gpu_tasks"] > 0
    assert d["cpu_tasks"] == hybrid["cpu_tasks"]


def test_text_table(capsys):
    code = main(["run", "mergesort", "--n", "2^11", "--repeat", "2", "--device", "hybrid",
                 "--alpha", "0.25", "--y", "1"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "n = 2,048 (2^11)" in out
    for row in ("hybrid (CPU + OpenCL)", "sequential (1 core, recursive)",
                "np.sort(kind='stable')", "np.sort (default kind)", "speedup vs 1 core",
                "alpha = 0.25", "y = 1", "OpenCL device:", "fallbacks: none", "verified:"):
        assert row in out, row


@pytest.mark.parametrize("algorithm,dtype,rows", [
    ("mergesort", "float64", SORT_ROWS),
    ("mergesort3", "int32", SORT_ROWS),
    ("inversions", "int32", {"sequential"}),
    ("sum", "int32", {"sequential", "numpy"}),
    ("sum", "float32", {"sequential", "numpy"}),
    ("maxsubarray", "int64", {"sequential", "numpy"}),
])
def test_other_algorithms_and_dtypes(capsys, algorithm, dtype, rows):
    d = _json(capsys, algorithm, "--n", "2000", "--dtype", dtype, "--device", "hybrid",
              "--alpha", "0.5", "--y", "1")
    _check_contract(d, 2000, dtype, {"hybrid"} | rows)
    assert d["algorithm"] == algorithm


@pytest.mark.parametrize("argv,flag", [
    (["mergesort", "--n", "0"], "--n"),
    (["mergesort", "--n", "-5"], "--n"),
    (["mergesort", "--n", "ten"], "--n"),
    (["mergesort", "--n", "99999999999999999999999"], "--n"),   # (was a traceback)
    (["mergesort", "--n", "2^64"], "--n"),
    (["mergesort", "--n", "100", "--device", "tpu"], "--device"),
    (["mergesort", "--n", "100", "--dtype", "complex64"], "--dtype"),
    (["mergesort", "--n", "100", "--alpha", "1.5"], "--alpha"),
    (["mergesort", "--n", "100", "--alpha", "-0.1"], "--alpha"),
    (["mergesort", "--n", "100", "--alpha", "nan"], "--alpha"),
    (["mergesort", "--n", "100", "--alpha", "half"], "--alpha"),
    (["mergesort", "--n", "100", "--y", "-1"], "--y"),
    (["mergesort", "--n", "100", "--y", "1.5"], "--y"),
    (["mergesort", "--n", "100", "--repeat", "0"], "--repeat"),
    (["mergesort", "--n", "100", "--seed", "-1"], "--seed"),
    (["mergesort", "--n", "100", "--strategy", "greedy"], "--strategy"),
    (["mergesort", "--n", "100", "--device", "cpu", "--alpha", "0.5"], "--alpha"),
    (["mergesort", "--n", "100", "--cl-device", "no-such-device-xyz"], "--cl-device"),
    (["quicksort", "--n", "100"], "quicksort"),
    (["sum", "--n", "100", "--cluster", "local:0"], "--cluster"),     # (was a traceback)
    (["sum", "--n", "100", "--strategy", "minmax", "--alpha", "0.5"], "--strategy"),  # ignored
    (["sum", "--n", "100", "--device", "cpu", "--strategy", "adaptive"], "--strategy"),
    (["sum", "--n", "100", "--cluster", "local:abc"], "--cluster"),
    (["sum", "--n", "100", "--cl-device", ""], "--cl-device"),        # (was ignored)
])
def test_bad_values_exit_2_with_one_line(capsys, argv, flag):
    code = main(["run", *argv])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("hpu run: error:") and flag in err
    if flag == "quicksort":
        for name in run_cmd.ALGORITHMS:
            assert name in err


def _corrupting(original, index):
    def run(a, *args, **kwargs):
        result = original(a, *args, **kwargs)
        a[index] += 1  # one wrong key (or, for the sum, a wrong total in a[0])
        return result
    return run


@pytest.mark.parametrize("method,device", [("run", "hybrid"), ("sequential", "cpu")])
def test_a_wrong_sort_is_caught(capsys, monkeypatch, method, device):
    from algorithms.mergesort import mergesort

    monkeypatch.setattr(mergesort, method, _corrupting(getattr(mergesort, method), 1000))
    code = main(["run", "mergesort", "--n", "2000", "--device", device, "--repeat", "1"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "wrong result" in err and "index 1000" in err and out == ""


def test_a_wrong_sum_is_caught(capsys, monkeypatch):
    from algorithms.sum import dc_sum

    monkeypatch.setattr(dc_sum, "run", _corrupting(dc_sum.run, 0))
    code = main(["run", "sum", "--n", "2000", "--device", "gpu", "--repeat", "1"])
    _, err = capsys.readouterr()
    assert code == 1 and "wrong result" in err and "expected" in err


def test_a_wrong_inversion_count_is_caught(capsys, monkeypatch):
    from algorithms.inversions import inversions

    original = inversions.run

    def off_by_one(*args, **kwargs):
        r = original(*args, **kwargs)
        return type(r)(**{**r.__dict__, "value": r.value + 1})

    monkeypatch.setattr(inversions, "run", off_by_one)
    code = main(["run", "inversions", "--n", "2000", "--device", "cpu", "--repeat", "1"])
    _, err = capsys.readouterr()
    assert code == 1 and "count" in err


# ----------------------------------------------------------- the references themselves

@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=0, max_size=70))
def test_inversions_reference_matches_brute_force(values):
    x = np.array(values, dtype=np.int64)
    brute = sum(1 for i in range(len(values)) for j in range(i + 1, len(values))
                if values[i] > values[j])
    assert run_cmd.inversions_reference(x) == brute


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=60))
def test_max_subarray_reference_matches_all_subarrays(values):
    n = len(values)
    sums = [sum(values[i:j]) for i in range(n) for j in range(i + 1, n + 1)]
    want = (sum(values), max(sum(values[:j]) for j in range(1, n + 1)),
            max(sum(values[i:]) for i in range(n)), max(sums))
    assert run_cmd.max_subarray_reference(np.array(values, dtype=np.int64)) == want


@pytest.mark.parametrize("algorithm,dtype,lo,hi", [
    ("mergesort", "int32", 0, 2 * 3000),
    ("mergesort", "int8", 0, 128),
    ("mergesort", "float32", 0, 2 * 3000),
    ("maxsubarray", "int16", -3000, 3000),
    ("maxsubarray", "uint16", 0, 2 * 3000),
])
def test_data_are_uniform_in_the_papers_range(algorithm, dtype, lo, hi):
    x = run_cmd.make_data(algorithm, 3000, dtype, seed=1)
    assert x.dtype == np.dtype(dtype) and x.size == 3000
    assert x.min() >= lo and x.max() < hi
    assert x.max() - x.min() > (hi - lo) * 0.9  # spread over the range, not constant
    assert np.array_equal(x, run_cmd.make_data(algorithm, 3000, dtype, seed=1))


def test_without_opencl_the_gpu_row_is_skipped_and_the_hybrid_falls_back(capsys, monkeypatch):
    from hpu._errors import DeviceUnavailableError
    from hpu._opencl import _device

    def no_device(spec=None):
        raise DeviceUnavailableError("no OpenCL device found (test)")

    monkeypatch.setattr(_device, "select_device", no_device)
    d = _json(capsys, "mergesort", "--n", "2000")
    _check_contract(d, 2000, "int32", {"hybrid", "cpu"} | SORT_ROWS)
    assert "no OpenCL device found (test)" in d["skipped"]["gpu"]
    assert d["opencl_device"] is None
    assert d["methods"]["hybrid"]["gpu_tasks"] == 0
    assert any("no OpenCL device found (test)" in f for f in d["fallbacks"])
    # --device gpu alone cannot run: an environment problem (exit 3), one line
    assert main(["run", "mergesort", "--n", "100", "--device", "gpu"]) == 3
    assert "no OpenCL device" in capsys.readouterr().err


# ------------------------------------------------------------ compiled in a child first

def _capture_child(monkeypatch):
    calls = []
    import subprocess

    def fake_run(cmd, **kw):
        calls.append((cmd, kw["env"]))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setenv(run_cmd.ENV_COMPILE_IN_CHILD, "1")
    return calls


@pytest.mark.parametrize("device, want_device, split", [
    ("cpu", "cpu", False), ("gpu", "gpu", False), ("hybrid", "hybrid", True),
    ("all", "all", True)])
def test_the_child_runs_the_same_command_small_with_the_split_forced(capsys, monkeypatch,
                                                                      device, want_device, split):
    calls = _capture_child(monkeypatch)
    _json(capsys, "sum", "--n", "100000", "--device", device, "--dtype", "int64")
    [(cmd, env)] = calls
    i = cmd.index("run")
    assert cmd[i - 2:i] == ["-m", "hpu"]
    assert cmd[i + 1] == "sum"
    assert cmd[cmd.index("--n") + 1] == str(run_cmd._CHILD_N)
    assert cmd[cmd.index("--device") + 1] == want_device
    assert cmd[cmd.index("--dtype") + 1] == "int64"
    assert ("--alpha" in cmd and cmd[cmd.index("--alpha") + 1] == "0.5"
            and cmd[cmd.index("--y") + 1] == "1") is split
    # the child neither compiles in a child of its own, nor calibrates, nor writes the
    # adaptive strategy's history
    assert env[run_cmd.ENV_COMPILE_IN_CHILD] == "0"
    assert env["HPU_NO_AUTOCALIBRATE"] == "1"
    import os
    assert env["HPU_HISTORY_DIR"] != os.environ.get("HPU_HISTORY_DIR")


def test_a_small_run_keeps_its_size_in_the_child(capsys, monkeypatch):
    calls = _capture_child(monkeypatch)
    _json(capsys, "sum", "--n", "5", "--device", "cpu")
    assert calls[0][0][calls[0][0].index("--n") + 1] == "5"


def test_no_child_when_turned_off_or_on_a_cluster(capsys, monkeypatch):
    calls = _capture_child(monkeypatch)
    monkeypatch.setenv(run_cmd.ENV_COMPILE_IN_CHILD, "0")
    _json(capsys, "sum", "--n", "1000", "--device", "cpu")
    assert calls == []


def test_a_child_that_cannot_start_leaves_the_compiling_to_the_warm_up(capsys, monkeypatch):
    import subprocess

    def broken(cmd, **kw):
        raise OSError("no fork here")

    monkeypatch.setattr(subprocess, "run", broken)
    monkeypatch.setenv(run_cmd.ENV_COMPILE_IN_CHILD, "1")
    d = _json(capsys, "sum", "--n", "1000", "--device", "cpu")
    assert d["verified"] is True


_LOADS_FROM_CACHE = """
import json, sys
from numba.core.registry import CPUDispatcher
from hpu.cli import main
assert main(["run", "sum", "--n", "20000", "--device", "cpu", "--repeat", "1", "--json"]) == 0
folder = sys.argv[1]
used = [obj for mod in list(sys.modules.values())
        if str(getattr(mod, "__file__", "") or "").startswith(folder)
        for obj in vars(mod).values() if isinstance(obj, CPUDispatcher) and obj.signatures]
print(json.dumps({"used": [f.__name__ for f in used],
                  "misses": {f.__name__: sum(f.stats.cache_misses.values()) for f in used},
                  "hits": sum(sum(f.stats.cache_hits.values()) for f in used)}))
"""


def test_after_the_child_the_process_loads_the_cpu_code_from_the_cache(tmp_path):
    """The point of the child: nothing the timed runs call is compiled in the measuring
    process (a new process, so that nothing compiled by earlier tests is reused)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, HPU_CACHE_DIR=str(tmp_path), HPU_NO_AUTOCALIBRATE="1",
               **{run_cmd.ENV_COMPILE_IN_CHILD: "1"})
    done = subprocess.run([sys.executable, "-c", _LOADS_FROM_CACHE, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["used"], "the run called no generated CPU function from the new cache folder"
    assert not any(got["misses"].values()), got["misses"]     # none compiled in this process
    assert got["hits"] > 0


def test_without_the_child_the_process_compiles_it_itself(tmp_path):
    """The check above can fail: with the child turned off, the same process compiles."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, HPU_CACHE_DIR=str(tmp_path), HPU_NO_AUTOCALIBRATE="1",
               **{run_cmd.ENV_COMPILE_IN_CHILD: "0"})
    done = subprocess.run([sys.executable, "-c", _LOADS_FROM_CACHE, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["used"] and any(got["misses"].values())


@pytest.mark.parametrize("where", ["folder", "device", "empty"])
def test_a_trace_path_that_is_not_a_file_is_refused_and_never_replaced(capsys, tmp_path, where):
    """`--trace /dev/full` replaced the device with a regular file (written beside it and
    renamed over it), `--trace DIR` left its temporary file behind, `--trace ""` wrote
    nothing and said nothing: each is an error naming the path, and nothing is written."""
    target = {"folder": str(tmp_path), "device": "/dev/null", "empty": ""}[where]
    before = sorted(p.name for p in tmp_path.parent.iterdir())
    code = main(["run", "sum", "--n", "1000", "--repeat", "1", "--device", "cpu",
                 "--trace", target])
    err = capsys.readouterr().err
    assert code == 2 and "--trace" in err and "cannot write the trace" in err, err
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == before
    import os
    import stat
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_hpu_disable_is_said_not_crashed_on(capsys, monkeypatch):
    """HPU_DISABLE=1 made every run plain Python, and the report's split crashed on its
    alpha of None (the JSON report called the plain runs hpu's): one line, exit 2."""
    monkeypatch.setenv("HPU_DISABLE", "1")
    assert main(["run", "sum", "--n", "1000", "--repeat", "1"]) == 2
    err = capsys.readouterr().err
    assert "HPU_DISABLE='1'" in err and "unset HPU_DISABLE" in err


@pytest.mark.parametrize("name, value", [("HPU_MAX_DEPTH", "abc"), ("HPU_BOUNDSCHECK", "abc")])
def test_a_bad_environment_value_is_one_line_not_a_traceback(name, value):
    """In a new process, as a user meets it (this one read the variables long ago)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "hpu", "run", "sum", "--n", "1000",
                           "--repeat", "1", "--device", "cpu"], capture_output=True,
                          text=True, env={**os.environ, name: value,
                                          "HPU_RUN_COMPILE_IN_CHILD": "0"}, timeout=600)
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("hpu run: error:") and f"{name}='{value}'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_size_numpy_cannot_allocate_is_not_enough_memory(capsys):
    """2^62 keys: NumPy's "array is too big" ValueError was a traceback."""
    assert main(["run", "sum", "--n", "2^62", "--device", "cpu", "--repeat", "1"]) == 3
    assert "not enough memory" in capsys.readouterr().err


def test_info_exits_3_for_a_cluster_it_cannot_reach(capsys):
    """`hpu info --cluster foo` printed the error and exited 0."""
    assert main(["info", "--cluster", "foo"]) == 3
    assert "hpu info: error: --cluster 'foo'" in capsys.readouterr().err
