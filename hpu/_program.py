"""The specialisation of a function for one type signature: the shared ``Program``.

Why its own module
==================

Every backend runs the same specialisation: the generated Numba module (the
CPU's level drivers and the one-core baseline), the layout of the level arrays
and their dtypes.  Numba is the source of truth for types: the generated module
is compiled by it on the CPU, and the OpenCL translator must agree with what it
computes.  So :func:`specialize` loads the generated module through the disk
cache, compiles the recursive function and a probe of the divide for the
call's types, and reads the inferred types back to size the driver's level
arrays (``int64``/``float64``/``bool`` parameters as called, carried names and
results as Numba infers them, tuples per component).  The backends
(:mod:`hpu._cpu`, :mod:`hpu._opencl._backend`) only read a ``Program``; the
decorator keeps one per type signature.
"""
from __future__ import annotations

import re

import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from hpu._cache import load_module
from hpu._codegen import (DEFAULT_DEPTH, Layout, Types, core_source, cpu_source, iter_source,
                          iter_user_lines, make_layout, probe_items)
from hpu._errors import TranslationError
from hpu._frontend import Closure, DCSpec
from hpu._guard import check_array_fit

__all__ = ["Program", "specialize", "numba_signature"]


def numba_signature(values) -> tuple:
    import numba

    return tuple(numba.typeof(v) for v in values)


def _dtype_of(t, what: str, spec: DCSpec, lineno: int | None = None) -> np.dtype:
    from numba.core import types as nt
    from numba.np.numpy_support import as_dtype

    t = nt.unliteral(t)
    if isinstance(t, (nt.Boolean, nt.Integer, nt.Float)):
        return np.dtype(as_dtype(t))
    raise TranslationError(
        f"{what} of type {t} is not supported: per-task values must be int, float or bool "
        "scalars", filename=spec.filename, lineno=lineno or spec.lineno, construct=str(t),
        hint="Return and pass numbers; write arrays in place through array parameters")


@dataclass
class Program:
    """A function specialised for one type signature: layout, dtypes and compiled module."""

    spec: DCSpec
    closure: Closure
    layout: Layout
    types: Types
    module: Any                 #: the generated core module (Numba dispatchers)
    source: str                 #: its source
    signature: tuple            #: the Numba argument types
    boundscheck: bool | None = None
    _iter: dict = field(default_factory=dict, repr=False)
    _cpu: Any = field(default=None, repr=False)
    #: a recursion of this specialisation went deeper than the native depth (see cpu_module)
    deep: bool = field(default=False, repr=False)
    _lock: Any = field(default_factory=threading.Lock, repr=False)

    @property
    def function(self):
        """The user's recursive function compiled by Numba (one core): ``.sequential``.

        From :attr:`deep_module`: native recursion that continues deep subtrees
        on an explicit stack, so ``.sequential`` stays "the plain function on one
        core" and succeeds (or raises ``HpuRecursionError``) where the runs do.
        (``.sequential`` of small arguments tries the core module's first:
        :meth:`run_plain`.)
        """
        return getattr(self.deep_module, self.spec.name)

    @property
    def cpu_module(self):
        """The module the CPU backend runs.

        The type-independent core module (:attr:`module`: native recursion,
        which stops at :data:`hpu._guard.NATIVE_DEPTH` calls) until a run of
        this specialisation went deeper (:meth:`go_deep`); then
        :attr:`deep_module`.  Its growable-stack solver costs seconds of
        compilation (as much as the rest of the module), which a function whose
        recursion is never that deep (every balanced split) must not pay.
        """
        return self.deep_module if self.deep else self.module

    @property
    def deep_module(self):
        """:func:`hpu._codegen.cpu_source`, loaded once: the core module's drivers with a
        recursive function that continues deep subtrees on a growable explicit stack."""
        with self._lock:
            if self._cpu is None:
                self._cpu = load_module(cpu_source(self.spec, self.closure, self.layout,
                                                   self.types, self.boundscheck),
                                        f"{self.spec.name}_cpu")
            return self._cpu

    @property
    def has_deep_module(self) -> bool:
        """Whether :attr:`deep_module` is loaded (compiled, or read from the disk cache)."""
        return self._cpu is not None

    def run_plain(self, args, restore):
        """The recursive function on one core (``args``: its parameters, in order), for a
        rerun from restored arguments: the core module's, compiled with the program,
        and only where that stops at native depth while the limit lets a call go deeper,
        ``restore()`` and :attr:`function`'s.  The growable-stack solver costs more
        compilation than the rest of the module (18 s for a merge sort here), which a
        rerun that finds the user's error must not pay to say it."""
        if not self.deep and not self.has_deep_module:
            try:
                return getattr(self.module, self.spec.name)(*args)
            except Exception as err:  # noqa: BLE001 - the user's, raised by the caller
                if not self.could_go_deeper(err):
                    raise
            restore()
        return self.function(*args)

    def could_go_deeper(self, err: BaseException) -> bool:
        """Whether ``err`` is the core module's stop at the native depth while the
        limit (:func:`hpu._guard.depth_limits`) lets a run go deeper."""
        from hpu._codegen import frame_bytes
        from hpu._errors import HpuRecursionError
        from hpu._guard import NATIVE_DEPTH, depth_limits

        return (isinstance(err, HpuRecursionError) and not self.deep
                and depth_limits(frame_bytes(self.layout, self.types))[1] > NATIVE_DEPTH)

    def go_deep(self) -> None:
        """From now on run the module whose recursion continues on a growable stack."""
        self.deep = True
        self.__dict__.pop("_cpu_backends", None)  # hpu._hybrid.cpu_backend's, on the old module

    def iter_source(self, depth: int = DEFAULT_DEPTH) -> str:
        """The device's module (:func:`hpu._codegen.iter_source`); in bounds-checked mode
        its views' indices are marked for the translator's check."""
        return iter_source(self.spec, self.closure, self.layout, self.types, depth,
                           bounds=bool(self.boundscheck))

    def iter_user_lines(self, depth: int = DEFAULT_DEPTH) -> dict[int, int]:
        """:func:`hpu._codegen.iter_user_lines` of :meth:`iter_source`'s text."""
        return iter_user_lines(self.spec, self.closure, self.layout, self.types, depth,
                               bounds=bool(self.boundscheck))

    def iter_module(self, depth: int = DEFAULT_DEPTH):
        """The module with ``solve_iter``/``leaf_task_iter``/``leaf_level_iter`` (cached)."""
        with self._lock:
            mod = self._iter.get(depth)
            if mod is None:
                mod = load_module(self.iter_source(depth), f"{self.spec.name}_iter")
                self._iter[depth] = mod
            return mod


