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
3. The breadth-first driver (:mod:`hpu._driver`) runs it: on the Numba
   backend for ``device="cpu"``, and through :mod:`hpu._hybrid` (an OpenCL
   backend, the α/y split, the CPU fallback) for ``"gpu"`` and ``"hybrid"``.

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

import functools
import inspect
import os
import reprlib
import sys
import threading
import time
from typing import Any

import numpy as np

from hpu._errors import TranslationError
from hpu._run import Run
from hpu._types import ARRAY_DTYPES, dtype_name_list

__all__ = ["divide_and_conquer", "DivideAndConquer", "DEVICES", "DEFAULT_DEVICE", "ENV_DISABLE"]

#: Devices ``.run`` accepts.
DEVICES = ("cpu", "gpu", "hybrid")
STRATEGIES = ("advanced", "basic")
#: The device a plain call uses.
DEFAULT_DEVICE = "hybrid"
ENV_DISABLE = "HPU_DISABLE"
#: The CPU cut-off level is the first with at least this many tasks per thread.
TASKS_PER_THREAD = 8


def _disabled() -> bool:
    return os.environ.get(ENV_DISABLE, "").strip().lower() not in ("", "0", "false", "no", "off")


def divide_and_conquer(fn=None, /, *, b=2, cost="n", span=None, boundscheck=None):
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
    def wrap(f):
        return DivideAndConquer(f, b=b, cost=cost, span=span, boundscheck=boundscheck)

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
        if not _disabled():
            self._parse()
            self._resolve(deferrable=True)

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
        shape = f" a={s.a}, b={s.b}, cost={s.cost!r}" if s is not None else ""
        return f"<hpu.DivideAndConquer {self.__name__}{self._signature}:{shape}>"

    # ------------------------------------------------------------------ arguments
    def _check_args(self, args, kwargs) -> dict[str, Any]:
        spec = self._parse()
        closure = self._resolve()
        name = spec.name
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{name}(): {err}; it takes ({', '.join(spec.params)})") from None
        bound.apply_defaults()
        written = closure.written
        lines = dict(closure.first_write)
        out = {}
        for p, v in bound.arguments.items():
            out[p] = _check_value(name, p, v, spec, p in written, lines.get(p))
        if spec.span is not None:
            for p in spec.span:
                if isinstance(out[p], (float, bool, np.ndarray)):
                    raise TypeError(f"{name}(): parameter {p!r} is named in span={spec.span} "
                                    f"but received {_describe(out[p])}; expected an int index "
                                    "bounding the slice the task touches")
            _check_span(name, spec.span, out)
        return out

    def _program(self, values: dict[str, Any]):
        key = tuple(_kind_key(values[p]) for p in self._parse().params)
        with self._lock:
            program = self._programs.get(key)
            if program is None:
                from hpu._cpu import specialize

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
        return self.run(*args, device=DEFAULT_DEVICE, **kwargs).value

    def sequential(self, *args, **kwargs):
        """The original compiled by Numba, on one core (004's baseline); returns its value."""
        if _disabled():
            return self.py_func(*args, **kwargs)
        values = self._check_args(args, kwargs)
        program = self._program(values)
        return program.function(*(values[p] for p in program.spec.params))

    def run(self, *args, device: str = DEFAULT_DEVICE, alpha=None, y=None, K=None,
            strategy: str = "advanced", cl_device=None, depth: int = 64, **kwargs) -> Run:
        """Run the function breadth-first and return a :class:`~hpu.Run` report.

        ``device``: ``"hybrid"`` (the default: the CPU's Numba threads and an
        OpenCL device split by the HPU model), ``"cpu"`` (Numba threads only)
        or ``"gpu"`` (every leaf and combine on the OpenCL device).
        ``alpha``/``y``: the hybrid split (share of the transfer level's tasks
        kept on the CPU, transfer level); ``None`` asks the model, with the
        machine's calibration profile.  ``strategy``: ``"advanced"`` (004 §5.2)
        or ``"basic"`` (§5.1: α = 0 at level log_a(p/γ)).  ``K``: the cut-off
        level whose tasks solve whole subtrees (``None``: enough tasks for
        every core).  ``cl_device``: which OpenCL device (``"gpu"``, ``"cpu"``,
        ``"P:D"``, part of a name; default ``HPU_DEVICE`` or the first usable
        GPU, else PoCL).  ``depth``: the device solver's stack frames.  The
        function's own arguments go by position or keyword (by position when
        a name clashes with these options).
        """
        from hpu._driver import check_K, execute

        _check_device(device, alpha, y, strategy)
        check_K(K)
        if _disabled():
            t0 = time.perf_counter()
            value = self.py_func(*args, **kwargs)
            return Run(value=value, device="python", alpha=None, y=None, K=0, cpu_tasks=1,
                       gpu_tasks=0, fallbacks=[], levels=(), transfers=(),
                       seconds=time.perf_counter() - t0)
        values = self._check_args(args, kwargs)
        program = self._program(values)
        if device != "cpu":
            from hpu._hybrid import run_on_devices

            return run_on_devices(self, program, values, device=device, device_spec=cl_device,
                                  alpha=alpha, y=y, K=K, strategy=strategy, depth=depth)
        import numba

        from hpu._cpu import CpuBackend

        ex = execute(program.layout, program.types, values, CpuBackend(program), K=K,
                     min_tasks=TASKS_PER_THREAD * numba.get_num_threads())
        return Run(value=ex.value, device="cpu", alpha=1.0, y=None, K=ex.K,
                   cpu_tasks=ex.leaf_tasks.get("cpu", 0), gpu_tasks=ex.leaf_tasks.get("gpu", 0),
                   fallbacks=[], levels=ex.levels, transfers=(), seconds=ex.seconds)

    def opencl_source(self, *args, depth: int = 64, **kwargs) -> str:
        """The OpenCL C generated for this function and these arguments' types.

        The level kernels (one work-item per task) and the subtree solver
        (the recursion as a loop over a ``depth``-frame stack), commented with
        the Python lines they come from.  Arguments are needed because the
        code depends on the arrays' dtypes; small ones do.
        """
        from hpu._opencl._levels import opencl_source

        values = self._check_args(args, kwargs)
        program = self._program(values)
        shared = {n: values[n] for n in program.layout.shared}
        return opencl_source(program, shared, depth)

    def plan(self, *args, machine=None, strategy: str = "advanced", cl_device=None,
             **kwargs):
        """What the HPU model would choose for these arguments (a ``hpu.model.Plan``).

        ``n`` is ``hi - lo`` of ``span`` when given, else the longest array
        argument; ``a`` comes from the code, ``b`` and ``cost`` from the
        decorator; the bytes per element are those of all the arrays a task
        moves.  ``machine``: a ``hpu.model.Machine``; by default the
        calibration profile of ``cl_device`` (as the hybrid run uses it; with no
        profile, the first call calibrates quickly once unless
        ``HPU_NO_AUTOCALIBRATE=1``, which uses hpu's built-in values).
        """
        values = self._check_args(args, kwargs)
        return self.plan_for(values, machine=machine, strategy=strategy, device=cl_device)

    def plan_for(self, values, *, machine=None, strategy="advanced", device=None):
        """:meth:`plan` for already checked arguments (the hybrid run's own planner)."""
        from hpu import model

        spec = self._parse()
        arrays = [v for v in values.values() if isinstance(v, np.ndarray)]
        if spec.span is not None:
            n = int(values[spec.span[1]]) - int(values[spec.span[0]])
        else:
            n = max((a.size for a in arrays), default=1)
        element_bytes = sum(a.itemsize for a in arrays) or 8
        contention = 1.0
        if machine is None:
            from hpu._profile import active_profile

            prof = active_profile(device)
            machine, contention = prof.machine(), prof.contention
        problem = model.Problem(a=spec.a, b=spec.b, cost=spec.cost, n=max(n, 1))
        return _cached_plan(problem, machine, strategy, element_bytes, contention)


