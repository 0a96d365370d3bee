"""Python's errors in functions Numba compiles as written (the functional path).

Why not the CPU module's checks
===============================

The breadth-first path's CPU module carries its checks in its own source
(:data:`hpu._codegen._CHECKED_PRELUDE`): a failing check raises Python's exception with the
text of its site, ``hpu__SITES[k]``, a tuple the module holds and Numba freezes when it
compiles.  The functional path compiles the user's function itself
(:func:`hpu._functional.compile_functional`), for every decorated function of the process;
a prelude of its own per function cost about a second of compiling at each first call.

So these checks are compiled once (and cached on disk) for the whole process, and know no
site text: a failing check raises a subclass of Python's exception (``ZeroDivisionError``,
``ValueError``, ``OverflowError``, ``IndexError``, ``TypeError`` for a float slice bound)
whose arguments are numbers -- the site's number in :data:`SITES`, a list every compiled
function appends its sites to
(:func:`add_site`) -- and whose one argument, looked up when Python makes the exception, is
the text: ``file.py:12: in merge(): left[i]: index 3 is out of bounds for length 3``.  The
subclass is this module's, named as Python's (``hpu._checked_ops.ZeroDivisionError``:
Numba pickles the class it raises, by reference); an exception pickles as Python's own, with
its text (a Dask worker's exception reaches the caller readable).

The CPU module (:data:`hpu._codegen._CHECKED_PRELUDE`) raises with these too: compiled
once per module, a raise that builds its text cost a second or two of compiling and megabytes
of machine code that the process never frees, for every decorated function.  Its site numbers
must mean the same in every process, as its machine code is cached on disk: a module's number
is a token read from its texts (:func:`site_token`) above :data:`SITE_BITS` bits of index, and
the module registers its texts under the token as it is imported (:func:`register_sites`).

The site reaches a check as ``hpu__SITE_IDS[k]``, an element of an int64 array: a constant
``k`` would be typed as a literal by Numba, and each check compiled once per call site.
The checks called at every operation are inlined (Numba's IR), as the CPU module's would be
by LLVM.
"""
from __future__ import annotations

import builtins
import threading

import numpy as np
from numba import njit

from hpu._guard import (bad_float, bad_int_store, divides_by_zero, float_operands, power,
                        power_grows, product_grows, shift_grows, zero_divisor)

__all__ = ["SITES", "add_site", "register_sites", "site_text", "OPERATIONS",
           "ZeroDivisionError", "ValueError", "OverflowError", "IndexError", "TypeError",
           "IntOverflowError"]

#: every checked operation's text ("file:line: expression") in this process, by number
SITES: list[str] = []
_lock = threading.Lock()

#: a CPU module's site number: its token's bits above ``SITE_BITS`` bits of index
SITE_BITS = 20
#: the CPU modules' texts (their ``hpu__SITES``) by token
MODULE_SITES: dict[int, tuple[str, ...]] = {}


def add_site(text: str) -> int:
    """The number of a new site whose text is ``text``."""
    with _lock:
        SITES.append(text)
        return len(SITES) - 1


def site_token(texts: tuple[str, ...]) -> int:
    """A CPU module's token: 40 bits of a hash of its texts, the same in every process (the
    module's machine code, cached on disk, holds its site numbers).  Two modules with the
    same texts share a token and mean the same by it."""
    import hashlib

    return int(hashlib.sha256(repr(texts).encode()).hexdigest()[:10], 16) or 1


def register_sites(token: int, texts: tuple[str, ...]) -> None:
    """Called by a CPU module as it is imported (:mod:`hpu._codegen`): its texts."""
    with _lock:
        MODULE_SITES[token] = tuple(texts)


def site_text(site: int) -> str:
    """The text of site number ``site``: one of :data:`SITES`, or of a CPU module's."""
    if 0 <= site < len(SITES):
        return SITES[site]
    texts = MODULE_SITES.get(site >> SITE_BITS, ())
    k = site & ((1 << SITE_BITS) - 1)
    return texts[k] if k < len(texts) else "<unknown site>"


def _as_python(base: type, message):
    """A subclass of ``base`` made from ``(site, value, extra)`` (what compiled code can
    raise) whose one argument is the text, ``SITES[site]: message(value, extra)``."""

    def __init__(self, site=-1, value=0, extra=0):
        where = site_text(site)
        base.__init__(self, f"{where}: {message(value, extra)}")

    def __reduce__(self):
        return base, self.args

    # named as this module's attribute: Numba pickles the class it raises, which must come
    # back as this very class (by value, a copy would carry a stale copy of SITES)
    return type(base.__name__, (base,), {"__init__": __init__, "__reduce__": __reduce__,
                                         "__doc__": base.__doc__, "__module__": __name__})


