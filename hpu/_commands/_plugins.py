"""The ready algorithms as the CLI sees them: plug-ins registered in ``algorithms/``.

hpu itself never imports ``algorithms``; ``hpu run`` and ``hpu plan`` do, here,
when they need a name or an algorithm, so that both accept exactly the same
names (every module of ``algorithms/``) and adding an algorithm is one file.
"""
from __future__ import annotations

__all__ = ["registry", "names", "get"]


class _PluginError(Exception):
    """The plug-in package is missing or an algorithm is unknown (the message says which)."""


def registry():
    try:
        from algorithms import _registry
    except ModuleNotFoundError as err:  # pragma: no cover - installed without algorithms
        raise _PluginError(f"the ready algorithms are not installed ({err}); install hpu with "
                          "its algorithms package") from None
    return _registry


def names() -> tuple[str, ...]:
    """Every registered algorithm's name (without importing the algorithms)."""
    return registry().names()


def get(name: str):
    """The registered algorithm ``name`` (imports its module)."""
    return registry().get(name)
