"""``@hpu.divide_and_conquer``: the user's function, still callable, run breadth-first.

Why an object and not a wrapper function
========================================

Like Numba's dispatcher, the decorated function is an object that still
behaves like the function (calling it returns what the original returns and
mutates arrays as the original does) and carries what a user needs around it:
``.py_func`` (the original), ``.sequential`` (the original compiled by Numba,
one core: the baseline every speedup is quoted against, as in 004),
``.run`` (the same call, returning a :class:`~hpu.Run` report), ``.plan``
(what the HPU model would choose) and ``.spec`` (the parsed shape).

What happens on a call
----------------------

1. The arguments are bound to the parameters and checked before anything is
   touched: arrays must be 1-D, C-contiguous, of a dtype in
   ``hpu._types.ARRAY_DTYPES`` and writeable when the function (or a helper)
   writes them; scalars are int, float or bool (NumPy scalars too).  A bad
   argument raises ``TypeError``/``ValueError`` naming the parameter, the
   value's dtype/shape/flags and the fix; the caller's arrays are untouched.
2. Which parameters are arrays decides the *specialisation*: the generated
   module (:mod:`hpu._codegen`, loaded through the disk cache
   :mod:`hpu._cache`) and the dtypes of the level arrays (:mod:`hpu._cpu`).
   One specialisation per type signature is kept on the object.
3. The planner (:mod:`hpu._plan`) decides the cut-off level K and the α/y
   split from the run options and the machine's profile; the breadth-first
   driver (:mod:`hpu._driver`) executes that plan (:mod:`hpu._hybrid`): on the
   Numba backend for ``device="cpu"``, adding a device backend and the split
   (:mod:`hpu._split`, with the CPU fallback) for ``"gpu"`` and ``"hybrid"``.
   The :class:`~hpu.Run` carries the plan it executed.

Run options and the user's arguments
------------------------------------

``f.options(device=..., alpha=..., ...)`` returns a :class:`Configured`
function whose arguments are only the user's (:mod:`hpu._options` holds the
one table of options).  ``f.run(*args, device=...)`` still accepts options as
keywords, unless one is also a parameter's name: then it refuses and names
``.options()``.

Debugging switch
----------------

With the environment variable ``HPU_DISABLE=1`` (read at each call), the
object stays an object but every call, ``.run`` and ``.sequential`` run
``.py_func``, the plain Python function (``.run`` then reports
``device="python"``).  Parsing is skipped too when the variable is set at
decoration time, so a function hpu refuses can still be run as Python.

Recursion in ``.py_func``: the original's recursive calls go through the
module-level name, which is this object; a call whose caller is the original
function's own code is passed straight to ``.py_func``, so ``f.py_func(...)``
runs entirely in plain Python, as written.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import hashlib
import inspect
import os
import reprlib
import sys
import threading
import time
import types
from typing import Any

import numpy as np

from hpu._errors import ArrayMismatchError, HpuError, TranslationError, user_stacklevel
from hpu._options import DEFAULT_DEVICE, DEVICES, STRATEGIES  # noqa: F401 - re-exported
from hpu._raises import is_replay
from hpu._run import LevelRecord, Run
from hpu._types import ARRAY_DTYPES, dtype_name_list

__all__ = ["divide_and_conquer", "DivideAndConquer", "Configured", "DEVICES", "DEFAULT_DEVICE",
           "ENV_DISABLE"]

ENV_DISABLE = "HPU_DISABLE"


def _default_options() -> dict:
    from hpu._options import check_options

    return check_options({}, "run")


#: The options of a plain call, checked once (nothing in a run changes them).
_DEFAULT_OPTIONS = _default_options()


def _disabled() -> bool:
    return os.environ.get(ENV_DISABLE, "").strip().lower() not in ("", "0", "false", "no", "off")


def divide_and_conquer(fn=None, /, *, b=2, cost="n", span=None, boundscheck=None, **run_options):
    """Convert a recursive divide-and-conquer function to breadth-first execution.

    Usable bare (``@divide_and_conquer``) or with options:

    ``b``
        the factor by which each call's size shrinks (a number > 1); with
        ``cost`` it feeds the HPU model (``T(n) = a·T(n/b) + f(n)``; ``a`` is
        read from the code).
    ``cost``
        ``f(n)``: ``"1"``, ``"n"``, ``"n log n"`` or ``"n^k"``.
    ``span``
        ``("lo", "hi")``: two scalar parameters bounding the slice of the
        arrays a task touches (the model's ``n`` is ``hi - lo``; transfers
        use it to move only a device's share).
    ``boundscheck``
        ``True``: every ``a[i]`` of the function and its helpers raises
        ``IndexError`` (array, index, length, line) when out of range on the
        CPU paths; ``None``: ``HPU_BOUNDSCHECK=1`` in the environment decides.

    Returns a :class:`DivideAndConquer`.  Raises :class:`~hpu.TranslationError`
    when the function is outside the shape or subset hpu accepts.
    """
    if run_options:
        from hpu._options import RUN_OPTIONS

        name = next(iter(run_options))
        shown = ", ".join(f"{k}={v!r}" for k, v in run_options.items())
        if name in RUN_OPTIONS:
            raise TypeError(f"divide_and_conquer(): {name}= is a run option, not the "
                            "decorator's (which takes b, cost, span and boundscheck): set it "
                            f"on the function, f.options({shown})(...), or per call, "
                            f"f.run(..., {shown})")
        raise TypeError(f"divide_and_conquer() got an unexpected keyword argument {name!r}: "
                        "expected b, cost, span or boundscheck (run options such as device= "
                        "go to f.options(...))")

    if boundscheck is not None and not isinstance(boundscheck, (bool, np.bool_)):
        raise TypeError(f"divide_and_conquer(boundscheck={boundscheck!r}): expected True, "
                        "False or None (None: HPU_BOUNDSCHECK=1 in the environment decides); "
                        "pass boundscheck=True to check every index")

    def wrap(f):
        return DivideAndConquer(f, b=b, cost=cost, span=span,
                                boundscheck=None if boundscheck is None else bool(boundscheck))

    if fn is None:
        return wrap
    if not callable(fn):
        raise TypeError(f"divide_and_conquer({fn!r}): options are keyword-only; write "
                        f"@divide_and_conquer(b={fn!r}) or decorate a function")
    return wrap(fn)


class DivideAndConquer:
    """A recursive function converted by :func:`divide_and_conquer`.

    Call it like the original.  Attributes: ``py_func`` (the original),
    ``spec`` (its parsed shape: ``spec.a`` calls, ``spec.b``, ``spec.cost``,
    ``spec.span``).  Methods: :meth:`run`, :meth:`sequential`, :meth:`plan`.
    """

    def __init__(self, fn, *, b=2, cost="n", span=None, boundscheck=None):
        if isinstance(fn, DivideAndConquer):
            raise TranslationError(
                f"decorating {fn.__name__!r} twice is not supported: it is already a "
                "hpu.divide_and_conquer function", construct="double decoration",
                hint="Remove one decorator; to change options, decorate the original: "
                     f"hpu.divide_and_conquer(b=..., cost=...)({fn.__name__}.py_func)")
        from hpu._frontend import _check_callable

        _check_callable(fn)
        self.py_func = fn
        functools.update_wrapper(self, fn)
        self._options = {"b": b, "cost": cost, "span": span}
        self._boundscheck = boundscheck  # issue 11: None reads HPU_BOUNDSCHECK
        self._signature = inspect.signature(fn)
        self._spec = None
        self._closure = None
        self._programs: dict = {}
        self._lock = threading.RLock()
        self._functional = None     # (file, line, construct) of an allocation: hpu._functional
        self._compiled = None
        self._helpers: dict = {}    # the helpers' dispatchers (compile_functional)
        self._call_shape = None     # (a, arity, loop) of a functional function
        self._lists = False         # lists at the call stay lists (hpu._functional.takes_lists)
        self._builds_lists = False  # ... because it builds lists (not only joins pieces)
        # why Numba cannot compile the function as written, per kind of arguments (a big-
        # endian array may not compile where a list does): _not_compiled, _typed_as
        self._not_compiled_for: dict = {}
        self._call_kinds = threading.local()
        self._dps = None            # (DivideAndConquer | None, Rewritten | reason): _in_place
        self._dead: frozenset = frozenset()   # hpu's own scratch parameters (Snapshot.dead)
        # a form hpu wrote of another function (its in-place or scratch form), run on that
        # function's arguments -- checked there -- and on hpu's buffers, whose elements are
        # not the caller's values (an np.empty's are whatever memory held)
        self._a_form = False
        self._scratch_fits: dict = {}   # argument kinds -> the scratch form takes them
        self._in_place_fit: dict = {}   # argument kinds -> the in-place form's stores fit
        self._pending = False       # a helper defined after the function: _settle
        # the module constants it reads, as they were when it was decorated (_as_called)
        self._constant_refs = _constant_refs(fn)
        self._constants_seen = _constant_values(self._constant_refs)
        if not _disabled():
            if self._found_functional():
                return
            try:
                self._parse()
            except TranslationError as err:
                if self._as_written(err):
                    return
                if not _calls_undefined(fn):
                    raise
                # it calls a helper defined further down the file (guide §8): whether the
                # helper allocates (a functional function) is known at the first call
                self._pending = True
                return
            try:
                self._resolve(deferrable=True)
            except TranslationError as err:
                if not self._as_written(err):
                    raise

    def _settle(self):
        """At the first use of a function whose helper was not defined at its decoration:
        functional if the function or a helper allocates, else parsed now (a refusal is
        raised now, at the first call, as for any helper defined later)."""
        if not self._pending:
            return
        with self._lock:
            if not self._pending:
                return
            if not self._found_functional():
                self._spec = None
                try:
                    self._parse()
                    self._resolve()
                except TranslationError as err:
                    if not self._as_written(err):
                        raise
            self._pending = False

    def _found_functional(self) -> bool:
        """Whether the function or a helper allocates arrays or lists (:mod:`hpu._functional`):
        then its shape is checked and it runs functionally."""
        from hpu._functional import check_shape, find_allocation, joins_pieces, takes_lists

        fn = self.py_func
        alloc = find_allocation(fn)
        if alloc is None:
            return False
        check_shape(fn, (inspect.getsourcefile(fn), fn.__code__.co_firstlineno))
        self._functional = alloc
        self._builds_lists = takes_lists(fn)
        self._lists = self._builds_lists or joins_pieces(fn)
        return True

    def _as_written(self, err: TranslationError) -> bool:
        """Whether the breadth-first refusal ``err`` names only NumPy functions of arrays it
        has no loop for (``np.median(a[lo:hi])``, ``np.where(a > 0, 1, 0)``): Numba
        compiles those as written, so the function runs functionally -- compiled as written,
        on the CPU (guide §10) -- rather than being refused.  Its shape is checked as any
        functional function's is."""
        from hpu._functional import check_shape, joins_pieces, takes_lists

        errors = getattr(err, "errors", None) or (err,)
        if not all(getattr(e, "as_written", None) for e in errors):
            return False
        fn = self.py_func
        check_shape(fn, (inspect.getsourcefile(fn), fn.__code__.co_firstlineno))
        self._spec = None
        self._closure = None
        self._functional = (err.filename, err.lineno, errors[0].as_written)
        self._library_call = True
        self._builds_lists = takes_lists(fn)
        self._lists = self._builds_lists or joins_pieces(fn)
        return True

    @property
    def _not_compiled(self) -> str | None:
        """Why Numba cannot compile the function for the current call's kinds of arguments
        (:meth:`_typed_as`), or None (not known to fail)."""
        return self._not_compiled_for.get(getattr(self._call_kinds, "key", None))

    @_not_compiled.setter
    def _not_compiled(self, reason: str | None) -> None:
        self._not_compiled_for[getattr(self._call_kinds, "key", None)] = reason

    def _typed_as(self, args, kwargs) -> None:
        """This thread's call is on arguments of these kinds: what :attr:`_not_compiled`
        reads and records (Numba compiles one version per kind of arguments)."""
        self._call_kinds.key = (tuple(_typing_key(v) for v in args),
                                tuple((k, _typing_key(v)) for k, v in kwargs.items()))

    # ------------------------------------------------------------------ parsing
    def _parse(self):
        with self._lock:
            if self._spec is None:
                from hpu._frontend import parse

                self._spec = parse(self.py_func, **self._options)
            return self._spec

    def _resolve(self, deferrable=False):
        from hpu._frontend import _Unresolved, resolve

        with self._lock:
            if self._closure is None:
                try:
                    self._closure = resolve(self.py_func, self._parse())
                except _Unresolved:
                    if not deferrable:
                        raise
            return self._closure

    @property
    def spec(self):
        """The :class:`hpu._frontend.DCSpec` of the function (parsed on first use)."""
        return self._parse()

    def __repr__(self):
        s = self._spec
        shape = (f": a={s.a}, b={s.b}, cost={s.cost!r}" if s is not None else
                 ": functional" if self._functional is not None else "")
        return f"<hpu.DivideAndConquer {self.__name__}{self._signature}{shape}>"

    def __reduce__(self):
        """Pickled by reference, as Python pickles a module-level function: its module and
        the name it is bound to there (a process pool or joblib imports the module in the
        worker and finds the same decorated function, compiled there).  One that cannot be
        found so (defined inside a function, or rebound) is refused in words that say
        what to pass instead.  (hpu's Dask runs ship functions their own way:
        :func:`hpu._dask.dumps_function`.)"""
        import pickle

        try:
            found = _by_name(self.__module__, self.__qualname__)
        except Exception:  # noqa: BLE001 - not importable, or no such name: said below
            found = None
        if found is not self:
            raise pickle.PicklingError(
                f"hpu cannot pickle {self.__name__}: pickling sends a decorated function "
                f"by its module-level name, and {self.__module__}.{self.__qualname__} is "
                "not this object (it was defined inside a function, or the name was bound "
                "again); decorate a function at module level, or send its plain function "
                f"({self.__name__}.py_func) and decorate it where it runs")
        return (_by_name, (self.__module__, self.__qualname__))

    # ------------------------------------------------------------------ arguments
    def _check_args(self, args, kwargs) -> dict[str, Any]:
        if self._functional is not None:
            file, line, what = self._functional
            raise TranslationError(
                f"no OpenCL source or breadth-first program of {self.__name__!r} is made: "
                f"it allocates or returns arrays (`{what}`), which run on the CPU as the "
                "function compiled by Numba", filename=file, lineno=line,
                construct="array allocation", hint=f"Call {self.__name__}(...) or "
                f"{self.__name__}.run(...); {self.__name__}.plan(...) says how it runs "
                "(docs/guide.md §10)")
        spec = self._parse()
        closure = self._resolve()
        name = spec.name
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{name}(): {err}; it takes "
                            f"({', '.join(self._signature.parameters)})") from None
        bound.apply_defaults()
        written = closure.written
        lines = dict(closure.first_write)
        roots = {p: (expr, line) for p, expr, line in spec.root_defaults}
        out = {}
        for p, v in bound.arguments.items():
            if v is None and p in roots:    # `if hi is None: hi = len(a)`: the root's, from
                v = bound.arguments[p] = _root_default(   # the arguments checked before it
                    *roots[p], spec.filename, self.py_func.__globals__,
                    {**bound.arguments, **out})
            out[p] = _check_value(name, p, v, spec, p in written, lines.get(p))
        if spec.go is not None:         # the root's calls are made (hpu._frontend._guarded_calls)
            out[spec.go] = 1
        if spec.span is not None:
            for p in spec.span:
                if isinstance(out[p], (float, bool, np.ndarray)):
                    raise TypeError(f"{name}(): parameter {p!r} is named in span={spec.span} "
                                    f"but received {_describe(out[p])}; expected an int index "
                                    "bounding the slice the task touches")
            _check_span(name, spec.span, out)
        return _with_views(spec, out)

    def _program(self, values: dict[str, Any]):
        key = tuple(_kind_key(values[p]) for p in self._parse().params)
        with self._lock:
            program = self._programs.get(key)
            if program is None:
                from hpu._program import specialize

                program = specialize(self._parse(), self._resolve(), values,
                                     boundscheck=self._boundscheck)
                self._programs[key] = program
        return program

    def _program_for(self, *args, **kwargs):
        """The specialisation for these arguments (for tests and backends)."""
        values = self._check_args(args, kwargs)
        return self._program(values), values

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        caller = sys._getframe(1).f_code
        if caller is self.py_func.__code__ or _disabled():
            return self.py_func(*args, **kwargs)  # plain recursion inside the original
        return self._run({}, args, kwargs, _DEFAULT_OPTIONS).value

    def sequential(self, *args, **kwargs):
        """The original compiled by Numba, on one core (004's baseline); returns its value."""
        if _disabled():
            return self.py_func(*args, **kwargs)
        runner = self._as_called(args, kwargs)
        if runner is not self:
            return runner.sequential(*args, **kwargs)
        if self._truth_of_an_array(args, kwargs) is not None:
            return self._plain_function()(*args, **kwargs)
        if self._int_results:
            from hpu._kinds import past_float

            if past_float(args, kwargs):    # (float64 would round them: Python's exact ints)
                return self._run_plain_for_ints({}, args, kwargs).value
        from hpu._checked_ops import IntOverflowError

        try:
            value = self._sequential(args, kwargs)
        except IntOverflowError as err:
            return self._grown(err, args, kwargs, True).value
        except TranslationError as err:
            if not getattr(err, "by_arguments", False):
                raise
            return self._plain_function()(*args, **kwargs)
        except Exception as err:
            if is_replay(err):      # a raise whose message Python computes (hpu._raises)
                return self._replayed(err, args, kwargs, True).value
            self._note_raise_site(err)
            raise
        from hpu._normalise import regrouped

        value = regrouped(value, self._nested)
        if self._int_results:
            from hpu._kinds import restore

            value = restore(value, args, kwargs)
        return value

    @property
    def _nested(self):
        """The nesting of results written as nested tuples (``return s, (mx, c)``), which
        the compiled levels return flat; None for any other function."""
        spec = self._spec
        return None if spec is None or self._functional is not None else spec.result_shape

    def _sequential(self, args, kwargs):
        self._settle()
        if self._big_int(args, kwargs) is not None:      # see _run_any
            return self._plain_function()(*args, **kwargs)
        if self._functional is not None:
            from hpu._functional import convert_arguments, on_big_stack, quiet_reflection

            self._typed_as(args, kwargs)
            converted = convert_arguments(args, kwargs, self._lists)
            if converted is None:       # a list Numba cannot type: see _run_functional
                return self._plain_function()(*args, **kwargs)
            if self._not_compiled is None:
                try:
                    with quiet_reflection():
                        return on_big_stack(self._functional_compiled(), *converted[0],
                                            **converted[1])
                except _numba_error() as err:
                    self._not_compiled = _not_compiled_reason(self.__name__, err)
            return self._plain_function()(*converted[0], **converted[1])   # see _plain_instead
        if self._written_list(args, kwargs) is not None:   # see _run_as_written
            value, what = self._call_as_written(args, kwargs)
            if what is None:
                return value
            with _lists_restored(args, kwargs):
                return self._plain_function()(*args, **kwargs)
        if self._unfit_list(args, kwargs) is not None:     # see _run_any
            return self._plain_function()(*args, **kwargs)
        if (_bool_array(args, kwargs) or _unlaid_array(self.py_func, args, kwargs)
                or self._changed_array(args, kwargs)):
            value, what = self._call_as_written(args, kwargs)     # see _run_bool_arrays
            return value if what is None else self._plain_function()(*args, **kwargs)
        values = self._check_args(args, kwargs)
        program = self._program(values)
        from hpu._interrupt import call, raise_if_stopped

        params = [values[p] for p in program.spec.params]
        try:  # on a helper thread: Ctrl-C stops it at its next recursive call (hpu._interrupt)
            if not program.has_deep_module:
                # the core module's native recursion (compiled with the program) from a copy
                # of what it writes: the growable-stack solver costs more compilation than
                # the rest (18 s for a merge sort here), and only a recursion past native
                # depth needs it (Program.run_plain).  Large arguments skip the copy, and
                # once the solver is loaded every call runs it.
                from hpu._snapshot import Snapshot

                snapshot = Snapshot.take(program, values, keep=True, dead=self._dead)
                if snapshot.nbytes <= _SEQUENTIAL_COPY_BYTES:
                    return call(program.run_plain, params, snapshot.restore)
            return call(program.function, *params)
        except Exception as err:  # noqa: BLE001 - the user's, unless a Ctrl-C stopped it
            raise_if_stopped(err)
            raise

    # ------------------------------------------------------------------ functional
    def _functional_compiled(self):
        with self._lock:
            if self._compiled is None:
                from hpu._functional import compile_functional

                from hpu._guard import boundscheck_default

                helpers: dict = {}
                bounds = (self._boundscheck if self._boundscheck is not None
                          else boundscheck_default())
                self._compiled = compile_functional(self.py_func, self, helpers,
                                                    boundscheck=bounds, lists=self._lists)
                self._helpers = helpers
            return self._compiled

    @functools.cached_property
    def _outlined(self):
        """``(tree, {name: OutlinedCall})``: the function with its own loops outlined into
        compiled helpers, for the fan-out's Python top levels (:mod:`hpu._outline`), or
        None where it has none or they cannot be; decided once."""
        from hpu._functional import _code_names, _is_self, compile_functional
        from hpu._guard import boundscheck_default
        from hpu._outline import OutlinedCall, outline_loops

        fn = self.py_func
        selves = {n for n in _code_names(fn.__code__) if _is_self(fn.__globals__.get(n), fn, self)}
        got = outline_loops(fn, selves | {fn.__name__})
        if got is None:
            return None
        lock = threading.Lock()     # one compile at a time: they share self._helpers

        def compile_(py):
            self._functional_compiled()     # (the function's helpers, compiled once)
            bounds = (self._boundscheck if self._boundscheck is not None
                      else boundscheck_default())
            with lock:
                return compile_functional(py, object(), self._helpers, boundscheck=bounds,
                                          lists=self._lists)

        return got.tree, {name: OutlinedCall(py, compile_) for name, py in got.helpers.items()}

    def _run_functional(self, o, args, kwargs) -> Run:
        """A function that allocates or returns arrays (see :mod:`hpu._functional`): the
        function compiled by Numba on the CPU's threads (its top ``K`` levels as Python,
        the subtrees below at once, :class:`hpu._functional.FanOut`).  On the other
        devices its in-place form where it has one (:meth:`_run_in_place`), else the same
        CPU run, recorded.  A list the function writes into is given to it as an array
        and gets the array's items back when the run is done (all ints, or all floats: a
        list of several kinds runs the plain function)."""
        from hpu._functional import convert_arguments

        self._typed_as(args, kwargs)
        if self._lists and o["cluster"] is None:
            ran = self._list_scratch(o, args, kwargs)
            if ran is not None:
                return ran
        converted = convert_arguments(args, kwargs, self._lists)
        back = []       # (the caller's list, the array it became) where the function writes
        if converted is not None and self._writes_arguments is not None:
            def plain(why):     # Python's own answer (or error), the reason recorded
                t0 = time.perf_counter()
                with self._kept_on_error(o, args, kwargs), _lists_restored(args, kwargs):
                    value = self._plain_function()(*args, **kwargs)
                return _one_call_run(o, value, t0, [why] if o["device"] != "cpu" else [], why)

            for given, made in zip((*args, *kwargs.values()),
                                   (*converted[0], *converted[1].values())):
                if type(given) is tuple and isinstance(made, np.ndarray):
                    # a tuple cannot be written: not a write into an array the caller
                    # never sees
                    return plain(f"{self.__name__} writes into its arguments and was given "
                                 "a tuple, which cannot be written: the plain Python "
                                 "function ran")
                if type(given) is list and made is not given:
                    # an array, or (a function written for lists) a new list of one kind:
                    # a list of several kinds would come back as one, or its writes be lost
                    if given and not _one_number_kind(given):
                        return plain(f"{self.__name__} writes into a list of several kinds "
                                     "of items, which an array would give back as one: the "
                                     "plain Python function ran")
                    back.append((given, made))
        run = self._run_functional_converted(o, args, kwargs, converted)
        for given, made in back:    # the writes, into the caller's list (ints, floats)
            given[:] = made.tolist()
        return run

    def _list_scratch(self, o, args, kwargs) -> Run | None:
        """The scratch form of a function written for lists (the tutorials' ``merge(arr, l,
        m, r)`` copying into lists of zeros) given lists of one number kind: run on them as
        arrays, breadth-first, and their items written back into the caller's lists; None
        where it does not apply (the function then runs as written, on the lists)."""
        if self._scratch_form is None or self._writes_arguments is None:
            return None
        given = [v for v in (*args, *kwargs.values()) if type(v) is list]
        made = {id(v): _list_as_array(v) for v in given}
        if not given or any(a is None for a in made.values()):
            return None
        new_args = tuple(made.get(id(v), v) if type(v) is list else v for v in args)
        new_kwargs = {k: made.get(id(v), v) if type(v) is list else v
                      for k, v in kwargs.items()}
        scratch = self._scratch_call(new_args, new_kwargs)
        if scratch is None:
            return None
        run = scratch[0]._run_any(o, scratch[1], {}, checked=o)
        for v in given:                 # the writes, into the caller's lists
            v[:] = made[id(v)].tolist()
        return run

    def _run_functional_converted(self, o, args, kwargs, converted) -> Run:
        """:meth:`_run_functional` on the arguments as :func:`convert_arguments` gave them
        (``converted``; None: a list Numba cannot type)."""
        import warnings

        from hpu._errors import HpuPerformanceWarning
        from hpu._functional import UNTYPED_REASON, quiet_reflection, untyped_what

        fallbacks = []
        scratch = None if converted is None else self._scratch_call(*converted)
        form = None if scratch is None else self._scratch_form[1]
        if scratch is not None and not hasattr(form, "flagged"):
            # allocations carved from buffers: breadth-first
            return scratch[0]._run_any(o, scratch[1], {}, checked=o)
        if scratch is not None and o["cluster"] is None:
            ran = self._run_copy_halves(o, scratch, form)
            if isinstance(ran, Run):
                return ran
            fallbacks.append(ran)
            warnings.warn(HpuPerformanceWarning(f"hpu: {ran}"), stacklevel=user_stacklevel())
        ran = None
        tried = self._device_form_applies(o, converted)
        if tried:
            ran = self._run_in_place(o, converted)
            if isinstance(ran, Run):
                return ran
        if isinstance(ran, str):    # the device form ran out of arena: recorded, redone
            fallbacks.append(ran)
            warnings.warn(HpuPerformanceWarning(f"hpu: {ran}"), stacklevel=user_stacklevel())
        elif (o["device"] != "cpu" or o["cluster"] is not None) and self._not_compiled is None:
            # (where Numba cannot compile the function, the plain function runs, and says so)
            reason = self._device_reason(o)
            fallbacks.append(reason)
            warnings.warn(HpuPerformanceWarning(f"hpu: {reason}"), stacklevel=user_stacklevel())
        if converted is None:
            # an empty list, or one of lists: Numba types a list by its first item, so the
            # user's own function answers (an empty list is a base case: nothing is lost)
            what = untyped_what(args, kwargs)
            reason = UNTYPED_REASON.format(name=self.__name__, what=what)
            if what != "an empty list":
                fallbacks.append(reason)
                warnings.warn(HpuPerformanceWarning(f"hpu: {reason}"), stacklevel=user_stacklevel())
            t0 = time.perf_counter()
            with self._kept_on_error(o, args, kwargs):
                value = self._plain_function()(*args, **kwargs)
            return _one_call_run(o, value, t0, fallbacks, reason)
        given = (args, kwargs)      # the caller's: put back on an error (not the conversions)
        args, kwargs = converted
        if self._not_compiled is None:
            try:
                with quiet_reflection(), self._kept_on_error(o, *given):
                    return self._run_compiled(o, args, kwargs, fallbacks)
            except _numba_error() as err:
                self._not_compiled = _not_compiled_reason(self.__name__, err)
        if not tried and self._form_instead_of_plain(o):
            # Numba cannot compile the function as written, but its in-place form (another
            # function, of hpu's subset) compiles: that, not the plain function, on the CPU
            ran = self._run_in_place(o, converted)
            if isinstance(ran, Run):
                return ran
            if isinstance(ran, str):
                fallbacks.append(ran)
                warnings.warn(HpuPerformanceWarning(f"hpu: {ran}"), stacklevel=user_stacklevel())
        with self._kept_on_error(o, *given):
            return self._plain_instead(o, args, kwargs, fallbacks)

    @contextlib.contextmanager
    def _kept_on_error(self, o, args, kwargs):
        """The caller's arrays and lists put back as they were if the body raises, where the
        function writes into its arguments (guide §9): one copy each, unless
        ``keep_inputs=False``.  For the runs that keep no snapshot of their own -- the
        function compiled as written, or the plain function; the breadth-first forms keep
        theirs (:mod:`hpu._snapshot`)."""
        if not (o["keep_inputs"] and self._writes_arguments is not None):
            yield
            return
        kept = [(v, v.copy() if isinstance(v, np.ndarray) else list(v))
                for v in (*args, *kwargs.values())
                if (isinstance(v, np.ndarray) and v.flags.writeable) or type(v) is list]
        try:
            yield
        except BaseException:
            for v, was in kept:
                if isinstance(v, np.ndarray):
                    v[...] = was
                else:
                    v[:] = was
            raise

    def _run_copy_halves(self, o, scratch, form):
        """The copy-halves form's run (:mod:`hpu._copy_halves`), or -- where a task's merge
        left elements of its slice unwritten, which the form cannot answer for -- the
        reason, the array given back as it was (the run then goes on as written)."""
        dc, values = scratch
        arr = values[form.params.index(form.array)]
        before = arr.copy()
        run = dc._run_any(o, values, {}, checked=o)
        if not form.flagged(values):
            return run
        arr[...] = before
        return (f"{self.__name__}: a merge left elements of {form.array} unwritten (at "
                f"{form.counter}), so its copies of the halves could not be made after its "
                "recursive calls (guide §10, the copy-halves form): the call ran again, "
                "as written")

    def _form_instead_of_plain(self, o) -> bool:
        """On ``device="cpu"`` (no ``K=``, no cluster), whether a function Numba cannot
        compile as written runs its in-place form instead of the plain Python function
        (``np.concatenate`` of a list, which Numba refuses, in a quicksort the partition
        form takes)."""
        return (self._not_compiled is not None and o["device"] == "cpu" and o["K"] is None
                and o["cluster"] is None and self._in_place()[0] is not None)

    # ------------------------------------------------ functional, on the device
    def _in_place(self):
        """``(DivideAndConquer of the in-place form, Rewritten)`` of this functional
        function (:mod:`hpu._functional_dps`), or ``(None, why not)``; decided once."""
        with self._lock:
            if self._dps is None:
                from hpu._functional_dps import NotRewritable, rewrite

                try:
                    rw = rewrite(self)
                    # a function on lists reads its children as lists: Python (and Numba)
                    # check every index into a list, so its in-place form does too.  No
                    # span= in the span form: a task writes its result in both halves of
                    # the buffer (at [lo, hi) + its parity's offset), outside [lo, hi), so
                    # a device with its own memory must receive and return whole arrays
                    dc = DivideAndConquer(rw.fn, b=self._options["b"],
                                          cost=self._options["cost"],
                                          boundscheck=False if rw.checks_itself else
                                          True if self._lists else self._boundscheck)
                    # (the model's n: hi - lo of the user's slice, or of the task's input)
                    extent = (tuple(rw.span[1:]) if rw.span else
                              ("hpu_lo", "hpu_hi") if rw.partition else None)
                    dc._inner = True  # hpu's form: a replayed raise is its caller's to run
                    if extent:
                        dc._spec = dataclasses.replace(dc._parse(), extent=extent)
                    # its helpers too (a merge's `(left if ... else right).pop(0)`): a form
                    # the breadth-first levels cannot run is no form, decided here
                    dc._resolve()
                    dc._a_form = True
                    self._dps = (dc, rw)
                except NotRewritable as err:
                    self._dps = (None, str(err))
                except TranslationError as err:
                    self._dps = (None, _refused(err))
            return self._dps

    @functools.cached_property
    def _scratch_form(self):
        """``(DivideAndConquer, ScratchForm)`` of an index-form function whose allocations
        are parts of its range (:mod:`hpu._scratch_form`), or None; decided once."""
        from hpu._copy_halves import rewrite_copy_halves
        from hpu._functional import _numpy_names
        from hpu._scratch_form import NotScratch, rewrite_scratch

        if self._functional is None or self._shared_writes is not None:
            return None
        try:
            nps = _numpy_names(self.py_func.__globals__)
            try:
                form = rewrite_scratch(self.py_func, nps)
            except NotScratch as err:
                self._scratch_refusal = str(err)      # (said where the run stays on the CPU)
                if self._lists:     # (lists at the call stay lists: no .copy() of arrays)
                    return None
                form = rewrite_copy_halves(self.py_func, nps)
            # (span= is half-open: a function on closed ranges has none, its n the array's)
            span = None if form.extra else (self._options.get("span") or form.bounds)
            # a buffer that stands for a list checks its indices, as Python checks a list's
            checks = True if getattr(form, "lists", False) else self._boundscheck
            dc = DivideAndConquer(form.fn, b=self._options["b"], cost=self._options["cost"],
                                  span=span, boundscheck=checks)
            # its buffers are hpu's: what they hold is dead after each task (no snapshot)
            dc._dead = frozenset(inspect.signature(form.fn).parameters) - set(form.params)
            dc._a_form = True
        except Exception:  # noqa: BLE001 - NotScratch, a TranslationError, or a form hpu
            return None     # cannot build: the function as written
        return dc, form

    def _scratch_call(self, args, kwargs):
        """``(form's DivideAndConquer, its arguments)`` for this call, or None where the
        scratch form does not apply to it (:meth:`_scratch_form`)."""
        got = self._scratch_form
        if got is None:
            return None
        dc, form = got
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:
            return None
        bufs = form.buffers(bound.arguments)
        if bufs is None:
            return None
        values = (*(bound.arguments[p] for p in form.params), *bufs)
        # a buffer copied into an array that cannot hold its values (a float64 `np.zeros(n)`
        # into an int32 `a[lo:hi]`: NumPy converts, the breadth-first path refuses,
        # hpu._guard.check_array_fit) runs the function as written; decided once per kind
        # of arguments (the check reads every copy of the code: half a millisecond)
        key = tuple((v.dtype.str, v.ndim) if isinstance(v, np.ndarray) else type(v).__name__
                    for v in values)
        fits = self._scratch_fits.get(key)
        if fits is None:
            from hpu._guard import check_array_fit

            try:
                check_array_fit(dc._parse(), dc._resolve(), dc._check_args(values, {}))
                fits = True
            except ArrayMismatchError:
                fits = False
            except (TypeError, ValueError):
                # (a buffer of a dtype the breadth-first path does not take, np.bool_; or
                # arguments it refuses: the function as written says what Python says)
                return None
            self._scratch_fits[key] = fits
        # (said by _device_reason: the carved form exists, these arrays do not fit it)
        self._scratch_misfit = not fits
        return (dc, values) if fits else None

    def _device_form_applies(self, o, converted) -> bool:
        """Whether a call tries the in-place form (:meth:`_run_in_place`): on ``gpu`` and
        ``hybrid`` (not across a cluster), and on ``cpu`` for a list argument of a function
        that builds lists -- there the form's arrays on the CPU's threads beat Numba's
        reflected lists in one compiled call several times over (``bench_lists.py
        --devices``: 0.21 s against 1.51 s for 2**20 ints on 2 cores), and for an array of
        at least :data:`FORM_ON_CPU_MIN` elements (its slice, in the span form): there the
        form's one buffer of twice the input bounds the memory on any number of threads,
        where the fan-out's arrays pile up in glibc's per-thread arenas (6.3x the input at
        2**24 on 16 threads against 4.3x, and 0.73x its time: ``bench/README.md``) --
        unless ``K=`` is given (it sets the compiled call's fan-out, as documented).  A
        smaller array stays the compiled function's (its first call compiles less)."""
        if o["cluster"] is not None or self._shared_writes is not None:
            return False
        if o["device"] != "cpu":
            return True
        if o["K"] is not None:
            return False            # (K= given: the compiled call fanned out, guide §10)
        given = _only_argument(converted)
        if self._lists and isinstance(given, list):
            return True
        if converted is None or self._functional is None or not any(
                isinstance(v, np.ndarray) and v.size >= FORM_ON_CPU_MIN
                for v in (*converted[0], *converted[1].values())):
            return False            # (small: the rewrite is not even read)
        dc, rw = self._in_place()
        if dc is None:
            return False
        found = self._in_place_args(converted, rw)
        return (found is not None and isinstance(found[0], np.ndarray)
                and found[2] - found[1] >= FORM_ON_CPU_MIN)

    def _device_reason(self, o=None) -> str:
        """Why this functional function's run stays on the CPU (a sentence); ``o``, the
        run's options (a cluster asked for)."""
        from hpu._functional import FALLBACK_REASON, is_stepped_slice

        if self._shared_writes is not None:
            return self._shared_writes
        _, line, what = self._functional
        dc, why = self._in_place()
        if o is not None and o.get("cluster") is not None:
            dc, why = None, ("a Dask cluster runs the breadth-first levels of a function "
                             "that writes its results into its arguments (guide §12); one "
                             "that returns new arrays or lists runs on the client")
        if dc is not None:
            why = self._not_compiled or (
                "it joins its children's results with `+`, which concatenates the lists it "
                "was written for and adds arrays element-wise: its device form runs on a "
                "non-empty list of numbers, an array runs as written"
                if why.returns_list and not why.partition else
                ("its arguments are not one non-empty 1-D NumPy array of numbers"
                 if why.span is None else
                 f"its arguments are not a 1-D NumPy array of numbers and int bounds "
                 f"0 <= {why.span[1]} < {why.span[2]} <= len({why.span[0]})")
                + (f", with numbers for {', '.join(why.extra)}" if why.extra else ""))
        if dc is not None and getattr(self, "_in_place_misfit", False):
            why = ("its device form stores the combine's scratch values into its result's "
                   "buffer of a narrower dtype (float64 scratch, `np.empty(n)`, merged into "
                   "an int result: NumPy converts each value, which the device form "
                   "refuses); give the scratch the keys' dtype (np.empty(n, x.dtype)) to run "
                   "it on the device")
        if self._scratch_form is not None and getattr(self, "_scratch_misfit", False):
            # the carved form applies to the function, not to these arrays
            why = ("its carved form's buffers cannot give these arrays their values back "
                   "exactly (a buffer of another dtype than the array's, such as CLRS's "
                   "float64 `np.empty(n1 + 1)` for int keys, is a store of floats into ints, "
                   "which the carved form refuses; float keys are carved)")
        carved = self.__dict__.get("_scratch_refusal") if self._scratch_form is None else None
        if carved is not None and dc is None and "its allocations are not sized" not in carved \
                and "it allocates nothing" not in carved:
            # an index-form recursion that allocates: its carved form (guide §10) says more
            why = f"{why}; nor does its carved form: {carved}"
        does = ("takes a slice with a step, a strided view that hpu's contiguous views "
                "(guide §3) are not" if is_stepped_slice(what) else
                "defines a function inside, which hpu's breadth-first levels cannot run "
                "(Numba compiles it where it does not escape)"
                if what.startswith(("def ", "lambda")) else
                "indexes a 2-D array, which hpu's breadth-first levels and kernels hold as "
                "1-D (Numba indexes it as written)"
                if what.startswith("multi-dimensional indexing") else
                "calls a NumPy function on an array that hpu's breadth-first levels have no "
                "loop for" if self.__dict__.get("_library_call") else
                "allocates or returns arrays or lists")
        return FALLBACK_REASON.format(name=self.__name__, does=does, line=line, what=what,
                                      why=why)

    def _in_place_args(self, converted, rw):
        """``(given, lo, hi, extra)`` of a call the in-place form takes: one array (or
        list), the whole of it; or, in the span form ``f(arr, lo, hi)``, the array and two
        int bounds with ``0 <= lo < hi <= len(arr)``; ``extra``, the values of the
        parameters its calls pass on (``Rewritten.extra``), numbers -- else None (the CPU
        path runs, as written)."""
        if rw.span is None and not rw.extra:
            given = _only_argument(converted)
            size = len(given) if isinstance(given, (np.ndarray, list)) else 0
            return (given, 0, size, ()) if isinstance(given, (np.ndarray, list)) else None
        if converted is None:
            return None
        import inspect

        try:
            bound = inspect.signature(self.py_func).bind(*converted[0], **converted[1])
        except TypeError:
            return None
        bound.apply_defaults()
        # the parameters passed on unchanged: numbers (an array or an object: as written)
        extra = tuple(bound.arguments.get(p) for p in rw.extra)
        if not all(isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating))
                   for v in extra):
            return None
        if rw.span is None:
            given = bound.arguments.get(next(iter(inspect.signature(self.py_func).parameters)))
            if not isinstance(given, (np.ndarray, list)):
                return None
            return given, 0, len(given), extra
        arr, lo, hi = (bound.arguments.get(p) for p in rw.span)
        if not isinstance(arr, np.ndarray) or not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                for v in (lo, hi)):
            return None
        lo, hi = int(lo), int(hi)
        return (arr, lo, hi, extra) if 0 <= lo < hi <= arr.size and arr.ndim == 1 else None

    def _in_place_call(self, converted, arena: int):
        """``(dc, rewritten, arguments of dc, the input array)`` when the in-place form can run on these
        converted arguments (one non-empty 1-D array of numbers, or in the span form an
        array and a non-empty ``[lo, hi)`` of it; the buffer is allocated here, in the dtype
        of the function's result), else None.  Numba's errors typing the function
        propagate."""
        dc, rw = self._in_place()
        if dc is None:
            return None
        found = self._in_place_args(converted, rw)
        if found is None:
            return None
        given, lo, hi, extra = found
        # a list: the argument of a function that builds lists (hpu._functional._as_list),
        # its numbers as NumPy infers them, as Numba types the list
        x = np.asarray(given) if isinstance(given, list) else given
        if x.ndim != 1 or x.size == 0 or x.dtype not in ARRAY_DTYPES:
            return None     # (float16, another byte order: as written, or the plain function)
        x = np.ascontiguousarray(x)
        from hpu._functional import quiet_reflection

        typed = ((given,) if rw.span is None else (x, lo, hi)) + extra
        with quiet_reflection():        # a list argument: Numba's notice is hpu's, not the user's
            dtype = self._result_dtype(rw, typed)
        if dtype is None:       # Numba cannot type the function: the CPU path says why
            return None
        if rw.returns_list and not isinstance(given, list):
            return None         # (its `+` joins lists; of an array it adds, as written)
        if rw.partition:
            # the partition form: the input in the first half of one buffer, the result
            # there at the end (hpu._functional_partition); a result of another dtype than
            # the input's (a value of another type among its pieces) keeps the CPU path
            if dtype != x.dtype or (rw.returns_list and not isinstance(given, list)):
                return None
            work = np.empty(2 * x.size, dtype)
            work[:x.size] = x
            return dc, rw, (work, 0, x.size, 0, np.array([0, arena, 0], np.int64)), x
        # the combine's scratch arrays: a buffer each, width elements per input element
        # (a run-time arena: arena elements), and the arena's flag and width
        scratch = tuple(np.empty((arena if width is None else width) * x.size + 1,
                                 dtype if dt is None else dt) for width, dt in rw.scratch)
        flag = (np.array([0, arena, 0], np.int64),) if rw.arena else ()
        buf = np.empty(2 * x.size, dtype)
        call = ((x, *extra, buf, 0, 0, *scratch, *flag) if rw.span is None
                # the span form: the result of [lo, hi) at [lo, hi) of the buffer's halves
                else (x, lo, hi, *extra, buf, lo, 0, *scratch, *flag))
        return (dc, rw, call, x) if self._in_place_fits(dc, call) else None

    def _in_place_fits(self, dc, call) -> bool:
        """Whether the in-place form's stores fit its buffers' dtypes for this call: a
        combine that merges through float64 scratch (``tmp = np.empty(len(x) + len(y))``)
        into an int result stores floats into ints -- NumPy converts each, the breadth-first
        path refuses (:func:`hpu._guard.check_array_fit`) -- so the CPU path runs, as
        written, and :meth:`_device_reason` says why.  Decided once per kind of arguments."""
        from hpu._guard import check_array_fit

        key = tuple(v.dtype.str if isinstance(v, np.ndarray) else type(v).__name__
                    for v in call)
        fits = self._in_place_fit.get(key)
        if fits is None:
            try:
                check_array_fit(dc._parse(), dc._resolve(), dc._check_args(call, {}))
                fits = True
            except ArrayMismatchError:
                fits = False
            self._in_place_fit[key] = fits
        self._in_place_misfit = not fits
        return fits

    def _returns_a_list(self, args) -> bool:
        """Whether Numba's typing makes the function's result (its first value) a list for
        ``args``: Python's is a list then, whatever the argument was."""
        from numba.core import types as nt

        from hpu._functional import _numba_return_type

        t = _numba_return_type(self._functional_compiled(), tuple(args), {}, strict=True)
        t = t.types[0] if isinstance(t, nt.BaseTuple) else t
        return isinstance(t, (nt.List, nt.ListType))

    def _result_dtype(self, rw, args):
        """The dtype of the array (or list) Numba's typing gives the function's result for
        ``args``; None where Numba gives none (base cases and combine of different dtypes:
        ``a.copy()`` of ints beside ``np.zeros(n)`` of floats)."""
        x = args[0]
        if rw.same_dtype and isinstance(x, np.ndarray):
            return x.dtype
        from numba.core import types as nt

        from hpu._functional import _numba_return_type

        t = _numba_return_type(self._functional_compiled(), tuple(args), {}, strict=True)
        t = t.types[0] if isinstance(t, nt.BaseTuple) else t
        if isinstance(t, (nt.List, nt.ListType)):   # numbers only: not bools, not objects
            return (np.dtype(str(t.dtype)) if isinstance(t.dtype, (nt.Integer, nt.Float))
                    else None)
        if getattr(t, "ndim", None) != 1:
            return None
        return np.dtype(str(t.dtype))

    def _run_in_place(self, o, converted) -> Run | str | None:
        """The run on ``device="gpu"``/``"hybrid"`` of a functional function whose in-place
        form exists (:mod:`hpu._functional_dps`): that form, breadth-first on the CPU's
        threads and the device, writing into one buffer of twice the input; the report with
        the function's own value (the array, copied out, and its scalars).  None where the
        form does not apply (the CPU fan-out then runs, and says why); the reason, a
        string, where a task's run-time arena overflowed (the CPU fan-out then runs,
        recorded: as a device's stack overflow is, the device's answer is not used)."""
        import dataclasses
        import warnings

        try:
            ready = self._in_place_call(converted, o["arena"])
        except _numba_error() as err:
            self._not_compiled = _not_compiled_reason(self.__name__, err)
            return None
        if ready is None:
            return None
        dc, rw, call, x = ready
        lo, hi = (0, x.size) if rw.span is None else call[1:3]
        core = (1 if rw.span is None else 3) + len(rw.extra)    # the user's arguments
        buf = call[0] if rw.partition else call[core]
        given = (x, *call[1:core]) if rw.span is None else call[:core]   # (x: converted)
        arg = self._in_place_args(converted, rw)[0]     # the array or list as the caller gave it
        flag = call[-1] if rw.arena else None       # [overflowed, arena, needed]
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                run = dc._run(None, call, {}, checked={**o, "keep_inputs": False})
        except TranslationError as err:  # refused only now (a helper's types): the CPU path
            self._dps = (None, _refused(err))
            return None
        except Exception as err:
            if is_replay(err):  # a raise whose message Python computes: the caller's run
                raise           # replays the plain function (_run), at the user's line
            # the user's error from some task: the one Python meets first is the function's
            # own, compiled, run as written on the same argument (which nothing wrote)
            # hpu's own report of a task's failure counts too: a task of the in-place form
            # re-run alone after its level may read what its subtree wrote, and not raise
            first = self._first_error(
                *((arg,) + given[1:] if isinstance(arg, list) else given)) \
                if _a_tasks_error(err) or type(err) is HpuError else None
            if first is not None:
                raise first from None
            if flag is not None and (flag[0] or _a_tasks_error(err)):
                # an error the function as written does not raise: a task read what a task
                # whose arena overflowed left unwritten (on a device with its own memory
                # the flag stays there when a task's error stops the download)
                return self._arena_reason(o, flag)
            if _a_tasks_error(err):
                # the form raised where the function as written does not: a defect of the
                # rewrite, not the user's -- the answer is the function's, on the CPU, and
                # the form is not tried again
                why = (f"{self.__name__}'s device form raised {type(err).__name__} ({err}) "
                       "where the function as written does not; the call was redone on the "
                       "CPU, where the function runs as written (a defect of hpu's device "
                       "form: please report it with the function)")
                self._dps = (None, why)
                return why
            raise
        finally:        # the in-place run's warnings, at the caller's line (not hpu's)
            level = user_stacklevel()
            for w in caught:
                warnings.warn(w.message, stacklevel=level)
        if flag is not None and flag[0]:
            return self._arena_reason(o, flag)
        # a list in, a list out (of Python numbers, as Numba boxes a list's items); an
        # array in, a list out where the function builds one (`return list(a)`)
        listed = isinstance(arg, list) or (bool(self._lists) and self._returns_a_list(given))
        del call, ready, given, arg
        if listed:
            out = buf[lo:hi].tolist()
            del buf
        else:
            held = [buf]
            del buf
            out = _front_of(held, lo, hi)
        value = (out if rw.scalars == 0 else (out, run.value) if rw.scalars == 1
                 else (out, *run.value))
        return dataclasses.replace(run, value=value)

    def _arena_reason(self, o, flag) -> str:
        """Why a run of the device form was redone on the CPU: a task's scratch did not fit
        its arena, or its list result was not as long as its slice (the checks
        :mod:`hpu._functional_dps` makes at run time); ``flag`` the arena's ``[what,
        arena, needed]``."""
        from hpu._functional_dps import CONCAT_LENGTH, LIST_LENGTH, PIECES_ORDER
        from hpu._functional_partition import PIECES_LENGTH

        need = int(flag[2])
        if flag[0] == PIECES_ORDER:
            return (f"a task of {self.__name__}'s device form split its input at cuts out of "
                    "order (a[e1:e2] with e2 < e1: in Python the pieces then overlap, and "
                    "their results are not as long as the input together, as the device "
                    "form keeps them); the call was redone on the CPU, where the function "
                    "runs as written")
        if flag[0] == PIECES_LENGTH:
            return (f"a task of {self.__name__}'s device form filtered its input into pieces "
                    "of another length together than the input's (a NaN no comparison keeps, "
                    "or pieces that overlap or leave values out; the device form keeps each "
                    "result as long as its input); the call was redone on the CPU, where "
                    "the function runs as written")
        if flag[0] == CONCAT_LENGTH:
            return (f"a task of {self.__name__}'s device form concatenated pieces of another "
                    "length together than its two children's (the device form keeps each "
                    "result as long as its slice); the call was redone on the CPU, where the "
                    "function runs as written")
        if flag[0] == LIST_LENGTH:
            return (f"a task of {self.__name__}'s device form built a list of another length "
                    "than its two children's together (the device form keeps each result as "
                    "long as its slice, checked as the list grows); the call was redone on "
                    "the CPU, where the function runs as written")
        if flag[0] and need > o["arena"]:
            what = (f"a task of {self.__name__}'s device form needed at least {need} elements "
                    f"of scratch per element of its slice, more than its arena "
                    f"(arena={o['arena']})")
            fix = f"{self.__name__}.options(arena={need})"
        elif flag[0]:
            what = (f"a task of {self.__name__}'s device form asked for a negative number of "
                    "scratch elements")
            fix = None
        else:
            what = (f"a task of {self.__name__}'s device form raised where the function as "
                    "written does not (it read what a task stopped by a run-time check left "
                    "unwritten)")
            fix = f"{self.__name__}.options(arena={4 * o['arena']})"
        return (f"{what}, for an allocation whose size is known only at run time; the call "
                "was redone on the CPU, where the function allocates as written"
                + (f": pass a larger arena= ({fix}) to keep it on the device" if fix else ""))

    def _first_error(self, *args) -> BaseException | None:
        """The exception the function as written (:meth:`sequential`) raises on ``args``, or
        None."""
        try:
            self.sequential(*args)
        except Exception as err:  # noqa: BLE001 - the user's, raised by the caller
            return err.with_traceback(None)
        return None

    def _in_place_peak(self, plan, o, x, listed: bool = False, extra: tuple = ()):
        """``plan`` (the in-place form's) with the host memory its run is predicted to
        allocate at the peak: probes of the same run (the same options) on prefixes of
        ``x`` (:func:`hpu._functional_plan.predict_peak`; as lists where the call's argument
        is one, ``listed``: an array would be another signature), their warnings kept
        quiet."""
        import dataclasses
        import warnings

        from hpu._errors import HpuPerformanceWarning
        from hpu._functional_plan import predict_peak

        # the same split at every size (the same K, the same share on each side): the level
        # arrays stay as they are and the buffers grow with the input, linearly
        probe_options = {**o, "memory": False, "K": plan.cutoff_level}
        if plan.transfer_level is not None:
            probe_options.update(alpha=plan.split_alpha, y=plan.transfer_level)

        span = self._in_place()[1].span

        def call(xs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", HpuPerformanceWarning)
                arg = xs.tolist() if listed else xs
                # (the span form: the probe's whole prefix, its buffers as long as it)
                args = ((arg,) if span is None else (arg, 0, len(arg))) + extra
                if not isinstance(self._run_in_place(probe_options, (args, {})), Run):
                    raise RuntimeError("the device form did not run")

        peak, basis, _ = predict_peak(call, (x,), {}, x.size,
                                      passthrough=(KeyboardInterrupt,), warm_each=True)
        basis = basis.replace("probes", "device-form runs")
        rw = self._in_place()[1]
        if getattr(rw, "arena", False):     # what the plan cannot know before the run
            basis += (f"; checked as the tasks run: scratch sizes against arena="
                      f"{o['arena']} elements per element of a slice, list results' lengths "
                      "(a task that fails a check redoes the call on the CPU, in "
                      "run.fallbacks)")
        return dataclasses.replace(plan, peak_memory=peak, memory_basis=basis)

    def _scratch_peak(self, plan, o, dc, values):
        """``plan`` (the scratch form's, :mod:`hpu._scratch_form`) with the host memory its
        run allocates at the peak: a sum of what hpu allocates, all of it known before the
        run (:func:`hpu._scratch_form.predicted_peak`)."""
        import dataclasses

        from hpu._scratch_form import predicted_peak

        checked = dc._check_args(values, {})         # (views: an array's offset and length)
        program = dc._program(checked)
        unified = True
        if plan.uses_device:
            from hpu._opencl._backend import OpenCLBackend

            backend = o["backend"] or OpenCLBackend
            if hasattr(backend, "unified_memory"):
                unified = backend.unified_memory(backend.select(o["cl_device"]))
        peak, basis = predicted_peak(plan, program, checked, dc._dead,
                                     keep=o["keep_inputs"], unified=unified)
        form = self._scratch_form[1]
        if hasattr(form, "flagged"):
            # the copy-halves form keeps the array as it was, for a merge that leaves
            # elements unwritten (the run then goes on as written): one more copy of it
            arr = values[form.params.index(form.array)]
            peak += arr.nbytes
            basis = basis.replace("; the level arrays", f", the array as it was "
                                  f"{arr.nbytes / 1e6:.3g} MB (a merge may leave elements "
                                  "unwritten); the level arrays")
        return dataclasses.replace(plan, peak_memory=peak, memory_basis=basis)

    def _one_call_plan(self, o, device: str, args, kwargs, why: str):
        """The plan of a run that is one call, on ``device`` ("python": the plain function;
        "cpu": the function compiled as written), ``why`` its reason -- and the device's
        reason where another was asked for."""
        from hpu._functional_plan import FunctionalPlan

        basis = ({"memory_basis": "not predicted: the plain Python function runs"}
                 if device == "python" else {})
        return FunctionalPlan(
            name=self.__name__, device=device, requested=o["device"],
            n=_elements(args, kwargs), a=None, K=0, threads=1, reason=why,
            device_reason=None if o["device"] == device else why, **basis)

    def _plain_instead(self, o, args, kwargs, fallbacks) -> Run:
        """The plain Python function, on the converted arguments, when Numba cannot compile
        the function as written (a library call Numba does not know, a type it cannot
        infer): the answer the user wrote, recorded and warned, never Numba's typing error
        for a function that runs as Python."""
        import warnings

        from hpu._errors import HpuPerformanceWarning

        reason = self._not_compiled
        fallbacks.append(reason)
        warnings.warn(HpuPerformanceWarning(f"hpu: {reason}"), stacklevel=user_stacklevel())
        t0 = time.perf_counter()
        with _lists_restored(args, kwargs):
            value = self._plain_function()(*args, **kwargs)
        return _one_call_run(o, value, t0, fallbacks, reason)

    def _run_compiled(self, o, args, kwargs, fallbacks) -> Run:
        """:meth:`_run_functional` with the arguments converted: one call or the fan-out, as
        the plan says (:meth:`_functional_plan`; with ``memory=True`` it predicts the peak
        first, and the run's measured peak is then the call's alone)."""
        plan = self._functional_plan(o, args, kwargs, memory=bool(o["memory"]))
        peak = None
        t0 = time.perf_counter()
        if o["memory"]:     # the call's own peak: not the probes', not the compiler's
            import gc

            from hpu._run import traced_peak

            gc.collect()    # the probes' cycles, freed now: inside, they would count negative
            with traced_peak() as measured:
                value, tasks, sizes, levels = self._execute_in_order(plan.K, args, kwargs)
            peak = measured()
        else:
            value, tasks, sizes, levels = self._execute_in_order(plan.K, args, kwargs)
        return Run(value=value, device=o["device"], alpha=1.0, y=None, K=plan.K,
                   cpu_tasks=tasks, gpu_tasks=0, fallbacks=fallbacks, levels=levels,
                   transfers=(), seconds=time.perf_counter() - t0, plan=plan,
                   level_sizes=sizes, started=t0, reason=plan.reason, peak_memory=peak)

    @functools.cached_property
    def _returns_values(self) -> bool:
        """Whether a ``return`` of the function returns a value (unknown: True)."""
        from hpu._functional import _tree_of

        tree = _tree_of(self.py_func)
        return tree is None or any(isinstance(r, ast.Return) and r.value is not None
                                   for r in ast.walk(tree))

    def _functional_plan(self, o, args, kwargs, *, memory: bool):
        """The :class:`hpu._functional_plan.FunctionalPlan` of a call on converted arguments
        that Numba compiles: its ``K`` (:func:`hpu._functional.fanout_levels`), and with
        ``memory`` its predicted peak (probes of the same shape: ``predict_peak``)."""
        import dataclasses

        import numba

        from hpu._functional import call_shape, fanout_levels, recursion_through_globals
        from hpu._functional_plan import FunctionalPlan, predict_peak

        if self._call_shape is None:
            self._call_shape = call_shape(self.py_func)
        a, arity, loop = self._call_shape
        if loop is not None and o["K"] is None and self._outlined is not None:
            loop = None         # the top levels run it compiled (hpu._outline)
        n = _elements(args, kwargs)
        threads = numba.get_num_threads()
        # lists cross between the Python top levels and the compiled subtrees only where
        # the call passes one or the function returns values: the tutorials' in-place
        # mergesort of an array, whose merge copies into lists of zeros, fans out
        # (a function that only joins pieces of its argument makes no list of its own: an
        # array at the call gives array results)
        crossing = self._lists and (
            any(type(v) is list for v in (*args, *kwargs.values()))
            or (self._returns_values and self._builds_lists))
        K, reason = fanout_levels(n, a, float(self._options["b"]), threads, o["K"], loop,
                                  crossing)
        if K and self._shared_writes is not None:
            K, reason = 0, self._shared_writes
        if K and not recursion_through_globals(self.py_func, self):
            K, reason = 0, (f"{self.__name__} calls itself through a closure, not a global "
                            "name: the function compiled by Numba, as one call")
        if K and any(type(v) is list for v in (*args, *kwargs.values())):
            line = self._writes_arguments
            if line is not None:
                # each compiled call copies a list in and writes all of it back when it
                # returns: subtrees on threads would overwrite each other's work
                K, reason = 0, (f"{self.__name__} writes into its list argument (line "
                                f"{line}), and a compiled call writes the whole list back "
                                "when it returns, so calls on threads would overwrite each "
                                "other's writes: the function compiled by Numba, as one call")
        device_reason = None
        if o["device"] != "cpu" or o["cluster"] is not None:
            device_reason = self._device_reason()
        plan = FunctionalPlan(name=self.__name__, device="cpu", requested=o["device"], n=n,
                              a=a, K=K, threads=threads, reason=reason,
                              device_reason=device_reason)
        if memory:
            peak, basis, probes = predict_peak(
                lambda *pa, **pk: self._execute(K, pa, pk), args, kwargs, n,
                passthrough=_numba_error())
            plan = dataclasses.replace(plan, peak_memory=peak, memory_basis=basis,
                                       probes=probes)
        return plan

    def _execute_in_order(self, K: int, args, kwargs):
        """:meth:`_execute`; when the fan-out raises the user's error, the one Python meets
        first is raised: the call again as one compiled call, which evaluates in Python's
        order (the fan-out's top levels run a call's later operands while its children
        still run: ``f(a[:m]) + [check(x) for x in a[m:]]`` raised check's ValueError
        where Python raises the left call's ZeroDivisionError).  Not for a function that
        writes into its arguments (the second call would see the first one's writes)."""
        from hpu._functional import on_big_stack

        try:
            return self._execute(K, args, kwargs)
        except Exception as err:
            if not K or not _a_tasks_error(err) or self._writes_arguments is not None:
                raise
            try:
                on_big_stack(self._functional_compiled(), *args, **kwargs)
            except Exception as first:  # noqa: BLE001 - the user's, raised as Python orders it
                if _a_tasks_error(first):
                    raise first from None
            raise

    def _execute(self, K: int, args, kwargs):
        """One call (``K = 0``) or the fan-out at ``K``: ``(value, subtrees, level sizes,
        level records)``."""
        from hpu._functional import FanOut, on_big_stack

        compiled = self._functional_compiled()
        if K == 0:
            return on_big_stack(compiled, *args, **kwargs), 1, (1,), ()
        import numba

        fan = FanOut(self.py_func, self, compiled, self._helpers, K=K,
                     threads=numba.get_num_threads(), arity=self._call_shape[1],
                     barriers=self._writes_arguments is not None, outlined=self._outlined)
        value = fan.run(args, kwargs)
        sizes = list(fan.level_sizes)
        while sizes[-1] == 0:       # the tree ended above level K: as really expanded
            sizes.pop()
        levels = ()
        if fan.spans:               # the subtrees, from the first start to the last end
            start = min(s for s, _ in fan.spans)
            end = max(e for _, e in fan.spans)
            levels = (LevelRecord(level=K, phase="leaf", cpu_tasks=fan.subtrees, gpu_tasks=0,
                                  cpu_seconds=end - start, gpu_seconds=0.0,
                                  cpu_start=start, cpu_end=end),)
        return value, fan.subtrees, tuple(sizes), levels

    def _plan_functional(self, o, args, kwargs):
        """``f.plan(...)`` of a functional function: the plan the run executes, with its
        predicted peak memory; where the run gives the plain function instead (lists Numba
        cannot type, code it cannot compile), a plan that says so."""
        from hpu._functional import (UNTYPED_REASON, convert_arguments, quiet_reflection,
                                     untyped_what)

        def plain(reason):
            return self._one_call_plan(o, "python", args, kwargs, reason)

        self._typed_as(args, kwargs)
        converted = convert_arguments(args, kwargs, self._lists)
        scratch = None if converted is None else self._scratch_call(*converted)
        if scratch is not None:     # as the run does (_run_functional)
            return self._scratch_peak(scratch[0]._plan(o, scratch[1], {}), o, *scratch)
        if self._device_form_applies(o, converted):
            plan = self._in_place_plan(o, converted)
            if plan is not None:
                return plan
        if converted is None:
            return plain(UNTYPED_REASON.format(name=self.__name__,
                                               what=untyped_what(args, kwargs)))
        if self._not_compiled is None and o["device"] == "cpu" and o["K"] is None \
                and self._in_place()[0] is not None:
            # whether Numba compiles the function as written decides the run's path
            # (_form_instead_of_plain): typed here, as the run types it
            from hpu._functional import _numba_return_type

            try:
                with quiet_reflection():
                    _numba_return_type(self._functional_compiled(), tuple(converted[0]),
                                       converted[1], strict=True)
            except _numba_error() as err:
                self._not_compiled = _not_compiled_reason(self.__name__, err)
        if self._not_compiled is None:
            try:
                with quiet_reflection():
                    return self._functional_plan(o, *converted, memory=True)
            except _numba_error() as err:
                self._not_compiled = _not_compiled_reason(self.__name__, err)
        if self._form_instead_of_plain(o):      # as the run does (_run_functional)
            plan = self._in_place_plan(o, converted)
            if plan is not None:
                return plan
        return plain(self._not_compiled)

    def _in_place_plan(self, o, converted):
        """The in-place form's breadth-first plan for these arguments, with its predicted
        peak; None where the form does not take them, or Numba cannot compile it (recorded
        in ``_not_compiled``, as the run then takes its CPU path or the plain one)."""
        try:
            ready = self._in_place_call(converted, o["arena"])
            if ready is not None:
                found = self._in_place_args(converted, ready[1])
                return self._in_place_peak(ready[0]._plan(o, ready[2], {}), o, ready[3],
                                           isinstance(found[0], list), found[3])
        except _numba_error() as err:
            self._not_compiled = _not_compiled_reason(self.__name__, err)
        return None

    def options(self, **options) -> "Configured":
        """This function with run options set; its call, ``.run``, ``.plan``,
        ``.sequential`` and ``.opencl_source`` take only the function's own arguments.

        ``f.options(device="cpu", K=4).run(a, tmp, 0, n)``.  The options are
        those of :data:`hpu._options.RUN_OPTIONS`: ``device`` (``"hybrid"``,
        ``"cpu"``, ``"gpu"``), ``alpha``, ``y``, ``K``, ``strategy``,
        ``cl_device`` (which OpenCL device), ``depth``, ``machine``, ``backend``
        (the device backend class), ``cluster``, ``keep_inputs`` (False: no copy
        of the written arrays to put back on an error, guide §9), ``arena`` (a functional
        function's device form: scratch elements per element of a task's slice where the
        size is known only at run time), ``memory`` (True: ``run.peak_memory`` is the host
        memory the call allocated at its peak).
        Checked here: a bad value raises at once.
        """
        return Configured(self, options)

    def _split(self, kwargs, where):
        from hpu._options import split_keywords

        return split_keywords(f"{self.__name__}.{where}", self._signature.parameters, kwargs)

    def run(self, *args, **kwargs) -> Run:
        """Run the function breadth-first and return a :class:`~hpu.Run` report.

        Keywords that are run options (``device``, ``alpha``, ``y``, ``K``,
        ``strategy``, ``cl_device``, ``depth``, ``machine``, ``backend``; see
        :meth:`options`) configure the run; the others are the function's.
        ``device``: ``"hybrid"`` (the default: the CPU's Numba threads and an
        OpenCL device split by the HPU model), ``"cpu"`` (Numba threads only)
        or ``"gpu"`` (every leaf and combine on the OpenCL device).
        ``alpha``/``y``: the hybrid split (share of the transfer level's tasks
        kept on the CPU, transfer level); ``None`` asks the model, with the
        machine's calibration profile.  ``K``: the cut-off level whose tasks
        solve whole subtrees.  A run option that is also a parameter's name is
        refused: use ``f.options(...).run(...)``.  ``run.plan`` is the plan
        that ran.
        ``cluster``: a ``dask.distributed.Client``, a scheduler address,
        ``"local:N"`` or ``hpu.Cluster(...)``: the top levels across Dask
        workers, each running its share with these options (see
        :mod:`hpu._dask`; the model may decline and run locally).
        """
        opts, user = self._split(kwargs, "run")
        if opts.get("memory") is True:
            return _measured(self._run, opts, args, user, None)
        return self._run(opts, args, user)

    def _run(self, options, args, kwargs, checked=None) -> Run:
        runner = self._as_called(args, kwargs)
        if runner is not self:
            return runner._run(options, args, kwargs, checked)
        if self._int_results and not self._a_form and not _disabled():
            from hpu._kinds import past_float

            if past_float(args, kwargs):
                return self._run_plain_for_ints(options, args, kwargs)
        from hpu._checked_ops import IntOverflowError

        try:
            run = self._run_any(options, args, kwargs, checked)
        except IntOverflowError as err:
            return self._grown(err, args, kwargs, options.get("keep_inputs", True))
        except TranslationError as err:
            if not getattr(err, "by_arguments", False):
                raise
            # a parameter whose type the recursion changes (an int at the call, a float
            # below): Python runs it as written, and the hint says how to run it compiled
            return self._python_run(args, kwargs, warned=(
                f"{err}; the plain Python function ran instead, exactly (slowly)"))
        except Exception as err:
            if is_replay(err):      # a raise whose message Python computes (hpu._raises)
                return self._replayed(err, args, kwargs,
                                      (options or {}).get("keep_inputs", True))
            self._note_raise_site(err)
            raise
        if run.device != "python" and (self._nested is not None or self._int_results):
            import dataclasses

            from hpu._kinds import restore
            from hpu._normalise import regrouped

            value = regrouped(run.value, self._nested)      # return s, (mx, c): nested again
            if self._int_results:
                value = restore(value, args, kwargs)
            run = dataclasses.replace(run, value=value)
        if run.device != "python" and _floats_of_empty(run.value, args, kwargs):
            import dataclasses

            run = dataclasses.replace(run, value=self._empty_kinds(run.value, args, kwargs))
        if (checked or options or {}).get("cluster") is not None and not hasattr(run, "cluster"):
            run = _not_distributed(run)
        return run

    def _empty_kinds(self, value, args, kwargs):
        """``value`` (a compiled result holding a float, of a call whose arrays are all
        empty) with Python's int where the plain function returns one: ``return 0`` for an
        empty range beside ``return a[lo]`` is typed float64 by Numba for a float array,
        and ``0.0`` came back where Python gives ``0``.  With no element to read, the plain
        function answers at once (the call's ints are small: :func:`_floats_of_empty`); an
        item is replaced only by an equal int, and on an exception ``value`` stands."""
        try:
            plain = self._plain_function()(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the compiled run answered; its value stands
            return value
        if isinstance(value, tuple):
            if not isinstance(plain, tuple) or len(plain) != len(value):
                return value
            return tuple(_int_if_equal(v, p) for v, p in zip(value, plain))
        return _int_if_equal(value, plain)

    def _as_called(self, args, kwargs) -> "DivideAndConquer":
        """The object that runs a call on these arguments, the entry of every call, run,
        plan and source: first the function starts again from its source where a module
        constant it reads has changed (:meth:`_renew`), and a masked array is refused
        (its mask would be lost); then this object, or, where a Python list
        or tuple is given to a function whose bounds are not checked (``boundscheck=None``
        and no ``HPU_BOUNDSCHECK``), the same function checked for bounds
        (:attr:`_bounds_checked`).  hpu gives the compiled code a list as an array, and an
        unchecked array read past its end reads memory beyond it, where Python raises
        ``IndexError`` at an index past a list (as Numba does on a list): an off-by-one on
        a list must raise, on every device, not return what lay past it.  An explicit
        ``boundscheck=False`` is the user's choice, kept.  A function that builds lists
        (``_lists``) is given lists as lists, which Numba checks itself (Python's message),
        and checks the arrays it makes of them (its list forms).  So are arrays that are
        all empty: ``find_max(a, 0, len(a) - 1)`` of no elements reads ``a[0]``, where
        Python raises IndexError and unchecked code returned what lay past the end (an
        empty input costs the checks nothing)."""
        if _disabled():
            return self
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as err:      # as Python refuses the call (a functional function's
            # compiled call would have dropped an extra argument); an unknown keyword first,
            # as Python names it
            params = self._signature.parameters
            unknown = [k for k in kwargs if k not in params]
            why = f"got an unexpected keyword argument {unknown[0]!r}" if unknown else err
            raise TypeError(f"{self.__name__}(): {why}; it takes "
                            f"({', '.join(params)})") from None
        if _constant_values(self._constant_refs) != self._constants_seen:
            self._renew()
        for v in (*args, *kwargs.values()):
            if isinstance(v, np.ma.MaskedArray):
                raise TypeError(
                    f"{self.__name__}() received a masked array ({_describe(v.data)}): its "
                    "mask would be lost, as compiled code and the device see the data alone; "
                    "pass a.filled(value) (masked elements replaced) or a.compressed() (only "
                    "the unmasked ones), or call the plain function f.py_func(...)")
        if self._boundscheck is not None:
            return self
        if not any(type(v) in (list, tuple) for v in (*args, *kwargs.values())) \
                and not _all_arrays_empty(args, kwargs):
            return self
        from hpu._guard import boundscheck_default

        self._settle()
        if self._lists or boundscheck_default():
            return self
        return self._bounds_checked

    def _renew(self) -> None:
        """Start again from the function as it is now: a module constant it (or a helper)
        reads has another value than when it was compiled.  Numba freezes a global's value
        into the machine code, and Python reads it at every call: a cut-off or a bonus
        changed in a notebook cell after a first call was ignored for the rest of the
        process.  Everything compiled for the old value is dropped (the disk caches are
        keyed by the generated source, which holds the value)."""
        with self._lock:
            if _constant_values(self._constant_refs) == self._constants_seen:
                return
            fresh = DivideAndConquer(self.py_func, **self._options, boundscheck=self._boundscheck)
            self.__dict__.clear()
            self.__dict__.update(fresh.__dict__)

    @functools.cached_property
    def _bounds_checked(self) -> "DivideAndConquer":
        """This function decorated again with ``boundscheck=True`` (its own compiled code,
        kernels and forms), for the calls :meth:`_as_called` gives it; its plain function
        is this one's."""
        with self._lock:
            twin = DivideAndConquer(self.py_func, **self._options, boundscheck=True)
            twin._plain_function = self._plain_function
            return twin

    def _run_plain_for_ints(self, options, args, kwargs) -> Run:
        """The plain function, for a function whose ints the compiled code holds as float64
        beside its infinite sentinels (:mod:`hpu._kinds`) given ints past 2**53, which
        float64 would round: Python's exact answer, slowly, said in the run and warned."""
        return self._python_run(args, kwargs, warned=(
            f"{self.__name__} returns infinite float sentinels beside ints, which the "
            "compiled function holds as float64, and was given ints beyond 2**53, which "
            "float64 would round: the plain Python function ran, exactly (give the sentinel "
            "as an int, e.g. np.iinfo(np.int64).min, to run it compiled)"))

    def _grown(self, err, args, kwargs, kept: bool) -> Run:
        """The run of a call whose compiled code met an integer past int64 (``err``, an
        :class:`hpu._checked_ops.IntOverflowError`: Python's int grows where int64 wraps, or
        ``x ** -n`` is a float): the plain function's, exact, from the caller's arguments
        as they were (the run put back what it wrote).  With ``keep_inputs=False`` nothing
        was kept, so ``err`` is raised instead of a rerun over half-written arrays."""
        if not kept and self._writes_arrays():
            raise err
        return self._python_run(args, kwargs, warned=(
            f"{err}: the plain Python function ran instead, exactly (slowly); keep the "
            "values within 64 bits, or use floats, to run it compiled"))

    def _replayed(self, err, args, kwargs, kept: bool) -> Run:
        """The run of a call whose compiled code reached a ``raise`` with a message computed
        at run time (``err``, :func:`hpu._raises.is_replay`): the plain function's, from the
        caller's arguments as they were, which raises that exception with its message (or,
        should the plain function return, gives its answer).  With ``keep_inputs=False``
        and arrays written, nothing was kept to rerun from: ``err`` says where."""
        if getattr(self, "_inner", False) or (not kept and self._writes_arrays()):
            raise err
        try:
            return self._python_run(args, kwargs, reason=err.args[0][len("hpu: "):])
        except BaseException as raised:
            raised.__suppress_context__ = True   # the user's exception, not hpu's marker
            raise

    def _writes_arrays(self) -> bool:
        closure = getattr(self, "_closure", None)
        return closure is None or bool(closure.written)

    def _python_run(self, args, kwargs, *, reason: str | None = None,
                    warned: str | None = None) -> Run:
        """The plain function's run (``device="python"``): ``reason`` says why; ``warned``
        is a reason also warned and recorded as a fallback (Python's answer where the
        compiled one would differ, slowly)."""
        import warnings

        from hpu._errors import HpuPerformanceWarning

        if warned is not None:
            warnings.warn(HpuPerformanceWarning(f"hpu: {warned}"), stacklevel=user_stacklevel())
        t0 = time.perf_counter()
        value = self._plain_function()(*args, **kwargs)
        return Run(value=value, device="python", alpha=None, y=None, K=0, cpu_tasks=1,
                   gpu_tasks=0, fallbacks=[warned] if warned is not None else [], levels=(),
                   transfers=(), seconds=time.perf_counter() - t0, reason=warned or reason)

    def _plain_function(self):
        """The plain function, for hpu's own runs of it (a list Numba cannot take, what Numba
        cannot compile): a copy whose recursive calls call the copy itself, not this object.
        Through the object every level is also a call of ``__call__``, which Python 3.12
        counts against its C recursion limit: a quicksort 1000 calls deep raised
        RecursionError there where the undecorated function returns.  The copy reads the
        module's globals as they are at the call; a function with a ``global`` statement (in
        itself or a helper) is called as it is."""
        import types

        fn = self.py_func
        names = [k for k in fn.__code__.co_names if fn.__globals__.get(k) is self]
        if fn.__closure__ or self._globals_written or not names:
            return fn
        own = dict(fn.__globals__)
        plain = types.FunctionType(fn.__code__, own, fn.__name__, fn.__defaults__)
        plain.__kwdefaults__ = fn.__kwdefaults__
        for k in names:
            own[k] = plain
        return plain

    def _note_raise_site(self, err: BaseException) -> None:
        """The user's ``raise``/``assert`` that ``err`` came from, named in a note (compiled
        code and the device raise Python's exception without its line; hpu._raises)."""
        from hpu._raises import add_site_note

        try:
            add_site_note(err, self._raise_sites)
        except Exception:  # noqa: BLE001 - a note is not worth hiding the user's error
            pass

    # facts read once from the source (of the function and its helpers)
    @functools.cached_property
    def _raise_sites(self):
        """``(class, arguments, "file:line")`` of each ``raise``/``assert`` (hpu._raises)."""
        from hpu._raises import raise_sites

        try:
            return raise_sites(self.py_func)
        except Exception:  # noqa: BLE001 - a source hpu cannot read: no notes
            return ()

    @functools.cached_property
    def _array_truths(self) -> list:
        """Where the function or a helper reads an array parameter's truth
        (:func:`hpu._functional.array_truths`): hpu reads it as a list's, its emptiness."""
        from hpu._functional import array_truths

        try:
            return array_truths(self.py_func)
        except Exception:  # noqa: BLE001 - a shape the analysis does not know: none found
            return []

    def _truth_of_an_array(self, args, kwargs) -> str | None:
        """The reason the plain function runs this call, or None: a NumPy array given to a
        function that reads an array's truth (``if not arr``).  hpu reads that as a list's
        emptiness, which is what the function means for the lists it was written for; on
        an array Python raises ValueError ("The truth value of an array with more than one
        element is ambiguous", of an empty one likewise) and reads the one element for a
        length of 1 -- so given an array, the plain function runs: Python's error at the
        user's line, or Python's answer."""
        if self._a_form or not self._array_truths or not any(
                isinstance(v, np.ndarray) for v in (*args, *kwargs.values())):
            return None
        file, line = self._array_truths[0]
        return (f"{self.__name__} reads the truth of an array ({file}:{line}), "
                "which hpu reads as a list's, its emptiness; given a NumPy array, Python "
                "raises ValueError there unless the array has one element (whose value is "
                "then its truth), so the plain Python function runs, as Python would; pass "
                "a list, or test len(arr) == 0, to run it compiled")

    @functools.cached_property
    def _int_results(self) -> bool:
        """Whether Python's result is an int wherever the compiled one is a finite integral
        float, on int arguments (:mod:`hpu._kinds`: floats only as infinite sentinels)."""
        from hpu._kinds import int_results

        try:
            return int_results(self.py_func)
        except Exception:  # noqa: BLE001 - a shape the analysis does not know: as Numba
            return False

    @functools.cached_property
    def _globals_written(self) -> bool:
        """A ``global`` or ``nonlocal`` statement in the function or a helper."""
        from hpu._functional import _trees

        return any(isinstance(n, (ast.Global, ast.Nonlocal))
                   for _, t in _trees(self.py_func) for n in ast.walk(t))

    @functools.cached_property
    def _writes_arguments(self) -> int | None:
        """The line where the function or a helper writes into its own parameter, or None
        (:func:`hpu._functional.writes_its_arguments`)."""
        from hpu._functional import writes_its_arguments

        return writes_its_arguments(self.py_func)

    @functools.cached_property
    def _shared_writes(self) -> str | None:
        """Why every run is one task (:mod:`hpu._races`): its writes into an element every
        task may write, or None."""
        from hpu._races import shared_writes, shared_writes_of

        self._settle()
        if self._functional is not None:
            found = shared_writes_of(self.py_func)
            name = self.py_func.__name__
        else:
            found = shared_writes(self._parse(), self._resolve())
            name = self._parse().name
        if not found:
            return None
        where = "; ".join(f"line {w.line}: `{w.text}`" + (f" in {w.helper}()" if w.helper else "")
                          for w in found[:3])
        if all("neighbouring task" in w.text for w in found):
            return (f"{self.__name__} reaches outside a one-element leaf's own element "
                    f"({where}): side by side its answer would depend on which task runs "
                    "first, so it runs as one task, depth first, on the calling thread, as "
                    "Python runs it; to run in parallel, have each task write only its own "
                    "elements and read only elements no task writes (write the results "
                    "into another array)")
        fix = ("make the calls' ranges apart (`f(a, lo, mid)`, `f(a, mid, hi)`)"
               if any(w.text.endswith(" overlap") for w in found) else
               "return what it accumulates and combine the children's results (`return "
               f"{name}(...) + {name}(...) + 1` for a count)")
        return (f"{self.__name__} writes into an element other tasks may write too ({where}): "
                "side by side their updates would be lost, so it runs as one task, depth "
                f"first, on the calling thread, as Python runs it; to run in parallel, {fix}")

    def _one_task(self, o, why=None):
        """The options a function with shared writes (:attr:`_shared_writes`, or ``why``)
        runs with: on the CPU, K = 0 (and the warning, when it was asked for more)."""
        import warnings

        from hpu._errors import HpuPerformanceWarning

        if o["device"] != "cpu" or o["K"] not in (None, 0) or o["cluster"] is not None:
            warnings.warn(HpuPerformanceWarning(f"hpu: {why or self._shared_writes}"),
                          stacklevel=user_stacklevel())
        return {**o, "device": "cpu", "K": 0, "cluster": None, "alpha": None, "y": None}

    def _run_any(self, options, args, kwargs, checked=None) -> Run:
        from hpu._options import check_options

        o = checked if checked is not None else check_options(options, f"{self.__name__}.run")
        if _disabled():
            return self._python_run(args, kwargs)
        self._settle()
        empty = _empty_input(args, kwargs)
        if empty is not None:
            # an empty list has no dtype but NumPy's guess (float64), which would make
            # `if not lst: return 0` a 0.0, and a functional sort's `return a.copy()` an
            # array where Python gives []; the plain function answers exactly, and at once
            return self._python_run(args, kwargs, reason=empty)
        truth = self._truth_of_an_array(args, kwargs)
        if truth is not None:           # Python's ValueError, or its answer for one element
            return self._python_run(args, kwargs, reason=truth)
        big = self._big_int(args, kwargs)
        if big is not None:         # Python's int grows: the plain function, exactly
            with self._kept_on_error(o, args, kwargs):
                return self._python_run(args, kwargs, warned=big)
        if self._functional is not None:
            return self._run_functional(o, args, kwargs)
        written = self._written_list(args, kwargs)
        if written is not None:
            return self._run_as_written(o, args, kwargs, written)
        unfit = self._unfit_list(args, kwargs)
        if unfit is not None:       # Python's exact answer, slowly, said in the run
            return self._python_run(args, kwargs, warned=unfit)
        if _bool_array(args, kwargs):
            return self._run_bool_arrays(o, args, kwargs)
        unlaid = _unlaid_array(self.py_func, args, kwargs) or self._changed_array(args, kwargs)
        if unlaid is not None:
            return self._run_bool_arrays(o, args, kwargs, unlaid)
        values = self._check_args(args, kwargs)
        program = self._program(values)
        alone = self._shared_writes or self._aliased(args, kwargs)
        if alone is not None:
            import dataclasses

            run = self._run_checked(self._one_task(o, alone), values, program)
            # the plan that ran is the one .plan() printed: its reason the shared write
            plan = (dataclasses.replace(run.plan, reason=alone) if run.plan is not None
                    else None)
            return dataclasses.replace(run, device=o["device"], reason=alone, plan=plan,
                                       fallbacks=[*run.fallbacks, alone]
                                       if o["device"] != "cpu" else run.fallbacks)
        return self._run_checked(o, values, program)

    def _changed_array(self, args, kwargs) -> tuple[str, str] | None:
        """``(what was given, the reason)`` where an array reaches a parameter the recursive
        calls change (Sedgewick's merge sort that passes ``dst, src`` down where it was given
        ``src, dst``: the arrays swap roles at each level), else None.  The breadth-first
        path passes each array down unchanged; such a call runs as written, as one call
        on the CPU (:meth:`_run_bool_arrays`), Python's answer."""
        spec = self._parse()
        try:
            bound = self._signature.bind(*args, **kwargs).arguments
        except TypeError:
            return None                 # (Python's TypeError, raised where it is checked)

        def array(q):
            return isinstance(bound.get(q), np.ndarray) and bound[q].ndim >= 1

        for p in bound:
            if not array(p) or p in spec.passthrough or p not in spec.params:
                continue
            k = spec.params.index(p)
            # (an array where an index goes, `f(a, t, 0, x)`, keeps _check_value's TypeError)
            call = next((c for c in spec.calls if k < len(c.args)
                         and isinstance(c.args[k], ast.Name) and c.args[k].id != p
                         and array(c.args[k].id)), None)
            if call is not None:
                at = f" (line {call.lineno}: `{call.args[k].id}` in its place)"
                return (f"an array as {p!r}", (
                    f"{self.__name__}() was given an array as {p!r}, which its recursive calls "
                    f"change{at}: the breadth-first path passes each array down unchanged, so "
                    "the function compiled by Numba as written ran, as one call on the CPU "
                    "(arrays that swap roles between levels, as a merge sort that alternates "
                    "src and dst, stay one call)"))
        return None

    def _big_int(self, args, kwargs) -> str | None:
        """Why an int argument beyond 64 bits (Karatsuba's operands, ``hanoi(2**70)``) runs
        the plain function, whose ints grow as compiled code's cannot, else None."""
        for k, v in enumerate((*args, *kwargs.values())):
            if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**63:
                try:
                    p = list(self._signature.bind(*args, **kwargs).arguments)[k] \
                        if k < len(args) else list(kwargs)[k - len(args)]
                except (TypeError, IndexError):
                    p = "an argument"
                return (f"{self.__name__} was given {p} = {v}, an int beyond 64 bits: the "
                        "plain Python function ran, exactly (compiled code computes ints in "
                        "64 bits)")
        return None

    def _unfit_list(self, args, kwargs) -> str | None:
        """Why a list argument runs the plain function (:func:`hpu._functional.unfit_list`:
        bools, ints beyond 64 bits), else None."""
        from hpu._functional import unfit_list

        for v in (*args, *kwargs.values()):
            what = unfit_list(v) if type(v) in (list, tuple) else None
            if what is not None:
                return (f"{self.__name__} was given {what}: the plain Python function ran, "
                        "exactly (pass a NumPy array of a number dtype to run it compiled)")
        return None

    def _no_device_reason(self, err) -> str:
        """Why a function whose device code cannot be generated runs on the CPU."""
        return (f"{self.__name__} cannot run on the OpenCL device ({str(err).strip()}); "
                "it runs on the CPU")

    def _untranslatable(self, values, depth: int) -> str | None:
        """:meth:`_no_device_reason` where OpenCL C cannot say the function (the plan says
        what the run will do), else None."""
        from hpu._opencl._levels import translate_levels

        program = self._program(values)
        try:
            translate_levels(program, {n: values[n] for n in program.layout.shared}, depth)
        except TranslationError as err:
            return self._no_device_reason(err)
        except Exception:  # noqa: BLE001 - anything else is the run's to report
            return None
        return None

    def _aliased(self, args, kwargs) -> str | None:
        """Why a call whose array arguments share memory, one of them written, runs as one
        task (``f(x, x, 0, n)`` reading ``a[lo - 1]`` and writing ``out[lo]``: side by side a
        task could read what another writes), or None."""
        arrays = [(p, v) for p, v in self._bound_arguments(args, kwargs)
                  if isinstance(v, np.ndarray)]
        if len(arrays) < 2:
            return None
        written = self._resolve().written
        for i, (p, x) in enumerate(arrays):
            for q, y in arrays[i + 1:]:
                if (p in written or q in written) and np.may_share_memory(x, y):
                    w = p if p in written else q
                    return (f"{self.__name__} was given arrays that share memory ({p!r} and "
                            f"{q!r}) and writes {w!r}: side by side a task could read what "
                            "another writes, so it runs as one task, depth first, on the "
                            "calling thread, as Python runs it; pass separate arrays (a "
                            "copy) to run in parallel")
        return None

    def _bound_arguments(self, args, kwargs) -> list:
        try:
            return list(self._signature.bind(*args, **kwargs).arguments.items())
        except TypeError:
            return []

    # ------------------------------------------------------------------ lists written
    def _written_list(self, args, kwargs):
        """``(parameter, line)`` of a list argument that the function writes to, else
        None.  Python's list slices are copies and NumPy's are views, so such a list is
        not converted to an array (an array would change what a function that writes
        into slices does); the function runs as written on the list
        (:meth:`_run_as_written`)."""
        if not any(type(v) is list for v in (*args, *kwargs.values())):
            return None
        closure = self._resolve()
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:
            return None                 # _check_args says what is wrong
        lines = dict(closure.first_write)
        for p, v in bound.arguments.items():
            if type(v) is list and p in closure.written:
                return p, lines.get(p)
        return None

    def _call_as_written(self, args, kwargs):
        """The function compiled by Numba as written, on the caller's lists (Numba reflects
        the writes back into them); ``(value, None)``, or ``(None, why)`` when a list is one
        Numba cannot take unchanged (empty, nested, mixed number types) and nothing ran.
        On an exception the lists are put back as they were."""
        from hpu._functional import (convert_arguments, on_big_stack, quiet_reflection,
                                     untyped_what)

        self._typed_as(args, kwargs)
        converted = convert_arguments(args, kwargs, lists=True)
        if converted is None or any(c is not v for c, v in zip(
                (*converted[0], *converted[1].values()), (*args, *kwargs.values()))):
            what = (untyped_what(args, kwargs) if converted is None
                    else "a list of several number types")
            return None, what
        if self._not_compiled is not None:
            return None, self._not_compiled
        try:
            with _lists_restored(args, kwargs), quiet_reflection():
                return on_big_stack(self._functional_compiled(), *args, **kwargs), None
        except _numba_error() as err:
            self._not_compiled = _not_compiled_reason(self.__name__, err)
            return None, self._not_compiled

    @functools.cached_property
    def _copy_halves_of_lists(self):
        """``(DivideAndConquer, CopyHalvesForm)`` of a function that copies the halves of
        a list by slicing it (``L = arr[:mid]``) and merges them back into it, as the
        tutorials write it for lists (:mod:`hpu._copy_halves`), or None; decided once."""
        from hpu._copy_halves import rewrite_copy_halves
        from hpu._functional import _numpy_names

        if self._shared_writes is not None:
            return None
        try:
            form = rewrite_copy_halves(self.py_func, _numpy_names(self.py_func.__globals__),
                                       lists=True)
            # Python checks a list's indices: so does the form on the list's items
            dc = DivideAndConquer(form.fn, b=self._options["b"], cost=self._options["cost"],
                                  boundscheck=True)
        except Exception:  # noqa: BLE001 - NotCopyHalves, a TranslationError: as written
            return None
        return dc, form

    def _list_copy_halves(self, o, args, kwargs, p):
        """The copy-halves form on the list ``p`` (all ints, or all floats) as an array,
        the sorted elements written back into the list; None where it does not apply (the
        function then runs as written), or the reason a run was redone as written."""
        got = self._copy_halves_of_lists
        if got is None or o["cluster"] is not None:
            return None
        dc, form = got
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:
            return None
        if form.array != p or any(type(v) is list for q, v in bound.arguments.items()
                                  if q != p):
            return None
        items = bound.arguments[p]
        arr = _list_as_array(items)
        if arr is None:
            return None
        bufs = form.buffers({p: arr})
        values = (*(arr if q == p else bound.arguments[q] for q in form.params), *bufs)
        try:
            ran = self._run_copy_halves(o, (dc, values), form)
        except (TypeError, ValueError, ArrayMismatchError):
            return None
        if isinstance(ran, Run):
            items[:] = arr.tolist()
        return ran

    def _run_bool_arrays(self, o, args, kwargs, unlaid=None) -> Run:
        """A NumPy bool array (a mask) given to a breadth-first function: its level arrays
        and kernels hold numbers, and bools as uint8 would change ``~`` and ``-``, so the
        function compiled by Numba as written, as one call on the CPU, with Numba's bools
        (the plain function where Numba cannot take the call); the caller's arrays are put
        back on an error.  Recorded and, asked for a device, warned."""
        import warnings

        from hpu._errors import HpuPerformanceWarning

        given, reason = unlaid or ("a bool array", BOOL_ARRAY_REASON.format(name=self.__name__))
        fallbacks = []
        if o["device"] != "cpu" or o["cluster"] is not None:
            fallbacks.append(reason)
            warnings.warn(HpuPerformanceWarning(f"hpu: {reason}"), stacklevel=user_stacklevel())
        t0 = time.perf_counter()
        with self._kept_on_error(o, args, kwargs):
            value, what = self._call_as_written(args, kwargs)
        if what is not None:
            return self._python_run(args, kwargs, warned=(
                f"{self.__name__} was given {given}, and Numba cannot compile the call "
                f"({what}): the plain Python function ran"))
        return _one_call_run(o, value, t0, fallbacks, reason)

    def _run_as_written(self, o, args, kwargs, written) -> Run:
        import warnings

        from hpu._errors import HpuPerformanceWarning

        p, line = written
        form_ran = self._list_copy_halves(o, args, kwargs, p)
        if isinstance(form_ran, Run):
            return form_ran
        at = f" (line {line})" if line else ""
        reason = (f"{self.__name__} writes to {p!r}{at} and was given a list: the function "
                  "compiled by Numba as written, on the list, as one call on the CPU "
                  "(Python's list slices are copies and NumPy's are views, so an array "
                  "could change what it does; pass a NumPy array to run breadth-first)")
        fallbacks = []
        if isinstance(form_ran, str):       # the form's run, redone as written below
            reason = form_ran
            fallbacks.append(reason)
            warnings.warn(HpuPerformanceWarning(f"hpu: {reason}"), stacklevel=user_stacklevel())
        elif o["device"] != "cpu" or o["cluster"] is not None:
            fallbacks.append(reason)
            warnings.warn(HpuPerformanceWarning(f"hpu: {reason}"), stacklevel=user_stacklevel())
        t0 = time.perf_counter()
        value, what = self._call_as_written(args, kwargs)
        if what is not None:
            reason = (what if what is self._not_compiled else
                      f"{self.__name__} writes to {p!r}{at} and was given {what}, which Numba "
                      "cannot take as it is: the plain Python function runs")
            if what != "an empty list":
                fallbacks.append(reason)
                warnings.warn(HpuPerformanceWarning(f"hpu: {reason}"), stacklevel=user_stacklevel())
            with _lists_restored(args, kwargs):
                value = self._plain_function()(*args, **kwargs)
        return _one_call_run(o, value, t0, fallbacks, reason)

    def _as_written_call(self, program, restore):
        """``call(values)``: the user's function as written, compiled by Numba
        (:func:`hpu._functional.compile_functional`: Python's order, its ``and``/``or``
        skipping what Python skips -- the program's own function evaluates every call of
        an expression), on the call's values; the program's function where Numba cannot
        compile it so (``restore()`` puts the arguments back: :meth:`Program.run_plain`)."""
        from hpu._functional import on_big_stack

        params = list(self._signature.parameters)

        def call(values):
            try:
                compiled = self._functional_compiled()
                return on_big_stack(compiled, *(values[p] for p in params))
            except (_numba_error(), KeyError):
                return program.run_plain([values[p] for p in program.spec.params], restore)

        return call

    def _run_checked(self, o, values, program=None) -> Run:
        """A run of already checked arguments (``values``: every parameter, the hidden
        view parameters included) with checked options ``o``."""
        if program is None:
            program = self._program(values)
        if o["cluster"] is not None:
            from hpu._dask import run_on_cluster

            return run_on_cluster(self, program, values, options=o)
        try:
            return self._run_once(o, values, program)
        except TranslationError as err:
            if o["device"] == "cpu":
                raise
            # Python the CPU's compiled code takes but OpenCL C cannot say (an array given
            # another name): nothing ran on the device; the CPU answers, recorded
            import dataclasses
            import warnings

            from hpu._errors import HpuPerformanceWarning

            reason = self._no_device_reason(err)
            warnings.warn(HpuPerformanceWarning(f"hpu: {reason}"), stacklevel=user_stacklevel())
            run = self._run_once({**o, "device": "cpu", "alpha": None, "y": None}, values,
                                 program)
            return dataclasses.replace(run, device=o["device"], reason=reason,
                                       fallbacks=[*run.fallbacks, reason])
        except BaseException as err:
            # deeper than native recursion may go: the arrays are back as they were, so the
            # call runs again with the solver that continues on a growable stack
            if not (program.could_go_deeper(err) and o["keep_inputs"]):
                raise
        program.go_deep()
        return self._run_once(o, values, program)

    def _run_once(self, o, values, program) -> Run:
        from hpu._snapshot import Snapshot

        # the caller's arrays as they were, put back on any exception (hpu._snapshot)
        snapshot = Snapshot.take(program, values, keep=o["keep_inputs"], dead=self._dead)
        user_error = in_order = None
        t0 = time.perf_counter()
        try:
            if o["device"] != "cpu":
                from hpu._hybrid import run_on_devices

                backend = {} if o["backend"] is None else {"backend": o["backend"]}

                run = run_on_devices(self, program, values, device=o["device"],
                                     device_spec=o["cl_device"], alpha=o["alpha"], y=o["y"],
                                     K=o["K"], strategy=o["strategy"], depth=o["depth"],
                                     machine=o["machine"], snapshot=snapshot, **backend)
            else:
                from hpu._hybrid import execute_plan
                from hpu._plan import make_plan

                t0 = time.perf_counter()
                plan = make_plan(program.spec, values, device="cpu", K=o["K"],
                                 machine=o["machine"])
                run = execute_plan(program, values, plan, device="cpu", t_start=t0)
        except BaseException as err:
            snapshot.restore()  # the device, if any, was stopped on the way out
            if is_replay(err):  # a raise whose message Python computes: the plain function
                raise           # runs (_run), its traceback at the user's line
            # the user's error, raised by some task of a level: Python raises the first in
            # its own (depth-first) order, which a level's tasks, side by side, need not
            # meet first -- two merges failing on different subscripts of one line gave
            # another text on the hybrid split than in Python.  So the plain compiled
            # function reruns from the restored arguments and its error is the one raised
            # (also a task's error that its rerun alone did not repeat, hpu._guard)
            raised = type(err).__name__
            from hpu._errors import HpuRecursionError

            # (a recursion without end too: `f(n // 2) if n % 2 == 0 else f(n // 2) + ...`
            # makes, on a level, the call Python skips -- Stern's `stern(2)` calls itself --
            # and the function as written, in Python's order, is guarded at its own depth)
            if getattr(err, "not_reproduced", False) or _a_tasks_error(err) \
                    or isinstance(err, HpuRecursionError):
                user_error, in_order = snapshot.rerun_in_order(
                    program, values, self._as_written_call(program, snapshot.restore))
            if user_error is None and in_order is None:
                raise
        if user_error is not None:
            raise user_error
        if in_order is not None:
            # a task raised that Python never runs (`f(a, lo, mid) and f(a, mid, hi)`: a
            # level runs both calls): the run in Python's order is the answer
            reason = (f"{self.__name__}: a task raised {raised} in a call that "
                      "Python does not make for these arguments (the right operand of "
                      "`and`/`or`, or a branch of a conditional expression, both run by a "
                      "level's tasks); the function ran again as one call, in Python's "
                      "order, which raised nothing")
            return Run(value=in_order[0], device=o["device"], alpha=None, y=None, K=0,
                       cpu_tasks=1, gpu_tasks=0, fallbacks=[reason], levels=(), transfers=(),
                       seconds=time.perf_counter() - t0, reason=reason)
        from hpu._overheads import observe

        observe(run)  # what a parallel region costs now (hpu._overheads)
        if os.environ.get("HPU_TRACE"):  # trace every run into that folder (hpu._trace)
            from hpu._trace import trace_env

            trace_env(run, self.__name__)
        return run

    def opencl_source(self, *args, **kwargs) -> str:
        """The OpenCL C generated for this function and these arguments' types.

        The level kernels (one work-item per task) and the subtree solver
        (the recursion as a loop over a ``depth``-frame stack, a run option),
        commented with the Python lines they come from.  Arguments are needed
        because the code depends on the arrays' dtypes; small ones do.
        """
        opts, user = self._split(kwargs, "opencl_source")
        return self._opencl_source(opts, args, user)

    def _opencl_source(self, options, args, kwargs) -> str:
        runner = self._as_called(args, kwargs)   # (the code that runs for a list)
        if runner is not self:
            return runner._opencl_source(options, args, kwargs)
        from hpu._opencl._levels import opencl_source
        from hpu._options import check_options

        o = check_options(options, f"{self.__name__}.opencl_source")
        self._settle()
        if self._functional is not None:    # its in-place form's source, where it has one
            from hpu._functional import convert_arguments

            ready = self._in_place_call(convert_arguments(args, kwargs, self._lists),
                                        o["arena"])
            if ready is not None:
                return ready[0]._opencl_source(options, ready[2], {})
        values = self._check_args(args, kwargs)
        program = self._program(values)
        shared = {n: values[n] for n in program.layout.shared}
        return opencl_source(program, shared, o["depth"])

    def plan(self, *args, **kwargs):
        """The plan a run with these arguments and options executes (a ``hpu.model.Plan``).

        Run options as for :meth:`run`.  ``n`` is ``hi - lo`` of ``span`` when
        given, else the longest array argument; ``a`` comes from the code,
        ``b`` and ``cost`` from the decorator; the bytes per element are those
        of all the arrays a task moves.  ``machine``: a ``hpu.model.Machine``;
        by default the calibration profile of ``cl_device`` (as the hybrid run
        uses it; with no profile, the first call calibrates quickly once unless
        ``HPU_NO_AUTOCALIBRATE=1``, which uses hpu's built-in values).  With
        ``alpha`` and ``y`` given the plan's strategy is ``"given"``.
        """
        opts, user = self._split(kwargs, "plan")
        return self._plan(opts, args, user)

    def _plan(self, options, args, kwargs):
        runner = self._as_called(args, kwargs)   # (the code that runs for a list)
        if runner is not self:
            return runner._plan(options, args, kwargs)
        from hpu._options import check_options
        from hpu._plan import make_plan

        o = check_options(options, f"{self.__name__}.plan")
        self._settle()
        empty = _empty_input(args, kwargs)
        if empty is not None:
            # as the run does: the plain function, at once
            return self._one_call_plan(o, "python", args, kwargs, empty)
        truth = self._truth_of_an_array(args, kwargs)
        if truth is not None:
            return self._one_call_plan(o, "python", args, kwargs, truth)
        big = self._big_int(args, kwargs)
        if big is not None:
            return self._one_call_plan(o, "python", args, kwargs, big)
        if self._functional is not None:
            return self._plan_functional(o, args, kwargs)
        if _bool_array(args, kwargs):
            return self._one_call_plan(o, "cpu", args, kwargs,
                                       BOOL_ARRAY_REASON.format(name=self.__name__))
        unlaid = _unlaid_array(self.py_func, args, kwargs) or self._changed_array(args, kwargs)
        if unlaid is not None:
            return self._one_call_plan(o, "cpu", args, kwargs, unlaid[1])
        values = self._check_args(args, kwargs)
        try:
            self._program(values)
        except TranslationError as err:     # as the run does: the plain function
            if not getattr(err, "by_arguments", False):
                raise
            return self._one_call_plan(o, "python", args, kwargs, str(err))
        alone = self._shared_writes or self._aliased(args, kwargs)
        if alone is not None:
            import dataclasses

            plan = make_plan(self._parse(), values, device="cpu", K=0, machine=o["machine"])
            return dataclasses.replace(plan, reason=alone)
        if o["device"] != "cpu":
            why = self._untranslatable(values, o["depth"])
            if why is not None:       # the run's CPU fallback (_run_checked), planned
                import dataclasses

                plan = make_plan(self._parse(), values, device="cpu", K=o["K"],
                                 machine=o["machine"])
                return dataclasses.replace(plan, reason=why)
        cl_device = o["cl_device"]
        if o["device"] != "cpu" and o["machine"] is None:
            from hpu._opencl._backend import OpenCLBackend

            backend = o["backend"] or OpenCLBackend
            handle = backend.select(cl_device)
            sampler = None
            if o["strategy"] == "minmax" and o["device"] == "hybrid":
                # min-max samples the function (on copies), as the run does; the samples
                # are kept, so the run after this plan executes the same split
                from hpu._hybrid import sampler_for

                sampler = sampler_for(self, self._program(values), values, handle, K=o["K"],
                                      depth=o["depth"], backend=backend)
            if hasattr(backend, "machine"):
                machine, contention = backend.machine(handle)
                return make_plan(self._parse(), values, device=o["device"], alpha=o["alpha"],
                                 y=o["y"], K=o["K"], strategy=o["strategy"], machine=machine,
                                 contention=contention, cl_device=handle, sampler=sampler)
            return make_plan(self._parse(), values, device=o["device"], alpha=o["alpha"],
                             y=o["y"], K=o["K"], strategy=o["strategy"], cl_device=handle,
                             machine=o["machine"], sampler=sampler)
        return make_plan(self._parse(), values, device=o["device"], alpha=o["alpha"],
                         y=o["y"], K=o["K"], strategy=o["strategy"], cl_device=cl_device,
                         machine=o["machine"])


class Configured:
    """A :class:`DivideAndConquer` with run options set (what :meth:`~DivideAndConquer.options`
    returns): the same interface, whose arguments are only the function's own."""

    def __init__(self, base: DivideAndConquer, options: dict):
        from hpu._options import check_options

        # checked once here; every call reuses the result (the values cannot change)
        self._checked = check_options(options, f"{base.__name__}.options")
        self._base = base
        self._opts = dict(options)
        self.py_func = base.py_func
        functools.update_wrapper(self, base.py_func)

    @property
    def spec(self):
        return self._base.spec

    @property
    def run_options(self) -> dict:
        """The options set on this object (the others take their defaults)."""
        return dict(self._opts)

    def options(self, **options) -> "Configured":
        """These options updated with ``options``."""
        return Configured(self._base, {**self._opts, **options})

    def _own(self, kwargs) -> tuple[dict, dict]:
        """``(run options, the function's keywords)``: a parameter's name is the function's."""
        from hpu._options import RUN_OPTIONS

        params = self._base._signature.parameters
        opts = {k: v for k, v in kwargs.items() if k in RUN_OPTIONS and k not in params}
        return opts, {k: v for k, v in kwargs.items() if k not in opts}

    def __call__(self, *args, **kwargs):
        if _disabled():
            return self.py_func(*args, **kwargs)
        return self._base._run(self._opts, args, kwargs, self._checked).value

    def run(self, *args, **kwargs) -> Run:
        """Run with the configured options.  A keyword that is a parameter of the function is
        the function's (even one named like a run option: this is the way to pass it); one
        that is a run option and no parameter sets that option for this run, as in
        :meth:`DivideAndConquer.run`: ``f.options(K=2).run(x, device="cpu")``."""
        opts, kwargs = self._own(kwargs)
        if opts:
            return self.options(**opts).run(*args, **kwargs)
        if self._checked["memory"]:
            return _measured(self._base._run, self._opts, args, kwargs, self._checked)
        return self._base._run(self._opts, args, kwargs, self._checked)

    def plan(self, *args, **kwargs):
        """The plan a run with the configured options executes (a keyword that is a run
        option sets it, as in :meth:`run`)."""
        opts, kwargs = self._own(kwargs)
        return self._base._plan({**self._opts, **opts}, args, kwargs)

    def sequential(self, *args, **kwargs):
        """The original compiled by Numba, on one core (options do not apply)."""
        return self._base.sequential(*args, **kwargs)

    def opencl_source(self, *args, **kwargs) -> str:
        return self._base._opencl_source(self._opts, args, kwargs)

    def __repr__(self):
        opts = ", ".join(f"{k}={v!r}" for k, v in self._opts.items())
        return f"<hpu.DivideAndConquer {self.__name__} with options({opts})>"

    def __reduce__(self):
        """The decorated function (by reference) and the options."""
        return (_configured, (self._base, dict(self._opts)))


def _configured(base, options):
    """What :meth:`Configured.__reduce__` rebuilds: ``base.options(**options)``."""
    return base.options(**options)


def _by_name(module: str, qualname: str):
    """The object ``module.qualname`` (imported): what a pickled decorated function is."""
    import importlib

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def sequential_timed(fn, *args) -> None:
    """Before a benchmark times ``fn.sequential(*args)`` as its one-core baseline: load (or
    compile) the growable-stack solver it runs for these arguments' types, so that every
    timed call runs that solver with no copy kept (``.sequential`` of small arguments runs
    the native recursion from a copy until the solver exists: DivideAndConquer._sequential).
    The CLI's compile-ahead child does the same, so the timing process reads it from the
    disk cache.  Functions without such a solver (functional ones) are left alone."""
    base = getattr(fn, "_base", fn)
    if base._functional is not None or _disabled():
        return
    try:
        program = base._program(base._check_args(args, {}))
    except Exception:  # noqa: BLE001 - the timed call itself says what is wrong
        return
    program.deep_module


def _with_views(spec, values: dict[str, Any]) -> dict[str, Any]:
    """The call boundary of a function on NumPy slices: each array the function slices
    is passed as the whole view ``(a, 0, len(a))`` (its hidden offset and length
    parameters, see :mod:`hpu._views`); a no-op for other functions."""
    from hpu._views import bind

    return bind(spec, values)


def _check_span(name: str, span, values) -> None:
    """``0 <= lo <= hi <= len(array)`` for every array: a task touches ``[lo, hi)`` of each."""
    lo_name, hi_name = span
    lo, hi = int(values[lo_name]), int(values[hi_name])
    if lo < 0:
        raise ValueError(f"{name}(): {lo_name!r}={lo} is negative; span={span} bounds the "
                         f"slice [{lo_name}, {hi_name}) of every array, so pass {lo_name} >= 0")
    if hi < lo:
        raise ValueError(f"{name}(): {hi_name!r}={hi} is below {lo_name!r}={lo}; pass "
                         f"{lo_name} <= {hi_name} (an empty slice is {hi_name} == {lo_name}), "
                         f"or, if the call is right, name the lower bound first: span="
                         f"({hi_name!r}, {lo_name!r})")
    for p, v in values.items():     # (hpu's own arrays, hpu_*, are sized by hpu)
        if isinstance(v, np.ndarray) and hi > v.size and not p.startswith("hpu_"):
            raise ValueError(f"{name}(): array {p!r} has {v.size} elements but "
                             f"{hi_name!r}={hi}: a task touches [{lo_name}, {hi_name}) of every "
                             f"array (span={span}); pass arrays of at least {hi} elements or "
                             f"{hi_name} <= {v.size}")


def _measured(run, options, args, kwargs, checked) -> Run:
    """``run(...)`` with the host memory it allocates traced (``memory=True``): the report
    with ``peak_memory`` set (:func:`hpu._run.traced_peak`)."""
    import dataclasses

    from hpu._run import traced_peak

    with traced_peak() as peak:
        report = run(options, args, kwargs, checked)
    if report.peak_memory is not None:      # measured by the run itself (a functional one)
        return report
    return dataclasses.replace(report, peak_memory=peak())


def _root_default(expr: str, line: int, filename: str, glb: dict, arguments) -> Any:
    """The value of a ``None`` parameter's default expression (``len(a)``) for the call's
    arguments, evaluated as Python, its errors at the user's line."""
    import ast

    tree = ast.parse(expr, mode="eval")
    ast.increment_lineno(tree, line - 1)
    return eval(compile(tree, filename, "eval"), glb, dict(arguments))  # noqa: S307


def _calls_undefined(fn) -> bool:
    """Whether ``fn`` calls a name that is not defined yet (a helper further down its
    module): neither a global, a builtin, a parameter nor a local of ``fn``."""
    import ast
    import builtins

    from hpu._frontend import _source_of

    try:
        node = _source_of(fn, "function")[3]
    except TranslationError:
        return False
    local = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    local |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    # a function defined inside it (`def rec(x): ...`) is a local too: its refusal is the
    # decoration's, not a first call's (it is not a helper defined further down)
    local |= {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef,
                                                                ast.AsyncFunctionDef))
              and n is not node}
    known = local | {fn.__name__, node.name}    # itself: not bound while it is decorated
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id not in fn.__globals__ and n.func.id not in known
               and not hasattr(builtins, n.func.id) for n in ast.walk(node))


