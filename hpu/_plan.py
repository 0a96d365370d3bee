"""The planner: one function turns (function, arguments, machine, run options) into a Plan.

Why one planner
===============

A run makes three decisions the caller cannot see: the cut-off level ``K``
whose tasks solve whole subtrees, the transfer level ``y`` where the device's
share splits off, and the share ``α`` of level ``y``'s tasks the CPU keeps.
When those were computed in several places (the CPU path's "8·p tasks" rule,
the hybrid's own cut-off rule, the model's simulator), ``hpu plan`` predicted a
tree the run never built.  Now :func:`make_plan` is the only place they are
decided, and the runtime executes its answer:

* ``K`` is :func:`hpu.model.cutoff_level` of the chosen split (the model's
  tree: ``a**i`` tasks at level ``i``);
* the split is ``⌈α·m_y⌉`` of level ``y``'s ``m_y`` tasks on the CPU,
  :func:`hpu.model.tasks_on_cpu`, applied by :mod:`hpu._split` to the tree
  the driver really expands.

The model prices work, not bookkeeping; the fixed costs of a phase, a
parallel region and a kernel launch (:mod:`hpu._overheads`, measured by
calibration) are weighed last, in :func:`_finish`: a CPU plan predicted no
faster than one task becomes ``K = 0`` (the sequential solver on the calling
thread; the plan's ``reason`` says so), and ``plan.serial_levels`` names the
levels whose phases are too small for a parallel region.  What the caller fixed
(``K``, ``alpha``/``y``, ``device="gpu"``) is never overridden.

A tree with base cases above ``K`` (an uneven or early-stopping recursion)
ends where every task is a base case, so the run's deepest level is
``min(plan.cutoff_level, where the tree ends)``; the Run records the real
per-level counts next to the plan's ``tasks``.

What a plan is made from
------------------------

``device="cpu"``: the CPU alone (``α = 1``), ``p`` = Numba's threads now; no
profile, no OpenCL.  ``device="gpu"``: ``α = 0`` at ``y = 0`` with the stored
profile (or hpu's built-in values; never a calibration).  ``device="hybrid"``
with ``alpha`` and ``y`` given: strategy ``"given"``, the same profile.
Otherwise the HPU model (``strategy="advanced"`` or ``"basic"``) with the
active profile, which may calibrate once (see :func:`hpu._profile.active_profile`),
or a measured strategy (``"minmax"``: sampled time functions, ``"adaptive"``:
the rates of earlier runs; :mod:`hpu._strategies`), whose plan records what it
measured in ``plan.samples`` and says why in ``plan.reason``.
Plans are pure functions of hashable inputs and cached.

When the problem size is unknown (no ``span`` and no array argument) the model
cannot size the tree: the plan assumes a tree deep enough for the cut-off rule
and keeps the work on the CPU unless a split was given.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Mapping

import numpy as np

from hpu import model

__all__ = ["make_plan", "model_plan", "problem_of", "cpu_machine", "copy_chunks", "Plan"]

Plan = model.Plan


def problem_of(spec, values: Mapping[str, Any]) -> tuple[model.Problem, int, bool]:
    """``(problem, element_bytes, size_known)`` of a call: ``n`` is ``hi - lo`` of ``span``,
    else the longest array argument; the bytes per element are those of every array a
    task moves."""
    arrays = [v for v in values.values() if isinstance(v, np.ndarray)]
    known = True
    bounds = spec.span or getattr(spec, "extent", None)
    if bounds is not None:
        n = int(values[bounds[1]]) - int(values[bounds[0]])
    elif getattr(spec, "views", ()):  # a function on NumPy slices: the root view's length
        n = max(int(values[length]) for _, _, length in spec.views)
    elif arrays:
        n = max(a.size for a in arrays)
    else:
        known = False
        # deep enough that the cut-off rule, not the tree, decides K (the tree ends early
        # by itself when its tasks are base cases)
        levels = math.ceil(math.log(model.MAX_LEVEL_TASKS, spec.a))
        n = int(math.ceil(float(spec.b) ** levels))
    element_bytes = sum(a.itemsize for a in arrays) or 8
    return _problem(spec.a, spec.b, spec.cost, max(n, 1)), element_bytes, known


@functools.lru_cache(maxsize=1024)
def _problem(a, b, cost, n) -> model.Problem:
    """Problems are checked when made (parsing the cost): once per size, not per call."""
    return model.Problem(a=a, b=b, cost=cost, n=n)


def cpu_machine() -> model.Machine:
    """The CPU as the planner sees it for ``device="cpu"``: Numba's threads now, model units."""
    import numba

    return _cpu_machine(int(numba.get_num_threads()))


