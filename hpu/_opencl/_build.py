"""Building generated OpenCL C: one compiled program per (context, source, options).

Why a module of its own: every executor builds the same few programs over and
over (one per level kernel, per run); compiling costs from tens of milliseconds
(PoCL, cached on disk by PyOpenCL) to seconds (GPU drivers).  Translation is
deterministic, so identical source means identical program and the cache key
is simply ``(context, source, options)``.

It also gives the two failures of building a clear shape:

* a program that uses float64 on a device without ``cl_khr_fp64`` is refused
  *before* the driver sees it, with the Python line that first used a float64
  (the translator writes it into the fp64 pragma) and what to do instead;
* a compiler error raises :class:`hpu.KernelBuildError` whose message holds the
  generated source with line numbers next to the compiler's log, so the line
  the log names can be found.

Options: ``-cl-fp32-correctly-rounded-divide-sqrt`` is always added where the
device supports it, because float32 ``/`` and ``sqrt`` must round exactly as
Numba's do (OpenCL otherwise allows 2.5 ulp); ``-cl-fast-relaxed-math`` and the
other options that change results are refused.

A new process pays for translation again (the translator walks and types the
generated functions: ~0.1 s for mergesort).  :func:`translated_levels` keeps
the result on disk as a record of :mod:`hpu._cache` (the user's private cache
folder), keyed by everything the translation reads: the generated iterative
module's source and file name, the shared arguments' types, the stack depth
and a hash of the translator's own source files, so an edited translator never
reads an old record.  The built binary itself is cached by PoCL/PyOpenCL.

Choosing a device builds a one-line kernel on each candidate (a driver that
cannot compile for this CPU is skipped, see :func:`hpu._opencl._device.probe`);
:func:`remember_builds` records a success, keyed by the host, the platform,
the device's name and version and the driver's version, so that the next
process trusts it without building (:func:`known_to_build`).  Failures are
not recorded: they are probed again.
"""
from __future__ import annotations

import contextlib
import re
import threading

from hpu._errors import DeviceUnavailableError, KernelBuildError

__all__ = ["build_program", "quiet_compiler", "check_fp64", "numbered", "clear_cache", "REFUSED_OPTIONS",
           "translated_levels", "known_to_build", "remember_builds"]

_FP64_PRAGMA = re.compile(r"#pragma\s+OPENCL\s+EXTENSION\s+cl_khr_fp64\s*:\s*enable"
                          r"(?:\s*/\*\s*float64 first used at (?P<where>[^*]*?)\s*\*/)?")

#: Build options that would make results differ from Python's.
REFUSED_OPTIONS = ("-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations",
                   "-cl-finite-math-only", "-cl-mad-enable", "-cl-no-signed-zeros",
                   "-cl-denorms-are-zero", "-cl-single-precision-constant")

_CORRECT_DIV_SQRT = "-cl-fp32-correctly-rounded-divide-sqrt"
_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7  # CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT

_cache: dict = {}
_lock = threading.Lock()


