"""bench/bench_reductions.py: the report's shape, on a small array."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_reductions  # noqa: E402


@pytest.mark.opencl
def test_the_report_names_each_function_and_every_side(capsys):
    bench_reductions.main(["--n", "3001", "--rounds", "2", "--devices", "cpu,gpu", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert set(report["functions"]) == {"total", "top", "positives"}
    for r in report["functions"].values():
        assert set(r) == {"plain", "cpu", "gpu"}
        assert all(len(s["all_s"]) == 2 and s["median_s"] > 0 for s in r.values())
        assert r["cpu"]["speedup"] > 0 and r["gpu"]["speedup"] > 0


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        bench_reductions.main(["--n", "0"])
    assert "--n 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench_reductions.main(["--devices", "tpu"])
