"""bench/bench_overhead.py runs and reports ratios (the figures themselves are never asserted)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import bench_overhead  # noqa: E402


def test_small_calls_section_reports_every_ratio(capsys):
    assert bench_overhead.main(["--only", "small", "--n", "512", "--rounds", "3", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["small"]
    for key in ("small.cpu_vs_sequential", "small.default_vs_cpu", "small.gpu_vs_cpu"):
        assert got[key] > 0
    assert got["plans"]["cpu"]["K"] == 0 and "small problem" in got["plans"]["cpu"]["reason"]
    assert got["plans"]["gpu"]["uses_device"]


def test_the_report_names_each_target():
    text = bench_overhead.report({"small": {"small.cpu_vs_sequential": 1.2,
                                            "small.gpu_vs_cpu": 3.5}})
    assert "meets target <= 1.3" in text and "MISSES target <= 3" in text


def test_first_call_section_splits_each_process_into_parts():
    got = bench_overhead.first_call(paths=("cpu",), repeats=1)
    for tag in ("warm.cpu", "cold.cpu"):
        parts = got[tag]
        assert set(parts) == {"import_s", "specialize_s", "rest_of_call_s", "total_s"}
        assert all(v > 0 for v in parts.values())
        assert abs(parts["total_s"] - parts["import_s"] - parts["specialize_s"]
                   - parts["rest_of_call_s"]) < 1e-9
    assert got["first.warm_s"] == got["warm.cpu"]["total_s"]
    assert got["first.cold_s"] == got["cold.cpu"]["total_s"]