def numbered(source: str) -> str:
    """``source`` with right-aligned line numbers, as error messages show it."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


def _has_fp64(device) -> bool:
    extensions = str(getattr(device, "extensions", "") or "")
    return "cl_khr_fp64" in extensions.split() or "cl_khr_fp64" in extensions


def check_fp64(devices, source: str) -> None:
    """Raise :class:`DeviceUnavailableError` if ``source`` needs float64 and a device
    lacks ``cl_khr_fp64``.  ``devices`` only need ``.name`` and ``.extensions``."""
    match = _FP64_PRAGMA.search(source)
    if match is None:
        return
    for dev in devices:
        if not _has_fp64(dev):
            where = match.group("where")
            at = f" (first at {where})" if where else ""
            raise DeviceUnavailableError(
                f"OpenCL device {str(getattr(dev, 'name', dev)).strip()!r} has no double "
                f"precision (cl_khr_fp64), but the function computes with float64 values{at}. "
                "Use float32 arrays and float32 arithmetic throughout (note that Python float "
                "literals and int / int are float64), or choose a device with fp64 support "
                "(HPU_DEVICE=..., see `hpu devices`)")


def _options(ctx, options) -> tuple[str, ...]:
    opts = tuple(str(o) for o in options)
    for o in opts:
        for bad in REFUSED_OPTIONS:
            if o.startswith(bad):
                raise ValueError(f"build option {o!r} changes floating-point results; hpu "
                                 f"refuses {', '.join(REFUSED_OPTIONS)}. Remove it")
    devices = getattr(ctx, "devices", [])
    if _CORRECT_DIV_SQRT not in opts and devices and all(
            int(getattr(d, "single_fp_config", 0)) & _FP_CORRECTLY_ROUNDED_DIVIDE_SQRT
            for d in devices):
        opts = (_CORRECT_DIV_SQRT,) + opts
    return opts


@contextlib.contextmanager
def quiet_compiler():
    """PyOpenCL's ``CompilerWarning`` ("Non-empty compiler output encountered") kept
    quiet while hpu builds its own generated code: NVIDIA's driver writes a log for
    every program it builds, and the user, who did not write the OpenCL C, can do
    nothing with it (an ``hpu run`` on an H200 printed it four times).  A build that
    fails still raises with the whole log (:class:`hpu.KernelBuildError`), and
    ``PYOPENCL_COMPILER_OUTPUT=1`` shows the logs of the builds that succeed."""
    import os
    import warnings

    if os.environ.get("PYOPENCL_COMPILER_OUTPUT", "") not in ("", "0"):
        yield
        return
    from pyopencl import CompilerWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompilerWarning)
        yield


def build_program(ctx, source: str, options=()):
    """The built ``pyopencl.Program`` for ``source`` on every device of ``ctx``.

    Cached per ``(ctx, source, options)``: the second call returns the same
    object.  Raises :class:`hpu.DeviceUnavailableError` for float64 code on a
    device without fp64 and :class:`hpu.KernelBuildError` when the compiler
    rejects the source.
    """
    import pyopencl as cl

    opts = _options(ctx, options)
    key = (ctx, source, opts)
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    check_fp64(ctx.devices, source)
    program = cl.Program(ctx, source)
    try:
        with quiet_compiler():
            program = program.build(options=list(opts))
    except cl.Error as err:
        logs = []
        for dev in ctx.devices:
            try:
                log = program.get_build_info(dev, cl.program_build_info.LOG)
            except cl.Error:
                log = ""
            if log and log.strip():
                logs.append(f"[{dev.name.strip()}]\n{log.strip()}")
        log_text = "\n".join(logs) or " ".join(str(err).split())
        raise KernelBuildError(
            "the OpenCL compiler rejected the generated program (options: "
            f"{' '.join(opts) or 'none'}).\n--- compiler log ---\n{log_text}\n"
            f"--- generated source ---\n{numbered(source)}",
            source=source, log=log_text) from None
    with _lock:
        _cache.setdefault(key, program)
        return _cache[key]


def clear_cache() -> None:
    """Forget every built program (tests use it)."""
    with _lock:
        _cache.clear()


# ------------------------------------------------------------------ translation record
_TRANSLATION = "opencl-levels"
_translator_digest: list[str] = []


def _translator_hash() -> str:
    """A hash of the translator's source files (the ``hpu/_opencl`` package)."""
    if not _translator_digest:
        import hashlib
        from pathlib import Path

        h = hashlib.sha256()
        folder = Path(__file__).resolve().parent
        for path in sorted(folder.glob("*.py")):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        _translator_digest.append(h.hexdigest())
    return _translator_digest[0]


