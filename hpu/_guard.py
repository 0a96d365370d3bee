"""Errors like Python's on the compiled CPU paths: checked arithmetic and exceptions out of threads.

Why a module of its own
=======================

A mistake in the user's code must raise what Python (or Numba) raises, naming
the user's file and line -- never crash, never give a silent value (issue 11,
design notes §4).  Two things stand in the way on the CPU:

* **Numba's messages have no line.**  ``a // 0`` in nopython code raises
  ``ZeroDivisionError("division by zero")``; which of the user's divisions it
  was is lost.  So the generated CPU module (:mod:`hpu._codegen`) rewrites
  each ``x // y``, ``x % y`` and ``x / y`` of the user's code into
  ``hpu__floordiv(x, y, k)`` (``hpu__truediv`` for ``/`` of numbers: the device's IEEE
  division would give inf or nan where Numba raises; ``int(x)``/``round(x)`` into
  ``hpu__int``/``hpu__round``, which use :func:`bad_float`), small functions
  that test, call a separate function that raises Python's exception with
  the text ``hpu__SITES[k]`` ("file:line: x // y"), and otherwise compute
  exactly the operator.  The text is looked up only when raising: passing a
  string to every call cost more than the check (measured: a checked
  ``a[i]`` with the text as an argument ran 4.6x slower than unchecked, with
  an index into the table 1.7x, on a vectorisable sum).
* **Numba's threads lose the exception.**  An exception inside a ``prange``
  loop reaches Python as ``SystemError("... returned a result with an
  exception set")`` -- or, when the failing task ran on a worker thread, not
  at all: the call returns a silent wrong answer.  A ``try`` in the loop body
  makes Numba run the loop serially.  So the CPU module's level drivers call
  each task through a ``*_task_safe`` function whose ``try`` records a
  failing task in a one-element error array (``tid + 1``; any failing task
  may win); after the level, :func:`task_failed` runs that task again alone,
  outside the parallel region, where Numba raises normally.
  :func:`native_errors` (a decorator on the CPU backend's phase methods)
  still unwraps a ``SystemError`` whose cause is the user's exception (the
  iterative solver's driver).

The OpenCL device raises the same exceptions with the same texts through an
error channel of its own (a kernel cannot raise): the translator's checked mode
(:func:`hpu._opencl._translate.translate`, ``checked=``) gives every kernel and
every function it calls a 4-long buffer where the first failing check records
its code and site (an atomic compare-and-swap), the work-item going on with a
harmless value (an out-of-range store is skipped); the backend reads it once
after the device's share and raises (:func:`hpu._opencl._backend.device_error`).
The sites' texts are built as ``_Checked`` builds them, so the message is the
same on every path.

A float stored into an integer array (``a[i] = x``, ``a`` one of the
function's arrays) goes through ``hpu__store`` (:func:`bad_int_store`): NaN,
±inf and beyond ±2**63 raise as ``int(x)`` does, where Numba would store
INT64_MIN; an in-range float truncates, as in NumPy and Numba.

What is not covered here: indices into a view
(``v = a[lo:hi]; v[i]``) are checked against the underlying array's length,
not the view's, on every path.
"""
from __future__ import annotations

import functools

__all__ = ["product_grows", "power_grows", "shift_grows", "boundscheck_default", "max_depth", "depth_limits", "native_errors", "task_failed",
           "bad_float", "zero_divisor", "divides_by_zero", "float_operands", "check_array_fit", "INT64_BOUND",
           "like", "ndigits", "DIGITS"]

#: 2**63 as a float: a float ``x`` converts to int64 exactly when ``-2**63 <= x < 2**63``.
INT64_BOUND = 9.223372036854775808e18


#: Default depth at which the compiled recursion raises ``RecursionError``: the
#: deepest call chain hpu runs.  Deep recursions run natively only for the first
#: :data:`NATIVE_DEPTH` calls; below that the generated CPU module continues the
#: subtree on an explicit stack in a NumPy array that doubles as it fills
#: (:func:`hpu._codegen.cpu_source`), so the depth is bounded by memory, not by the
#: thread's stack.  A first-element-pivot quicksort of 200 000 sorted keys needs
#: 200 000 calls; 10**7 leaves room for 50 times that.
DEFAULT_MAX_DEPTH = 10_000_000
ENV_MAX_DEPTH = "HPU_MAX_DEPTH"

#: Calls of native (compiled) recursion before the explicit stack takes over.  A frame
#: of a compiled recursive function takes about 100-800 bytes; Numba's worker threads
#: have the default 8 MiB stack, where a small function overflowed between 45 000 and
#: 60 000 frames; 5 000 leaves room for frames of ~1.6 KiB.
NATIVE_DEPTH = 5_000

