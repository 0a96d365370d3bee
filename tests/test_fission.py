"""Sub-devices (issue 14): ``cpu@N`` / ``P:D@N`` device strings, the profile key of a
partition, the Numba thread rule beside a CPU sub-device, and mergesort run end to end
on one, against NumPy, on every device path.

What needs no OpenCL (parsing, the thread rule, refusals) runs on fake devices;
what needs a device that supports fission skips where there is none
(``HPU_REQUIRE_OPENCL`` makes a missing device fail the session in conftest).
"""
from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu._opencl._device as dm
from hpu._commands.devices import format_table
from hpu._errors import DeviceUnavailableError
from hpu._profile import current_key


# ------------------------------------------------------------------- no device needed

@given(base=st.sampled_from(["cpu", "gpu", "0:0", "pthread", "Intel(R) Xeon", ""]),
       n=st.integers(1, 512))
def test_parse_spec_splits_the_units_off(base, n):
    assert dm.parse_spec(f"{base}@{n}") == (base, n)
    assert dm.parse_spec(f" {base} @ {n} ") == (base, n)


@given(spec=st.text(alphabet=st.characters(blacklist_characters="@"), max_size=20))
def test_a_spec_without_at_is_a_whole_device(spec):
    assert dm.parse_spec(spec) == (spec.strip(), None)


@pytest.mark.parametrize("tail", ["0", "x", "", "-1", "1.5", "two"])
def test_parse_spec_refuses_what_is_not_a_count(tail):
    with pytest.raises(DeviceUnavailableError) as err:
        dm.parse_spec(f"cpu@{tail}", origin="HPU_DEVICE=")
    msg = str(err.value)
    assert f"HPU_DEVICE='cpu@{tail}'" in msg and "whole number >= 1" in msg and "cpu@1" in msg


class FakeDevice:
    """Just what the thread rule and the partition checks read."""

    def __init__(self, kind="CPU", units=2, partitions=True, parent=None):
        cl = dm._cl()
        self.type = {"CPU": cl.device_type.CPU, "GPU": cl.device_type.GPU}[kind]
        self.max_compute_units = units
        self.partition_properties = [int(cl.device_partition_property.EQUALLY)] if partitions else []
        self.partition_max_sub_devices = units if partitions else 0
        self.parent_device = parent
        self.name = "Fake Device "
        self.platform = type("P", (), {"name": "Fake Platform"})()
        self.int_ptr = id(self)

    def create_sub_devices(self, props):  # pragma: no cover - refused before this
        raise AssertionError("must not be called")


@given(cores=st.integers(1, 256), units=st.integers(1, 256))
def test_numba_gets_the_cores_a_cpu_device_leaves(cores, units):
    got = dm.remaining_cores(FakeDevice(units=units), cores=cores, environ={})
    assert got == (cores - units if cores > units else None)


def test_numba_num_threads_always_wins():
    dev = FakeDevice(units=1)
    assert dm.remaining_cores(dev, cores=8, environ={"NUMBA_NUM_THREADS": "3"}) is None
    assert dm.remaining_cores(dev, cores=8, environ={"NUMBA_NUM_THREADS": ""}) == 7


def test_a_gpu_leaves_numba_alone():
    assert dm.remaining_cores(FakeDevice(kind="GPU", units=1), cores=8, environ={}) is None


def test_more_units_than_the_device_has_is_refused():
    with pytest.raises(DeviceUnavailableError) as err:
        dm.sub_device(FakeDevice(units=4), 5, origin="device='cpu@5'")
    msg = str(err.value)
    assert "device='cpu@5'" in msg and "has 4" in msg and "@1..@4" in msg


def test_a_device_without_fission_is_refused_with_the_fix():
    with pytest.raises(DeviceUnavailableError) as err:
        dm.sub_device(FakeDevice(units=4, partitions=False), 2)
    msg = str(err.value)
    assert "does not support device fission" in msg and "drop '@N'" in msg


def test_the_table_lists_partitions():
    info = dm.DeviceInfo(index="0:0", name="D", platform="P", kind="CPU", driver_version="1",
                         compute_units=4, global_mem_bytes=1 << 30, fp64=True,
                         unified_memory=True, default=True, max_sub_units=4)
    whole = dm.DeviceInfo(index="1:0", name="G", platform="Q", kind="GPU", driver_version="1",
                          compute_units=8, global_mem_bytes=1 << 30, fp64=True,
                          unified_memory=False, max_sub_units=0)
    table = format_table([info, whole])
    assert "partitions" in table.splitlines()[0]
    assert "@1..@4" in table.splitlines()[1] and table.splitlines()[2].rstrip().endswith("-")
    assert "cpu@1" in table


# ------------------------------------------------------------------- a real sub-device

def _fission_or_skip():
    try:
        usable = [d for d in dm.devices() if d.usable and d.max_sub_units >= 1]
    except DeviceUnavailableError:
        usable = []
    if not usable:
        pytest.skip("no usable OpenCL device supports device fission here")
    return usable[0]


@pytest.fixture
def numba_threads():
    """Restore the calling thread's Numba thread count (the rule sets it)."""
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)