# each a subclass of Python's own, under its name (a traceback shows
# hpu._checked_ops.ZeroDivisionError: file.py:12: x // d: integer division or modulo by zero)
def _zero_message(f) -> str:
    try:
        f(1.0, 0.0)
    except builtins.ZeroDivisionError as err:  # this Python's own words
        return str(err)
    return "float division by zero"  # pragma: no cover


#: the value a ZeroDivisionError carries: 0 int ``//``/``%``, 1 ``/``, 2 float ``//``,
#: 3 float ``%`` -- each with Python's text
_ZERO = {1: "division by zero", 2: _zero_message(lambda a, b: a // b),
         3: _zero_message(lambda a, b: a % b)}
ZeroDivisionError = _as_python(builtins.ZeroDivisionError, lambda v, e: _ZERO.get(
    v, "integer division or modulo by zero"))
def _empty_message(f) -> str:
    try:
        f([])
    except builtins.ValueError as err:      # this Python's own words (3.12 changed them)
        return str(err)
    return f"{f.__name__}() arg is an empty sequence"


_EMPTY = {0: _empty_message(min), 1: _empty_message(max)}


def _value_message(v: int, e: int) -> str:
    """The text of a ValueError raised as ``(site, v, e)``: ``e`` says which -- -1 a NaN
    made an int, -2 ``min``/``max`` of nothing (``v``: 0 min, 1 max), -3 a reduction of an
    empty array (``v``: its kind, :data:`hpu._reductions.EMPTY_MESSAGES`), -4 or less two
    arrays' lengths NumPy refuses (``v`` and ``(-4 - e) >> 1``; kind ``(-4 - e) & 1``,
    :func:`hpu._reductions.pair_message`), else a slice copy's shapes ``v`` into ``e``."""
    if e >= 0:
        return f"could not broadcast input array from shape ({v},) into shape ({e},)"
    if e == -1:
        return "cannot convert float NaN to integer"
    if e == -2:
        return _EMPTY.get(v, _EMPTY[1])
    from hpu._reductions import empty_message, pair_message

    if e == -3:
        return empty_message(v)
    return pair_message((-4 - e) & 1, v, (-4 - e) >> 1)


ValueError = _as_python(builtins.ValueError, _value_message)
#: v = 1: an infinity (Python's and NumPy's text); 0: a finite float past int64 stored into
#: an int64 array (NumPy's text)
OverflowError = _as_python(builtins.OverflowError, lambda v, e: (
    "cannot convert float infinity to integer" if v == 1 else
    "Python int too large to convert to C long"))
IndexError = _as_python(builtins.IndexError, lambda v, e: (
    "list index out of range" if e == -1 else "list assignment index out of range" if e == -2
    else f"index {v} is out of bounds for length {e}"))
TypeError = _as_python(builtins.TypeError, lambda v, e: "slice indices must be integers or "
                       "None or have an __index__ method")


class IntOverflowError(builtins.OverflowError):
    """An integer operation of the compiled function left int64 (``x * y``, ``x ** n``,
    ``x << n``), or gave what Python does not (``x ** -n``, a float in Python; ``x << -n``,
    Python's ValueError): Python's int would have grown, Numba's wraps.  hpu catches it and
    runs the call again as the plain function, whose answer is exact
    (:meth:`hpu._decorator.DivideAndConquer._run`); where the call's arrays cannot be put
    back first (``keep_inputs=False``), or on a Dask worker, it reaches the caller."""

    def __init__(self, site=-1, value=0, extra=0):
        text = site_text(site) if isinstance(site, int) else str(site)
        builtins.OverflowError.__init__(
            self, f"{text}: an integer result beyond int64 (64-bit integers wrap in compiled "
            "code, where Python's int grows)" if isinstance(site, int) else text)

    def __reduce__(self):
        return builtins.OverflowError, self.args


@njit(cache=True)
def _grows(site):
    raise IntOverflowError(site, 0, 0)


@njit(cache=True)
def _zerodiv(site, kind):
    raise ZeroDivisionError(site, kind, 0)


@njit(cache=True)
def _truezerodiv(site):
    raise ZeroDivisionError(site, 1, 0)


@njit(cache=True)
def _badconv(x, site):
    """A float that cannot be stored into an int64 array (NumPy's exceptions): NaN, ±inf,
    or past ±2**63."""
    if x != x:
        raise ValueError(site, 0, -1)
    raise OverflowError(site, 1 if x - x != x - x else 0, 0)


@njit(cache=True)
def _badconv_grows(x, site):
    """A float that ``int()``, ``round()``, ``math.floor``/``ceil``/``trunc`` cannot make an
    int64: NaN and ±inf raise as in Python; a finite float past ±2**63 is an int Python
    has (``int(1e19)``) -- :class:`IntOverflowError`, so the call runs again as the plain
    function, whose answer is exact."""
    if x != x:
        raise ValueError(site, 0, -1)
    if x - x != x - x:
        raise OverflowError(site, 1, 0)
    raise IntOverflowError(site, 0, 0)


@njit(cache=True)
def _empty(which, site):
    raise ValueError(site, which, -2)


@njit(cache=True)
def _empty_reduction(kind, site):   # min(a), np.argmax(a)... of an empty array
    raise ValueError(site, kind, -3)


@njit(cache=True)
def _pair_mismatch(n1, n2, kind, site):   # np.dot(a, b), np.sum(a - b): lengths NumPy refuses
    raise ValueError(site, n1, -4 - (2 * n2 + kind))


@njit(cache=True)
def _broadcast(ns, nd, site):
    raise ValueError(site, ns, nd)


@njit(cache=True)
def _outofbounds(i, n, site):
    raise IndexError(site, i, n)


@njit(cache=True)
def _badslice(site):
    raise TypeError(site, 0, 0)


def _list_misindex(x, i):
    """Whether ``x[i]`` is out of range of the list ``x`` (False for anything else: an array
    keeps Numba's own indexing, unchecked unless boundscheck asks)."""
    return isinstance(x, list) and not -len(x) <= i < len(x)


def _misindexed_length(x, i):
    """For a constant index ``i`` of ``x`` out of range: the length for the message (-1: a
    list, Python's list message), else -3 (in range, or a tuple: Numba types those)."""
    if isinstance(x, list):
        return -3 if -len(x) <= i < len(x) else -1
    return -3


def _neumaier(x):
    """``sum(x)`` of a non-empty list of floats as CPython 3.12 computes it: the first item,
    then each next one added with Neumaier's compensation, the compensation added at the
    end when it is finite and not zero (``Python/bltinmodule.c``, ``builtin_sum_impl``)."""
    f = 0.0 + x[0]                     # Python starts at int 0: 0 + -0.0 is 0.0
    c = 0.0
    for k in range(1, len(x)):
        v = x[k]
        t = f + v
        if abs(f) >= abs(v):
            c += (f - t) + v
        else:
            c += (v - t) + f
        f = t
    if c != 0.0 and c - c == 0.0:       # finite
        f += c
    return f


_neumaier_nb = njit(cache=True)(_neumaier)


def summed(x):
    """``sum(x)``; compiled (its overload in :func:`_register`), a list of floats on Python
    3.12+ sums compensated as Python sums it (Numba adds plainly: the last digits
    differed), anything else as Numba sums it."""
    return sum(x)


summed.__name__ = summed.__qualname__ = "sum"     # Numba's messages name what the user wrote


def _pairwise(x, zero):
    """``zero +`` the items of the 1-D array ``x`` added in NumPy's order (its
    ``pairwise_sum``; :meth:`hpu._reductions._Reductions.pairwise` writes the same walk for
    the other paths): fewer than 8 in order, up to 128 in eight running sums, more split at
    ``8 * (n // 16)``.  Compiled by Numba (``_pairwise_nb``)."""
    n = len(x)
    if n < 8:
        r = zero
        for i in range(n):
            r = r + x[i]
        return r
    pend = [zero + x[0]] * 64
    d = path = lo = 0
    size = n
    while True:
        while size > 128:
            size = 8 * (size // 16)
            d += 1
            path *= 2
        acc = [zero + x[lo + k] for k in range(8)]
        i = 8
        while i < size - size % 8:
            for k in range(8):
                acc[k] = acc[k] + x[lo + i + k]
            i += 8
        s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
        while i < size:
            s = s + x[lo + i]
            i += 1
        while d > 0 and path % 2 == 1:
            s = pend[d] + s
            path //= 2
            d -= 1
        if d == 0:
            return zero + s
        pend[d] = s
        path += 1
        lo, size = 0, n
        for k in range(d - 1, -1, -1):
            h = 8 * (size // 16)
            if (path >> k) % 2 == 1:
                lo, size = lo + h, size - h
            else:
                size = h


def npsum(x):
    """``np.sum(x)``/``x.sum()``; compiled, a 1-D float array's items are added in NumPy's
    pairwise order (Numba adds them in order: the last bits differed), anything else as
    Numba sums it."""
    import numpy as np

    return np.sum(x)


def npmean(x):
    """``np.mean(x)``/``x.mean()``; compiled, a 1-D array of numbers: its items as float64,
    added in NumPy's order, over the length (nan when empty, as NumPy's, which warns too)."""
    import numpy as np

    return np.mean(x)


npsum.__name__ = npsum.__qualname__ = "sum"
npmean.__name__ = npmean.__qualname__ = "mean"


def _empty_sequence(x):
    """Whether ``x`` is a list, tuple, range or array with no elements (False for anything
    else: ``max`` of an iterator keeps Numba's own behaviour)."""
    return hasattr(x, "__len__") and len(x) == 0


def _float_bound(x):
    """Whether ``x`` is a float: as a slice bound, Python raises TypeError (Numba would
    slice with it)."""
    return isinstance(x, float)


def _misfit(t, v):
    """``(len(v), len(t))`` when ``t[...] = v`` of two 1-D arrays has lengths NumPy refuses
    (neither equal nor ``v`` of one element), else ``(-1, -1)``."""
    import numpy as np

    if isinstance(t, np.ndarray) and isinstance(v, np.ndarray) and t.ndim == v.ndim == 1 \
            and v.size not in (t.size, 1):
        return v.size, t.size
    return -1, -1


def _register() -> None:
    from numba.core import types
    from numba.extending import overload

    @overload(_list_misindex, jit_options={"cache": True})
    def _list_misindex_nb(x, i):
        if isinstance(x, (types.List, types.ListType)) and isinstance(i, types.Integer):
            return lambda x, i: i < -len(x) or i >= len(x)
        return lambda x, i: False

    @overload(_misindexed_length, jit_options={"cache": True})
    def _misindexed_length_nb(x, i):
        if not isinstance(i, types.Integer):
            return lambda x, i: -3
        if isinstance(x, (types.List, types.ListType)):
            return lambda x, i: -1 if i < -len(x) or i >= len(x) else -3
        if isinstance(x, types.Array) and x.ndim >= 1:
            return lambda x, i: len(x) if i < -len(x) or i >= len(x) else -3
        return lambda x, i: -3

    import sys

    @overload(summed, jit_options={"cache": True})
    def _summed_nb(x):
        if (sys.version_info >= (3, 12) and isinstance(x, (types.List, types.ListType))
                and isinstance(x.dtype, types.Float)):
            def compensated(x):
                if len(x) == 0:
                    return sum(x)
                return _neumaier_nb(x)
            return compensated
        return lambda x: sum(x)         # Numba's own: nothing else typed

    pairwise_nb = njit(cache=True)(_pairwise)

    @overload(npsum, jit_options={"cache": True})
    def _npsum_nb(x):
        if isinstance(x, types.Array) and x.ndim == 1 and isinstance(x.dtype, types.Float) \
                and x.dtype.bitwidth == 64:
            return lambda x: pairwise_nb(x, 0.0)
        return lambda x: np.sum(x)

    @overload(npmean, jit_options={"cache": True})
    def _npmean_nb(x):
        if isinstance(x, types.Array) and x.ndim == 1 and isinstance(
                x.dtype, (types.Integer, types.Boolean)) or (
                isinstance(x, types.Array) and x.ndim == 1 and isinstance(x.dtype, types.Float)
                and x.dtype.bitwidth == 64):
            def mean(x):
                if len(x) == 0:
                    return np.nan
                return pairwise_nb(x, 0.0) / len(x)
            return mean
        return lambda x: np.mean(x)

    @overload(_empty_sequence, jit_options={"cache": True})
    def _empty_sequence_nb(x):
        if isinstance(x, (types.List, types.ListType, types.Array, types.BaseTuple,
                          types.RangeType)):
            return lambda x: len(x) == 0
        return lambda x: False

    @overload(_float_bound, jit_options={"cache": True})
    def _float_bound_nb(x):
        if isinstance(x, types.Float):
            return lambda x: True
        return lambda x: False

    @overload(_misfit, jit_options={"cache": True})
    def _misfit_nb(t, v):
        if (isinstance(t, types.Array) and isinstance(v, types.Array)
                and t.ndim == 1 and v.ndim == 1):
            def check(t, v):
                if v.size != t.size and v.size != 1:
                    return v.size, t.size
                return -1, -1
            return check
        return lambda t, v: (-1, -1)


_register()


@njit(inline="always")
def floordiv(a, b, site):
    if zero_divisor(b):
        _zerodiv(site, 2 if float_operands(a, b) else 0)
    return a // b


@njit(inline="always")
def truediv(a, b, site):
    if divides_by_zero(a, b):
        _truezerodiv(site)
    return a / b


@njit(inline="always")
def pow_(a, b, site):
    if power_grows(a, b):
        _grows(site)
    return power(a, b)


@njit(inline="always")
def mul(a, b, site):
    if product_grows(a, b):
        _grows(site)
    return a * b


@njit(inline="always")
def shl(a, b, site):
    if shift_grows(a, b):
        _grows(site)
    return a << b


@njit(inline="always")
def mpow(a, b):
    return np.float64(a) ** np.float64(b)


@njit(inline="always")
def mod(a, b, site):
    if zero_divisor(b):
        _zerodiv(site, 3 if float_operands(a, b) else 0)
    return a % b


@njit(inline="always")
def ix(i, n, site):
    if i < -n or i >= n:
        _outofbounds(i, n, site)
    return i


@njit(inline="always")
def to_int(x, site):
    if bad_float(x):
        _badconv_grows(x, site)
    return int(x)


@njit(inline="always")
def finite(x, site):
    """``x`` for ``math.floor(x)``, ``math.ceil(x)``, ``math.trunc(x)``: a float that has
    no int64 raises as :func:`to_int` does."""
    if bad_float(x):
        _badconv_grows(x, site)
    return x


@njit(inline="always")
def store(a, x, site):
    if bad_int_store(a, x):
        _badconv(x, site)
    return x


@njit(inline="always")
def to_round(x, site):
    if bad_float(x):
        _badconv_grows(x, site)
    return round(x)


@njit(inline="always")
def fit(t, v, site):
    """``v``, for ``t[s:e] = v``: NumPy's ValueError when both are 1-D arrays of lengths
    it refuses (Numba's own message names no line)."""
    ns, nd = _misfit(t, v)
    if ns >= 0:
        _broadcast(ns, nd, site)
    return v


@njit(inline="always")
def list_ix(x, i, site):
    """``i``, an index of ``x``: for a list out of range, Python's IndexError at the site
    (Numba's says "getitem out of range" and names no line)."""
    if _list_misindex(x, i):
        _outofbounds(i, -1, site)
    return i


@njit(inline="always")
def const_ix(x, i, site):
    """``i``, a constant index of ``x`` in bounds-checked mode, where hpu cannot tell an
    array from a tuple (a tuple needs the constant itself: inlined, ``x[i]`` still sees
    it): out of range of an array or a list, Python's IndexError at the site (Numba's
    own check says "index is out of bounds" and names no line)."""
    n = _misindexed_length(x, i)
    if n != -3:
        _outofbounds(i, n, site)
    return i


@njit(inline="always")
def list_set_ix(x, i, site):
    """``i``, for ``x[i] = v``: Python's "list assignment index out of range"."""
    if _list_misindex(x, i):
        _outofbounds(i, -2, site)
    return i


@njit(inline="always")
def nonempty(x, which, site):
    """``x``, for ``max(x)`` (``which`` 1) or ``min(x)`` (0): Python's ValueError when it
    is an empty sequence."""
    if _empty_sequence(x):
        _empty(which, site)
    return x


@njit(inline="always")
def slice_ix(x, site):
    """``x``, a slice bound: Python's TypeError for a float (``a[:len(a) / 2]``)."""
    if _float_bound(x):
        _badslice(site)
    return x


#: the names :class:`hpu._codegen._Checked` writes -> the checks here
OPERATIONS = {"hpu__floordiv": floordiv, "hpu__mod": mod, "hpu__truediv": truediv,
              "hpu__pow": pow_, "hpu__mpow": mpow, "hpu__mul": mul, "hpu__shl": shl,
              "hpu__ix": ix, "hpu__int": to_int, "hpu__finite": finite, "hpu__store": store, "hpu__round": to_round,
              "hpu__fit": fit,
              "hpu__slice_ix": slice_ix, "hpu__lix": list_ix, "hpu__lsix": list_set_ix,
              "hpu__cix": const_ix,
              "hpu__nonempty": nonempty, "hpu__sum": summed, "hpu__npsum": npsum,
              "hpu__npmean": npmean}