def _refused(err) -> str:
    """Why the in-place form of a functional function cannot run breadth-first, short."""
    what = getattr(err, "construct", None) or str(err).split(":", 2)[-1].strip()
    line = getattr(err, "lineno", None)
    return f"its in-place form has {what}{f' (line {line})' if line else ''}, which no device runs"


def _elements(args, kwargs) -> int:
    """Elements of the longest array or list argument (0 without one)."""
    return max((v.size if isinstance(v, np.ndarray) else len(v)
                for v in (*args, *kwargs.values()) if isinstance(v, (np.ndarray, list))),
               default=0)


#: the size from which a functional function's array runs its in-place form on the CPU
#: (:meth:`DivideAndConquer._device_form_applies`)
FORM_ON_CPU_MIN = 1 << 20


def _front_of(held: list, lo: int, hi: int) -> np.ndarray:
    """``buf[lo:hi]`` as an array of its own, ``buf`` the one item of ``held`` (so that
    this function holds the only reference the caller had).  The result of the whole
    input sits at the front of the in-place form's buffer (``lo == 0``); there the buffer is
    shrunk in place (``ndarray.resize``: the C library's ``realloc``, which gives the tail
    back without a copy), so that the run's peak is the buffer alone rather than the buffer
    and a copy of its front -- the difference between 3x and 2x the input for a sort.  Only
    where nothing else holds the buffer (a view, a device buffer over it, an exported
    buffer: each holds a reference): else the front is copied, as it always was."""
    import sys

    buf = held.pop()
    # references: `buf` here and getrefcount's argument -- none left elsewhere
    if (lo == 0 and sys.getrefcount(buf) == 2 and buf.base is None and buf.flags.owndata
            and buf.flags.c_contiguous):
        buf.resize(hi, refcheck=False)
        return buf
    return buf[lo:hi].copy()