@functools.lru_cache(maxsize=64)
def _cpu_machine(p: int) -> model.Machine:
    return model.Machine(p=p, g=1, gamma=1.0)


def copy_chunks(spec, cl_device) -> int:
    """The pieces a run of ``spec`` on ``cl_device`` copies the device's data in
    (:func:`hpu.model.copy_chunks`, with what the OpenCL backend decides by: its
    ``unified_memory(device)`` and ``transfer_chunks``); 1 without an OpenCL device."""
    if cl_device is None or not hasattr(cl_device, "host_unified_memory"):
        return 1
    from hpu._opencl._backend import OpenCLBackend

    span = spec is not None and (spec.span is not None or bool(getattr(spec, "views", ())))
    return model.copy_chunks(unified=OpenCLBackend.unified_memory(cl_device), span=span,
                             chunks=OpenCLBackend.transfer_chunks)


@functools.lru_cache(maxsize=256)
def model_plan(problem, machine, strategy, element_bytes, contention, rel_error=0.0, chunks=1):
    """The model's choice for a problem (what a run with ``alpha=y=K=None`` executes and
    what ``hpu plan ALGORITHM`` prints).  Pure and cached: it costs milliseconds (it
    simulates many integer splits), which a run must not pay on every call.  ``chunks``:
    :func:`copy_chunks` of the run."""
    return model.plan(problem, machine, strategy, element_bytes=element_bytes,
                      contention=contention, rel_error=rel_error, chunks=chunks)


@functools.lru_cache(maxsize=256)
def _given_plan(problem, machine, alpha, y, K, element_bytes, contention, reason, strategy,
                chunks=1):
    import dataclasses

    pl = model.given_plan(problem, machine, alpha=alpha, y=y, K=K, element_bytes=element_bytes,
                          contention=contention, reason=reason, chunks=chunks)
    return pl if strategy == "given" else dataclasses.replace(pl, strategy=strategy)


def _profile_machine(cl_device, *, autocalibrate: bool):
    import os

    from hpu import _overheads, _profile

    # The fast path of every call: the profile file this device's plan was last made
    # from, unchanged on disk (one stat), gives the same answer; anything else (no file
    # yet, a changed file, another environment, a replaced active_profile) takes the
    # full path below, which reads, validates and may calibrate.
    try:
        env = os.environ
        fast_key = (_profile.active_profile, _profile.profiles_dir, cl_device, autocalibrate,
                    env.get("HPU_PROFILE"),
                    env.get("HPU_DEVICE") if cl_device is None or isinstance(cl_device, str)
                    else None, env.get("XDG_CONFIG_HOME"), env.get("HOME"))
        hit = _from_file.get(fast_key)
    except TypeError:  # an unhashable device argument: no fast path
        fast_key, hit = None, None
    if _profile._calibrating:   # built-in values, neither read from nor kept for a file
        fast_key, hit = None, None
    if hit is not None:
        path, stamp, answer = hit
        try:
            st = os.stat(path)
            if (st.st_mtime_ns, st.st_size, st.st_ino) == stamp:
                return answer
        except FileNotFoundError:
            if stamp is None:  # still no profile: the same built-in values
                return answer
        except OSError:
            pass
    if autocalibrate:
        import hpu.calibrate  # noqa: F401 - registers the calibration active_profile may run

    prof = _profile.active_profile(cl_device, autocalibrate=autocalibrate)
    hit = _machines.get(id(prof))
    if hit is None or hit[0] is not prof:  # once per profile read, not per call
        if len(_machines) > 64:
            _machines.clear()
        # a split predicted within the calibration's uncertainty is a tie, settled for the CPU
        hit = _machines[id(prof)] = (prof, (prof.machine(), prof.contention,
                                            _overheads.overheads_of(prof), prof.time_rel_error))
    if fast_key is not None:
        _remember_file(fast_key, cl_device, prof, hit[1])
    return hit[1]


