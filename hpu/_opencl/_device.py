"""Choosing an OpenCL device, and one cached context and queue per device.

Why a module of its own: the translator's tests, calibration and the hybrid
driver all need "the device the user meant", chosen the same way everywhere:

1. an explicit ``device=`` string, else the ``HPU_DEVICE`` environment variable;
2. otherwise the default: the first GPU of any platform, else any accelerator,
   else a CPU device (PoCL, installed with hpu, so a machine without a GPU
   driver still has a real OpenCL device).

A device string is ``"gpu"``, ``"cpu"`` (an OpenCL CPU device such as PoCL),
``"P:D"`` (platform and device index as ``hpu devices`` lists them), or a
case-insensitive substring of the device or platform name.

Contexts and queues are created once per device and cached; creating a PoCL
context costs tens of milliseconds and kernels are cached per context.

Two facts of real machines shape this module:

* pyopencl's wheels bundle their own ICD loader, which by default sees only the
  PoCL bundled with them.  A GPU vendor's driver (or a distribution's PoCL) is
  registered in ``/etc/OpenCL/vendors``; unless ``OCL_ICD_VENDORS`` is already
  set, hpu points the loader there so that those drivers are found too.
* A device can be listed and still be unable to compile anything: PyPI's PoCL
  (LLVM 14) fails every build with "unknown target CPU 'generic'" on CPUs newer
  than its LLVM (AMD Zen 5, for one).  Every device is therefore probed once per
  process with a one-line kernel; an unusable device is never chosen by default,
  and ``hpu devices`` shows why.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import lru_cache

from hpu._errors import DeviceUnavailableError

__all__ = ["DeviceInfo", "devices", "select_device", "context_and_queue", "describe_device", "probe"]

_ENV = "HPU_DEVICE"
_SYSTEM_VENDORS = "/etc/OpenCL/vendors"
_PROBE_SOURCE = "__kernel void hpu_probe(__global int *x) { x[get_global_id(0)] = 1; }"


@dataclass(frozen=True)
class DeviceInfo:
    """One OpenCL device as ``hpu devices`` lists it."""

    index: str            # "P:D"
    name: str
    platform: str
    kind: str             # "GPU", "CPU", "ACCELERATOR", ...
    driver_version: str
    compute_units: int
    global_mem_bytes: int
    fp64: bool
    unified_memory: bool  # host and device share memory (zero-copy is cheap)
    default: bool = False
    usable: bool = True
    problem: str = ""     # why the device is unusable (empty when usable)


def _cl():
    if "OCL_ICD_VENDORS" not in os.environ and os.path.isdir(_SYSTEM_VENDORS):
        os.environ["OCL_ICD_VENDORS"] = _SYSTEM_VENDORS
    try:
        import pyopencl as cl
    except Exception as err:  # pragma: no cover - pyopencl is a dependency
        raise DeviceUnavailableError(
            f"pyopencl could not be imported ({err}); reinstall hpu with "
            "`pip install --force-reinstall hpu`") from err
    return cl


def _all_devices():
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except Exception as err:
        raise DeviceUnavailableError(
            f"no OpenCL platform found ({err}). Install PoCL with "
            "`pip install pocl-binary-distribution` or a GPU vendor's OpenCL driver") from err
    out = []
    for pi, plat in enumerate(platforms):
        try:
            devs = plat.get_devices()
        except Exception:
            continue
        for di, dev in enumerate(devs):
            out.append((f"{pi}:{di}", plat, dev))
    return out


def _kind(dev) -> str:
    cl = _cl()
    t = dev.type
    if t & cl.device_type.GPU:
        return "GPU"
    if t & cl.device_type.ACCELERATOR:
        return "ACCELERATOR"
    if t & cl.device_type.CPU:
        return "CPU"
    return cl.device_type.to_string(t)


def _rank(entry) -> int:
    return {"GPU": 0, "ACCELERATOR": 1, "CPU": 2}.get(_kind(entry[2]), 3)


def _key(dev):
    return (dev.platform.name, dev.name, dev.int_ptr)


_probe_lock = threading.Lock()
_probe_results: dict = {}


def probe(dev) -> str:
    """Build a one-line kernel on ``dev``; return "" if it works, else the reason (cached)."""
    key = _key(dev)
    with _probe_lock:
        if key in _probe_results:
            return _probe_results[key]
        cl = _cl()
        try:
            ctx = cl.Context([dev])
            cl.Program(ctx, _PROBE_SOURCE).build()
            problem = ""
        except Exception as err:  # the driver's own words are the useful part
            text = str(err)
            lines = [ln.strip() for ln in text.splitlines() if "error" in ln.lower()]
            problem = (lines[-1] if lines else text.splitlines()[0] if text else type(err).__name__)
            problem = f"cannot compile OpenCL kernels: {problem}"
        _probe_results[key] = problem
        return problem


def _usable_entries(entries):
    return [e for e in entries if not probe(e[2])]


def _info(entry, default: bool) -> DeviceInfo:
    index, plat, dev = entry
    problem = probe(dev)
    return DeviceInfo(
        index=index,
        name=dev.name.strip(),
        platform=plat.name.strip(),
        kind=_kind(dev),
        driver_version=dev.driver_version.strip(),
        compute_units=int(dev.max_compute_units),
        global_mem_bytes=int(dev.global_mem_size),
        fp64="cl_khr_fp64" in dev.extensions or bool(getattr(dev, "double_fp_config", 0)),
        unified_memory=bool(getattr(dev, "host_unified_memory", False)) or _kind(dev) == "CPU",
        default=default,
        usable=not problem,
        problem=problem,
    )


def devices() -> list[DeviceInfo]:
    """Every OpenCL device found, usable ones first, the default marked ``default``.

    Unusable devices are listed too (``usable=False``, ``problem`` says why).
    """
    entries = sorted(_all_devices(), key=lambda e: (bool(probe(e[2])), _rank(e)))
    if not entries:
        return []
    default_found = False
    out = []
    for e in entries:
        is_default = not default_found and not probe(e[2])
        default_found = default_found or is_default
        out.append(_info(e, is_default))
    return out


def _match(spec: str, entries):
    s = spec.strip().lower()
    if s in ("gpu", "cpu", "accelerator"):
        return [e for e in entries if _kind(e[2]).lower() == s]
    if ":" in s and all(part.isdigit() for part in s.split(":", 1)):
        return [e for e in entries if e[0] == s]
    return [e for e in entries if s in e[2].name.lower() or s in e[1].name.lower()]


def select_device(spec: str | None = None):
    """The ``pyopencl.Device`` meant by ``spec`` (or ``HPU_DEVICE``, or the default).

    ``spec`` may also be a ``pyopencl.Device`` or a :class:`DeviceInfo`.
    """
    if isinstance(spec, DeviceInfo):
        spec = spec.index
    elif spec is not None and not isinstance(spec, str):
        return spec  # a pyopencl.Device already
    entries = _all_devices()
    if not entries:
        raise DeviceUnavailableError(
            "no OpenCL device found. Install PoCL with `pip install pocl-binary-distribution` "
            "or a GPU vendor's OpenCL driver, then check with `hpu devices`")
    origin = "device="
    if spec is None:
        spec = os.environ.get(_ENV) or None
        origin = f"{_ENV}="
    if spec is None:
        usable = _usable_entries(sorted(entries, key=_rank))
        if not usable:
            raise DeviceUnavailableError(_no_usable_message(entries))
        return usable[0][2]
    matched = sorted(_match(spec, entries), key=_rank)
    found = _usable_entries(matched)
    if matched and not found:
        raise DeviceUnavailableError(
            f"{origin}{spec!r} matches only unusable OpenCL devices: "
            + "; ".join(f"{i} {d.name.strip()}: {probe(d)}" for i, _, d in matched)
            + f". {_FIX}")
    if not found:
        listing = "; ".join(f"{i} {d.name.strip()} ({_kind(d)})" for i, _, d in entries)
        raise DeviceUnavailableError(
            f"{origin}{spec!r} matches no OpenCL device. Expected 'gpu', 'cpu', 'P:D' or part of "
            f"a device name; available: {listing}. Run `hpu devices` to list them")
    return found[0][2]


_FIX = ("If PyPI's PoCL cannot compile for this CPU, install the distribution's PoCL "
        "(`apt-get install pocl-opencl-icd`) or a GPU vendor's OpenCL driver")


def _no_usable_message(entries) -> str:
    listing = "; ".join(f"{i} {d.name.strip()}: {probe(d)}" for i, _, d in entries)
    return f"no usable OpenCL device: {listing}. {_FIX}, then check with `hpu devices`"


_lock = threading.Lock()


@lru_cache(maxsize=None)
def _ctx_queue_for(dev_key):
    cl = _cl()
    for _, _, dev in _all_devices():
        if _key(dev) == dev_key:
            ctx = cl.Context([dev])
            return ctx, cl.CommandQueue(ctx)
    raise DeviceUnavailableError(f"OpenCL device {dev_key[1]!r} disappeared")  # pragma: no cover


def context_and_queue(device=None):
    """A cached ``(Context, CommandQueue)`` for a device, a device string, or the default."""
    if device is None or isinstance(device, str):
        device = select_device(device)
    key = _key(device)
    with _lock:
        return _ctx_queue_for(key)


def describe_device(device) -> str:
    """``"name (platform, driver X)"`` for reports."""
    return f"{device.name.strip()} ({device.platform.name.strip()}, driver {device.driver_version.strip()})"