def _only_argument(converted):
    """The one argument of a call (converted, ``(args, kwargs)``), else None."""
    if converted is None:
        return None
    values = (*converted[0], *converted[1].values())
    return values[0] if len(values) == 1 else None


EMPTY_LIST_REASON = ("an empty list: the plain Python function runs (a list's dtype is its "
                     "items', and an empty one has none)")


def _not_distributed(run: Run) -> Run:
    """A run asked for a cluster that ran on the client alone (a function that returns new
    arrays or lists, a list or array the breadth-first path does not take: its ``reason``
    says why), as the :class:`hpu._dask.ClusterRun` every cluster call returns, its
    ``cluster`` None: the workers ran nothing."""
    from hpu._dask import ClusterRun

    return ClusterRun(**{f.name: getattr(run, f.name) for f in dataclasses.fields(run)},
                      cluster=None)


def _floats_of_empty(value, args, kwargs) -> bool:
    """Whether a compiled result holds a float while every array argument is empty and
    every other argument a number of at most 64 in size (an empty array's bounds, a
    threshold): see :meth:`DivideAndConquer._empty_kinds`."""
    items = value if isinstance(value, tuple) else (value,)
    if not any(type(v) is float for v in items):
        return False
    given = (*args, *kwargs.values())
    arrays = [v for v in given if isinstance(v, np.ndarray)]
    return bool(arrays) and all(a.size == 0 for a in arrays) and all(
        isinstance(v, np.ndarray) or (isinstance(v, (int, float, np.integer, np.floating))
                                      and abs(v) <= 64) for v in given)


