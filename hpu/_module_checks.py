"""The checked operations a generated CPU module calls, compiled once per process.

Why a module of their own
=========================

The CPU module that :mod:`hpu._codegen` writes for each decorated function checks the
user's operations as Python would (``x // 0``, ``int(nan)``, a product past int64, an index
out of range): each ``//`` is ``hpu__floordiv(a, b, site)``, each checked index
``hpu__ix(i, n, site)``, and so on.  These functions were once written into every generated
module.  Numba compiles a function once per module it lives in and per kind of arguments, so
every decorated function paid for its own copies at its first call (about 0.1 s per check
and kind of arguments: a second or more per function, and per test of the suite).  Here they
are compiled once in a process and cached on disk beside this file; a generated module
imports them under its old names (:data:`hpu._codegen._CHECKED_PRELUDE`), so the code it
holds reads as before.

LLVM inlines them where they are called all the same: Numba links a callee's machine code
into its caller's before optimising it, wherever the callee's source lives.  The raises stay
apart, in :mod:`hpu._checked_ops` (a raise that builds its text costs seconds of compiling);
``site`` is a number that module turns into the user's file, line and expression.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hpu._checked_ops import (_badconv, _badconv_grows, _broadcast, _empty_reduction,
                              _grows, _outofbounds, _pair_mismatch, _truezerodiv, _zerodiv)
from hpu._guard import (bad_float, bad_int_store, divides_by_zero, float_operands, power,
                        power_grows, product_grows, shift_grows)
from hpu._interrupt import Stopped

__all__ = ["stopped", "floordiv", "truediv", "pow_", "mul", "shl", "mpow", "mod", "ix", "vix",
           "to_int", "finite", "store", "to_round", "slice_copy_chk", "reduce_first_chk",
           "reduce_pair_chk"]


@njit(cache=True)
def stopped():
    """Ctrl-C (:mod:`hpu._interrupt`): the recursion reads the stop flag at every call."""
    raise Stopped("stopped by Ctrl-C")


@njit(cache=True)
def floordiv(a, b, site):
    if b == 0:
        _zerodiv(site, 2 if float_operands(a, b) else 0)
    return a // b


@njit(cache=True)
def truediv(a, b, site):
    """``x / 0``: Python's (and Numba's) error, at the user's line."""
    if divides_by_zero(a, b):
        _truezerodiv(site)
    return a / b


@njit(cache=True)
def pow_(a, b, site):
    """``x ** n`` of a float64 and an int: Python's pow(), not Numba's; ints past int64, or
    ``n < 0`` (a float in Python), run the plain function."""
    if power_grows(a, b):
        _grows(site)
    return power(a, b)


@njit(cache=True)
def mul(a, b, site):
    """Ints: a product past int64 runs the plain function (Python's int)."""
    if product_grows(a, b):
        _grows(site)
    return a * b


@njit(cache=True)
def shl(a, b, site):
    if shift_grows(a, b):
        _grows(site)
    return a << b


@njit(cache=True)
def mpow(a, b):
    """``math.pow``: both operands as float64, as Python converts them."""
    return np.float64(a) ** np.float64(b)


@njit(cache=True)
def mod(a, b, site):
    if b == 0:
        _zerodiv(site, 3 if float_operands(a, b) else 0)
    return a % b


@njit(cache=True)
def ix(i, n, site):
    if i < -n or i >= n:
        _outofbounds(i, n, site)
    return i


@njit(cache=True)
def vix(i, n, site):
    """A view's index (:mod:`hpu._views`): against the view's length ``n``."""
    if i < -n or i >= n:
        _outofbounds(i, n, site)
    return i + n if i < 0 else i


@njit(cache=True)
def to_int(x, site):
    if bad_float(x):
        _badconv_grows(x, site)
    return int(x)


@njit(cache=True)
def finite(x, site):
    """``math.floor(x)``, ``math.ceil(x)``, ``math.trunc(x)``: checked as ``int(x)``."""
    if bad_float(x):
        _badconv_grows(x, site)
    return x


@njit(cache=True)
def store(a, x, site):
    if bad_int_store(a, x):
        _badconv(x, site)
    return x


@njit(cache=True)
def to_round(x, site):
    if bad_float(x):
        _badconv_grows(x, site)
    return round(x)


@njit(cache=True)
def slice_copy_chk(nd, ns, site):
    """``dst[...] = src[...]`` (:mod:`hpu._views`): NumPy's rule on the two lengths."""
    if ns != nd and ns != 1:
        _broadcast(ns, nd, site)
    return nd


@njit(cache=True)
def reduce_first_chk(n, kind, site):
    """``min(a)``, ``np.max(a)`` (:mod:`hpu._reductions`): an empty array raises."""
    if n == 0:
        _empty_reduction(kind, site)
    return 0


@njit(cache=True)
def reduce_pair_chk(n1, n2, kind, site):
    """``np.dot(a, b)``, ``np.sum(a - b)``: the lengths NumPy accepts, or its error."""
    if n1 == n2:
        return n1
    if kind == 0 and n1 == 1:
        return n2
    if kind == 0 and n2 == 1:
        return n1
    _pair_mismatch(n1, n2, kind, site)
    return 0
