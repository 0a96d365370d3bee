"""Running a plan: the one driver, the CPU backend and, where the plan says so, a device.

Why this module is short
========================

Everything a run decides is in its :class:`~hpu.model.Plan`
(:func:`hpu._plan.make_plan`): the cut-off level ``K``, the transfer level
``y`` and the share ``α`` the CPU keeps.  Executing it needs three pieces that
live elsewhere, each with one job:

* the breadth-first driver (:func:`hpu._driver.execute`), which expands the
  tree on the host down to the plan's ``K`` and runs the phases;
* the split (:class:`hpu._split.DeviceSplit`), which says who runs which task
  range and drives the device's lifecycle (prepare, enqueue, finish, restore);
* the backends: :class:`hpu._cpu.CpuBackend` and a device backend, by default
  :class:`hpu._opencl._backend.OpenCLBackend`.  Any class with the same
  lifecycle (:class:`hpu._driver.DeviceBackend`, plus a ``select(spec)``
  class method that finds its device) can be passed as ``backend=`` and is
  held to the same contract (``tests/test_backend_contract.py``).

:func:`execute_plan` is that glue, for every device string: ``"cpu"`` runs the
plan on the CPU backend alone; ``"gpu"`` and ``"hybrid"`` add the device.
The :class:`~hpu.Run` it returns carries the plan it executed (``run.plan``)
next to what really happened (``run.K``, ``run.level_sizes``): a tree whose
tasks are all base cases above ``K`` ends there.  A device that is missing or
fails mid-run never loses the caller's data: the run falls back to the CPU,
warns once (:class:`~hpu.HpuPerformanceWarning`) and says why in
``run.fallbacks``.  The device's original data comes from the call's one
:class:`~hpu._snapshot.Snapshot` (``snapshot=``), which the call also restores
from when anything else ends the run: on any exception :func:`run_on_devices`
first stops the device (``split.abandon()``), so nothing writes afterwards.
"""
from __future__ import annotations

import time
import warnings

from hpu._errors import (DeviceFault, DeviceUnavailableError, HpuPerformanceWarning,
                         user_stacklevel)
from hpu._run import Run

__all__ = ["execute_plan", "run_on_devices", "choose_split", "DeviceFault",
           "HpuPerformanceWarning", "OpenCLBackend", "FAULT_ENV"]

_told_cpu_only: set[str] = set()


def __getattr__(name):
    # the OpenCL backend is imported when a device run needs it: a device="cpu" process
    # does not pay for the translator's modules on its first call
    if name in ("OpenCLBackend", "FAULT_ENV"):
        from hpu._opencl import _backend

        return getattr(_backend, name)
    raise AttributeError(f"module 'hpu._hybrid' has no attribute {name!r}")


def choose_split(dc, program, values, device, strategy: str):
    """``(α, y, plan)`` the model chooses for these arguments on this OpenCL device:
    the same plan as ``dc.options(cl_device=device, strategy=strategy).plan(...)``."""
    from hpu._plan import make_plan

    plan = make_plan(program.spec, values, device="hybrid", strategy=strategy, cl_device=device)
    if not plan.uses_device or plan.transfer_level is None:
        return 1.0, 0, plan
    return float(plan.split_alpha), int(plan.transfer_level), plan


def execute_plan(program, values, plan, *, device: str, fallbacks=(), y_report=None,
                 alpha: float = 1.0, t_start: float | None = None) -> Run:
    """Run ``plan`` on the CPU backend alone (``device``, ``alpha`` and ``y_report`` only
    label the Run: a given split whose device share is empty still reports its α)."""
    from hpu._driver import execute

    t_start = time.perf_counter() if t_start is None else t_start
    ex = execute(program.layout, program.types, values, cpu_backend(program, plan),
                 K=plan.cutoff_level)
    return Run(value=ex.value, device=device, alpha=alpha,
               y=None if y_report is None else min(y_report, ex.K), K=ex.K,
               cpu_tasks=ex.leaf_tasks.get("cpu", 0), gpu_tasks=0, fallbacks=list(fallbacks),
               levels=ex.levels, transfers=(), seconds=time.perf_counter() - t_start,
               plan=plan, level_sizes=ex.level_sizes, started=t_start)


