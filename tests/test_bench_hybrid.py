"""bench/bench_hybrid.py's paired re-measurement and issue 14's targets, on made-up sorts.

The timing loop is real; the "sorts" only copy sorted keys and sleep for no
time, so what is checked is the bookkeeping: every method runs once per
round, in a rotating order, and the targets are read off per-round ratios.
No test asserts a time.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import bench_hybrid  # noqa: E402


def test_confirm_runs_every_method_once_a_round_in_rotating_order():
    keys = np.arange(100, dtype=np.int32)[::-1].copy()
    want = np.sort(keys)
    order = []

    def make(name):
        def sort(a, t):
            order.append(name)
            return np.sort(a), None
        return sort

    out = bench_hybrid.confirm({k: make(k) for k in ("cpu", "gpu", "model", "best")},
                               lambda: (keys.copy(), None), want, 4)
    assert order[:4] == ["cpu", "gpu", "model", "best"] and order[4:8] == ["gpu", "model", "best", "cpu"]
    assert all(len(v) == 4 for v in out["times_s"].values())
    assert set(out["ratio"]) >= {"cpu/model", "gpu/model", "best/model"}


def test_confirm_refuses_a_wrong_sort():
    keys = np.arange(10, dtype=np.int32)[::-1].copy()
    with pytest.raises(bench_hybrid.WrongResult):
        bench_hybrid.confirm({"cpu": lambda a, t: (a, None)}, lambda: (keys.copy(), None),
                             np.sort(keys), 1)


@pytest.mark.parametrize("cpu, gpu, best, met", [
    (1.5, 1.3, 1.0, [True, True, True]),       # 1.5x over CPU, 1.3x over the better side
    (1.3, 2.0, 1.0, [False, True, True]),
    (1.5, 1.1, 1.0, [True, False, True]),
    (1.5, 1.3, 0.8, [True, True, False]),      # the best grid point 1.25x faster than the model
])
def test_targets(cpu, gpu, best, met):
    got = bench_hybrid.check_targets({"cpu/model": cpu, "gpu/model": gpu, "best/model": best})
    assert [t["met"] for t in got] == met
    assert "1.4x" in got[0]["target"] and "1.2x" in got[1]["target"] and "1.10x" in got[2]["target"]
