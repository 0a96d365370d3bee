"""``hpu plan``: ask the HPU model how a divide-and-conquer problem splits, and why.

The command is the model made visible: it prints the paper's continuous answer
(α*, the level y the device reaches, the device's share of the work), the
integer split the runtime would use (``transfer_level``), the predicted times,
and a picture of the division in the manner of 004's Figure 4.  It imports
only :mod:`hpu.model` so that it starts quickly, and every bad value is one
line on stderr with exit code 2.

Where the machine comes from: flags given on the command line always win.
For the rest, ``hpu plan ALGORITHM`` (``hpu plan mergesort --n N``) reads
this machine's calibration profile (p, g, γ, λ, δ, and seconds per unit of
work, so the predicted times are in seconds; with no profile the first call
calibrates quickly once and says so, ``HPU_NO_AUTOCALIBRATE=1`` uses built-in
values).  Without an algorithm, or with ``--paper``, the defaults are the
worked example of 004 §5.2.2 (p = 4, g = 2^12, γ = 1/160, n = 2^24).

The measured strategies (``--strategy minmax`` or ``adaptive``, issue 16) choose
the split from timings, not from the machine's figures, so they need a ready
ALGORITHM and the OpenCL device a run would use: ``hpu plan mergesort
--strategy adaptive`` reads the rate history exactly as the next run would
(``hpu history`` shows it) and ``--strategy minmax`` samples the function on
``--n`` random keys as a run does (about four runs of it).  Both print the split
that run would execute and why; the shape and machine flags do not apply.
"""
from __future__ import annotations

import json
import re
import sys
from fractions import Fraction

from hpu import model

__all__ = ["NAME", "HELP", "ALGORITHMS", "add_arguments", "main", "render_text"]

NAME = "plan"
HELP = "show how the HPU model splits a divide-and-conquer problem between CPU and device"

_DEFAULTS = {"a": "2", "b": "2", "cost": "n", "n": "16777216", "p": "4", "g": "4096",
             "gamma": "1/160"}

_BAR = 48

#: the strategies that measure the function instead of asking the model (hpu._strategies)
MEASURED = ("minmax", "adaptive")


class _BadValue(Exception):
    """A flag's value is unusable; the message is the one line to print."""


def _names() -> tuple[str, ...]:
    """The ready algorithms (the same names ``hpu run`` accepts)."""
    from hpu._commands import _plugins

    try:
        return _plugins.names()
    except _plugins._PluginError:  # pragma: no cover - installed without algorithms
        return ()


def _shape(name: str):
    """``(a, b, cost)`` of the ready algorithm ``name``, read from its decorated function."""
    from hpu._commands import _plugins

    if name not in _names():
        return None
    a, b, cost = _plugins.get(name).shape
    return a, b, cost


def _element_bytes(name: str | None) -> int:
    """Bytes per element of every array a task of ``name`` moves, for ``hpu run``'s default
    int32 keys (mergesort: ``a`` and ``tmp``; sum: int64 partial sums); 4 without a name."""
    if name is None or name not in _names():
        return 4
    import numpy as np

    from hpu._commands import _plugins

    alg = _plugins.get(name)
    x = alg.make_input(2, np.int32, 0)
    args = alg.prepare(x).args(x)
    return sum(v.itemsize for v in args if isinstance(v, np.ndarray)) or 4