def run_on_devices(dc, program, values, *, device: str, device_spec=None, alpha=None, y=None,
                   K=None, strategy: str = "advanced", depth: int = 64,
                   backend=None, machine=None, snapshot=None) -> Run:
    """Plan and run ``program`` with ``device="gpu"`` or ``"hybrid"``; return the Run.

    ``backend``: the device backend class (see the module docstring; None: OpenCL);
    ``device_spec``: which of its devices (for OpenCL: ``cl_device``);
    ``machine``: a :class:`hpu.model.Machine` to plan with instead of the profile;
    ``snapshot``: the call's :class:`~hpu._snapshot.Snapshot` a device failure is
    redone from (None: taken here, for callers that do not keep one themselves).
    """
    from hpu._driver import execute
    from hpu._plan import make_plan
    from hpu._split import DeviceSplit

    t_start = time.perf_counter()
    if backend is None:
        from hpu._opencl._backend import OpenCLBackend as backend
    spec = program.spec
    try:
        handle = backend.select(device_spec)
    except DeviceUnavailableError as err:
        if device == "gpu":
            raise
        reason = f"no usable OpenCL device ({err}); ran on the CPU"
        warnings.warn(f"hpu: {reason}", HpuPerformanceWarning, stacklevel=user_stacklevel())
        plan = make_plan(spec, values, device="cpu", K=K,
                         machine=None if machine is None else _cpu_of(machine))
        return execute_plan(program, values, plan, device=device, fallbacks=[reason],
                            t_start=t_start)
    if hasattr(backend, "host_threads"):  # a CPU (sub-)device's cores are not Numba's (issue 14)
        backend.host_threads(handle)

    contention = None
    given_machine = machine
    if machine is None and hasattr(backend, "machine"):  # a backend that knows its device's figures itself
        machine, contention = backend.machine(handle)
    sampler = None
    if strategy == "minmax":
        sampler = sampler_for(dc, program, values, handle, K=K, depth=depth, backend=backend,
                              machine=given_machine)
    plan = make_plan(spec, values, device=device, alpha=alpha, y=y, K=K, strategy=strategy,
                     cl_device=handle, machine=machine, contention=contention, sampler=sampler)
    if not plan.uses_device:
        y_req = y if y is not None else 0
        if plan.strategy != "given" and spec.name not in _told_cpu_only:
            _told_cpu_only.add(spec.name)  # once per function and process: a decision, not a fault
            who = "the model" if plan.strategy in ("advanced", "basic") else \
                f"strategy {plan.strategy!r}"
            warnings.warn(f"hpu: {spec.name}: {who} keeps everything on the CPU "
                          f"({plan.reason}); pass alpha= and y= to split anyway",
                          HpuPerformanceWarning, stacklevel=user_stacklevel())
        run = execute_plan(program, values, plan, device=device, y_report=y_req,
                           alpha=plan.split_alpha, t_start=t_start)
        _learn(run, plan, spec, values, handle, machine)
        return run

    if snapshot is None:
        from hpu._snapshot import Snapshot

        snapshot = Snapshot.take(program, values)
    shared = {n: values[n] for n in program.layout.shared}
    cpu = cpu_backend(program, plan)
    gpu = backend(program, shared, handle, depth=depth)
    split = DeviceSplit(cpu, gpu, alpha=plan.split_alpha, y=plan.transfer_level, values=values,
                        spec=spec, shared=shared, snapshot=snapshot)
    try:
        ex = execute(program.layout, program.types, values, cpu, K=plan.cutoff_level,
                     assign=split.assign, on_expanded=split.on_expanded,
                     before_phase=split.before_phase)
    finally:
        split.abandon()  # on an error: the device stops before the caller's arrays are restored
    leaf_cpu, leaf_gpu = split.leaf_split(ex.level_sizes[-1])
    run = Run(value=ex.value, device=device, alpha=plan.split_alpha, y=split.y, K=ex.K,
              cpu_tasks=int(leaf_cpu), gpu_tasks=int(leaf_gpu), fallbacks=split.fallbacks,
              levels=split.records(ex.levels), transfers=split.transfers(),
              seconds=time.perf_counter() - t_start, plan=plan, level_sizes=ex.level_sizes,
              started=t_start)
    _learn(run, plan, spec, values, handle, machine)
    return run


def _learn(run, plan, spec, values, handle, machine) -> None:
    """An adaptive run's measured rates go to the history its next run splits by."""
    if plan.strategy != "adaptive":
        return
    from hpu._plan import problem_of
    from hpu._strategies import record_run

    record_run(run, spec, values, problem_of(spec, values)[0], handle,
               machine if machine is not None else _machine_of(plan))


def _machine_of(plan):
    from hpu import model

    return model.Machine(p=plan.p, g=plan.g, gamma=plan.gamma)


def sampler_for(dc, program, values, handle, *, K=None, depth=64, backend=None,
                machine=None):
    """``sampler(alpha, y) -> Run``: the function run hybrid at that split on *copies* of
    the arguments (the caller's data is untouched), for min–max's samples."""
    import numpy as np

    def sample(alpha, y):
        copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            return run_on_devices(dc, program, copies, device="hybrid", device_spec=handle,
                                  alpha=alpha, y=y, K=K, strategy="given", depth=depth,
                                  backend=backend, machine=machine)  # None: OpenCL

    return sample


def cpu_backend(program, plan):
    """The CPU backend for ``plan`` (its serial levels), kept on the program: building one
    looks up argument names, which a small call should not pay every time."""
    from hpu._cpu import CpuBackend

    cache = program.__dict__.setdefault("_cpu_backends", {})
    be = cache.get(plan.serial_levels)
    if be is None:
        be = cache[plan.serial_levels] = CpuBackend(program, serial_levels=plan.serial_levels)
    return be


def _cpu_of(machine):
    """The CPU part of a given machine (the device is gone)."""
    from hpu import model

    return model.Machine(p=machine.p, g=1, gamma=1.0)
