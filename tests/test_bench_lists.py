"""bench/bench_lists.py: the report's shape, on a small list (the figures are in bench/README)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_lists  # noqa: E402


def test_the_report_names_each_function_and_both_sides(capsys):
    bench_lists.main(["--n", "3001", "--rounds", "2", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 3001 and set(report["functions"]) == {"qsort", "lsort", "merge_sort"}
    for name, r in report["functions"].items():
        assert len(r["all_hpu_s"]) == len(r["all_plain_s"]) == 2
        assert r["hpu_s"] > 0 and r["plain_s"] > 0 and r["speedup"] > 0
        # each runs a form of its own on the CPU's threads: no longer the one compiled call
        assert "as one call" not in r["reason"], (name, r["reason"])


def test_bad_sizes_are_refused(capsys):
    import pytest

    with pytest.raises(SystemExit):
        bench_lists.main(["--n", "0"])
    assert "--n 0" in capsys.readouterr().err


def test_ks_times_lsort_at_each_k_and_the_plain_function(capsys):
    bench_lists.main(["--n", "2000", "--rounds", "2", "--ks", "0,2", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert set(report["lsort"]) == {"K=0", "K=2", "plain"}
    assert all(len(r["all_s"]) == 2 and r["median_s"] > 0 for r in report["lsort"].values())
    import pytest

    with pytest.raises(SystemExit):
        bench_lists.main(["--ks", "1,x"])
    assert "--ks '1,x'" in capsys.readouterr().err


def test_devices_times_lsort_on_each_device_and_its_device_form_runs(capsys):
    bench_lists.main(["--n", "6000", "--rounds", "2", "--devices", "cpu,gpu", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert set(report["lsort"]) == {"cpu", "gpu", "plain"}
    assert all(len(r["all_s"]) == 2 and r["cpu_over_this"] > 0 for r in report["lsort"].values())
    import pytest

    with pytest.raises(SystemExit):
        bench_lists.main(["--devices", "cpu,tpu"])
    assert "--devices 'cpu,tpu'" in capsys.readouterr().err