def _translation_key(program, shared, depth: int) -> dict:
    import hashlib

    from hpu._cache import _versions, module_name
    from hpu._opencl._levels import _signature_key

    # every part of the in-memory key (the checked modes too: bounds, the error channel)
    source, kinds, depth, *modes = _signature_key(program, shared, depth)
    return {"iter_source": hashlib.sha256(source.encode()).hexdigest(),
            "module": module_name(source, f"{program.spec.name}_iter"),
            "kinds": [list(k) for k in kinds], "depth": depth,
            "modes": [repr(m) for m in modes],
            "translator": _translator_hash(), "versions": _versions()}


def _to_record(translated) -> dict:
    return {"source": translated.source, "uses_fp64": bool(translated.uses_fp64),
            "fp64_first_use": translated.fp64_first_use,
            "sites": [str(t) for t in translated.sites],
            "kernels": {name: [[p.name, p.kind, p.dtype.str, p.array] for p in params]
                        for name, params in translated.kernels.items()}}


def _from_record(value):
    """The ``TranslatedProgram`` of a record, or ``None`` when it has another shape."""
    import numpy as np

    from hpu._opencl._translate import KernelParam, TranslatedProgram

    try:
        kernels = {str(name): tuple(KernelParam(str(n), str(k), np.dtype(str(dt)),
                                                None if a is None else str(a))
                                    for n, k, dt, a in params)
                   for name, params in value["kernels"].items()}
        source, fp64, first = value["source"], value["uses_fp64"], value["fp64_first_use"]
        sites = value["sites"]
        if not isinstance(sites, list) or not all(isinstance(t, str) for t in sites):
            return None
        if not isinstance(source, str) or not isinstance(fp64, bool) or not all(
                p.kind in ("array", "length", "scalar", "start", "stop")
                for params in kernels.values() for p in params):
            return None
        if first is not None and not isinstance(first, str):
            return None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    # ``functions`` (the per-function typing) is not kept: the level backend reads only
    # the source and the kernels' parameters
    return TranslatedProgram(source=source, functions={}, kernels=kernels, uses_fp64=fp64,
                             fp64_first_use=first, sites=tuple(sites))


def translated_levels(program, shared, depth: int):
    """:func:`hpu._opencl._levels.translate_levels`, through the on-disk record."""
    from hpu import _cache
    from hpu._opencl import _levels

    memo = _levels._signature_key(program, shared, depth)
    with _levels._lock:
        hit = _levels._cache.get(memo)
    if hit is not None:
        return hit
    key = _translation_key(program, shared, depth)
    value = _cache.load_record(_TRANSLATION, key)
    translated = _from_record(value) if value is not None else None
    if translated is None:
        translated = _levels.translate_levels(program, shared, depth)
        _cache.store_record(_TRANSLATION, key, _to_record(translated))
        return translated
    with _levels._lock:
        _levels._cache.setdefault(memo, translated)
        return _levels._cache[memo]


# ------------------------------------------------------------------ probe record
_PROBE = "opencl-probe"


def _probe_key(device) -> dict | None:
    import platform

    from hpu._cache import _versions

    try:
        return {"host": platform.node(), "machine": platform.machine(),
                "platform": str(device.platform.name).strip(),
                "platform_version": str(device.platform.version).strip(),
                "device": str(device.name).strip(), "version": str(device.version).strip(),
                "driver": str(device.driver_version).strip(), "versions": _versions()}
    except Exception:  # noqa: BLE001 - a device that cannot say what it is: probe it
        return None


def known_to_build(device) -> bool:
    """Whether an earlier process built the probe kernel on this same device and driver."""
    key = _probe_key(device)
    if key is None:
        return False
    from hpu._cache import load_record

    return load_record(_PROBE, key) == "builds"


def remember_builds(device) -> None:
    """Record that the probe kernel built on ``device`` (see :func:`known_to_build`)."""
    key = _probe_key(device)
    if key is not None:
        from hpu._cache import store_record

        store_record(_PROBE, key, "builds")
