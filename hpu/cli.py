"""The ``hpu`` command.

One dispatcher, one module per subcommand under ``hpu/_commands/``: each module
exposes ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``main(args) -> int``.
Subcommands import their heavy dependencies (Numba, PyOpenCL) inside ``main`` so
that ``hpu --help`` and ``hpu plan`` start quickly.

Exit codes: 0 success, 1 a failed check (a run whose result is wrong), 2 bad
usage or bad values (argparse's convention), 3 an environment problem (no
OpenCL device, an unusable profile).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from hpu._errors import HpuError

__all__ = ["main", "build_parser"]

#: Subcommand modules, in the order ``hpu --help`` lists them.
COMMANDS = ("plan", "run", "calibrate", "info", "devices", "history")


def _load(name: str):
    try:
        return importlib.import_module(f"hpu._commands.{name}")
    except ModuleNotFoundError as err:
        if err.name == f"hpu._commands.{name}":
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    from hpu import __version__

    parser = argparse.ArgumentParser(
        prog="hpu",
        description="Hybrid CPU + OpenCL divide-and-conquer: plan, run and calibrate.",
    )
    parser.add_argument("--version", action="version", version=f"hpu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        mod = _load(name)
        if mod is None:
            continue
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_main=mod.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_main", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._main(args) or 0)
    except HpuError as err:
        print(f"hpu {args.command}: error: {err}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `hpu plan --json | head`: the reader went away; exit quietly as Unix tools do.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:  # pragma: no cover
            pass
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
