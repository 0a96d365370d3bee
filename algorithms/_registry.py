"""The plug-in registry: what ``hpu run``, ``hpu plan``, the contract tests and ``bench/`` need
to know about a ready algorithm, declared once, in the algorithm's own module.

Why a registry
==============

Each consumer used to keep its own table (an if-chain over names in ``hpu run``,
a shape table in ``hpu plan`` that lacked ``mergesort3``).  Now every module of
this package ends with ``register(Algorithm(...))`` and the consumers ask
:func:`get` or :func:`names`; adding an algorithm is adding one file here.
The CLI name of an algorithm is its module's name, so :func:`names` lists them
without importing anything (``hpu --help`` stays fast), and :func:`get` imports
the one module asked for.  hpu itself never imports this package at import
time; its CLI imports it lazily, as the source of plug-ins.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["Algorithm", "Prepared", "register", "get", "names", "uniform_keys",
           "array_diff", "close", "float_tolerance"]


@dataclass(frozen=True)
class Prepared:
    """How to run and check an algorithm on one input ``x`` (what may depend on its dtype)."""

    args: Callable[[Any], tuple]              #: x -> the function's arguments (private copies)
    output: Callable[[tuple, Any], Any]       #: (arguments, returned value) -> compared output
    expected: Callable[[Any], Any]            #: x -> the reference output
    check: Callable[[Any, Any], "str | None"]  #: (got, want) -> None, or where they differ
    #: ((key, label, fn(x) -> output), ...): NumPy methods ``hpu run`` times next to hpu's
    numpy_methods: tuple = ()


@dataclass(frozen=True)
class Algorithm:
    """One ready algorithm, as its module registers it.

    ``name``: the CLI name (the module's name).  ``display``: a short label for
    tables.  ``function``: the :class:`hpu.DivideAndConquer`.  ``prepare``:
    ``x -> Prepared``.  ``make_input``: ``(n, dtype, seed) -> x``, the random
    keys of a run.  ``reference_label``: what the result is checked against.
    """

    name: str
    display: str
    function: Any
    prepare: Callable[[Any], Prepared]
    reference_label: str
    make_input: Callable[[int, Any, int], Any] = field(default=None)

    def __post_init__(self):
        if self.make_input is None:
            object.__setattr__(self, "make_input", uniform_keys(0, 2))

    @property
    def shape(self) -> tuple[int, float, str]:
        """``(a, b, cost)`` of the recurrence, from the decorated function."""
        spec = self.function.spec
        return spec.a, spec.b, spec.cost


_REGISTRY: dict[str, Algorithm] = {}


def register(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm``; its ``name`` must be its module's (how :func:`names` finds it)."""
    _REGISTRY[algorithm.name] = algorithm
    return algorithm


def names() -> tuple[str, ...]:
    """The registered algorithms' names, without importing them (sorted)."""
    import algorithms

    return tuple(sorted(m.name for m in pkgutil.iter_modules(algorithms.__path__)
                        if not m.name.startswith("_")))


def get(name: str) -> Algorithm:
    """The algorithm called ``name``; ``KeyError`` naming the known ones if there is none."""
    if name not in names():
        raise KeyError(f"algorithm {name!r} is unknown: expected one of {', '.join(names())}")
    importlib.import_module(f"algorithms.{name}")
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"algorithms/{name}.py does not register an algorithm called {name!r}: "
                       "end it with register(Algorithm(name=..., ...))") from None


# ------------------------------------------------------------------ helpers for modules

def uniform_keys(lo_per_n: int, hi_per_n: int):
    """``(n, dtype, seed) -> keys`` uniform in ``[lo·n, hi·n)``, clipped to the dtype's range.
    Floats are drawn as float64 and rounded to the dtype."""
    def make(n: int, dtype, seed: int):
        rng = np.random.default_rng(seed)
        dtype = np.dtype(dtype)
        lo, hi = lo_per_n * n, hi_per_n * n
        if dtype.kind == "f":
            return rng.uniform(lo, hi, n).astype(dtype)
        info = np.iinfo(dtype)
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max) + 1)
        return rng.integers(lo, hi, n, dtype=dtype)

    return make


def array_diff(got, want) -> str | None:
    """None when equal bit for bit, else how many keys differ and the first."""
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape}/{got.dtype}, expected {want.shape}/{want.dtype}"
    bits = np.dtype(f"u{got.dtype.itemsize}")
    differ = np.flatnonzero(got.view(bits) != want.view(bits))
    if differ.size == 0:
        return None
    i = int(differ[0])
    return (f"{differ.size} of {want.size} keys differ, first at index {i} "
            f"(got {got[i]!r}, expected {want[i]!r})")


def close(got, want, tol) -> bool:
    if tol == 0:
        return got == want
    return abs(float(got) - float(want)) <= tol


def float_tolerance(x, dtype) -> float:
    """A bound on the rounding difference of two summation orders of ``x`` in ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return 0
    return float(x.size + 1) * float(np.finfo(dtype).eps) * float(np.abs(x).astype(np.float64).sum())
