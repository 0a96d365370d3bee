"""``hpu info``: versions, threads, the default device and the active profile.

The first thing to run when something looks wrong: it never calibrates and
never fails on a bad profile; it says which profile would be used and, when
none can be, why and what to do (the same messages :func:`hpu.calibrate.load_profile`
raises).
"""
from __future__ import annotations

import json
import os
import sys
import platform

__all__ = ["NAME", "HELP", "add_arguments", "main", "collect"]

NAME = "info"
HELP = "show versions, Numba threads, the default OpenCL device and the active profile"


def add_arguments(parser) -> None:
    parser.add_argument("--cl-device", "--device", dest="device", metavar="D", default=None,
                        help="report the profile of this OpenCL device instead of the default "
                             "one ('gpu', 'cpu', 'P:D' or part of a name; --device is the old "
                             "spelling)")
    parser.add_argument("--cluster", metavar="C", default=None,
                        help="also show this Dask cluster (local:N or a scheduler address): "
                             "its workers and each one's node for the model")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _version(module: str) -> str:
    try:
        mod = __import__(module)
    except Exception as err:  # pragma: no cover - dependencies are installed
        return f"not importable ({err})"
    return str(getattr(mod, "__version__", getattr(mod, "VERSION_TEXT", "?")))


def collect(device=None) -> dict:
    """Everything ``hpu info`` shows, as plain data."""
    return _collect(device)[0]


def _collect(device):
    from hpu import __version__
    from hpu._errors import HpuError
    from hpu._profile import (ENV_NO_AUTOCALIBRATE, ENV_PROFILE, autocalibrate_disabled,
                              current_key, load_profile, profile_path)

    out: dict = {
        "hpu": __version__,
        "python": platform.python_version(),
        "numba": _version("numba"),
        "pyopencl": _version("pyopencl"),
        "numpy": _version("numpy"),
    }
    try:
        import numba
        out["numba_threads"] = int(numba.get_num_threads())
    except Exception as err:  # pragma: no cover
        out["numba_threads"] = None
        out["numba_error"] = str(err)
    try:
        from hpu._opencl._device import describe_device, select_device
        dev = select_device(device)
        out["device"] = describe_device(dev)
    except HpuError as err:
        out["device"] = None
        out["device_error"] = str(err)
        out["profile"] = {"status": "unavailable", "message": f"no device to profile: {err}"}
        return out, None
    prof: dict = {"path": None}
    profile = None
    try:
        key = current_key(dev)
        path = profile_path(dev)
        prof["path"] = str(path)
        prof["key"] = {"host": key.host, "device": key.device, "driver_version": key.driver_version,
                       "hpu_version": key.hpu_version}
        profile = load_profile(dev)
    except HpuError as err:
        prof["status"] = "unusable"
        prof["message"] = str(err)
    else:
        if profile is None:
            prof["status"] = "missing"
            fallback = (f"with {ENV_NO_AUTOCALIBRATE}=1 set, runs use conservative built-in values"
                        if autocalibrate_disabled()
                        else f"the first run calibrates quickly once and saves it "
                             f"({ENV_NO_AUTOCALIBRATE}=1 uses built-in values instead)")
            prof["message"] = (f"no profile at {path}; {fallback}. Run `hpu calibrate` to measure one now")
        else:
            prof["status"] = "ok"
            prof.update(profile.summary())
    prof["from_env"] = _env_set(ENV_PROFILE)
    out["profile"] = prof
    return out, profile


def _env_set(name: str) -> bool:
    return bool(os.environ.get(name, "").strip())


def _cluster(target) -> dict:
    try:
        from hpu._dask import describe

        return describe(target)
    except Exception as err:  # noqa: BLE001 - info never fails: say what is wrong
        return {"error": f"{type(err).__name__}: {err}"}


def main(args) -> int:
    info, profile = _collect(args.device)
    # a device that was asked for by name and is not there is an error (exit 3, as the
    # other commands' environment problems); with none asked for, "none" is the answer
    failed = 3 if args.device is not None and info["device"] is None else 0
    if getattr(args, "cluster", None):
        info["cluster"] = _cluster(args.cluster)
        if "error" in info["cluster"]:
            failed = 3      # asked for and not there, as a device asked for by name
    if args.json:
        print(json.dumps(info, indent=2))
        return failed
    w = print
    if "cluster" in info:
        c = info["cluster"]
        w(f"cluster     {c.get('scheduler', args.cluster)}" + (f": {c['error']}" if "error" in c
                                                              else f", {len(c['workers'])} workers"))
        for nd in c.get("nodes", ()):
            w(f"  {nd['address']}: p={nd['p']:g} g={nd['g']:g} gamma={nd['gamma']:.3g} "
              f"device {nd['device']}")
    w(f"hpu         {info['hpu']}")
    w(f"python      {info['python']}  numba {info['numba']}  pyopencl {info['pyopencl']}  "
      f"numpy {info['numpy']}")
    w(f"threads     {info['numba_threads']} (Numba)")
    if info["device"] is None:
        w(f"device      none: {info['device_error']}")
        if failed and args.device is not None:
            print(f"hpu info: error: --device {args.device!r}: {info['device_error']}",
                  file=sys.stderr)
        return failed
    w(f"device      {info['device']} (default; see `hpu devices`)" if args.device is None
      else f"device      {info['device']}")
    prof = info["profile"]
    if prof["status"] == "ok":
        from hpu._commands.calibrate import format_summary

        w("profile     ok")
        summary = format_summary(profile, prof["path"])
        w("\n".join("  " + line for line in summary.splitlines()))
    else:
        w(f"profile     {prof['status']}")
        if prof.get("path"):
            w(f"  path      {prof['path']}")
        w(f"  {prof['message']}")
    if prof.get("from_env"):
        w("  (the path comes from HPU_PROFILE)")
    if failed:
        print(f"hpu info: error: --cluster {args.cluster!r}: {info['cluster']['error']}",
              file=sys.stderr)
    return failed
