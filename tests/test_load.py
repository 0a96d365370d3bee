"""hpu._load: the share of the machine other processes used (read from /proc/stat)."""
from __future__ import annotations

import math

import pytest

from hpu import _load


def test_outside_share_is_the_others_busy_time_over_the_cores():
    a = _load.Sample(wall=10.0, own_cpu=1.0, busy=100.0)
    # 2 s of wall on 4 cores: 5 busy core-seconds, 1 of them ours -> 4/8 of the machine
    b = _load.Sample(wall=12.0, own_cpu=2.0, busy=105.0)
    assert _load.outside_share(a, b, cores=4) == pytest.approx(0.5)
    # our own CPU time never counts as others' (clock ticks can round below it: 0, not < 0)
    assert _load.outside_share(a, _load.Sample(12.0, 3.0, 101.0), cores=2) == 0.0
    assert _load.outside_share(a, _load.Sample(11.0, 1.0, 110.0), cores=2) == 1.0
    assert math.isnan(_load.outside_share(a, _load.Sample(10.0, 1.0, 100.0), cores=2))
    assert math.isnan(_load.outside_share(a, _load.Sample(12.0, 1.0, math.nan), cores=2))


def test_machine_busy_reads_proc_stat_and_is_unknown_without_it(tmp_path):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal: busy = 300 + 0 + 100 + 7 + 3 + 0 ticks
    stat.write_text("cpu  300 0 100 5000 40 7 3 0 0 0\ncpu0 1 2 3 4\n")
    assert _load._machine_busy(str(stat)) == pytest.approx(410 / _load._clock_ticks())
    assert math.isnan(_load._machine_busy(str(tmp_path / "missing")))
    stat.write_text("intr 1 2 3\n")
    assert math.isnan(_load._machine_busy(str(stat)))


def test_a_meter_times_a_block():
    with _load.Meter() as m:
        sum(range(1000))
    assert m.wall > 0 and m.cpu >= 0
    assert math.isnan(m.outside) or 0.0 <= m.outside <= 1.0
