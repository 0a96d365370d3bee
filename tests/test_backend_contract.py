"""The contract every device *backend class* passes, not only every device string.

A backend is a class with the device lifecycle of :class:`hpu._driver.DeviceBackend`
(prepare/upload, enqueued leaf and combine phases, finish/download, restore on
failure, cancel, transfer records) and a ``select(spec)`` class method; it is
plugged in with the ``backend=`` run option and driven by
:class:`hpu._split.DeviceSplit` — the driver is not touched.  The suite runs
every ready algorithm on every device path with Hypothesis data and checks the
result against an independent reference and the Run against the split
(``contract_support.check_report``), for:

* :class:`~hpu._opencl._backend.OpenCLBackend`, the shipped one;
* :class:`SyncDevice`, a new backend written here: it runs the device's share
  synchronously with the iterative solver an OpenCL device runs, on the CPU —
  the "new backend class" the issue asks the suite to accept unchanged;
* :class:`FaultyDevice`, which scribbles over its share and then fails: the
  split must restore the data and redo the share on the CPU.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from contract_support import CASES, Config, builtin_profile, check_report  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from hpu import model
from hpu._cpu import CpuBackend
from hpu._errors import DeviceFault, StackOverflowError
from hpu._opencl._backend import OpenCLBackend
from hpu._run import TransferRecord

pytestmark = pytest.mark.opencl

COMPILES = settings.get_profile("hpu-compiles")


class SyncDevice:
    """A device backend that runs its share at once, on the CPU, as the device would."""

    kind = "gpu"

    @classmethod
    def select(cls, spec=None):
        return "sync"

    @classmethod
    def machine(cls, handle):
        return model.Machine(p=2, g=4, gamma=1.0), 1.0

    def __init__(self, program, shared, device, *, depth=64):
        self.program = program
        self.shared = dict(shared)
        self.solver = CpuBackend(program, leaf="iterative", depth=depth)
        self.snapshots: dict[str, np.ndarray] = {}
        self.span = None
        self.error: Exception | None = None
        self.prepared = False

    def prepare(self, levels, starts, y, span):
        self.span = span
        for name in self.program.layout.arrays:
            if name in self.program.closure.written:
                arr = self.shared[name]
                lo, hi = (0, arr.size) if span is None else span
                self.snapshots[name] = arr[lo:hi].copy()
        self.prepared = True

    def count(self, *args):
        raise NotImplementedError("the tree is expanded on the host")

    fill = count

    def leaf(self, level, start, stop, shared):
        assert self.prepared
        if self.error is None:
            try:
                self.solver.leaf(level, start, stop, shared)
            except StackOverflowError as err:  # remembered, raised by finish()
                self.error = err

    def combine(self, level, child, start, stop, shared):
        if self.error is None:
            self.solver.combine(level, child, start, stop, shared)

    def finish(self):
        if self.error is not None:
            raise self.error

    def restore(self):
        for name, snap in self.snapshots.items():
            arr = self.shared[name]
            lo, hi = (0, arr.size) if self.span is None else self.span
            arr[lo:hi] = snap

    def cancel(self):
        pass

    def transfers(self):
        return (TransferRecord("host->device", 0, 0.0), TransferRecord("device->host", 0, 0.0))

    def event_seconds(self):
        return {}


class FaultyDevice(SyncDevice):
    """Does its share, then overwrites the data it may write, then fails at finish."""

    def finish(self):
        for name in self.snapshots:
            arr = self.shared[name]
            lo, hi = (0, arr.size) if self.span is None else self.span
            arr[lo:hi] = arr[lo:hi][::-1].copy()
        raise DeviceFault("FaultyDevice fails on purpose")


BACKENDS = [OpenCLBackend, SyncDevice]
CONFIGS = [Config("gpu"), Config("hybrid", 0.5, 2), Config("hybrid", 0.0, 3),
           Config("hybrid", 0.3, 1), Config("hybrid", 1.0, 2)]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@settings(COMPILES, max_examples=4)
@given(data=st.data())
def test_every_backend_gives_the_reference_result_and_an_honest_report(case, config, backend,
                                                                       data):
    x = case.draw(data, case.dtypes[0])
    run = case.check(x, {**config.options, "backend": backend})
    if run is not None:
        check_report(run, config)
        assert run.plan is not None and run.K <= run.plan.cutoff_level


@pytest.mark.parametrize("config", [Config("gpu"), Config("hybrid", 0.5, 2)], ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_failing_backend_is_restored_and_redone_on_the_cpu(case, config):
    x = np.random.default_rng(3).integers(-1000, 1000, 5000).astype(case.dtypes[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = case.check(x, {**config.options, "backend": FaultyDevice})  # the reference result
    told = [w for w in caught if issubclass(w.category, hpu.HpuPerformanceWarning)]
    assert len(told) == 1 and len(run.fallbacks) == 1
    assert "FaultyDevice fails on purpose" in run.fallbacks[0]
    assert run.gpu_tasks == 0 and run.cpu_tasks == run.level_sizes[run.K]
    redo = [r for r in run.levels if r.phase in ("leaf", "combine")][-1]
    assert redo.gpu_tasks == 0 and redo.cpu_tasks > 0


def test_a_backend_that_is_not_one_is_refused_naming_what_is_missing():
    from algorithms.sum import dc_sum

    with pytest.raises(TypeError, match="missing: .*finish"):
        dc_sum.options(backend=CpuBackend)


def test_the_plan_a_backend_reports_is_the_plan_that_ran():
    from algorithms.mergesort import mergesort

    x = np.random.default_rng(4).integers(0, 1 << 20, 1 << 12).astype(np.int32)
    want = np.sort(x, kind="stable")
    f = mergesort.options(device="hybrid", alpha=0.25, y=2, backend=SyncDevice)
    plan = f.plan(x, np.empty_like(x), 0, x.size)
    run = f.run(x, np.empty_like(x), 0, x.size)
    assert run.plan == plan and plan.strategy == "given"
    assert np.array_equal(x, want) and run.gpu_tasks > 0