#: Without ``HPU_MAX_DEPTH``, one explicit stack stops growing at this many bytes (its
#: frames hold the parameters, the children's parameters and results): a runaway
#: recursion ends in well under a second instead of filling the memory.
DEFAULT_STACK_BYTES = 256 << 20


def max_depth() -> int:
    """``HPU_MAX_DEPTH`` if set (an int >= 1), else :data:`DEFAULT_MAX_DEPTH`."""
    return _env_depth() or DEFAULT_MAX_DEPTH


def _env_depth() -> int:
    import os

    raw = os.environ.get(ENV_MAX_DEPTH, "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        from hpu._errors import SettingError

        raise SettingError(f"{ENV_MAX_DEPTH}={raw!r}: expected an integer >= 1 (the depth at "
                         f"which compiled recursion raises RecursionError); unset it for "
                         f"{DEFAULT_MAX_DEPTH}")
    return value


def depth_limits(frame_bytes: int) -> tuple[int, int]:
    """``(native, limit)``: calls of native recursion, and the deepest call chain.

    ``HPU_MAX_DEPTH`` sets ``limit`` exactly; without it the limit is
    :data:`DEFAULT_MAX_DEPTH` or what :data:`DEFAULT_STACK_BYTES` holds at
    ``frame_bytes`` per frame, whichever is smaller.
    """
    explicit = _env_depth()
    if explicit:
        limit = explicit
    else:
        by_bytes = DEFAULT_STACK_BYTES // max(frame_bytes, 1)
        limit = min(DEFAULT_MAX_DEPTH, max(NATIVE_DEPTH, by_bytes))
    return min(NATIVE_DEPTH, limit), limit


ENV_BOUNDSCHECK = "HPU_BOUNDSCHECK"


def boundscheck_default() -> bool:
    """``HPU_BOUNDSCHECK=1`` turns the bounds-checked mode on for functions that do not choose."""
    import os

    raw = os.environ.get(ENV_BOUNDSCHECK, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    from hpu._errors import SettingError

    raise SettingError(f"{ENV_BOUNDSCHECK}={raw!r}: expected 1 or 0 (unset it for 0)")


def native_errors(method):
    """Re-raise the user's exception that Numba's parallel region wrapped in ``SystemError``."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except SystemError as err:
            cause = err.__cause__ or err.__context__
            if isinstance(cause, Exception) and not isinstance(cause, SystemError):
                raise cause.with_traceback(None) from None
            raise
    return wrapper


def task_failed(err, task, args, spec, phase: str, level: int) -> None:
    """After a level: if a task recorded a failure in ``err[0]`` (tid + 1), raise its exception.

    The task runs again alone, outside the parallel region, where Numba raises
    normally (with the user's line, from the checked operations).  A task
    that does not fail the second time (it depended on data the first run
    changed) still ends the call, with the phase and task named.
    """
    if not err[0]:
        return
    tid = int(err[0]) - 1
    task(tid, *args)
    from hpu._errors import HpuError

    failure = HpuError(f"{spec.filename}:{spec.lineno}: {spec.name}: task {tid} of level {level} "
                       f"raised an exception in its {phase} phase on Numba's threads, and did "
                       "not raise it again when run alone (it depends on data the first run "
                       f"changed); call {spec.name}.sequential(...) or {spec.name}.py_func(...) "
                       "with the same arguments to see it")
    failure.not_reproduced = True  # a call with a snapshot reruns it from there (hpu._snapshot)
    raise failure


def bad_float(x) -> bool:
    """True for a float that ``int()`` cannot turn into an int64 (NaN, ±inf, beyond ±2**63)."""
    return isinstance(x, float) and not -INT64_BOUND <= x < INT64_BOUND


def bad_int_store(a, x) -> bool:
    """True when storing ``x`` into the array ``a`` is a bad float -> int conversion: ``a``
    has an integer dtype and ``x`` is a float :func:`bad_float` refuses (what NumPy refuses;
    Numba would store INT64_MIN).  An in-range float truncates, as in NumPy and Numba."""
    import numpy as np

    return (getattr(a, "dtype", np.dtype(float)).kind in "iu"
            and isinstance(x, (float, np.floating)) and bad_float(float(x)))


def zero_divisor(b) -> bool:
    """True when ``b`` is a number equal to zero: ``// b`` and ``% b`` raise
    ``ZeroDivisionError`` in Python.  An array divisor is NumPy's business (inf, nan and a
    warning), so False."""
    import numpy as np

    return isinstance(b, (int, float, np.integer, np.floating, np.bool_)) and b == 0


def float_operands(a, b) -> bool:
    """True when ``a // b`` or ``a % b`` is a float operation (either operand a float): its
    ``ZeroDivisionError`` then says "float floor division by zero" or "float modulo", as
    Python's does.  Compiled, a constant of the operands' types."""
    import numpy as np

    return isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating))


def divides_by_zero(a, b) -> bool:
    """True when ``a / b`` divides a number by a number equal to zero (Python's and Numba's
    ``ZeroDivisionError``).  An array on either side is NumPy's business: inf, nan and a
    warning, in Numba too."""
    import numpy as np

    return not isinstance(a, np.ndarray) and zero_divisor(b)


def like(x, p):
    """``x`` as a value of ``p``'s kind, where both are numbers (the CPU module's recursive
    calls: :func:`hpu._codegen._depth_limited_source`).  The breadth-first path passes a
    call's scalars through arrays of the parameters' dtypes; its leaf solver does the same
    with this.  In Python: ``x`` itself."""
    return x


def base_index(i):
    """A view's element's place in its base array, ``off + (i + n if i < 0 else i)`` as
    :mod:`hpu._views` writes it: never negative for an index of the view, and so, in
    compiled code (the CPU's modules, :class:`hpu._codegen._Checked`), an unsigned
    integer, which Numba does not test for a negative index once more.  That second test,
    on every element a helper's loop reads through a view, made the functional mergesort's
    merge 20 % slower (2**22 keys, one thread: 17.6 ms against 14.1 ms).  A non-integer is
    passed on unchanged, for Numba to refuse as it does.  In Python: ``i`` itself."""
    return i


def as_index(i):
    """An unsigned integer index of a view as an int64 (``v[idx[k]]`` of a uint64 array):
    the view's offset plus a uint64 is a float64 in Numba, which no array takes; anything
    else unchanged.  In Python: ``i`` itself."""
    return i


def power(a, b):
    """``a ** b`` as Python computes it where Numba does not: a float64 to an integer
    power is the C library's ``pow`` (Python's ``float.__pow__`` and NumPy's scalar power
    call it), where Numba multiplies repeatedly and differs in the last bits (``0.999 **
    6``, ``10.0 ** 300``); every other pair of operands is Numba's ``**``.  In Python:
    ``a ** b``."""
    return a ** b


#: the name ``len(str(x))`` is written as in hpu's trees (:func:`hpu._functional.digits_counted`)
DIGITS = "hpu__ndigits"


def ndigits(x):
    """``len(str(x))`` of an integer: its decimal digits, one more for a minus sign (the
    digit count of Karatsuba's ``len(str(a))``).  Compiled for Numba's integer types only:
    any other ``x`` (a float, whose ``str`` has a point; a bool, ``'True'``) is a typing
    error, so the function runs as the plain Python function, which says ``str(x)``
    itself.  Numba's own ``str()`` of an int64 is not used: ``str(-2**63)`` failed there
    with ``MemoryError``.  In Python: ``len(str(x))``."""
    return len(str(x))


def product_grows(a, b) -> bool:
    """Whether ``a * b`` of two integers (one signed) leaves int64, where Python's int
    grows and the compiled product would wrap (:class:`hpu._checked_ops.IntOverflowError`:
    the call runs again as the plain function).  In Python: False."""
    return False


def power_grows(a, b) -> bool:
    """Whether ``a ** b`` of two integers leaves int64, or ``b < 0`` (Python's answer is
    a float; Numba's an int: 0, 1 or -1).  In Python: False."""
    return False


def shift_grows(a, b) -> bool:
    """Whether ``a << b`` of two integers leaves int64 (Python's int grows; Numba shifts
    bits out), or ``b < 0`` (Python raises ValueError).  In Python: False."""
    return False


#: |x| below this: a float64 product of two int64s rounded to it is exact enough to say
#: the integer product fits (2**63 less a margin well above the rounding error)
_SURE_FITS = 9.2e18
#: |x| above this: it surely does not fit
_SURE_GROWS = 9.25e18


def _register() -> None:
    import numpy as np
    from numba.core import types
    from numba.extending import overload

    @overload(base_index, jit_options={"cache": True})
    def _base_index(i):
        if isinstance(i, types.Integer) and i.signed:
            return lambda i: np.uint64(i)
        return lambda i: i

    @overload(as_index, jit_options={"cache": True})
    def _as_index(i):
        if isinstance(i, types.Integer) and not i.signed:
            return lambda i: np.int64(i)
        return lambda i: i

    @overload(like, jit_options={"cache": True})
    def _like(x, p):
        numbers = (types.Integer, types.Float, types.Boolean)
        if isinstance(x, numbers) and isinstance(p, numbers):
            from numba.np.numpy_support import as_dtype

            make = as_dtype(types.unliteral(p)).type
            return lambda x, p: make(x)
        return lambda x, p: x

    @overload(power, jit_options={"cache": True})
    def _power(a, b):
        if isinstance(a, types.Float) and a.bitwidth == 64 and isinstance(b, types.Integer):
            def pow_(a, b):
                # not even the square is a product: glibc's pow() is within 0.52 ulp, not
                # correctly rounded, and x * x differed from Python's x ** 2 for 814 of
                # every million random floats (LLVM still makes pow(x, 2.0) of a literal 2
                # x * x: guide §9)
                if b == 1:
                    return a
                if b == 0:
                    return 1.0
                return a ** np.float64(b)
            return pow_
        return lambda a, b: a ** b

    def signed_ints(a, b) -> bool:
        """Both integers whose product Numba types as int64 (a uint64 makes it uint64 or
        float64, as NumPy's does: no Python int is either)."""
        return (isinstance(a, types.Integer) and isinstance(b, types.Integer)
                and (a.signed or b.signed)
                and not any(t.bitwidth == 64 and not t.signed for t in (a, b)))

    @overload(product_grows, jit_options={"cache": True})
    def _product_grows(a, b):
        if not signed_ints(a, b):
            return lambda a, b: False

        def grows(a, b):
            p = abs(np.float64(a) * np.float64(b))
            if p < _SURE_FITS:
                return False
            if p > _SURE_GROWS:
                return True
            # near 2**63: exactly, in magnitudes as uint64 (|int64 min| is 2**63), with
            # no product that could wrap: LLVM takes a signed product for one that does
            # not overflow, and folded the test ``(x * y) // x != y`` to False
            x, y = np.int64(a), np.int64(b)
            ux = np.uint64(x) if x >= 0 else np.uint64(-(x + 1)) + np.uint64(1)
            uy = np.uint64(y) if y >= 0 else np.uint64(-(y + 1)) + np.uint64(1)
            if uy == np.uint64(0):
                return False
            # the largest magnitude a product of these signs may have
            most = (np.uint64(9223372036854775807) if (x < 0) == (y < 0)
                    else np.uint64(9223372036854775808))
            return ux > most // uy
        return grows

    @overload(power_grows, jit_options={"cache": True})
    def _power_grows(a, b):
        if not signed_ints(a, b):
            return lambda a, b: False

        def grows(a, b):
            if b < 0:
                return True
            return not abs(np.float64(a) ** np.float64(b)) < _SURE_FITS
        return grows

    @overload(shift_grows, jit_options={"cache": True})
    def _shift_grows(a, b):
        if not signed_ints(a, b):
            return lambda a, b: False

        def grows(a, b):
            if b < 0:
                return True
            x = np.int64(a)
            if x == 0:
                return False
            if b >= 63:
                return True
            return (x << np.int64(b)) >> np.int64(b) != x
        return grows

    @overload(float_operands, jit_options={"cache": True})
    def _float_operands(a, b):
        floats = isinstance(a, types.Float) or isinstance(b, types.Float)
        return lambda a, b: floats

    @overload(bad_int_store, jit_options={"cache": True})
    def _bad_int_store(a, x):
        if (isinstance(a, types.Array) and isinstance(a.dtype, types.Integer)
                and isinstance(x, types.Float)):
            return lambda a, x: not -INT64_BOUND <= x < INT64_BOUND
        return lambda a, x: False

    @overload(zero_divisor, jit_options={"cache": True})
    def _zero_divisor(b):
        if isinstance(b, (types.Integer, types.Float, types.Boolean)):
            return lambda b: b == 0
        return lambda b: False

    @overload(divides_by_zero, jit_options={"cache": True})
    def _divides_by_zero(a, b):
        if isinstance(a, types.Array) or not isinstance(b, (types.Integer, types.Float,
                                                            types.Boolean)):
            return lambda a, b: False
        return lambda a, b: b == 0

    @overload(ndigits, jit_options={"cache": True})
    def _ndigits(x):
        if not isinstance(x, types.Integer):
            return None
        ten = np.uint64(10)

        def impl(x):
            n = 1
            m = np.uint64(x)
            if x < 0:                           # the magnitude, -2**63's too, as uint64
                n = 2
                m = np.uint64(0) - m
            while m >= ten:
                m = m // ten
                n += 1
            return n
        return impl

    @overload(bad_float, jit_options={"cache": True})
    def _bad_float(x):
        if isinstance(x, types.Float):
            return lambda x: not -INT64_BOUND <= x < INT64_BOUND  # NaN compares False
        return lambda x: False


try:
    _register()
except ImportError:  # pragma: no cover - Numba is a dependency; plain Python still works
    pass


# --------------------------------------------------------------- arrays that don't fit

def check_array_fit(spec, closure, args) -> None:
    """Refuse a copy ``dst[i] = src[j]`` that cannot hold the values it copies.

    Numba converts silently (int64 keys stored into an int32 scratch array
    lose their high bits: a sort then returns garbage and, writing back,
    destroys the data).  Checked before anything runs, from the dtypes of
    this call, in the function and the helpers it passes arrays to.  An array
    read only by such copies is *scratch*: what it holds are the values
    copied into it, so copying it back into a narrower array (int32 keys,
    int64 scratch) is fine.  A store that converts explicitly
    (``tmp[k] = np.int32(a[i])``) is the user's decision and is left alone.
    """
    import ast

    import numpy as np

    from hpu._errors import ArrayMismatchError
    from hpu._views import shown_as

    helpers = {h.name: h for h in closure.helpers}
    dtypes = {p: np.asarray(v).dtype for p, v in args.items() if isinstance(v, np.ndarray)}
    copies = []          # (dst, src, node, filename, line, context)
    other_reads = set()  # arrays read anywhere but as the whole value of a copy
    seen = set()

    def walk(tree, env, filename, fixed_line, context):
        plain = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                src = node.value
                if (isinstance(src, ast.Subscript) and isinstance(src.value, ast.Name)
                        and src.value.id in env):
                    for t in node.targets:
                        if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                                and t.value.id in env):
                            plain.add(id(src))
                            copies.append((env[t.value.id], env[src.value.id], node, filename,
                                           fixed_line or node.lineno, context))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name) and node.value.id in env
                    and id(node) not in plain):
                other_reads.add(env[node.value.id])
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) \
                    and isinstance(node.target.value, ast.Name) and node.target.value.id in env:
                other_reads.add(env[node.target.value.id])
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in helpers):
                h = helpers[node.func.id]
                sub = {hp: env[a.id] for hp, a in zip(h.params, node.args)
                       if isinstance(a, ast.Name) and a.id in env}
                key = (h.name, tuple(sorted(sub.items())))
                if sub and key not in seen:
                    seen.add(key)
                    # the helper's tree carries its file's lines; its source parsed, none
                    tree, line = (h.tree, None) if h.tree is not None else \
                        (ast.parse(h.source), h.lineno)
                    walk(tree, sub, h.filename, line, h.context)
            elif isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                                     and node.func.id == spec.name):
                # an array passed to anything but a helper or the recursion: assume it is read
                for arg in node.args:
                    if isinstance(arg, ast.Name) and arg.id in env:
                        other_reads.add(env[arg.id])

    walk(spec.tree, {p: p for p in dtypes}, spec.filename, None, "")
    scratch = {name for name in dtypes if name not in other_reads}

    def content(name):
        """The dtype that can hold every value ``name`` may contain."""
        if name not in scratch:
            return dtypes[name]
        sources = [dtypes[s] for d, s, *_ in copies if d == name and s not in scratch]
        return np.result_type(*sources) if sources else dtypes[name]

    for dst, src, node, filename, line, context in copies:
        held, dd = content(src), dtypes[dst]
        if not np.can_cast(held, dd, casting="safe"):
            t, v = node.targets[0], node.value
            statement = shown_as(t)         # a slice assignment (hpu._views): as written
            if statement is not None:
                raise ArrayMismatchError(
                    f"{filename}:{line}: {context}{statement}: copies {src} ({held} values) "
                    f"into {dst} ({dd}), which cannot hold every value of {src}; nothing was "
                    f"run. Pass {dst} with dtype {held} (e.g. np.empty_like({src})), or copy "
                    f"in a loop that converts each element: {dst}[i] = np.{dd.name}({src}[i])")
            raise ArrayMismatchError(
                f"{filename}:{line}: {context}{ast.unparse(node)}: stores {src} ({held} "
                f"values) into {dst} ({dd}), which cannot hold every value of {src}; nothing "
                f"was run. Pass {dst} with dtype {held} (e.g. np.empty_like({src})), or "
                f"convert explicitly: {ast.unparse(t)} = np.{dd.name}({ast.unparse(v)})")
