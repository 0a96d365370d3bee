"""A run as a Chrome/Perfetto trace: what ran where, and when.

Why a trace
===========

A :class:`~hpu.Run` holds per-level records; what they cannot show at a glance
is *overlap*: whether the device computed while the CPU did, whether an upload
delayed the device's first kernel, which level was the long one.  Every
comparable runtime draws a timeline for that (StarPU's FxT traces, Taskflow's
TFProf, Dask and Ray's dashboards), and the Trace Event Format that
chrome://tracing and https://ui.perfetto.dev open is the common file for it.

What is drawn
=============

Process 1, "hpu run": one track per processor group that worked, ``CPU
threads`` (the Numba threads of each phase, one slice per level and phase),
``device queue`` (the device's kernels, timed by their OpenCL profiling events
and moved onto the host's clock) and ``transfers`` (each upload and download,
with its bytes).  Process 2, "plan (predicted)": the plan's predicted phases
(:attr:`hpu.model.Plan.phases`), laid from the run's start; when the plan's
unit is not seconds they are scaled so that the predicted total equals the
run's measured time, and the slice arguments say so.  Every slice carries its
tasks and seconds as ``args``; the first slice carries the plan's strategy and
reason (which strategy chose the split, and why).

Timestamps are the records' ``time.perf_counter()`` seconds relative to
``run.started``, written in microseconds as the format wants.  Records with no
timestamps (a backend that does not report them) are left out, never guessed.

``HPU_TRACE=DIR`` traces every run into ``DIR`` (:func:`trace_env`), as
Taskflow's ``TF_ENABLE_PROFILER`` does.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import time
from pathlib import Path

__all__ = ["trace_events", "write_trace", "trace_env", "ENV_TRACE", "TRACKS"]

ENV_TRACE = "HPU_TRACE"

#: (thread id, track name) of process 1
TRACKS = {"cpu": (1, "CPU threads"), "gpu": (2, "device queue"), "link": (3, "transfers")}
_PLAN_PID = 2
_UNITS = {"cpu": 1, "device": 2, "link": 3}
_counter = itertools.count()


def _us(t: float, origin: float) -> float:
    return round((t - origin) * 1e6, 3)


def trace_events(run) -> dict:
    """The run as a Trace Event Format object (``{"traceEvents": [...], ...}``)."""
    origin = run.started
    if origin is None:
        raise ValueError("this Run has no start time (a run under HPU_DISABLE runs plain "
                         "Python and records nothing); run without HPU_DISABLE to trace it")
    events: list[dict] = []
    used: set[str] = set()

    def slice_(kind, name, start, end, args):
        used.add(kind)
        events.append({"name": name, "cat": kind, "ph": "X", "pid": 1, "tid": TRACKS[kind][0],
                       "ts": _us(start, origin), "dur": round(max(end - start, 0.0) * 1e6, 3),
                       "args": args})

    for r in run.levels:
        name = f"L{r.level} {r.phase}"
        if r.cpu_tasks and r.cpu_start is not None:
            slice_("cpu", name, r.cpu_start, r.cpu_end,
                   {"level": r.level, "phase": r.phase, "tasks": r.cpu_tasks,
                    "seconds": r.cpu_seconds})
        if r.gpu_tasks and r.gpu_start is not None:
            slice_("gpu", name, r.gpu_start, r.gpu_end,
                   {"level": r.level, "phase": r.phase, "tasks": r.gpu_tasks,
                    "seconds": r.gpu_seconds})
    for t in run.transfers:
        label = "upload" if t.direction == "host->device" else "download"
        for i, (start, end) in enumerate(t.spans):
            slice_("link", label if len(t.spans) == 1 else f"{label} {i}", start, end,
                   {"direction": t.direction, "bytes": t.bytes, "seconds": t.seconds})

    meta = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "hpu run"}}]
    for kind in ("cpu", "gpu", "link"):
        if kind in used:
            tid, label = TRACKS[kind]
            meta.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                         "args": {"name": label}})
    plan = run.plan
    if plan is not None:
        info = {"strategy": plan.strategy, "reason": plan.reason,
                "split_alpha": plan.split_alpha, "transfer_level": plan.transfer_level,
                "cutoff_level": plan.cutoff_level, "predicted_time": plan.predicted_time,
                "time_unit": plan.time_unit, "measured_seconds": run.seconds}
        if events:
            events[0]["args"] = {**events[0]["args"], "plan": info}
        events.extend(_plan_events(run, plan, info))
        if plan.phases:
            meta.append({"name": "process_name", "ph": "M", "pid": _PLAN_PID,
                         "args": {"name": "plan (predicted)"}})
            for unit, tid in _UNITS.items():
                if any(p.unit == unit for p in plan.phases):
                    meta.append({"name": "thread_name", "ph": "M", "pid": _PLAN_PID, "tid": tid,
                                 "args": {"name": f"predicted {unit}"}})
    return {"traceEvents": meta + events, "displayTimeUnit": "ms",
            "otherData": {"device": run.device, "alpha": run.alpha, "y": run.y, "K": run.K,
                          "seconds": run.seconds, "fallbacks": list(run.fallbacks)}}


def _plan_events(run, plan, info) -> list[dict]:
    phases = plan.phases
    if not phases:
        return []
    total = max(p.end for p in phases) or 1.0
    if plan.time_unit == "s":
        scale, note = 1.0, "the plan's seconds"
    else:
        scale = run.seconds / total
        note = (f"the plan's {plan.time_unit} scaled so that its total "
                f"({plan.predicted_time:.6g}) equals the run's {run.seconds:.6g} s")
    out = []
    for p in phases:
        out.append({"name": p.name, "cat": "plan", "ph": "X", "pid": _PLAN_PID,
                    "tid": _UNITS.get(p.unit, 1), "ts": round(p.start * scale * 1e6, 3),
                    "dur": round((p.end - p.start) * scale * 1e6, 3),
                    "args": {"predicted_start": p.start, "predicted_end": p.end,
                             "time_unit": plan.time_unit, "drawn_as": note,
                             "strategy": info["strategy"]}})
    return out


def write_trace(run, path) -> Path:
    """Write :func:`trace_events` of ``run`` to ``path`` (parents created); return the path.

    Written beside it and renamed over it (a reader never sees half a file); a path that
    names something other than a file -- a folder, ``/dev/null`` -- is refused, never
    replaced, and a symbolic link is written through; nothing is left behind on an error."""
    from hpu._errors import SettingError

    path = Path(path)
    if str(path) in ("", "."):
        raise SettingError("the trace's path is empty; give a file name, e.g. run.json")
    if path.is_symlink():
        path = path.resolve()
    if path.exists() and not path.is_file():
        what = "a folder" if path.is_dir() else "not a regular file"
        raise SettingError(f"the trace's path {str(path)!r} is {what}; give a file name "
                           f"(e.g. {str(path / 'run.json') if path.is_dir() else 'run.json'!r})")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SettingError(f"the trace's folder {str(path.parent)!r} cannot be made "
                           f"({err.strerror or err}); give a path in a folder you can write")
    data = trace_events(run)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError as err:
        raise SettingError(f"the trace cannot be written to {str(path)!r} "
                           f"({err.strerror or err}); give a path you can write") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def trace_env(run, name: str) -> Path | None:
    """With ``HPU_TRACE=DIR`` set, write ``run``'s trace to ``DIR/<name>-<time>-<pid>-<n>.json``."""
    folder = os.environ.get(ENV_TRACE, "").strip()
    if not folder or run.started is None:
        return None
    if os.path.exists(folder) and not os.path.isdir(folder):
        from hpu._errors import SettingError

        raise SettingError(f"{ENV_TRACE}={folder!r} is not a folder: set it to a folder to "
                           "write every run's trace into (made if missing), or unset it")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "run"
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return write_trace(run, Path(folder) / f"{safe}-{stamp}-{os.getpid()}-{next(_counter)}.json")