@functools.lru_cache(maxsize=256)
def _cached_plan(problem, machine, strategy, element_bytes, contention):
    """The model's plan is pure and costs milliseconds (it simulates every integer
    split); a run that asks for it on every call must not pay that each time."""
    from hpu import model

    return model.plan(problem, machine, strategy, element_bytes=element_bytes,
                      contention=contention)


def _check_span(name: str, span, values) -> None:
    """``0 <= lo <= hi <= len(array)`` for every array: a task touches ``[lo, hi)`` of each."""
    lo_name, hi_name = span
    lo, hi = int(values[lo_name]), int(values[hi_name])
    if lo < 0:
        raise ValueError(f"{name}(): {lo_name!r}={lo} is negative; span={span} bounds the "
                         f"slice [{lo_name}, {hi_name}) of every array, so pass {lo_name} >= 0")
    if hi < lo:
        raise ValueError(f"{name}(): {hi_name!r}={hi} is below {lo_name!r}={lo}; pass "
                         f"{lo_name} <= {hi_name} (an empty slice is {hi_name} == {lo_name})")
    for p, v in values.items():
        if isinstance(v, np.ndarray) and hi > v.size:
            raise ValueError(f"{name}(): array {p!r} has {v.size} elements but "
                             f"{hi_name!r}={hi}: a task touches [{lo_name}, {hi_name}) of every "
                             f"array (span={span}); pass arrays of at least {hi} elements or "
                             f"{hi_name} <= {v.size}")


