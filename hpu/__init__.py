"""hpu: run a recursive divide-and-conquer function on CPU cores and an OpenCL device together.

You write the textbook recursive function; :func:`divide_and_conquer` converts it
into breadth-first, level-by-level execution whose levels run as Numba CPU
threads and as OpenCL kernels generated from the same source, split between the
two by the HPU model's α (share kept on the CPU) and y (transfer level).

Public API
==========

Decorating and running
    divide_and_conquer   decorator: ``@divide_and_conquer`` or ``@divide_and_conquer(b=2, cost="n", span=("lo", "hi"))``
    DivideAndConquer     what the decorator returns: call it, ``.run``, ``.plan``, ``.sequential``, ``.py_func``
    Run, LevelRecord     the report of one run: value, α, y, tasks and seconds per device and level, fallbacks
    FunctionalPlan       ``.plan`` of a function that allocates or returns arrays: device, K, predicted peak memory

The model
    model                the HPU model of 004 (basic and advanced division, schedule simulator); pure functions

    figures              the paper's Figure 3 (y(α) and the device's share of the work), matplotlib

Beyond one machine (``pip install 'hpu[dask]'``)
    Cluster              ``.run(..., cluster=Cluster(client_or_address, level=None))``: the top levels across Dask workers
    ClusterRun           the Run of a cluster call: ``.cluster`` has the plan, per-worker tasks, seconds and bytes
    ClusterUnavailableError  the scheduler named by ``cluster=`` cannot be reached

Devices and calibration
    devices              the OpenCL devices hpu can use, usable ones first, the default marked
    calibrate            measure p, g, γ, λ, δ and the contention (``calibrate.calibrate()``), plots
    Profile              a stored calibration; ``active_profile()`` the one runs plan with

Errors and warnings
    HpuError             base class of every hpu error
    TranslationError     a function outside the shape or subset hpu accepts (names file, line, construct, fix)
    DeviceUnavailableError, KernelBuildError, ProfileError
    HpuRecursionError    compiled recursion deeper than HPU_MAX_DEPTH (also a RecursionError)
    ArrayMismatchError   an array copied into one of a dtype too narrow for it (also a TypeError)
    HistoryError         the store of measured rates (strategy="adaptive") is unreadable
    SettingError         an HPU_* variable's value or an output path hpu cannot use (also a ValueError)
    HpuPerformanceWarning a device asked for was not used, or failed and its share was redone on the CPU

Everything else (modules starting with ``_``) is private and may change.

How a call flows (where to find each stage)
===========================================

::

    function --frontend--> spec --planner--> Plan --driver--> tree --backends--> Run

``_decorator``   the decorated object: checks arguments, keeps one specialisation per
                 type signature, splits run options from the user's arguments
``_options``     the one table of run options (``f.options(device=..., alpha=..., ...)``)
``_frontend``    source -> ``DCSpec`` (base case, divide, calls, combine) and its closure
``_program``     spec + argument types -> ``Program``: generated Numba module, level dtypes
                 (``_codegen`` writes the code, ``_cache`` keeps it on disk)
``_plan``        (spec, arguments, profile, options) -> ``Plan``: the one place K, y and α are
                 decided (with ``model``: the HPU model and ``_profile``: the machine)
``_driver``      the breadth-first loop: expands the tree to the plan's K, runs the phases
``_split``       the α/y split of one run as an object; drives a device's lifecycle
``_cpu``         the Numba CPU backend
``_opencl``      the OpenCL device: ``_backend`` (the device backend), ``_translate`` and
                 ``_levels`` (Python -> OpenCL C), ``_device``, ``_build``
``_hybrid``      the glue that executes a plan with the driver, the split and the backends
``_run``         the ``Run`` report (value, per-level records, transfers, and ``run.plan``)
``_errors``      every exception and warning class
``calibrate``    measures the machine for ``_profile``; ``cli`` and ``_commands/`` the command

The ready algorithms (``algorithms/``, outside the package) are plug-ins the
``hpu`` command loads; the library never imports them.

The catalog is resolved lazily so that ``import hpu`` and ``hpu plan`` do not pay
for importing Numba and PyOpenCL until they are needed.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> (module, attribute or None for the module itself)
_CATALOG: dict[str, tuple[str, str | None]] = {
    "divide_and_conquer": ("hpu._decorator", "divide_and_conquer"),
    "DivideAndConquer": ("hpu._decorator", "DivideAndConquer"),
    "Run": ("hpu._run", "Run"),
    "LevelRecord": ("hpu._run", "LevelRecord"),
    "FunctionalPlan": ("hpu._functional_plan", "FunctionalPlan"),
    "Cluster": ("hpu._dask", "Cluster"),
    "ClusterRun": ("hpu._dask", "ClusterRun"),
    "ClusterUnavailableError": ("hpu._dask", "ClusterUnavailableError"),
    "model": ("hpu.model", None),
    "figures": ("hpu.figures", None),
    "calibrate": ("hpu.calibrate", None),
    "Profile": ("hpu._profile", "Profile"),
    "active_profile": ("hpu.calibrate", "active_profile"),
    "devices": ("hpu._opencl._device", "devices"),
    "HpuPerformanceWarning": ("hpu._errors", "HpuPerformanceWarning"),
    "HpuError": ("hpu._errors", "HpuError"),
    "TranslationError": ("hpu._errors", "TranslationError"),
    "DeviceUnavailableError": ("hpu._errors", "DeviceUnavailableError"),
    "KernelBuildError": ("hpu._errors", "KernelBuildError"),
    "ProfileError": ("hpu._errors", "ProfileError"),
    "HpuRecursionError": ("hpu._errors", "HpuRecursionError"),
    "ArrayMismatchError": ("hpu._errors", "ArrayMismatchError"),
    "HistoryError": ("hpu._errors", "HistoryError"),
    "SettingError": ("hpu._errors", "SettingError"),
}

__all__ = sorted(_CATALOG) + ["__version__"]


def __getattr__(name: str):
    try:
        module_name, attr = _CATALOG[name]
    except KeyError:
        raise AttributeError(f"module 'hpu' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__():
    return __all__
