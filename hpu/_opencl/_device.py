"""Choosing an OpenCL device, and one cached context and queue per device.

Why a module of its own: the translator's tests, calibration and the hybrid
driver all need "the device the user meant", chosen the same way everywhere:

1. an explicit ``device=`` string, else the ``HPU_DEVICE`` environment variable;
2. otherwise the default: the first GPU of any platform, else any accelerator,
   else a CPU device (PoCL, installed with hpu, so a machine without a GPU
   driver still has a real OpenCL device).

A device string is ``"gpu"``, ``"cpu"`` (an OpenCL CPU device such as PoCL),
``"P:D"`` (platform and device index as ``hpu devices`` lists them), or a
case-insensitive substring of the device or platform name, optionally
followed by ``@N``: a sub-device of N compute units (``cpu@1``, ``0:0@2``).

Why sub-devices (OpenCL device fission, ``clCreateSubDevices`` with
``CL_DEVICE_PARTITION_EQUALLY``): when the only OpenCL device is PoCL on the
host's own cores, the device and Numba's threads compete for every core and
the HPU model rightly keeps all work on the CPU.  Fission gives the device
some cores and Numba the rest -- two processors that really run side by side,
which is the configuration 004's model is about.  A sub-device is created once
per (device, N) and process and cached like a device; its name for profiles and
reports carries the ``@N`` (:func:`device_label`), so a profile measured on
one partition is never used for another.  When the chosen device is a CPU
device on the host's cores, :func:`use_remaining_cores` gives Numba the cores
the device does not use (``NUMBA_NUM_THREADS``, when set, still wins).

Contexts and queues are created once per device and cached; creating a PoCL
context costs tens of milliseconds and kernels are cached per context.

Two facts of real machines shape this module:

* pyopencl's wheels bundle their own ICD loader, which by default sees only the
  PoCL bundled with them.  A GPU vendor's driver (or a distribution's PoCL) is
  registered in ``/etc/OpenCL/vendors``; unless ``OCL_ICD_VENDORS`` is already
  set, hpu points the loader there so that those drivers are found too -- or, when
  a vendor's driver library is installed but not registered (a GPU container
  that mounts NVIDIA's driver, seen on an H200 machine), to a private folder
  that registers it as well (:func:`vendors_folder`).
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

__all__ = ["DeviceInfo", "devices", "select_device", "context_and_queue", "describe_device", "probe",
           "parse_spec", "sub_device", "sub_device_units", "device_label", "remaining_cores",
           "use_remaining_cores", "host_cores"]

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
    #: the largest N of an ``@N`` sub-device this device offers (equal partitions of
    #: 1..N compute units); 0 when the device cannot be partitioned
    max_sub_units: int = 0


#: GPU vendors' OpenCL drivers as their packages install them: (ICD file name, library,
#: folders it is found in).  A container image often has the library (NVIDIA's comes with
#: the driver mount) but no ICD file naming it.
VENDOR_LIBRARIES = (
    ("nvidia.icd", "libnvidia-opencl.so.1",
     ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64",
      "/usr/local/nvidia/lib")),
    ("amdocl64.icd", "libamdocl64.so", ("/opt/rocm/lib", "/opt/rocm/opencl/lib")),
    ("intel.icd", "libigdrcl.so", ("/usr/lib/x86_64-linux-gnu/intel-opencl",
                                   "/usr/lib64/intel-opencl", "/usr/lib/intel-opencl")),
)


#: the driver libraries the last :func:`vendors_folder` registered itself (``hpu devices``
#: says so)
ADDED_DRIVERS: list[str] = []


def _registered(folder: str) -> tuple[list[str], set[str]]:
    """The ICD files in ``folder`` and the library names (base names) they register."""
    files, libs = [], set()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return files, libs
    for name in names:
        if not name.endswith(".icd"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read().strip()
        except OSError:
            continue
        files.append(path)
        if text:
            libs.add(os.path.basename(text))
    return files, libs


def _unregistered_drivers(registered: set[str]) -> list[tuple[str, str]]:
    """``(icd name, library path)`` of each vendor driver installed but not registered."""
    out = []
    for icd, lib, folders in VENDOR_LIBRARIES:
        if lib in registered:
            continue
        path = next((os.path.join(d, lib) for d in folders
                     if os.path.isfile(os.path.join(d, lib))), None)
        if path is not None:
            out.append((icd, path))
    return out


def vendors_folder() -> str | None:
    """The folder of ICD files the OpenCL loader should read: ``/etc/OpenCL/vendors`` as
    it is, or, when a GPU vendor's driver is installed but no ICD file there names it
    (:data:`VENDOR_LIBRARIES`), a private folder holding the system's ICD files and one
    for each such driver, so that "a GPU's driver is used when present" holds in
    containers that mount the driver without registering it (an NVIDIA H200 machine
    did).  None when there is neither."""
    files, libs = _registered(_SYSTEM_VENDORS)
    extra = _unregistered_drivers(libs)
    ADDED_DRIVERS[:] = [path for _, path in extra]
    if not extra:
        return _SYSTEM_VENDORS if os.path.isdir(_SYSTEM_VENDORS) else None
    from pathlib import Path

    from hpu import _cache

    try:
        folder = _cache._make_private(_cache.cache_dir().parent / "opencl-vendors")
    except OSError:
        folder = _cache._make_private(_cache.fallback_dir().parent / "opencl-vendors")
    wanted = {os.path.basename(f): Path(f).read_text(encoding="utf-8", errors="replace")
              for f in files}
    wanted.update({icd: path + "\n" for icd, path in extra})
    for old in folder.glob("*.icd"):
        if old.name not in wanted:
            old.unlink()
    for name, text in wanted.items():
        target = folder / name
        if not target.is_file() or target.read_text(errors="replace") != text:
            _cache._write_atomic(target, text)
    return str(folder)


_vendors_decided = False


def _cl():
    global _vendors_decided
    if not _vendors_decided and "OCL_ICD_VENDORS" not in os.environ:
        folder = vendors_folder()   # once per process: it reads folders and ICD files
        if folder is not None:
            os.environ["OCL_ICD_VENDORS"] = folder
    _vendors_decided = True
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
        from hpu._opencl._build import known_to_build, quiet_compiler, remember_builds

        if known_to_build(dev):  # built by an earlier process (a record in hpu._cache)
            _probe_results[key] = ""
            return ""
        cl = _cl()
        try:
            ctx = cl.Context([dev])
            with quiet_compiler():
                cl.Program(ctx, _PROBE_SOURCE).build()
            problem = ""
        except Exception as err:  # the driver's own words are the useful part
            text = str(err)
            lines = [ln.strip() for ln in text.splitlines() if "error" in ln.lower()]
            problem = (lines[-1] if lines else text.splitlines()[0] if text else type(err).__name__)
            problem = f"cannot compile OpenCL kernels: {problem}"
        if not problem:
            remember_builds(dev)
        _probe_results[key] = problem
        return problem


def _first_usable(entries):
    """``[the first entry whose device builds]`` (probing no further), or ``[]``."""
    for e in entries:
        if not probe(e[2]):
            return [e]
    return []


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
        max_sub_units=_max_sub_units(dev),
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
    origin = "device="
    if spec is None:
        spec = os.environ.get(_ENV) or None
        origin = f"{_ENV}="
    if spec is not None:
        base, units = parse_spec(spec, origin=origin)
        if units is not None:
            return sub_device(_select_whole(base or None, origin), units, origin=f"{origin}{spec!r}")
    return _select_whole(spec, origin)


def _select_whole(spec, origin):
    entries = _all_devices()
    if not entries:
        raise DeviceUnavailableError(
            "no OpenCL device found. Install PoCL with `pip install pocl-binary-distribution` "
            "or a GPU vendor's OpenCL driver, then check with `hpu devices`")
    # probed in rank order, stopping at the first that builds: a cold first call pays
    # one PoCL compilation, not one per installed platform
    if spec is None:
        usable = _first_usable(sorted(entries, key=_rank))
        if not usable:
            raise DeviceUnavailableError(_no_usable_message(entries))
        return usable[0][2]
    matched = sorted(_match(spec, entries), key=_rank)
    found = _first_usable(matched)
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
    for dev in [d for _, _, d in _all_devices()] + list(_sub_devices.values()):
        if _key(dev) == dev_key:
            ctx = cl.Context([dev])
            return ctx, cl.CommandQueue(ctx, dev)  # a sub-device: the context may list its parent
    raise DeviceUnavailableError(f"OpenCL device {dev_key[1]!r} disappeared")  # pragma: no cover


def context_and_queue(device=None):
    """A cached ``(Context, CommandQueue)`` for a device, a device string, or the default."""
    if device is None or isinstance(device, str):
        device = select_device(device)
    key = _key(device)
    with _lock:
        return _ctx_queue_for(key)


def describe_device(device) -> str:
    """``"name (platform, driver X)"`` for reports; a sub-device's name ends in ``@N``."""
    return f"{device_label(device)} ({device.platform.name.strip()}, driver {device.driver_version.strip()})"