def _check_device(device, alpha, y, strategy="advanced") -> None:
    if device not in DEVICES:
        raise ValueError(f"device={device!r} is not known: expected one of "
                         f"{', '.join(map(repr, DEVICES))}; pass device='cpu'")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is not known: expected one of "
                         f"{', '.join(map(repr, STRATEGIES))}")
    if device == "hybrid":
        if alpha is not None:
            if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer,
                                                                  np.floating)) \
                    or not 0.0 <= float(alpha) <= 1.0:
                raise ValueError(f"alpha={alpha!r} must be a number in [0, 1]: the share of the "
                                 "transfer level's tasks kept on the CPU; pass e.g. alpha=0.25")
        if y is not None:
            if isinstance(y, bool) or not isinstance(y, (int, np.integer)) or y < 0:
                raise ValueError(f"y={y!r} must be an int >= 0: the level at which the device's "
                                 "share is split off; pass e.g. y=4")
        return
    if device == "gpu":
        if alpha not in (None, 0) or y not in (None, 0):
            raise ValueError(f"alpha={alpha!r}, y={y!r}: device='gpu' runs every leaf and "
                             "combine on the OpenCL device (alpha=0, y=0); use device='hybrid' "
                             "to split")
        return
    if alpha is not None and alpha != 1:
        raise ValueError(f"alpha={alpha!r} applies only to device='hybrid' (the share of "
                         "tasks kept on the CPU); on device='cpu' leave it None")
    if y is not None:
        raise ValueError(f"y={y!r} applies only to device='hybrid' (the level where the "
                         "device takes over); on device='cpu' leave it None")


def _describe(v) -> str:
    if isinstance(v, np.ndarray):
        return f"an array (dtype {v.dtype}, shape {v.shape})"
    if isinstance(v, (list, tuple, dict, set)):
        return f"a {type(v).__name__} of {len(v)} items"
    return f"{type(v).__name__} {reprlib.repr(v)}"


def _kind_key(v):
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, bool(v.flags.writeable))
    return type(v).__name__


def _check_value(fname: str, p: str, v, spec, written: bool, write_line):
    where = f"{fname}(): parameter {p!r}"
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
