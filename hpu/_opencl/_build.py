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
"""
from __future__ import annotations

import re
import threading

from hpu._errors import DeviceUnavailableError, KernelBuildError

__all__ = ["build_program", "check_fp64", "numbered", "clear_cache", "REFUSED_OPTIONS"]

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