# ------------------------------------------------------------------ sub-devices

def parse_spec(spec: str, *, origin: str = "device=") -> tuple[str, int | None]:
    """Split a device string into ``(device part, N)``: ``"cpu@1"`` -> ``("cpu", 1)``.

    ``N`` is None when the string asks for no sub-device.  Raises
    :class:`DeviceUnavailableError` for an ``@`` not followed by a whole
    number >= 1.
    """
    base, at, tail = spec.strip().rpartition("@")
    if not at:
        return spec.strip(), None
    t = tail.strip()
    if not t.isdigit() or int(t) < 1:
        raise DeviceUnavailableError(
            f"{origin}{spec!r}: {tail!r} after '@' is not a number of compute units; expected "
            f"a whole number >= 1, e.g. '{base.strip() or 'cpu'}@1' for a sub-device of one "
            "compute unit (see `hpu devices` for the partitions each device offers)")
    return base.strip(), int(t)


def _max_sub_units(dev) -> int:
    """The largest N of an equal partition ``dev`` supports (0: no fission)."""
    cl = _cl()
    try:
        props = list(dev.partition_properties or ())
        most = int(dev.partition_max_sub_devices or 0)
    except Exception:  # noqa: BLE001 - an OpenCL 1.1 device has neither query
        return 0
    if int(cl.device_partition_property.EQUALLY) not in [int(p) for p in props] or most < 1:
        return 0
    return int(dev.max_compute_units)


