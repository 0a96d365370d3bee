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

from numba import njit

from hpu import _checked_ops as _ops
from hpu._checked_ops import (_broadcast, _empty_reduction, _outofbounds, _pair_mismatch,
                              _zerodiv)
from hpu._guard import float_operands
from hpu._interrupt import Stopped

__all__ = ["stopped", "floordiv", "truediv", "pow_", "mul", "shl", "mpow", "mod", "ix", "vix",
           "to_int", "finite", "store", "to_round", "slice_copy_chk", "reduce_first_chk",
           "reduce_pair_chk"]


@njit(cache=True)
def stopped():
    """Ctrl-C (:mod:`hpu._interrupt`): the recursion reads the stop flag at every call."""
    raise Stopped("stopped by Ctrl-C")


# floordiv and mod test `b == 0` as the CPU module always did (the functional path's
# hpu._checked_ops.floordiv asks hpu._guard.zero_divisor, which leaves an array divisor to NumPy)
@njit(cache=True)
def floordiv(a, b, site):
    if b == 0:
        _zerodiv(site, 2 if float_operands(a, b) else 0)
    return a // b







@njit(cache=True)
def mod(a, b, site):
    if b == 0:
        _zerodiv(site, 3 if float_operands(a, b) else 0)
    return a % b



@njit(cache=True)
def vix(i, n, site):
    """A view's index (:mod:`hpu._views`): against the view's length ``n``."""
    if i < -n or i >= n:
        _outofbounds(i, n, site)
    return i + n if i < 0 else i






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


# the checks whose bodies are hpu._checked_ops' own, there inlined into the functional path's
# code (Numba's IR): here the same functions, compiled as calls
truediv = njit(cache=True)(_ops.truediv.py_func)
pow_ = njit(cache=True)(_ops.pow_.py_func)
mul = njit(cache=True)(_ops.mul.py_func)
shl = njit(cache=True)(_ops.shl.py_func)
mpow = njit(cache=True)(_ops.mpow.py_func)
ix = njit(cache=True)(_ops.ix.py_func)
to_int = njit(cache=True)(_ops.to_int.py_func)
finite = njit(cache=True)(_ops.finite.py_func)
store = njit(cache=True)(_ops.store.py_func)
to_round = njit(cache=True)(_ops.to_round.py_func)