def _int_if_equal(compiled, plain):
    """Python's int (or bool) for a compiled float that is that int as float64 (rounded:
    ``np.iinfo(np.int64).max`` is ``9.223372036854776e+18`` there), else the compiled
    value."""
    try:
        if type(compiled) is float and type(plain) in (int, bool) and float(plain) == compiled:
            return plain
    except OverflowError:
        pass
    return compiled


def _empty_input(args, kwargs) -> str | None:
    """The reason the plain function answers a call at once, or None: an empty list."""
    if any(type(v) is list and not v for v in (*args, *kwargs.values())):
        return EMPTY_LIST_REASON
    return None


def _all_arrays_empty(args, kwargs) -> bool:
    """Whether arrays are given, every one of them empty, and no list (see
    :meth:`DivideAndConquer._as_called`)."""
    values = (*args, *kwargs.values())
    arrays = [v for v in values if isinstance(v, np.ndarray) and v.ndim >= 1]
    return (bool(arrays) and all(v.size == 0 for v in arrays)
            and not any(isinstance(v, (list, tuple)) for v in values))


BOOL_ARRAY_REASON = (
    "{name} was given a NumPy bool array, which the breadth-first path does not take (its "
    "level arrays and OpenCL kernels hold numbers; as uint8 a bool's ~ and - would change): "
    "the function compiled by Numba as written, as one call on the CPU; pass an integer "
    "array (mask.astype(np.int8)) to run it breadth-first, where its arithmetic allows")