def _remember_file(fast_key, cl_device, prof, answer) -> None:
    """Keep ``answer`` for :func:`_profile_machine`'s fast path when ``prof`` is exactly what
    :func:`hpu._profile.read_profile` last read from the profile file (not a calibration
    kept in memory, not the built-in values)."""
    import os

    from hpu import _profile

    try:
        path = str(_profile.profile_path(cl_device))
    except Exception:  # noqa: BLE001 - no path to watch: no fast path
        return
    read = _profile._read_cache.get(path)
    if getattr(prof, "source", None) == "builtin":
        # no profile file (HPU_NO_AUTOCALIBRATE, or calibration impossible): the built-in
        # values stand until a file appears at ``path``
        if os.path.exists(path):
            return
        read = (None, prof)
    if read is None or read[1] is not prof:
        return
    if len(_from_file) > 64:
        _from_file.clear()
    _from_file[fast_key] = (path, read[0], answer)


#: (active_profile, profiles_dir, device, autocalibrate, the environment the profile's path
#: depends on)
#: -> (profile file, its stamp, answer)
_from_file: dict = {}


#: id(profile) -> (profile, (machine, contention, overheads, relative error))
_machines: dict = {}


#: (id(plan), overheads, small path allowed) -> (plan, the plan with its fixed costs decided)
_finished: dict = {}


def _finish(plan: Plan, ov, *, small: bool) -> Plan:
    """The plan with the decisions its fixed costs drive (:mod:`hpu._overheads`): which
    levels' phases run on the calling thread and, where ``small``, K = 0 when one task on
    the calling thread is predicted at least as fast.  Cached: the plans it is given are
    themselves cached, so one lookup per call."""
    import dataclasses

    from hpu import _overheads

    ov = _overheads.effective(ov)  # under load, what this process's recent runs saw
    key = (id(plan), ov.key(), small)
    hit = _finished.get(key)
    if hit is not None and hit[0] is plan:
        return hit[1]
    reason = _overheads.small_plan_reason(plan, ov) if small else None
    if reason is not None:
        problem = model.Problem(a=plan.a, b=plan.b, cost=plan.cost, n=plan.n)
        machine = model.Machine(p=plan.p, g=plan.g, gamma=plan.gamma,
                                seconds_per_unit=None if plan.time_unit == "unit"
                                else ov.seconds_per_unit)
        out = model.given_plan(problem, machine, alpha=1.0, y=None, K=0, reason=reason)
        out = dataclasses.replace(out, strategy=plan.strategy, serial_levels=(0,))
    else:
        out = dataclasses.replace(plan, serial_levels=_overheads.serial_levels(plan, ov))
    if len(_finished) > 1024:
        _finished.clear()
    _finished[key] = (plan, out)
    return out


def make_plan(spec, values: Mapping[str, Any], *, device: str = "hybrid", alpha=None, y=None,
              K: int | None = None, strategy: str = "advanced", cl_device=None,
              machine: model.Machine | None = None, contention: float | None = None,
              overheads=None, sampler=None) -> Plan:
    """The plan a run with these options executes (see the module docstring).

    ``machine`` (and ``contention``) replace the profile's; ``overheads`` (an
    :class:`hpu._overheads.Overheads`) the profile's fixed costs.  Options are
    assumed checked (:func:`hpu._options.check_options`).  Unless ``K``, ``alpha`` or
    ``y`` was given or ``device="gpu"``, a problem too small to pay for the split's fixed
    costs gets ``K = 0``: one task, the sequential solver, on the calling thread.
    ``strategy="minmax"`` and ``"adaptive"`` choose the split from measurements
    (:mod:`hpu._strategies`); ``sampler(alpha, y) -> Run`` runs the function on copies
    of the arguments for min–max's samples.
    """
    from hpu import _overheads

    small = K is None and alpha is None and y is None and device != "gpu"
    if device == "cpu":
        ov = overheads or _overheads.Overheads()
        pl, known = _make_plan(spec, values, device, alpha, y, K, strategy, cl_device, machine,
                               contention, sampler=sampler)
        return _finish(pl, ov, small=small and known)
    rel_error = 0.0
    if machine is None:
        given = device == "gpu" or (alpha is not None and y is not None)
        machine, prof_contention, prof_ov, rel_error = _profile_machine(
            cl_device, autocalibrate=not given)
        if contention is None:
            contention = prof_contention
        overheads = overheads or prof_ov
    ov = overheads or _overheads.Overheads(seconds_per_unit=machine.seconds_per_unit)
    pl, known = _make_plan(spec, values, device, alpha, y, K, strategy, cl_device, machine,
                           contention, rel_error, sampler=sampler)
    return _finish(pl, ov, small=small and known)


