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


def test_run_share_is_the_share_of_ready_time_our_threads_ran():
    a = _load.Sample(wall=0.0, own_cpu=0.0, busy=0.0, ran=1.0, waited=2.0)
    assert _load.run_share(a, _load.Sample(1.0, 0.5, 1.0, ran=1.5, waited=3.0)) == pytest.approx(1 / 3)
    assert _load.run_share(a, _load.Sample(1.0, 0.5, 1.0, ran=2.0, waited=2.0)) == 1.0   # quiet
    assert math.isnan(_load.run_share(a, _load.Sample(1.0, 0.5, 1.0, ran=1.0, waited=2.0)))
    assert math.isnan(_load.run_share(_load.Sample(0.0, 0.0, 0.0), _load.Sample(1.0, 0.5, 1.0)))


def test_own_sched_sums_our_threads_and_is_unknown_without_schedstat(tmp_path):
    for tid, text in (("1", "3000000000 1000000000 7\n"), ("2", "1000000000 500000000 2\n")):
        (tmp_path / tid).mkdir()
        (tmp_path / tid / "schedstat").write_text(text)
    (tmp_path / "3").mkdir()                        # a thread without schedstat: skipped
    assert _load._own_sched(str(tmp_path)) == pytest.approx((4.0, 1.5))
    assert all(math.isnan(x) for x in _load._own_sched(str(tmp_path / "3")))
    assert all(math.isnan(x) for x in _load._own_sched(str(tmp_path / "missing")))


def test_thread_deltas_and_share_of_a_set_of_threads(tmp_path):
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "schedstat").write_text("2000000000 1000000000 3\n")
    assert _load.thread_times(str(tmp_path)) == {7: pytest.approx((2.0, 1.0))}
    d = _load.thread_deltas({7: (1.0, 0.5)}, {7: (2.0, 1.0), 8: (0.3, 0.1)})   # 8: born between
    assert d == {7: pytest.approx((1.0, 0.5)), 8: pytest.approx((0.3, 0.1))}
    assert _load.share_of(d) == pytest.approx(1.3 / 1.9)
    assert _load.share_of(d, {8}) == pytest.approx(0.75)
    assert math.isnan(_load.share_of(d, {9})) and math.isnan(_load.share_of({}))