@pytest.mark.opencl
def test_a_sub_device_is_made_once_and_has_its_own_context():
    info = _fission_or_skip()
    sub = dm.select_device(f"{info.index}@1")
    assert sub is dm.select_device(f"{info.index}@1")
    assert int(sub.max_compute_units) == 1 and dm.sub_device_units(sub) == 1
    assert dm.device_label(sub) == f"{info.name} @1"
    ctx, queue = dm.context_and_queue(sub)
    assert queue.device == sub           # the context may list the parent (PoCL does)
    assert dm.context_and_queue(f"{info.index}@1")[0] is ctx
    assert dm.describe_device(sub).startswith(f"{info.name} @1 (")


@pytest.mark.opencl
def test_the_environment_variable_asks_for_a_sub_device(monkeypatch):
    info = _fission_or_skip()
    monkeypatch.setenv("HPU_DEVICE", f"{info.index}@1")
    assert dm.sub_device_units(dm.select_device()) == 1
    monkeypatch.setenv("HPU_DEVICE", f"{info.index}@{info.compute_units + 1}")
    with pytest.raises(DeviceUnavailableError, match=r"HPU_DEVICE=.*@1\.\.@"):
        dm.select_device()


@pytest.mark.opencl
def test_profiles_are_keyed_by_the_sub_device():
    info = _fission_or_skip()
    whole, sub = current_key(info.index), current_key(f"{info.index}@1")
    assert sub.device == f"{whole.device} @1" and sub.filename != whole.filename


@pytest.mark.opencl
@pytest.mark.filterwarnings("ignore::hpu.HpuPerformanceWarning")  # the model may keep all on the CPU
@settings(max_examples=6, deadline=None)
@given(n=st.integers(0, 5000), seed=st.integers(0, 2**32 - 1),
       split=st.sampled_from([("gpu", None, None), ("hybrid", 0.0, 1), ("hybrid", 0.5, 2),
                              ("hybrid", 0.25, 4), ("hybrid", 0.75, 3), ("hybrid", None, None),
                              ("cpu", None, None)]))
def test_mergesort_on_a_sub_device_sorts_like_numpy(n, seed, split):
    from algorithms.mergesort import mergesort

    info = _fission_or_skip()
    before = numba.get_num_threads()
    try:
        device, alpha, y = split
        keys = np.random.default_rng(seed).integers(-(1 << 30), 1 << 30, n).astype(np.int32)
        a = keys.copy()
        options = {} if alpha is None else {"alpha": alpha, "y": y}
        run = mergesort.run(a, np.empty_like(a), 0, n, device=device,
                            cl_device=f"{info.index}@1", **options)
        assert np.array_equal(a, np.sort(keys, kind="stable"))
        assert not run.fallbacks
        if device != "cpu":
            # the rule: beside a one-unit CPU sub-device Numba has the other cores
            want = dm.remaining_cores(dm.select_device(f"{info.index}@1"))
            assert numba.get_num_threads() == (before if want is None else want)
    finally:
        numba.set_num_threads(before)


@pytest.mark.opencl
def test_calibration_of_a_sub_device_is_keyed_and_counts_the_remaining_cores(
        tmp_path, monkeypatch, numba_threads):
    from hpu import _profile
    from hpu import calibrate as cal

    info = _fission_or_skip()
    monkeypatch.setattr(_profile, "profiles_dir", lambda: tmp_path / "profiles")
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    tiny = cal.CalibrationSettings(sum_elements=1 << 12, merge_sizes=(256, 1024),
                                   transfer_bytes=(1024, 4096, 16384), repeats=3,
                                   max_work_items=64, min_cpu_sample_s=1e-4,
                                   contention_keys=1 << 12)
    prof = cal.calibrate(f"{info.index}@1", settings=tiny, progress=False)
    assert prof.device == f"{info.name} @1" and prof.compute_units == 1 and prof.g == 1
    sub = dm.select_device(f"{info.index}@1")
    want = dm.remaining_cores(sub)
    assert prof.p == (want if want is not None else numba.get_num_threads())
    path = cal.save_profile(prof)
    assert cal.load_profile(f"{info.index}@1") == prof and path.name == prof.key.filename
    assert cal.load_profile(info.index) is None       # the whole device has no profile


# ------------------------------------------------------------------- the model on it

@pytest.mark.parametrize("gamma", [0.6, 0.8, 1.0])
def test_a_sub_device_slower_than_the_cpu_still_gets_a_share_when_both_add_up(gamma):
    """p = 1 Numba thread, g = 1 work-item: γ·g <= p, but the two work at once."""
    from hpu import model

    problem = model.Problem(a=2, b=2, cost="n", n=1 << 22)
    machine = model.Machine(p=1, g=1, gamma=gamma, seconds_per_unit=5e-9)
    plan = model.plan(problem, machine, element_bytes=8, contention=1.0)
    assert plan.uses_device and 0 < plan.split_alpha < 1 and plan.transfer_level >= 1
    assert plan.speedup > model.WEAK_DEVICE_MIN_GAIN
    assert "both sides working at once" in plan.reason
    sim = model.simulate(problem, machine, alpha=plan.split_alpha, y=plan.transfer_level,
                         element_bytes=8)
    assert sim.total_time == pytest.approx(plan.predicted_time)
    # the same device where the two fight over the cores: the CPU alone
    fought = model.plan(problem, machine, element_bytes=8, contention=2.5)
    assert not fought.uses_device and "gamma*g" in fought.reason
