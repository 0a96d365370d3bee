"""``hpu plan``: the paper's numbers through the command line, bad values, the picture.

Expected values come from the paper's worked example (004 §5.2.2) and from
calling :mod:`hpu.model` directly; the CLI must report what the model says.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pytest

from hpu import model as M
from hpu.cli import main

PAPER_ARGS = ["--a", "2", "--b", "2", "--cost", "n", "--n", "16777216", "--p", "4",
              "--g", "4096", "--gamma", "1/160"]


def _run_json(capsys, *args) -> dict:
    assert main(["plan", "--json", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def test_json_gives_the_paper_numbers(capsys):
    d = _run_json(capsys, *PAPER_ARGS)
    assert d["alpha"] == pytest.approx(0.16, abs=0.02)
    assert d["gpu_work_fraction"] == pytest.approx(0.52, abs=0.03)
    assert d["y"] == pytest.approx(9.4, abs=0.3)
    assert d["transfer_level"] in (9, 10)
    assert d["strategy"] == "advanced"
    assert (d["p"], d["g"], d["gamma"]) == (4, 4096, pytest.approx(1 / 160))
    assert (d["a"], d["b"], d["cost"], d["n"]) == (2, 2, "n", 2**24)
    for key in ("predicted_time", "cpu_only_time", "device_only_time", "sequential_time"):
        assert d[key] > 0
    # the same numbers as the model called directly
    pl = M.plan(M.Problem(2, 2, "n", 2**24), M.Machine(4, 4096, 1 / 160))
    assert d["alpha"] == pl.alpha and d["y"] == pl.y
    assert d["transfer_level"] == pl.transfer_level
    assert d["predicted_time"] == pl.predicted_time


def test_defaults_are_the_paper_example(capsys):
    assert _run_json(capsys) == _run_json(capsys, *PAPER_ARGS)


def test_console_path_gives_the_paper_numbers():
    out = subprocess.run([sys.executable, "-m", "hpu", "plan", "--json", *PAPER_ARGS],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["alpha"] == pytest.approx(0.16, abs=0.02)
    assert d["gpu_work_fraction"] == pytest.approx(0.52, abs=0.03)
    assert d["y"] == pytest.approx(9.4, abs=0.3)
    assert d["transfer_level"] in (9, 10)


def test_gamma_as_a_fraction_or_a_decimal_agree(capsys):
    base = [a for a in PAPER_ARGS]
    i = base.index("--gamma")
    as_fraction = _run_json(capsys, *base)
    base[i + 1] = "0.00625"
    assert _run_json(capsys, *base) == as_fraction


def test_powers_are_accepted_for_sizes(capsys):
    assert _run_json(capsys, "--n", "2^24", "--g", "2**12") == _run_json(capsys)


def test_basic_strategy_reports_log_a_p_over_gamma(capsys):
    d = _run_json(capsys, "--strategy", "basic")
    assert d["strategy"] == "basic" and d["alpha"] == 0
    assert d["y"] == pytest.approx(math.log2(4 * 160))
    assert d["transfer_level"] == 10


@pytest.mark.parametrize("args, shown", [
    (["--a", "1"], "'1'"),
    (["--a", "2.5"], "'2.5'"),
    (["--a", "two"], "'two'"),
    (["--b", "1"], "'1'"),
    (["--b", "0.5"], "'0.5'"),
    (["--gamma", "0"], "'0'"),
    (["--gamma=-1/160"], "'-1/160'"),
    (["--gamma", "-0.5"], "'-0.5'"),
    (["--gamma", "1/0"], "'1/0'"),
    (["--gamma", "fast"], "'fast'"),
    (["--n", "0"], "'0'"),
    (["--n", "-5"], "'-5'"),
    (["--p", "0"], "'0'"),
    (["--g", "0.5"], "'0.5'"),
    (["--cost", "n^x"], "'n^x'"),
    (["--cost", "exp n"], "'exp n'"),
    (["--strategy", "fastest"], "'fastest'"),
    (["--n", "2^70"], "n = 1180591620717411303424"),
    (["--cost", "n^40", "--n", "2^40"], "'n^40'"),
    (["quicksort"], "'quicksort'"),
    (["--cl-device", "foo", "--n", "1000"], "'foo'"),   # (read by no plan: was ignored)
])
def test_bad_values_give_one_line_and_exit_2(capsys, args, shown):
    assert main(["plan", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("hpu plan: error: ") and shown in err
    if args[0].startswith("--") and "=" not in shown:
        assert args[0].split("=")[0] in err


def test_unknown_algorithm_lists_the_known_ones(capsys):
    assert main(["plan", "bogosort"]) == 2
    err = capsys.readouterr().err
    for name in ("mergesort", "sum", "inversions", "maxsubarray"):
        assert name in err


def test_known_algorithms_set_the_shape_and_flags_override(capsys):
    assert _run_json(capsys, "mergesort")["cost"] == "n"
    d = _run_json(capsys, "sum", "--n", "1024")
    assert (d["a"], d["b"], d["cost"], d["algorithm"]) == (2, 2, "1", "sum")
    assert _run_json(capsys, "sum", "--cost", "n log n")["cost"] == "n log n"
    assert _run_json(capsys, "mergesort", "--a", "3")["a"] == 3


def test_text_output_has_the_numbers_and_the_picture(capsys):
    assert main(["plan", *PAPER_ARGS]) == 0
    out = capsys.readouterr().out
    for word in ("alpha*", "transfer_level", "gpu_work_fraction", "predicted time"):
        assert word in out
    pl = M.plan(M.Problem(2, 2, "n", 2**24), M.Machine(4, 4096, 1 / 160))
    bars = re.findall(r"^\s+(\d+) \|([#=]+)\s*\|(.*)$", out, flags=re.M)
    assert [int(i) for i, _, _ in bars] == list(range(25))  # levels 0..23 and the leaves
    for i, bar, note in bars:
        i = int(i)
        if i < pl.transfer_level:
            assert set(bar) == {"#"}          # above the transfer level: CPU only
        else:
            dev = bar.count("=") / len(bar)   # below: the split's device share
            assert dev == pytest.approx(1 - pl.split_alpha, abs=1 / len(bar))
        assert ("transfer level" in note) == (i == pl.transfer_level)
    assert "leaves" in bars[-1][2]


def test_text_output_says_when_the_device_is_not_used(capsys):
    assert main(["plan", "--p", "64", "--g", "1024"]) == 0  # gamma*g = 6.4 < 64
    out = capsys.readouterr().out
    assert "not used" in out and "=" not in "".join(re.findall(r"\|[#=]+", out))


# ------------------------------------------------------------------ measured strategies (issue 16)

def _mergesort_args(n):
    import numpy as np

    from hpu._commands import _plugins

    alg = _plugins.get("mergesort")
    x = alg.make_input(n, np.int32, 0)  # the keys `hpu plan` makes
    return alg, alg.prepare(x).args(x)


def test_adaptive_plan_reads_the_history_as_the_next_run_would(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HPU_HISTORY_DIR", str(tmp_path))
    d = _run_json(capsys, "mergesort", "--n", "2^15", "--strategy", "adaptive")
    assert d["strategy"] == "adaptive" and "explores" in d["reason"]
    assert d["algorithm"] == "mergesort" and d["n"] == 2**15
    alg, args = _mergesort_args(2**15)
    hybrid = alg.function.options(device="hybrid", strategy="adaptive")
    for _ in range(2):  # each run records both sides' rates
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hybrid.run(*[a.copy() if hasattr(a, "copy") else a for a in args])
    d = _run_json(capsys, "mergesort", "--n", "2^15", "--strategy", "adaptive")
    want = hybrid.plan(*args)
    assert "medians of the last 2 runs" in d["reason"]
    assert d["reason"] == want.reason
    assert (d["split_alpha"], d["transfer_level"]) == (want.split_alpha, want.transfer_level)
    assert 0 < d["split_alpha"] < 1


def test_minmax_plan_samples_and_gives_the_runs_split(capsys):
    d = _run_json(capsys, "mergesort", "--n", "2^14", "--strategy", "minmax")
    assert d["strategy"] == "minmax" and d["reason"].startswith("min-max (002)")
    assert len(d["samples"]) == 3
    m = 2 ** d["transfer_level"] if d["transfer_level"] is not None else 1
    assert round(d["split_alpha"] * m) == pytest.approx(d["split_alpha"] * m)
    alg, args = _mergesort_args(2**14)
    want = alg.function.options(device="hybrid", strategy="minmax").plan(*args)
    assert d["split_alpha"] == want.split_alpha and d["reason"] == want.reason


def test_measured_strategy_text_names_the_strategy_and_why(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HPU_HISTORY_DIR", str(tmp_path))
    assert main(["plan", "mergesort", "--n", "4096", "--strategy", "adaptive"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"strategy\s+adaptive\s+\(001, the rate history\)", out)
    assert "adaptive (001)" in out and str(tmp_path) in out


@pytest.mark.parametrize("args,words", [
    (["--strategy", "minmax"], "needs a ready algorithm"),
    (["--a", "3", "--strategy", "adaptive"], "needs a ready algorithm"),
    (["mergesort", "--p", "3", "--strategy", "adaptive"], "--p cannot be used"),
    (["mergesort", "--paper", "--gamma", "1", "--strategy", "minmax"],
     "--gamma, --paper cannot be used"),
    (["mergesort", "--strategy", "fastest"], "expected one of advanced, basic, minmax, adaptive"),
])
def test_measured_strategy_bad_uses_are_one_line_errors(capsys, args, words):
    assert main(["plan", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hpu plan: error:") and words in err and err.count("\n") == 1


@pytest.mark.parametrize("unified", [True, False])
def test_algorithm_plan_prices_the_overlap_the_run_would_do(capsys, monkeypatch, tmp_path,
                                                            unified):
    import dataclasses

    from hpu import _profile
    from hpu._opencl._backend import OpenCLBackend

    # a profile whose device is worth a share (64 work-items at 0.8 of a core)
    key = _profile.current_key(None)
    prof = dataclasses.replace(
        _profile.Profile.builtin(None), p=2, g=64, gamma=0.8, latency_s=3e-6,
        seconds_per_byte=1e-10, cpu_seconds_per_element=2.5e-9, host=key.host,
        device=key.device, driver_version=key.driver_version, hpu_version=key.hpu_version,
        device_shares_cpu=False, source="measured")
    monkeypatch.setenv("HPU_PROFILE", str(tmp_path / "profile.json"))
    _profile.save_profile(prof)
    # False: the device as a discrete GPU (its own memory): the run would copy in pieces
    monkeypatch.setattr(OpenCLBackend, "unified_memory", classmethod(lambda cls, d: unified))
    d = _run_json(capsys, "mergesort", "--n", "2^20")
    assert d["uses_device"] and d["machine"] == "profile"
    alg, args = _mergesort_args(2**20)
    want = alg.function.options(device="hybrid").plan(*args)
    assert d["transfer_chunks"] == want.transfer_chunks
    assert d["transfer_chunks"] == (1 if unified or not want.uses_device
                                    else OpenCLBackend.transfer_chunks)
    assert d["predicted_time"] == pytest.approx(want.predicted_time)
    assert ("transfers overlapped" in d["reason"]) == (d["transfer_chunks"] > 1)


@pytest.mark.parametrize("n", ["1000", "2^20"])
def test_an_algorithm_plan_is_the_plan_the_library_makes(capsys, monkeypatch, tmp_path, n):
    """With a profile, ``hpu plan ALGO`` decides as a run does, the small-problem path
    included: it printed cutoff_level 4 for 1000 keys where the run took K = 0."""
    import dataclasses

    from hpu import _profile

    key = _profile.current_key(None)
    prof = dataclasses.replace(
        _profile.Profile.builtin(None), p=2, g=2, gamma=0.86, latency_s=3e-6,
        seconds_per_byte=1e-10, cpu_seconds_per_element=2.5e-9, host=key.host,
        device=key.device, driver_version=key.driver_version, hpu_version=key.hpu_version,
        device_shares_cpu=True, source="measured")
    monkeypatch.setenv("HPU_PROFILE", str(tmp_path / "profile.json"))
    _profile.save_profile(prof)
    d = _run_json(capsys, "mergesort", "--n", n)
    size = 1000 if n == "1000" else 2**20
    alg, args = _mergesort_args(size)
    want = alg.function.options(device="hybrid").plan(*args)
    assert d["cutoff_level"] == want.cutoff_level and d["uses_device"] == want.uses_device
    assert ("small problem" in d["reason"]) == (want.cutoff_level == 0)
    assert (want.cutoff_level == 0) == (size == 1000)