def _bool_array(args, kwargs) -> bool:
    """Whether an argument is a 1-D NumPy bool array (what :meth:`DivideAndConquer._run`
    gives to the function compiled as written)."""
    return any(isinstance(v, np.ndarray) and v.dtype == np.bool_ and v.ndim == 1
               for v in (*args, *kwargs.values()))


def _unlaid(v) -> tuple[str, str, str] | None:
    """``(what v is, why the breadth-first path does not take it, the fix with {p} for the
    parameter)`` for an array that path does not lay out, else None (not an array, a 0-d
    one -- refused, not a sequence to Python -- a bool array, with its own reason, or one
    it takes)."""
    if not isinstance(v, np.ndarray) or v.ndim == 0 or v.dtype == np.bool_:
        return None
    if v.ndim != 1:
        return (f"a {v.ndim}-D array of shape {v.shape}", "its tasks' arrays are 1-D",
                "pass {p}.ravel() or one row")
    if v.dtype not in ARRAY_DTYPES and v.dtype.newbyteorder("=") in ARRAY_DTYPES:
        return (f"an array of dtype {v.dtype.str} (not this machine's byte order)",
                "Numba and OpenCL read numbers in native order",
                "convert with {p}.astype({p}.dtype.newbyteorder('='))")
    if v.dtype not in ARRAY_DTYPES:
        return (f"an array of dtype {v.dtype}",
                f"its level arrays and kernels hold {dtype_name_list()}",
                "convert with {p}.astype(np.float64) or a suitable integer type")
    if not v.flags.c_contiguous:
        return (f"a strided view (not C-contiguous: strides {v.strides})",
                "its tasks read contiguous arrays",
                "pass np.ascontiguousarray({p}) and read the result from that copy")
    return None