#: an identifier hpu generated (``f__d``, ``depth__``, ``hpu__x``), not a dunder
_GENERATED_NAME = re.compile(r"\b(?!__)\w+__\w*")


def numba_words(err) -> list[str]:
    """The lines of a Numba error that say what is wrong, in Numba's words: not its
    pipeline headers, not the place it found it (a ``File`` line, the source under it, an IR
    name: in hpu's generated module they name the generated file and renamed functions),
    not a line naming hpu's generated identifiers.  The caller gives the user's line."""
    keep = []
    for ln in (x.strip() for x in str(err).strip().splitlines()):
        if ln.startswith(("File ", "Return of:", "During:", "<source")):
            break
        if ln and not ln.startswith(("Failed in ", "- argument", "Enable logging")) \
                and "pipeline (step" not in ln and not _GENERATED_NAME.search(ln):
            keep.append(ln)
    return keep


def _compile(dispatcher, sig, spec: DCSpec, what: str):
    import numba

    try:
        dispatcher.compile(sig)
    except numba.core.errors.NumbaError as err:
        detail = " ".join(numba_words(err)[:3]) or type(err).__name__
        # an index the caller passed as a float (lo=0.0): named, with what Python says
        floats = [p for p, t in zip(spec.params, sig) if isinstance(t, numba.types.Float)]
        if floats and ("getitem" in detail or "setitem" in detail):
            detail = (f"{', '.join(floats)} {'is a float' if len(floats) == 1 else 'are floats'}"
                      f" at this call, and an array index must be an int (Python: "
                      f"IndexError, only integers ... are valid indices); pass int values. "
                      f"Numba: {detail}")
        digits = re.search(r"ndigits\(([^()]*)\)", detail)
        if digits:  # len(str(x)) (hpu._guard.ndigits): Numba's words name hpu's function
            detail = (f"len(str(x)) of a {digits.group(1)}: compiled, hpu counts the digits "
                      "of integers only (the str() of a float has a point)")
        raise _by_arguments(TranslationError(
            f"compiling {what} for arguments ({', '.join(str(t) for t in sig)}) is not "
            f"supported by Numba: {detail}", filename=spec.filename, lineno=spec.lineno,
            construct="Numba typing", hint="Check the argument types, or run .py_func to see "
            "the error in plain Python")) from None
    return dispatcher.overloads[sig].signature.return_type