_sub_lock = threading.Lock()
#: (parent key, N) -> the first sub-device of that partition, kept for the process: a
#: sub-device released and made again would be a new device with new contexts and kernels
_sub_devices: dict = {}


def sub_device(device, units: int, *, origin: str | None = None):
    """A sub-device of ``units`` compute units of ``device`` (created once, then cached).

    Raises :class:`DeviceUnavailableError` when the device cannot be
    partitioned or has fewer compute units than asked for.
    """
    cl = _cl()
    name = device.name.strip()
    what = origin or f"{name}@{units}"
    total = int(device.max_compute_units)
    if units > total:
        raise DeviceUnavailableError(
            f"{what}: {units} compute units asked for, but {name!r} has {total}; expected "
            f"@1..@{total} (see `hpu devices`)")
    if getattr(device, "parent_device", None) is not None and units == total:
        return device  # already a sub-device of exactly that size
    if _max_sub_units(device) < units:
        raise DeviceUnavailableError(
            f"{what}: {name!r} ({device.platform.name.strip()}) does not support device fission "
            "(CL_DEVICE_PARTITION_EQUALLY); use the whole device (drop '@N') or a device that "
            "`hpu devices` lists with partitions")
    key = (_key(device), units)
    with _sub_lock:
        if key not in _sub_devices:
            try:
                subs = device.create_sub_devices([cl.device_partition_property.EQUALLY, units])
            except cl.Error as err:
                raise DeviceUnavailableError(
                    f"{what}: the OpenCL driver refused a sub-device of {units} compute units of "
                    f"{name!r} ({err}); use the whole device (drop '@N')") from None
            if not subs:  # pragma: no cover - a conformant driver returns at least one
                raise DeviceUnavailableError(f"{what}: the OpenCL driver returned no sub-device")
            _sub_devices[key] = subs[0]
        return _sub_devices[key]


def sub_device_units(device) -> int | None:
    """N for a sub-device of N compute units; None for a whole device."""
    if getattr(device, "parent_device", None) is None:
        return None
    return int(device.max_compute_units)


def device_label(device) -> str:
    """The device's name, with ``@N`` for a sub-device: what profiles are keyed by."""
    units = sub_device_units(device)
    name = device.name.strip()
    return name if units is None else f"{name} @{units}"


def label_sub_units(label: str) -> int | None:
    """N of a label :func:`device_label` wrote for a sub-device (``"name @N"``); None otherwise."""
    name, sep, units = (label or "").rpartition(" @")
    return int(units) if sep and name and units.isdigit() else None


def host_cores() -> int:
    """The cores this process may run on (its affinity mask, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def remaining_cores(device, *, cores: int | None = None, environ=None) -> int | None:
    """How many threads Numba should use beside ``device``; None: leave Numba's choice.

    The rule: a CPU device runs on the host's own cores, so when it uses only
    some of them (a sub-device, ``cpu@N``) Numba gets the rest, ``cores - N``,
    and the two sides do not fight over a core.  ``NUMBA_NUM_THREADS`` in the
    environment always wins (None), as does a device that is not a CPU or that
    uses every core (nothing remains to give: None).
    """
    env = os.environ if environ is None else environ
    if str(env.get("NUMBA_NUM_THREADS", "")).strip():
        return None
    cl = _cl()
    if not device.type & cl.device_type.CPU:
        return None
    cores = host_cores() if cores is None else cores
    left = cores - int(device.max_compute_units)
    return left if left >= 1 else None


def use_remaining_cores(device) -> int:
    """Apply :func:`remaining_cores` to Numba (for the calling thread); return its thread count.

    ``numba.set_num_threads`` is per thread and never exceeds the threads
    Numba launched; the run path calls this once, after choosing the device.
    """
    import numba

    n = remaining_cores(device)
    if n is not None:
        numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
    return int(numba.get_num_threads())