def __getattr__(name: str):
    if name == "ALGORITHMS":  # name -> (a, b, cost), read from the plug-ins when asked
        return {n: _shape(n) for n in _names()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def add_arguments(parser) -> None:
    parser.add_argument("algorithm", nargs="?", metavar="ALGORITHM", default=None,
                        help=f"a ready algorithm: {', '.join(_names())} (its a, b and cost; "
                             "default: --a/--b/--cost)")
    parser.add_argument("--a", default=None, metavar="A",
                        help="recursive calls per task, integer >= 2 (default 2)")
    parser.add_argument("--b", default=None, metavar="B",
                        help="size shrink factor per level, > 1, e.g. 2 or 3/2 (default 2)")
    parser.add_argument("--cost", default=None, metavar="F",
                        help="divide+combine cost f(n): 1, n, 'n log n', n^k (default n)")
    parser.add_argument("--n", default=_DEFAULTS["n"], metavar="N",
                        help="input size, e.g. 16777216 or 2^24 (default 2^24)")
    parser.add_argument("--p", default=None, metavar="P",
                        help="CPU cores (default: the profile with ALGORITHM, else 4)")
    parser.add_argument("--g", default=None, metavar="G",
                        help="device parallelism, e.g. 4096 or 2^12 (default: the profile "
                             "with ALGORITHM, else 4096)")
    parser.add_argument("--gamma", default=None, metavar="GAMMA",
                        help="device core speed / CPU core speed, a number or a fraction "
                             "such as 1/160 (default: the profile with ALGORITHM, else 1/160)")
    parser.add_argument("--paper", action="store_true",
                        help="use the machine of 004's worked example, not the profile")
    parser.add_argument("--cl-device", "--device", dest="device", default=None, metavar="D",
                        help="whose profile to read: an OpenCL device as `hpu devices` lists it "
                             "(the name `hpu run` uses; --device is the old spelling)")
    parser.add_argument("--strategy", default="advanced", metavar="S",
                        help="advanced (004 5.2, default), basic (004 5.1), or, with "
                             "ALGORITHM, minmax (002: sampled on --n keys) or adaptive "
                             "(001: the rate history of earlier runs)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _number(text: str, flag: str, expected: str, example: str) -> Fraction:
    """Parse ``12``, ``0.5``, ``1/160``, ``1e-3`` or ``2^24`` exactly."""
    s = str(text).strip()
    m = re.fullmatch(r"(\d+)\s*(?:\^|\*\*)\s*(\d+)", s)
    try:
        if m:
            if int(m.group(2)) > 4096:
                raise ValueError
            return Fraction(int(m.group(1)) ** int(m.group(2)))
        return Fraction(s)
    except (ValueError, ZeroDivisionError):
        raise _BadValue(f"{flag} {text!r} is not a number: expected {expected}; "
                        f"pass e.g. {flag} {example}") from None


def _integer(text: str, flag: str, expected: str, example: str, minimum: int) -> int:
    v = _number(text, flag, expected, example)
    if v.denominator != 1 or v < minimum:
        raise _BadValue(f"{flag} {text!r} is not valid: expected {expected}; "
                        f"pass e.g. {flag} {example}")
    return int(v)


def _positive(text: str, flag: str, expected: str, example: str, *, above: Fraction,
              strict: bool) -> float:
    v = _number(text, flag, expected, example)
    if v < above or (strict and v == above):
        raise _BadValue(f"{flag} {text!r} is not valid: expected {expected}; "
                        f"pass e.g. {flag} {example}")
    return int(v) if v.denominator == 1 else float(v)


def _inputs(args) -> tuple[model.Problem, model.Machine, str]:
    shape = _shape(args.algorithm) if args.algorithm is not None else None
    if args.algorithm is not None and shape is None:
        raise _BadValue(f"algorithm {args.algorithm!r} is unknown: expected one of "
                        f"{', '.join(_names())}; or give its shape with --a, --b and --cost")
    a_text = args.a if args.a is not None else (str(shape[0]) if shape else _DEFAULTS["a"])
    b_text = args.b if args.b is not None else (str(shape[1]) if shape else _DEFAULTS["b"])
    cost_text = args.cost if args.cost is not None else (shape[2] if shape else _DEFAULTS["cost"])
    a = _integer(a_text, "--a", "an integer >= 2 (recursive calls per task)", "2", 2)
    b = _positive(b_text, "--b", "a number > 1 (size shrink factor)", "2", above=Fraction(1),
                  strict=True)
    try:
        cost = model.parse_cost(cost_text)
    except ValueError:
        raise _BadValue(f"--cost {cost_text!r} is not understood: expected one of "
                        f"{model.ACCEPTED_COSTS}; pass e.g. --cost n") from None
    n = _integer(args.n, "--n", "an integer >= 1 (input size)", "16777216", 1)
    if args.device is not None and (args.algorithm is None or args.paper):
        raise _BadValue(f"--cl-device {args.device!r} chooses the device whose profile an "
                        "ALGORITHM's plan reads; this plan reads none (the model's, with the "
                        "--p, --g and --gamma given): name an algorithm, or drop --cl-device")
    prof = _profile(args) if args.algorithm is not None and not args.paper else None
    extra = {}
    if prof is not None:
        args.p = args.p if args.p is not None else str(prof.p)
        args.g = args.g if args.g is not None else str(prof.g)
        args.gamma = args.gamma if args.gamma is not None else repr(float(prof.gamma))
        extra = dict(latency_s=prof.latency_s, seconds_per_byte=prof.seconds_per_byte,
                     seconds_per_unit=prof.cpu_seconds_per_element)
        args.profile_info = prof
    for flag in ("p", "g", "gamma"):
        if getattr(args, flag) is None:
            setattr(args, flag, _DEFAULTS[flag])
    p = _positive(args.p, "--p", "a number >= 1 (CPU cores)", "4", above=Fraction(1),
                  strict=False)
    g = _positive(args.g, "--g", "a number >= 1 (device parallelism)", "4096",
                  above=Fraction(1), strict=False)
    gamma = _positive(args.gamma, "--gamma", "a number > 0 (device core speed / CPU core "
                      "speed)", "1/160", above=Fraction(0), strict=True)
    strategy = str(args.strategy).strip().lower()
    if strategy not in model.STRATEGIES:
        raise _BadValue(f"--strategy {args.strategy!r} is unknown: expected one of "
                        f"{', '.join(model.STRATEGIES + MEASURED)}; pass e.g. --strategy "
                        "advanced")
    try:
        return model.Problem(a, b, cost, n), model.Machine(p, g, gamma, **extra), strategy
    except ValueError as err:  # what only the model can check, e.g. n too large
        raise _BadValue(f"{err} (from --a {a_text} --b {b_text} --cost {cost_text!r} "
                        f"--n {args.n})") from None


def _profile(args):
    """The active calibration profile (imports hpu's profile store only when needed)."""
    from hpu._errors import HpuError
    from hpu.calibrate import active_profile

    try:
        return active_profile(args.device)
    except HpuError as err:
        raise _BadValue(str(err)) from None


def _copy_chunks(args) -> int:
    """The pieces a run of ALGORITHM on the profile's device copies its data in
    (:func:`hpu._plan.copy_chunks`: more than 1 only for a device with its own memory), so
    that the plan printed prices the overlap the run does; 1 when no device can be had."""
    from hpu._commands import _plugins
    from hpu._errors import HpuError
    from hpu._opencl._backend import OpenCLBackend
    from hpu._plan import copy_chunks

    try:
        handle = OpenCLBackend.select(args.device)
    except HpuError:
        return 1
    return copy_chunks(_plugins.get(args.algorithm).function._parse(), handle)


def _profile_path(args) -> str | None:
    """Where the profile lives (None for built-in values that were never stored)."""
    from hpu._profile import profile_path

    path = profile_path(args.device)
    return str(path) if path.exists() else None


def _fraction_text(x: float) -> str:
    f = Fraction(x).limit_denominator(100000)
    if f.denominator != 1 and abs(float(f) - x) <= 1e-12 * abs(x):
        return f"{f.numerator}/{f.denominator}"
    return f"{x:g}"


def _size_text(n: int) -> str:
    if n > 1 and n & (n - 1) == 0:
        return f"{n} (2^{n.bit_length() - 1})"
    return str(n)


def _t(x: float) -> str:
    return f"{x:.4g}"


def render_text(plan: model.Plan, algorithm: str | None = None) -> str:
    """The human-readable report of ``plan``: the numbers, then the picture."""
    unit = "model units" if plan.time_unit == "unit" else "s"
    name = f"{algorithm}: " if algorithm else ""
    lines = [
        f"{name}T(n) = {plan.a} T(n/{plan.b:g}) + f(n), f(n) = {plan.cost}, "
        f"n = {_size_text(plan.n)}, tree height log_b n = {plan.height:.4g}",
        f"machine: p = {plan.p:g} CPU cores, g = {plan.g:g} device cores, "
        f"gamma = {_fraction_text(plan.gamma)}",
        "",
    ]
    section = {"advanced": "004 5.2", "basic": "004 5.1", "minmax": "002, sampled",
               "adaptive": "001, the rate history"}.get(plan.strategy, "given")
    rows = [("strategy", plan.strategy, f"({section})")]
    if plan.strategy in MEASURED:
        rows.append(("alpha", f"{plan.split_alpha:.4f}",
                     "the CPU's share of level y's tasks, from the measurements"))
        rows.append(("y", f"{plan.y:g}", "the level the split is made at"))
    elif plan.strategy == "advanced":
        rows.append(("alpha*", f"{plan.alpha:.4f}", "the CPU's share of the tasks below level y"))
        rows.append(("y", f"{plan.y:.4f}", "the level the device reaches (continuous model)"))
    else:
        rows.append(("alpha", f"{plan.alpha:g}", "every level from y down runs on the device"))
        rows.append(("y", f"{plan.y:.4f}", "log_a(p/gamma), the first level faster on the device"))
    if plan.transfer_level is None:
        rows.append(("transfer_level", "none", "the device is not used"))
    else:
        m = plan.a ** plan.transfer_level
        cpu = round(plan.split_alpha * m)
        rows.append(("transfer_level", str(plan.transfer_level),
                     f"the runtime splits there: {cpu} of {m} tasks on the CPU "
                     f"(alpha = {plan.split_alpha:.4f}), subtrees from level K = "
                     f"{plan.cutoff_level}"))
    rows.append(("gpu_work_fraction", f"{100 * plan.gpu_work_fraction:.1f} %",
                 "of the work (continuous model)"))
    rows.append(("predicted time", _t(plan.predicted_time),
                 f"{unit} (speedup {plan.speedup:.2f}x over the CPU alone)"))
    rows.append(("CPU alone", _t(plan.cpu_only_time),
                 f"{unit} on {plan.p:g} cores; one core {_t(plan.sequential_time)}"))
    rows.append(("device alone", _t(plan.device_only_time), unit))
    rows.append(("why", "", plan.reason))
    width = max(len(k) for k, _, _ in rows)
    vwidth = max(len(v) for _, v, _ in rows)
    lines += [f"{k:<{width}}  {v:<{vwidth}}  {note}".rstrip() if v else f"{k:<{width}}  {note}"
              for k, v, note in rows]
    lines.append("")
    lines.append("division of the work, levels top to bottom "
                 "(bar width ~ the level's work; # CPU, = device):")
    lines += _picture(plan)
    return "\n".join(lines)


def _picture(plan: model.Plan) -> list[str]:
    biggest = max(level.work for level in plan.levels) or 1.0
    label_width = max(len(str(level.index)) for level in plan.levels)
    out = []
    for level in plan.levels:
        width = max(1, round(_BAR * level.work / biggest))
        dev = round(width * level.device_fraction)
        if level.device_fraction > 0 and dev == 0:
            dev = 1
        bar = "#" * (width - dev) + "=" * dev
        notes = []
        if plan.transfer_level is not None and level.index == plan.transfer_level:
            notes.append("<- transfer level")
        if level.leaves:
            notes.append("leaves")
        note = ("  " + ", ".join(notes)) if notes else ""
        out.append(f"  {level.index:>{label_width}} |{bar:<{_BAR}}|{note}")
    return out


def _measured(args, strategy: str) -> int:
    """``--strategy minmax|adaptive``: the plan the run of ALGORITHM on ``--n`` random keys
    would execute, from the same measurements (see the module docstring)."""
    if args.algorithm is None or args.algorithm not in _names():
        raise _BadValue(f"--strategy {strategy} measures a real function, so it needs a ready "
                        f"algorithm: expected one of {', '.join(_names())}; pass e.g. "
                        f"`hpu plan mergesort --strategy {strategy}`")
    given = [f"--{f}" for f in ("a", "b", "cost", "p", "g", "gamma")
             if getattr(args, f) is not None] + (["--paper"] if args.paper else [])
    if given:
        raise _BadValue(f"--strategy {strategy} takes the split from timings of the function "
                        f"on this machine, so {', '.join(given)} cannot be used with it: leave "
                        f"{'it' if len(given) == 1 else 'them'} out, or use --strategy advanced "
                        "to plan from a shape and machine given by hand")
    n = _integer(args.n, "--n", "an integer >= 1 (input size)", "16777216", 1)
    import warnings

    import numpy as np

    from hpu._commands import _plugins
    from hpu._errors import HpuError, HpuPerformanceWarning

    alg = _plugins.get(args.algorithm)
    x = alg.make_input(n, np.int32, 0)
    call = alg.prepare(x).args(x)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HpuPerformanceWarning)
            plan = alg.function.options(device="hybrid", strategy=strategy,
                                        cl_device=args.device).plan(*call)
    except HpuError as err:
        raise _BadValue(str(err)) from None
    if args.json:
        d = plan.to_dict()
        d.update(algorithm=args.algorithm, machine="measured")
        print(json.dumps(d))
        return 0
    print(render_text(plan, args.algorithm))
    if strategy == "adaptive":
        from hpu._history import history_dir

        print(f"\nrates from the history in {history_dir()} (`hpu history show` lists them; "
              "every adaptive run adds its own)")
    else:
        print("\nsamples (k CPU tasks, c(k) s, g(m-k) s): "
              + "; ".join(f"({int(k)}, {c:.4g}, {g:.4g})" for k, c, g in plan.samples))
    return 0


def main(args) -> int:
    strategy = str(args.strategy).strip().lower()
    if strategy in MEASURED:
        try:
            return _measured(args, strategy)
        except _BadValue as err:
            print(f"hpu plan: error: {err}", file=sys.stderr)
            return 2
    try:
        problem, machine, strategy = _inputs(args)
    except _BadValue as err:
        print(f"hpu plan: error: {err}", file=sys.stderr)
        return 2
    prof = getattr(args, "profile_info", None)
    contention = prof.contention if prof is not None else 1.0
    rel_error = getattr(prof, "time_rel_error", 0.0) if prof is not None else 0.0
    # the planner a run uses, with the bytes per element a run of this algorithm moves
    from hpu._plan import model_plan

    result = model_plan(problem, machine, strategy, _element_bytes(args.algorithm), contention,
                        rel_error, _copy_chunks(args) if prof is not None else 1)
    if prof is not None:
        # and, as a run decides it, one task on the calling thread where the split's fixed
        # costs (the profile's) would cost more than they save: the plan the run executes
        from hpu import _overheads
        from hpu._plan import _finish

        result = _finish(result, _overheads.overheads_of(prof), small=True)
    if args.json:
        d = result.to_dict()
        d["algorithm"] = args.algorithm
        d["latency_s"] = machine.latency_s
        d["seconds_per_byte"] = machine.seconds_per_byte
        d["machine"] = "profile" if prof is not None else "flags"
        d["profile_path"] = _profile_path(args) if prof is not None else None
        d["profile_source"] = getattr(prof, "source", None) if prof is not None else None
        print(json.dumps(d))
    else:
        print(render_text(result, args.algorithm))
        if prof is not None:
            where = _profile_path(args)
            print(f"\nmachine from the {getattr(prof, 'source', 'stored')} profile"
                  + (f" {where}" if where else "")
                  + (" (the OpenCL device shares the CPU's cores: contention "
                     f"{contention:g} while both run)" if prof.device_shares_cpu else ""))
    return 0