def specialize(spec: DCSpec, closure: Closure, args: Mapping[str, Any],
               boundscheck: bool | None = None) -> Program:
    """Generate, load and type the module for a call with these (checked) arguments."""
    from numba.core import types as nt

    from hpu._guard import boundscheck_default

    if boundscheck is None:  # resolved once: every module of this specialisation agrees
        boundscheck = boundscheck_default()
    arrays = [p for p in spec.params if isinstance(args[p], np.ndarray)]
    check_array_fit(spec, closure, args)  # issue 11: int64 data, int32 scratch: refuse first
    lay = make_layout(spec, arrays)
    source = core_source(spec, closure, lay, boundscheck)
    module = load_module(source, spec.name)
    sig = numba_signature(args[p] for p in spec.params)

    # results: what the compiled recursive function returns
    ret = _compile(getattr(module, spec.name), sig, spec, f"{spec.name}")
    r = lay.result_arity
    if r == 0:
        if not isinstance(ret, nt.NoneType):
            raise TranslationError(f"{spec.name} returns {ret} on some path and nothing on "
                                   "others, which is not supported", filename=spec.filename,
                                   lineno=spec.lineno, construct="mixed returns",
                                   hint="Return a value everywhere, or nowhere")
        results = ()
    elif r == 1:
        results = (_dtype_of(ret, f"the result of {spec.name}", spec),)
    else:
        if not isinstance(ret, nt.BaseTuple) or len(ret) != r:
            raise TranslationError(f"{spec.name} returns {ret}, not a tuple of {r}",
                                   filename=spec.filename, lineno=spec.lineno,
                                   construct="tuple result", hint=f"Return {r} values everywhere")
        results = tuple(_dtype_of(t, f"component {k} of the result of {spec.name}", spec)
                        for k, t in enumerate(ret))

    varying = tuple(np.asarray(args[v]).dtype for v in lay.varying)
    items = probe_items(lay, spec)
    carried: tuple = ()
    if items:
        probe = _compile(module.hpu__probe, sig, spec, "the divide")
        kinds = dict(zip(lay.varying, varying))
        carried_types = []
        for (what, j, name), t in zip(items, probe):
            if what == "carried":
                carried_types.append(_dtype_of(t, f"the name {name!r} (read after the calls)",
                                               spec))
                continue
            call = spec.calls[j]
            got = _dtype_of(t, f"parameter {name!r} of the call", spec, call.lineno)
            want = kinds[name]
            if not _fits(got, want):
                # a float the caller passed for another parameter (hi=5.0 makes the
                # midpoint a float): named, since the call is where it is fixed
                floats = [f"{p}={args[p]!r}" for p in spec.params
                          if isinstance(args.get(p), (float, np.floating))]
                because = (f" (the call passed {', '.join(floats)}: a float, which makes "
                           f"{name!r} one)" if floats and want.kind in "iu" else "")
                raise _by_arguments(TranslationError(
                    f"passing a {got} value as parameter {name!r} is not supported: the "
                    f"top-level call passed {_a(_kind_word(want))} there, and each level stores "
                    f"{name!r} in one {want} array{because}", filename=spec.filename,
                    lineno=call.lineno,
                    construct=f"{got} argument for {name!r}",
                    hint=((f"If {name!r} is an index, use // or int(...) so that it stays "
                           "an integer; if it is a number on a line (a bound of an interval, "
                           f"halved with /), pass it as a float at the top-level call too "
                           f"({name}={_as_float(args.get(name))})")
                          if want.kind in "iu" else
                          f"pass a {_kind_word(got)} for {name!r} at the top-level call too")))
        carried = tuple(carried_types)
    types = Types(varying=varying, carried=carried, results=results)
    return Program(spec, closure, lay, types, module, source, sig, boundscheck)


def _by_arguments(err: TranslationError) -> TranslationError:
    """``err``, marked as a refusal of these arguments' types, not of the function: the
    call runs as the plain function instead (:meth:`hpu.DivideAndConquer._run`), which
    Python runs with any types, and says why."""
    err.by_arguments = True
    return err


def _as_float(v) -> str:
    """A top-level int argument as the float the caller could pass instead (``1`` -> ``1.0``)."""
    try:
        return repr(float(v))
    except (TypeError, ValueError, OverflowError):
        return "a float"


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _kind_word(dt: np.dtype) -> str:
    return {"b": "bool", "i": "int", "u": "int", "f": "float"}[np.dtype(dt).kind]


def _fits(got: np.dtype, want: np.dtype) -> bool:
    if want.kind == "b":
        return got.kind == "b"
    if want.kind in "iu":
        return got.kind in "biu"
    return True  # float parameters take ints and bools too