def _unlaid_array(fn, args, kwargs) -> tuple[str, str] | None:
    """``(what was given, the reason)`` for the first array argument the breadth-first path
    does not lay out (:func:`_unlaid`: complex, float16, another byte order, a strided view,
    two or more dimensions), or None.  The plain function takes any of them; so, mostly,
    does Numba: such a call runs the function compiled by Numba as written, as one call on
    the CPU, on the caller's array itself (a strided view's writes land in its base, as
    Python's do), and the plain function where Numba cannot compile it
    (:meth:`DivideAndConquer._run_bool_arrays`)."""
    found = next(((k, u) for k, u in enumerate(map(_unlaid, (*args, *kwargs.values())))
                  if u is not None), None)
    if found is None:
        return None                     # (the common call: no signature bound)
    k, (what, why, fix) = found
    try:
        p = list(inspect.signature(fn).bind(*args, **kwargs).arguments)[k] \
            if k < len(args) else list(kwargs)[k - len(args)]
    except (TypeError, IndexError):
        p = "the array"
    return what, (f"{fn.__name__}() was given {what} as {p!r}, which the breadth-first path "
                  f"does not take ({why}): the function compiled by Numba as written, as one "
                  f"call on the CPU (the plain function where Numba cannot compile it); to "
                  f"run it breadth-first, {fix.format(p=p)}")


