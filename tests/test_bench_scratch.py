"""bench/bench_scratch.py: the report's shape on a small array (figures in bench/README)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_scratch  # noqa: E402


@pytest.mark.parametrize("shape", ["tmp", "gfg"])
def test_the_report_times_the_form_the_function_as_written_and_the_shipped_sort(capsys, shape):
    bench_scratch.main(["--log2n", "12", "--rounds", "2", "--json", "--shape", shape])
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 4096 and report["rounds"] == 2 and report["shape"] == shape
    assert set(report["median_s"]) == {"form", "as written", "shipped"}
    assert all(t > 0 for t in report["median_s"].values())
    assert report["ratio_to_shipped"]["shipped"] == 1.0
    assert report["form_cpu_tasks"] >= 1 and report["form_gpu_tasks"] == 0
