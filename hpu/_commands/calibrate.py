"""``hpu calibrate``: measure p, g, γ, λ, δ on this machine and store the profile.

The measuring is :func:`hpu.calibrate.calibrate`; this module only parses the
options, saves the profile where :func:`hpu.calibrate.profile_path` says
(``HPU_PROFILE`` or the user's config folder), and reports it, for a person
or, with ``--json``, as one JSON object for scripts.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hpu._errors import HpuPerformanceWarning

__all__ = ["NAME", "HELP", "add_arguments", "main", "format_summary"]

NAME = "calibrate"
HELP = "measure p, g, gamma and the transfer cost of this machine and store them as a profile"


def add_arguments(parser) -> None:
    parser.add_argument("--device", metavar="D", default=None,
                        help="OpenCL device: 'gpu', 'cpu', 'P:D' or part of a name (see `hpu devices`); "
                             "default: HPU_DEVICE or the first GPU")
    parser.add_argument("--quick", action="store_true",
                        help="smaller sweeps: under a minute instead of a few")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of the summary")
    parser.add_argument("--cluster", metavar="C", default=None,
                        help="calibrate every worker of this Dask cluster instead (local:N or "
                             "a scheduler address), each storing its own profile, and measure "
                             "the network's latency and bandwidth")
    parser.add_argument("--plot", metavar="DIR", default=None,
                        help="also write the g sweep, the gamma ratios and the transfers as PNGs into DIR")


def _fmt_seconds(s: float) -> str:
    if s == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def _pm(profile, name: str) -> str:
    """``"  ± 1.2 %"``: the recorded relative standard error of a number, if any."""
    err = profile.rel_error(name) if hasattr(profile, "rel_error") else 0.0
    return f"  ± {100 * err:.2g} %" if err > 0 else ""


#: How ``hpu calibrate`` words each ``contention_basis``.
_BASES = {"quiet rounds": "from the rounds no other process disturbed",
          "waits removed": "the machine was busy: without the waits for a core, the sides "
                           "have cores of their own",
          "loaded rounds": "corrected for other processes' load: less sure"}


def format_summary(profile, path, wall_s: float | None = None) -> str:
    """The readable report of a profile (also used by ``hpu info``).

    Each measured number carries ± its relative standard error where the
    profile records one (the spread of its repeats); ``confidence`` says how
    far apart two predicted times must be for the measurement to tell them apart.
    """
    bw = "unbounded" if profile.seconds_per_byte <= 0 else f"{1 / profile.seconds_per_byte / 1e9:.3g} GB/s"
    from hpu._opencl._device import host_cores, label_sub_units
    from hpu.calibrate import disjoint_cores

    units = label_sub_units(profile.device)
    if profile.device_shares_cpu and disjoint_cores(profile.device_kind, units, profile.p,
                                                    host_cores()):
        # a sub-device beside Numba's threads (issue 14): no core is shared, the memory is
        shares = (f"yes: a {profile.device_kind} sub-device of {units} compute units on "
                  f"cores of its own beside Numba's {profile.p} threads; they share the memory "
                  "system (the contention below)")
    elif profile.device_shares_cpu:
        shares = (f"yes: a {profile.device_kind} device, it runs on the same cores as Numba's "
                  f"{profile.p} threads (CPU and device compete for them)")
    else:
        shares = f"no: a {profile.device_kind} device, separate from the CPU cores"
    lines = [
        f"device      {profile.device} ({profile.platform}, driver {profile.driver_version}, "
        f"{profile.compute_units} compute units)",
        f"shares CPU  {shares}",
        f"p           {profile.p}  CPU cores Numba uses",
        (f"g           {profile.g}  work-items that saturate the device"
         if not getattr(profile, "device_occupancy", ()) else
         f"g           {profile.g}  tasks at the speed of one alone, at best (hpu's solver, "
         f"1..{int(profile.device_occupancy[-1][0])} tasks at once: "
         + ", ".join(f"{int(t)}: {r:.3g}x" for t, r in profile.device_occupancy[1:])
         + " one task's time)"),
        f"gamma       {profile.gamma:.4g}{_pm(profile, 'gamma')}  (1/gamma = {profile.inv_gamma:.4g}; "
        f"one device work-item vs one CPU core)",
        f"lambda      {_fmt_seconds(profile.latency_s)}{_pm(profile, 'latency_s')}  transfer latency",
        f"delta       {profile.seconds_per_byte:.3g} s/byte{_pm(profile, 'seconds_per_byte')}  ({bw})",
        f"CPU merge   {_fmt_seconds(profile.cpu_seconds_per_element)} per element (one core)"
        f"{_pm(profile, 'cpu_seconds_per_element')}",
        f"source      {profile.source}{' (quick)' if profile.quick else ''}, {profile.created}, "
        f"host {profile.host}, hpu {profile.hpu_version}",
        f"profile     {path}",
    ]
    if getattr(profile, "measured_contention", None) is not None:
        basis = getattr(profile, "contention_basis", None)
        lines.insert(-2, f"contention  {profile.measured_contention:.3g}{_pm(profile, 'contention')}"
                         "  slowdown while both sides run at once"
                         + (f" ({_BASES.get(basis, basis)})" if basis else ""))
    load = getattr(profile, "outside_load", None)
    if load is not None:
        from hpu.calibrate import BUSY_LOAD

        lines.insert(-2, f"load        other processes used {100 * load:.0f} % of the cores while "
                         "measuring" + (" (busy: see the warning above; calibrate again when "
                                        "quiet)" if load > BUSY_LOAD else ""))
    rates = getattr(profile, "combine_rates", ())
    if rates:
        by_size = ", ".join(f"{_fmt_seconds(r)} at {b / 2**20:.3g} MiB" for b, r in rates)
        lines.insert(-2, f"combines    {by_size} per element (one top-level task, one core)"
                         f"{_pm(profile, 'combine_rates')}")
    if getattr(profile, "combine_gamma", None) is not None:
        lines.insert(-2, f"combine γ   {profile.combine_gamma:.4g}{_pm(profile, 'combine_gamma')}"
                         "  (one device work-item vs one CPU core, on the combine)")
    if getattr(profile, "uncertainty", ()):
        lines.insert(-2, f"confidence  predicted times ± {100 * profile.time_rel_error:.2g} % "
                         "(one standard error); plans closer than twice that are a tie")
    if wall_s is not None:
        lines.append(f"took        {wall_s:.1f} s")
    return "\n".join(lines)


def _cluster_main(args) -> int:
    from hpu._dask import calibrate_cluster

    try:
        got = calibrate_cluster(args.cluster, device=args.device, quick=args.quick)
    except (TypeError, ValueError) as err:
        print(f"hpu calibrate: error: --cluster {args.cluster!r}: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(got, indent=2))
        return 0
    print(f"cluster     {got['scheduler']}")
    for addr, prof in got["workers"].items():
        print(f"  {addr}: p={prof['p']} g={prof['g']} gamma={prof['gamma']:.4g} "
              f"device {prof['device']} -> {prof['path']}")
    net = got["network"]
    print(f"network     lambda {_fmt_seconds(net['latency_s'])} per task round trip, "
          f"delta {net['seconds_per_byte']:.3g} s/byte")
    return 0


def main(args) -> int:
    if getattr(args, "cluster", None):
        return _cluster_main(args)
    from hpu import calibrate as cal

    if args.plot:
        # the folder checked before the measuring, not after it
        out = Path(args.plot)
        if out.exists() and not out.is_dir():
            print(f"hpu calibrate: error: --plot {args.plot!r} is a file; pass a folder to "
                  "write g_sweep.png, gamma.png and transfers.png into (made if missing)",
                  file=sys.stderr)
            return 2
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            print(f"hpu calibrate: error: --plot {args.plot!r}: the folder cannot be made "
                  f"({err.strerror or err}); pass a folder you can write", file=sys.stderr)
            return 2
    import warnings

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", HpuPerformanceWarning)
        profile = cal.calibrate(args.device, quick=args.quick)
    wall = time.perf_counter() - t0
    for w in said:      # (one line each, not Python's warning with this file's source line)
        if issubclass(w.category, HpuPerformanceWarning):
            print(f"hpu calibrate: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    path = cal.save_profile(profile)
    plots = []
    if args.plot:
        for name, fn in (("g_sweep.png", cal.plot_g_sweep), ("gamma.png", cal.plot_gamma),
                         ("transfers.png", cal.plot_transfers)):
            fn(profile, out / name)
            plots.append(str(out / name))
    if args.json:
        data = profile.summary()
        data["profile_path"] = str(path)
        data["wall_s"] = round(wall, 3)
        if plots:
            data["plots"] = plots
        print(json.dumps(data, indent=2))
    else:
        print(format_summary(profile, path, wall))
        for p in plots:
            print(f"figure      {p}")
    return 0