def _one_call_run(o, value, t0, fallbacks, reason) -> Run:
    """The report of a run that was one call on the CPU (the function as written, compiled
    or plain): one task, no levels, no device."""
    return Run(value=value, device=o["device"], alpha=1.0, y=None, K=0, cpu_tasks=1,
               gpu_tasks=0, fallbacks=fallbacks, levels=(), transfers=(),
               seconds=time.perf_counter() - t0, level_sizes=(1,), started=t0, reason=reason)


def _numba_error():
    """Numba's own errors (typing, lowering, unsupported): raised while compiling, never
    by the user's code at run time, which raises Python's exceptions."""
    from numba.core.errors import NumbaError

    return NumbaError


def _not_compiled_reason(name: str, err) -> str:
    """Why Numba cannot compile ``name`` as written: where (the user's file and line, as
    Numba locates it) and what (the first line of its message that says so), and what
    runs instead."""
    import re

    from hpu._program import numba_words

    import numba

    places = re.findall(r'File "([^"]+)", line (\d+)', str(err))
    # the user's line: not one inside Numba (its typing of a NumPy call names its own source)
    libs = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (numba, np))
    libs += (os.path.dirname(os.path.abspath(__file__)) + os.sep,)    # hpu's own checks
    places = [p for p in places if not os.path.abspath(p[0]).startswith(libs)] or places
    where = f"{os.path.abspath(places[0][0])}:{places[0][1]}: " if places else ""
    keep = numba_words(err)
    what = keep[0] if keep else type(err).__name__
    fix = "write that line with what Numba supports to run it compiled"
    if re.search(r"unify return type.*(array\(.*list\(|list\(.*array\()", what):
        # a function written for lists, given an array: its base case hands the array back
        fix = (f"it returns an array in one place (the argument, or a slice of it: a list "
               f"function given an array) and a list in another; give it a list, "
               f"`{name}(x.tolist())`, to run it compiled (its items then Python's numbers), "
               f"or return `list(...)` there")
    return (f"{where}Numba cannot compile {name} as written ({what}); the plain Python "
            f"function runs instead: {fix}")


