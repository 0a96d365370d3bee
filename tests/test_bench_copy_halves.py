"""bench/bench_copy_halves.py: the report's shape on a small array (figures in
bench/README)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_copy_halves  # noqa: E402


@pytest.mark.parametrize("shape", ["counter", "two-indices"])
def test_the_report_times_the_form_the_function_as_written_and_the_shipped_sort(capsys, shape):
    bench_copy_halves.main(["--log2n", "12", "--rounds", "2", "--json", "--device", "hybrid",
                            "--shape", shape])
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 4096 and report["rounds"] == 2 and report["device"] == "hybrid"
    assert report["shape"] == shape
    assert set(report["median_s"]) == {"form", "as written", "shipped"}
    assert all(t > 0 for t in report["median_s"].values())
    assert report["ratio_to_shipped"]["shipped"] == 1.0
    assert report["form_cpu_tasks"] + report["form_gpu_tasks"] >= 1
    assert report["fallbacks"] == []
