"""Run options: one table, checked in one place, kept apart from the user's arguments.

Why a table
===========

A decorated function takes the user's arguments; how it runs (which device,
which split, which OpenCL device, ...) is something else.  Mixing both in one
keyword list means a user parameter called ``y``, ``K`` or ``depth`` can only
be passed by position.  So, as Ray does with ``f.options(...)``, run options
live apart: ``f.options(device="cpu", K=4)`` returns the same function
configured, whose call, ``.run``, ``.plan``, ``.sequential`` and
``.opencl_source`` take only the user's arguments.  ``f.run(*args,
device=...)`` keeps working while no run option shares a name with a
parameter; when one does, the call is refused with an error that names
``.options()`` (never silently guessed).

Every option is a row of :data:`RUN_OPTIONS` (name, default, meaning, check);
adding one (a cluster, a thread count) is adding a row, and every entry point
(``.options``, ``.run``, ``.plan``) accepts it.

Names: ``device`` is *where* the tasks run (``"cpu"``, ``"gpu"``,
``"hybrid"``); ``cl_device`` is *which* OpenCL device (``"gpu"``, ``"cpu"``,
``"P:D"``, part of a name).  Nothing else is called "device".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

__all__ = ["RunOption", "RUN_OPTIONS", "DEVICES", "STRATEGIES", "DEFAULT_DEVICE",
           "check_options", "split_keywords", "defaults"]

#: Where a run's tasks go.
DEVICES = ("cpu", "gpu", "hybrid")
#: How the model chooses the split when none is given.
STRATEGIES = ("advanced", "basic", "minmax", "adaptive")
#: The device a plain call uses.
DEFAULT_DEVICE = "hybrid"


@dataclass(frozen=True)
class RunOption:
    """One run option: its default, what it means, and a check of a value (raises)."""

    name: str
    default: Any
    doc: str
    check: Callable[[Any], None] | None = None


def _check_device(v):
    if v not in DEVICES:
        near = v.lower() if isinstance(v, str) and v.lower() in DEVICES else "cpu"
        raise ValueError(f"device={v!r} is not known: expected one of "
                         f"{', '.join(map(repr, DEVICES))} (where the tasks run; the OpenCL "
                         f"device is cl_device=); pass device={near!r}")


def _check_strategy(v):
    if v not in STRATEGIES:
        raise ValueError(f"strategy={v!r} is not known: expected one of "
                         f"{', '.join(map(repr, STRATEGIES))}")


def _check_alpha(v):
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(v) <= 1.0:
        raise ValueError(f"alpha={v!r} must be a number in [0, 1]: the share of the "
                         "transfer level's tasks kept on the CPU; pass e.g. alpha=0.25")


def _check_y(v):
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise ValueError(f"y={v!r} must be an int >= 0: the level at which the device's "
                         "share is split off; pass e.g. y=4")


def _check_K(v):
    from hpu._driver import check_K

    check_K(v)


def _check_depth(v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"depth={v!r} must be an int >= 1: the frames of the device "
                         "solver's stack; pass e.g. depth=64")


def _check_keep_inputs(v):
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"keep_inputs={v!r} must be True (copy the arrays the function writes, "
                        "to put them back if the call raises) or False (no copy: after an "
                        "error the arrays are partially processed); pass keep_inputs=False")


def _check_arena(v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"arena={v!r} must be an int >= 1: the scratch elements a task of a "
                         "functional function's device form may allocate per element of its "
                         "slice, where the size is known only at run time; pass e.g. arena=16")


def _check_memory(v):
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"memory={v!r} must be True (measure the host memory the call "
                        "allocates at its peak, into run.peak_memory) or False; pass "
                        "memory=True")


def _check_cluster(v):
    """Only what cannot be a cluster at all (a number, a container): an address and a
    client are checked where the cluster is reached (hpu._dask)."""
    if isinstance(v, (bool, int, float, complex, np.number, bytes, list, tuple, dict, set)):
        raise TypeError(f"cluster={v!r}: expected a dask.distributed.Client, a scheduler "
                        "address such as 'tcp://host:8786', 'local:N' or hpu.Cluster(...); "
                        "pass cluster='local:2' for a local cluster of 2 workers")


def _check_cl_device(v):
    if v is None or isinstance(v, str):
        return
    from hpu._opencl._device import DeviceInfo

    try:
        import pyopencl as cl
        device_types = (cl.Device, DeviceInfo)
    except ImportError:  # pragma: no cover - pyopencl is a dependency
        device_types = (DeviceInfo,)
    if not isinstance(v, device_types):
        hint = f"cl_device='{v}:0'" if isinstance(v, int) and not isinstance(v, bool) else \
            "cl_device='gpu'"
        raise TypeError(f"cl_device={v!r} must be None (HPU_DEVICE or the default device), a "
                        "string -- 'gpu', 'cpu', 'P:D' (platform and device numbers, as `hpu "
                        "devices` lists them) or part of a device's name -- or a "
                        f"pyopencl.Device; pass e.g. {hint}")


def _check_machine(v):
    from hpu import model

    if v is not None and not isinstance(v, model.Machine):
        raise TypeError(f"machine={v!r} must be None (the calibration profile) or a "
                        "hpu.model.Machine; pass machine=hpu.model.Machine(p, g, gamma)")


def _check_backend(v):
    if v is None:
        return
    missing = [m for m in ("select", "prepare", "leaf", "combine", "finish", "restore",
                           "cancel", "transfers", "event_seconds") if not hasattr(v, m)]
    if missing or not isinstance(v, type):
        raise TypeError(f"backend={v!r} is not a device backend class: expected a class with "
                        f"the lifecycle of hpu._driver.DeviceBackend (missing: "
                        f"{', '.join(missing) or 'it is not a class'}); pass backend=None for "
                        "OpenCL")


#: Every run option, in the order the documentation lists them.
RUN_OPTIONS: dict[str, RunOption] = {o.name: o for o in (
    RunOption("device", DEFAULT_DEVICE,
              "where the tasks run: 'hybrid' (CPU threads and an OpenCL device, split by the "
              "HPU model), 'cpu' (Numba threads only) or 'gpu' (every leaf and combine on the "
              "OpenCL device)", _check_device),
    RunOption("alpha", None, "share of the transfer level's tasks kept on the CPU "
              "(None: the model's)", _check_alpha),
    RunOption("y", None, "the transfer level where the device's share splits off "
              "(None: the model's)", _check_y),
    RunOption("K", None, "the cut-off level whose tasks solve whole subtrees "
              "(None: enough tasks for every core)", _check_K),
    RunOption("strategy", "advanced", "how the split is chosen when alpha and y are not "
              "given: 'advanced' (004 §5.2), 'basic' (§5.1: alpha = 0 at level "
              "log_a(p/gamma)), 'minmax' (002: sample c(k), g(k) on this function and size, "
              "take argmin max(c(k), g(m-k))) or 'adaptive' (001: the median rates of this "
              "function's last runs, kept in `hpu history`)", _check_strategy),
    RunOption("cl_device", None, "which OpenCL device: 'gpu', 'cpu', 'P:D' or part of a name "
              "(None: HPU_DEVICE or the first usable GPU, else PoCL)", _check_cl_device),
    RunOption("depth", 64, "frames of the device solver's stack", _check_depth),
    RunOption("machine", None, "a hpu.model.Machine to plan with instead of the "
              "calibration profile", _check_machine),
    RunOption("backend", None, "the device backend class (None: OpenCL); any class with the "
              "device lifecycle of hpu._driver.DeviceBackend and a select(spec) class method",
              _check_backend),
    RunOption("cluster", None, "a dask.distributed.Client, a scheduler address, 'local:N' or "
              "hpu.Cluster(...): the top levels of the tree across Dask workers "
              "(None: this machine only)", _check_cluster),
    RunOption("keep_inputs", True, "copy what the function writes (the arrays, or their "
              "span) before the run, to put it back when the call raises and to redo a failed "
              "device's share; False saves the copy: an error then leaves the arrays "
              "partially processed (guide §9)", _check_keep_inputs),
    RunOption("arena", 4, "the device form of a functional function (guide §10): for each "
              "scratch array its combine allocates with a size known only at run time, the "
              "elements a task may use per element of its slice; a task that needs more "
              "redoes the call on the CPU, recorded in run.fallbacks", _check_arena),
    RunOption("memory", False, "measure the host memory the call allocates at its peak "
              "(Python's tracemalloc: NumPy arrays, Numba's arrays, Python objects; not an "
              "OpenCL device's buffers) into run.peak_memory; the call runs slower while "
              "traced", _check_memory),
)}


def defaults() -> dict[str, Any]:
    return {name: o.default for name, o in RUN_OPTIONS.items()}


def check_options(opts: Mapping[str, Any], where: str = "options") -> dict[str, Any]:
    """Check every value and the combinations; return the full option dict (defaults filled)."""
    unknown = [k for k in opts if k not in RUN_OPTIONS]
    if unknown:
        raise TypeError(f"{where}(): unknown run option {unknown[0]!r}; expected one of "
                        f"{', '.join(RUN_OPTIONS)}")
    out = defaults()
    out.update(opts)
    for name, o in RUN_OPTIONS.items():
        if o.check is not None:
            o.check(out[name])
    device, alpha, y = out["device"], out["alpha"], out["y"]
    if device == "gpu" and (alpha not in (None, 0) or y not in (None, 0)):
        raise ValueError(f"alpha={alpha!r}, y={y!r}: device='gpu' runs every leaf and "
                         "combine on the OpenCL device (alpha=0, y=0); use device='hybrid' "
                         "to split")
    if device == "cpu":
        if alpha is not None and alpha != 1:
            raise ValueError(f"alpha={alpha!r} applies only to device='hybrid' (the share of "
                             "tasks kept on the CPU); on device='cpu' leave it None")
        if y is not None:
            raise ValueError(f"y={y!r} applies only to device='hybrid' (the level where the "
                             "device takes over); on device='cpu' leave it None")
    return out


def split_keywords(fname: str, params, kwargs: Mapping[str, Any]) -> tuple[dict, dict]:
    """``(run options, the user's keywords)`` of a ``.run(...)``/``.plan(...)`` call
    (``fname``: ``"f.run"``, ``"f.plan"``).

    A keyword that is a run option and also a parameter of the function is
    refused: which one was meant cannot be known.
    """
    name, _, method = fname.rpartition(".")
    name, method = (name, method) if name else (fname, "run")
    opts, user = {}, {}
    for k, v in kwargs.items():
        if k in RUN_OPTIONS:
            if k in params:
                raise TypeError(
                    f"{fname}(): {k}={v!r} is both a parameter of {name} and a run option; "
                    f"pass run options through .options(): {name}.options({k}=...)."
                    f"{method}(...) takes only {name}'s own arguments, so {k}= there is "
                    f"{name}'s")
            opts[k] = v
        else:
            user[k] = v
    return opts, user