#: ``.sequential`` of arguments whose written arrays take at most this many bytes runs the
#: core module's recursion first, from a copy of them (DivideAndConquer._sequential): what
#: tests and first tries pass, where the copy costs microseconds.  Larger ones -- what a
#: benchmark times as the one-core baseline -- run the growable-stack solver, copying nothing.
_SEQUENTIAL_COPY_BYTES = 1 << 20


#: the values a module constant may have (what Numba freezes into compiled code)
_CONSTANT_TYPES = (bool, int, float, complex, np.number, np.bool_)


def _constant_refs(fn) -> tuple:
    """``(globals, name)`` of each module-level name that ``fn`` and the plain functions it
    calls (found through its globals, as its helpers are) read, whose value the compiled
    code freezes: constants (ints, floats, bools: Numba freezes a global's value), helper
    functions (hpu compiles the one bound at decoration: a helper defined again in a
    notebook cell is another function), NumPy arrays (a functional function's Numba
    freezes their contents), and names not bound yet (a helper or a constant defined
    further down, or later: when it is, the function starts again).  Builtins are not
    watched; the names of attributes are among a code object's names too, which at worst
    adds a name to watch."""
    import builtins
    import types

    from hpu._functional import _code_names

    refs, seen, todo = [], set(), [fn]
    while todo:
        f = todo.pop()
        code = getattr(f, "__code__", None)
        glb = getattr(f, "__globals__", None)
        if code is None or glb is None or id(code) in seen:
            continue
        seen.add(id(code))
        for name in sorted(_code_names(code)):
            if f is fn and name == fn.__name__:
                continue        # itself: bound to the decorated function once decorated
            if name not in glb:
                if not hasattr(builtins, name):
                    refs.append((glb, name))
                continue
            v = glb[name]
            if isinstance(v, (*_CONSTANT_TYPES, np.ndarray)):
                refs.append((glb, name))
            elif isinstance(v, types.FunctionType):
                refs.append((glb, name))
                todo.append(v)
    return tuple(refs)


def _constant_values(refs) -> tuple:
    """What each watched name holds now (:func:`_constant_refs`): a constant's type and
    value, a function itself (compared by identity), an array's identity, shape, dtype and
    a digest of its bytes, another object's type and identity; None for a name not bound."""
    return tuple(_value_key(g.get(n, _UNBOUND)) for g, n in refs)


_UNBOUND = object()


def _value_key(v):
    if v is _UNBOUND:
        return None
    if isinstance(v, _CONSTANT_TYPES):
        return (type(v), v)
    if isinstance(v, types.FunctionType):
        return (types.FunctionType, v)
    if isinstance(v, np.ndarray):
        data = np.ascontiguousarray(v).view(np.uint8) if v.dtype != object else None
        digest = None if data is None else hashlib.blake2b(data.reshape(-1),
                                                            digest_size=16).digest()
        return (np.ndarray, id(v), v.shape, v.dtype.str, digest)
    return (type(v), id(v))


def _list_as_array(items: list) -> np.ndarray | None:
    """A non-empty list of ints (within int64) or of floats as an int64 or float64 array that
    gives its items back as they were (``tolist()``), else None (Python's own list)."""
    if not items or not _one_number_kind(items):
        return None
    try:
        return np.array(items, dtype=np.int64 if type(items[0]) is int else np.float64)
    except OverflowError:
        return None                     # ints past int64


def _one_number_kind(items: list) -> bool:
    """All ints or all floats (not bools): a list whose items an int64 or float64 array
    gives back as they were (``tolist()``)."""
    kinds = set(map(type, items))
    return kinds == {int} or kinds == {float}


def _a_tasks_error(err: BaseException) -> bool:
    """An exception of the user's code (not hpu's own, not Ctrl-C, not memory)."""
    from hpu._errors import HpuError

    return isinstance(err, Exception) and not isinstance(err, (HpuError, MemoryError))


@contextlib.contextmanager
def _lists_restored(args, kwargs):
    """The list arguments put back as they were if the body raises: the caller's data is
    never left half written (the breadth-first path does the same for arrays)."""
    kept = [(v, list(v)) for v in (*args, *kwargs.values()) if type(v) is list]
    try:
        yield
    except BaseException:
        for v, old in kept:
            v[:] = old
        raise


def _describe(v) -> str:
    if isinstance(v, np.ndarray):
        return f"an array (dtype {v.dtype}, shape {v.shape})"
    if isinstance(v, (list, tuple, dict, set)):
        return f"a {type(v).__name__} of {len(v)} items"
    return f"{type(v).__name__} {reprlib.repr(v)}"


def _typing_key(v):
    """What Numba types an argument by: an array's dtype (its byte order too), dimensions,
    layout and writability; a list's first item; else the value's type."""
    if isinstance(v, np.ndarray):
        layout = "C" if v.flags.c_contiguous else "F" if v.flags.f_contiguous else "A"
        return ("array", v.dtype.str, v.ndim, layout, bool(v.flags.writeable))
    if isinstance(v, list):
        return ("list", type(v[0]).__name__ if v else None)
    return type(v).__name__


def _kind_key(v):
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, bool(v.flags.writeable))
    return type(v).__name__


def _check_value(fname: str, p: str, v, spec, written: bool, write_line):
    where = f"{fname}(): parameter {p!r}"
    if isinstance(v, (list, tuple)) and (p in spec.indexed or p in spec.passthrough
                                         or any(p == w[0] for w in (spec.views or ()))):
        # (a list the function only passes down, or measures, is one array too: nothing
        # reads its items, so the conversion cannot show)
        v = _list_argument(where, fname, p, v, written, write_line)
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            raise ValueError(f"{where} received a 0-d array ({v.dtype}); expected a scalar or "
                             f"a 1-D array; pass {p}.item() for a scalar")
        if p not in spec.passthrough:
            line = next((c.lineno for c in spec.calls), spec.lineno)
            raise TypeError(f"{where} received {_describe(v)}, but the recursive calls "
                            f"(line {line}) change {p!r}, so it must be a scalar "
                            "(arrays are passed through unchanged)")
        if v.ndim != 1:
            raise ValueError(f"{where} is a {v.ndim}-D array of shape {v.shape}; expected a "
                             f"1-D array; pass {p}.ravel() (a copy if not contiguous) or one row")
        if v.dtype not in ARRAY_DTYPES and v.dtype.newbyteorder("=") in ARRAY_DTYPES:
            raise TypeError(f"{where} has dtype {v.dtype.str} (not this machine's byte "
                            f"order), which is not supported: Numba and OpenCL read "
                            f"{v.dtype.newbyteorder('=').name} in native order only; convert "
                            f"with {p}.astype({p}.dtype.newbyteorder('=')) (the same values)")
        if v.dtype not in ARRAY_DTYPES:
            raise TypeError(f"{where} has dtype {v.dtype}, which is not supported; expected "
                            f"one of {dtype_name_list()}; convert with {p}.astype(np.float64) "
                            "or a suitable integer type")
        if not v.flags.c_contiguous:
            raise ValueError(f"{where} is not C-contiguous (strides {v.strides}, itemsize "
                             f"{v.itemsize}); pass np.ascontiguousarray({p}) and read the "
                             "result from that copy")
        if written and not v.flags.writeable:
            at = f" (line {write_line})" if write_line else ""
            raise ValueError(f"{where} is read-only (flags.writeable is False) but {fname} "
                             f"writes to it{at}; pass a writeable copy: {p}.copy()")
        return v
    if p in spec.indexed:
        raise TypeError(f"{where} received {_describe(v)}, but {fname} indexes it as an "
                        f"array; pass a 1-D NumPy array of one of {dtype_name_list()}")
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        iv = int(v)
        if not -2**63 <= iv < 2**63:
            raise ValueError(f"{where} = {iv} does not fit in int64, the type hpu computes "
                             "integer parameters in; pass a smaller value")
        return iv
    if isinstance(v, (float, np.floating)):
        return float(v)
    raise TypeError(f"{where} received {_describe(v)}; expected a 1-D NumPy array or an "
                    "int, float or bool scalar; convert it with np.asarray(...) or int(...)")


def _list_argument(where, fname, p, v, written, write_line):
    """A list of numbers where the function indexes an array: one NumPy array, with the
    dtype NumPy infers (see :mod:`hpu._functional`).  A list the function writes to never
    gets here from a call or ``.run`` (it runs as written, :meth:`DivideAndConquer.
    _run_as_written`); ``.plan`` and the other breadth-first views refuse it: the writes
    would land in the converted copy, not in the caller's list."""
    from hpu._functional import list_to_array

    arr = list_to_array(v)
    if not isinstance(arr, np.ndarray):
        return v
    if written:
        at = f" (line {write_line})" if write_line else ""
        raise TypeError(f"{where} received a {type(v).__name__} of {len(v)} items, but "
                        f"{fname} writes to {p!r}{at}, and a list is converted to a new array that the caller "
                        f"never sees; pass a NumPy array: {p} = np.asarray({p}) and read the "
                        f"result from {p} (a slice of an array is a view, of a list a copy: "
                        f"calling {fname} with the list runs it as written instead)")
    return arr