def _make_plan(spec, values, device, alpha, y, K, strategy, cl_device, machine, contention,
               rel_error=0.0, *, sampler=None):
    """``(plan, size_known)`` before the fixed costs are weighed."""
    problem, eb, known = problem_of(spec, values)
    chunks = copy_chunks(spec, cl_device) if device != "cpu" else 1
    return _decide(problem, eb, known, device, alpha, y, K, strategy, machine, contention,
                   rel_error, spec=spec, values=values, cl_device=cl_device,
                   sampler=sampler, chunks=chunks), known


def _decide(problem, eb, known, device, alpha, y, K, strategy, machine, contention,
            rel_error=0.0, *, spec=None, values=None, cl_device=None, sampler=None, chunks=1):
    if device == "cpu":
        m = machine or cpu_machine()
        return _given_plan(problem, m, 1.0, None, K, eb, 1.0 if contention is None else contention,
                           "device='cpu': every task on the CPU's threads", "given")
    c = 1.0 if contention is None else float(contention)
    if device == "gpu":
        return _given_plan(problem, machine, 0.0, 0, K, eb, c,
                           "device='gpu': every leaf and combine on the device", "given", chunks)
    if alpha is not None and y is not None:
        return _given_plan(problem, machine, float(alpha), int(y), K, eb, c,
                           f"alpha={alpha} and y={y} were given", "given", chunks)
    if not known:
        return _given_plan(problem, machine, 1.0 if alpha is None else float(alpha),
                           0 if y is None else int(y), K, eb, c,
                           "the problem size is unknown (no span and no array argument), so "
                           "the model cannot split it", "given")
    from hpu._strategies import MEASURED

    if strategy in MEASURED and alpha is None and y is None:
        import dataclasses

        from hpu._strategies import measured_plan

        def given_split(a, yy, reason, samples):
            pl = _given_plan(problem, machine, float(a), int(yy), K, eb, c, reason, strategy,
                             chunks)
            return dataclasses.replace(pl, samples=tuple(samples))

        return measured_plan(strategy, spec, values, problem, machine, eb, c, K, cl_device,
                             sampler, given_split, chunks=chunks)
    chosen = model_plan(problem, machine, "advanced" if strategy in MEASURED else strategy,
                        eb, c, rel_error, chunks)
    if alpha is None and y is None and K is None:
        return chosen
    # a partial choice: the model fills in what was not given
    a = float(alpha) if alpha is not None else (chosen.split_alpha if chosen.uses_device
                                                else 1.0)
    yy = int(y) if y is not None else (chosen.transfer_level if chosen.uses_device else 0)
    given = ", ".join(f"{k}={v}" for k, v in (("alpha", alpha), ("y", y), ("K", K))
                      if v is not None)
    note = ""
    if alpha is not None and y is None and a < 1 and not chosen.uses_device:
        # the model would not use the device, so its level says nothing: the first level
        # where the device gets a task under this alpha (level 0's one task stays on the
        # CPU for any alpha > 0, and alpha= was given to split)
        yy = next((level for level in range(1, 64)
                   if problem.a ** level - model.tasks_on_cpu(a, problem.a ** level) >= 1),
                  0)
        note = f"; y={yy}, the first level where alpha={alpha} leaves the device a task"
    elif y is not None and alpha is None and not chosen.uses_device:
        note = (f"; the model keeps every task on the CPU, so alpha=1 at y={y}: pass alpha= "
                "too to give the device a share")
    return _given_plan(problem, machine, a, yy, K, eb, c,
                       f"{chosen.reason}; {given} given{note}", strategy if alpha is None
                       and y is None else "given", chunks)
