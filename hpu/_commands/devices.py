"""``hpu devices``: the OpenCL devices hpu can use, the default marked.

A table for people, ``--json`` for scripts; the ``P:D`` index is what
``--device`` and ``HPU_DEVICE`` accept, and the partitions column says which
``@N`` sub-devices (device fission: N of the device's compute units) a device
offers, e.g. ``cpu@1`` or ``0:0@2``.  No device at all is an environment
problem: a message saying how to get one, and exit status 3.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict

__all__ = ["NAME", "HELP", "add_arguments", "main", "format_table"]

NAME = "devices"
HELP = "list the OpenCL devices hpu can use (the default is marked *)"

_NO_DEVICE = ("no OpenCL device found. Install PoCL with `pip install pocl-binary-distribution` "
              "or a GPU vendor's OpenCL driver")


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")


def _mem(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _partitions(d) -> str:
    most = getattr(d, "max_sub_units", 0)
    if not most:
        return "-"
    return "@1" if most == 1 else f"@1..@{most}"


def format_table(devs) -> str:
    header = ("", "index", "kind", "name", "platform", "driver", "CUs", "memory", "fp64", "unified",
              "partitions")
    rows = [("*" if d.default else ("!" if not getattr(d, "usable", True) else ""), d.index, d.kind, d.name, d.platform, d.driver_version,
             str(d.compute_units), _mem(d.global_mem_bytes), "yes" if d.fp64 else "no",
             "yes" if d.unified_memory else "no", _partitions(d)) for d in devs]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    lines.append("* default (override with --device or HPU_DEVICE)")
    if any(getattr(d, "max_sub_units", 0) for d in devs):
        lines.append("partitions: append @N to a device (cpu@1, 0:0@2) for a sub-device of N "
                     "compute units; beside a CPU sub-device Numba uses the remaining cores")
    for d in devs:
        if not getattr(d, "usable", True):
            lines.append(f"! {d.index} is unusable: {d.problem}")
    return "\n".join(lines)


def main(args) -> int:
    from hpu._opencl._device import devices

    devs = devices()
    if not devs:
        print(f"hpu devices: {_NO_DEVICE}", file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps([asdict(d) for d in devs], indent=2))
    else:
        print(format_table(devs))
        from hpu._opencl._device import ADDED_DRIVERS

        for lib in ADDED_DRIVERS:
            print(f"registered by hpu: {lib} (installed, but no file in /etc/OpenCL/vendors "
                  "names it)")
    return 0
