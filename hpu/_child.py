"""A child Python process that imports the same hpu (and algorithms) as this one.

Why
===

hpu compiles code in a child process so that the measuring process loads it
from the caches (``calibrate._prime_cpu_code``, ``hpu run``'s
``_compile_in_child``): code Numba compiles in a process runs slower there
than the same code loaded by a later one (guide §6).  That only works when the
child compiles *the same* modules.  ``python -c`` and ``python -m`` put the
current folder first on ``sys.path``, and the README's commands run in a
checkout of hpu: the child imported the checkout's ``hpu/``, not the one
installed in the virtual environment that the parent runs.  Its generated
modules then went to other cache entries, the parent compiled everything
itself, and the first calibration of a fresh machine read the CPU 20-45 %
slow: eleven first runs of the README's job in a fresh clone read γ 1.19-1.45,
against 0.95-1.01 for the same command run from another folder or with this
module (2026-11-26, the 2-core VM).

:func:`command` runs the interpreter with ``-P`` (no current folder on the
path) and :func:`environment` puts the folders this process imported ``hpu``
and ``algorithms`` from first on ``PYTHONPATH``; :func:`run_quietly` runs such
a child, best effort, as both callers want.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["command", "environment", "package_roots", "run_quietly"]


def package_roots() -> list[str]:
    """The folders holding the ``hpu`` and (if imported) ``algorithms`` packages this process
    uses, in that order, without repeats."""
    roots: list[str] = []
    for name in ("hpu", "algorithms"):
        mod = sys.modules.get(name)
        file = getattr(mod, "__file__", None)
        if file:
            root = str(Path(file).resolve().parent.parent)
            if root not in roots:
                roots.append(root)
    return roots


def command(*args: str) -> list[str]:
    """``[python, -P, *args]``: this interpreter, without the current folder on its path."""
    return [sys.executable, "-P", *args]


def environment(**extra: str) -> dict[str, str]:
    """This process's environment, ``PYTHONPATH`` led by :func:`package_roots`, plus ``extra``."""
    env = dict(os.environ)
    old = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    roots = package_roots()
    env["PYTHONPATH"] = os.pathsep.join(roots + [p for p in old if p not in roots])
    env.update(extra)
    return env


def run_quietly(*args: str, timeout: float, **extra: str) -> None:
    """Run ``python -P *args`` in :func:`environment` (``extra`` added), output discarded,
    and wait at most ``timeout`` seconds.  Best effort: a child that cannot start, fails or
    runs over is ignored, for the caller then does the work itself, only slower."""
    import subprocess

    try:
        subprocess.run(command(*args), env=environment(**extra), timeout=timeout,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        pass
