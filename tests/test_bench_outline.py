"""bench/bench_outline.py: the report's shape on a small array (figures in bench/README)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_outline  # noqa: E402


def test_the_report_times_the_fan_out_the_one_call_and_the_shipped_sort(capsys):
    bench_outline.main(["--log2n", "16", "--rounds", "2", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 1 << 16 and report["rounds"] == 2
    assert set(report["median_s"]) == {"fan-out", "one call", "shipped"}
    assert all(t > 0 for t in report["median_s"].values())
    assert report["ratio_to_one_call"]["one call"] == 1.0
    # 2**16 keys is past the fan-out's threshold: its loops outlined, it fans out
    assert report["K"] >= 1 and report["subtrees"] == 2 ** report["K"]
