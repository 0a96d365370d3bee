"""Python's int where Numba's typing made it a float: results beside infinite sentinels.

Why
===

``return float("-inf")`` for an empty slice and ``return a[0]`` for one element, combined
with ``max(...)``: plain Python returns an int for an int array (the element that won), and
a float only when the sentinel itself is the answer.  Numba types a function once, and one
variable that holds ``-inf`` on one path and an int on another is a float64 on every path:
compiled, the same function returns ``675.0`` where Python returns ``675``.  This was the
commonest difference between hpu and plain Python in a sweep of 105 functions written as
people write them (320 of 485 differences: maximum subarray with ``-math.inf``, min/max
pairs seeded with ``inf``, ...).

Which type Python gives depends on the path a value took, which the compiled code no longer
knows.  But it is decided by the function's text when its only floats are those sentinels:
if every float in the function and its helpers is an infinity or a NaN (``float("inf")``,
``-math.inf``, ``np.inf``, ``float("nan")``), no ``/``, no ``float()`` of anything else, no
other float constant, no float array, and only operations that keep an infinity infinite
(``+ - *``, unary minus, ``abs``, ``min``, ``max``, ``sum``, comparisons) touch a value that
may be one, then on integer arguments a *finite* value can only have come from the integers:
Python's result is an int exactly where the compiled one is finite.  (``//``, ``%`` and
``**`` may turn an infinity finite -- ``3 % inf`` is ``3.0`` -- so they are allowed only
between values that can never be a sentinel: ``len(a) // 2``.)

:func:`int_results` decides that from the source, once per function (conservatively: an
unknown call, a float anywhere else, a helper without source -- the result is left as
Numba gives it); :func:`restore` turns a result's finite integral floats (alone or in a
tuple) back into ints when every argument is an int, an int array or a list of ints.
"""
from __future__ import annotations

import ast
import math

import numpy as np

__all__ = ["int_results", "restore", "past_float"]

#: the largest magnitude every integer up to which float64 holds exactly
EXACT = 2 ** 53

#: builtins and methods that keep an infinity infinite and an int an int
_CALLS = frozenset({"len", "range", "min", "max", "abs", "int", "bool", "sum", "enumerate",
                    "zip", "reversed", "sorted"})
_METHODS = frozenset({"append", "extend", "pop", "copy", "insert"})
_ALLOC = frozenset({"empty", "zeros", "empty_like", "zeros_like", "copy", "array"})
_KEEP_INF = (ast.Add, ast.Sub, ast.Mult)
#: operators that may turn an infinity into a finite float: ``3 % inf`` is ``3.0``
_MAY_FINITE = (ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.BitAnd,
               ast.BitOr, ast.BitXor)


def _sentinel(e, mods: dict) -> bool:
    """An infinity or a NaN written as a constant."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        return _sentinel(e.operand, mods)
    if isinstance(e, ast.Constant) and isinstance(e.value, float):
        return math.isinf(e.value) or math.isnan(e.value)
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "float"
            and len(e.args) == 1 and isinstance(e.args[0], ast.Constant)
            and isinstance(e.args[0].value, str)):
        try:
            v = float(e.args[0].value)
        except ValueError:
            return False
        return math.isinf(v) or math.isnan(v)
    return (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
            and mods.get(e.value.id) in ("math", "numpy") and e.attr in ("inf", "nan"))


def _int_dtype(e, mods: dict) -> bool:
    """A dtype argument that is an integer type (``np.int64``, ``int``, ``a.dtype`` of an
    argument: the arguments are checked to be integers at the call)."""
    if isinstance(e, ast.Attribute) and e.attr == "dtype":
        return True
    if isinstance(e, ast.Name) and e.id in ("int", "bool"):
        return True
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        try:
            return np.dtype(e.value).kind in "iub"
        except TypeError:
            return False
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) \
            and mods.get(e.value.id) == "numpy":
        try:
            return np.dtype(getattr(np, e.attr)).kind in "iub"
        except (TypeError, AttributeError):
            return False
    return False


class _Check(ast.NodeVisitor):
    """Walks one function: ``ok`` stays True while every float is a sentinel (above)."""

    def __init__(self, tree, glb, name: str, helpers: set):
        self.glb, self.name, self.helpers = glb, name, helpers
        self.mods = {k: getattr(v, "__name__", None) for k, v in glb.items()
                     if getattr(v, "__name__", None) in ("math", "numpy")}
        self.ok = True
        self.tainted = self._taint(tree)

    def _taint(self, tree) -> set:
        """Names that may hold a sentinel (or a value derived from one): assigned from a
        sentinel, a call of the function or a helper, a parameter of a helper, or such a
        name; to a fixed point."""
        names: set = set()
        if tree.name != self.name:
            names |= {a.arg for a in tree.args.args}
        assigns = []
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign):
                assigns += [(t, n.value) for t in n.targets]
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                assigns.append((n.target, n.value))
            elif isinstance(n, (ast.For, ast.comprehension)):
                assigns.append((n.target, n.iter))
            elif isinstance(n, ast.NamedExpr):
                assigns.append((n.target, n.value))
        while True:
            grown = set(names)
            for target, value in assigns:
                if self._may_hold(value, grown):
                    grown |= {t.id for t in ast.walk(target) if isinstance(t, ast.Name)}
            if grown == names:
                return names
            names = grown

    def _global_float(self, n):
        """The float a global name holds (``from math import inf``), else None."""
        if isinstance(n, ast.Name) and isinstance(self.glb.get(n.id), float):
            return self.glb[n.id]
        return None

    def _may_hold(self, e, names) -> bool:
        for n in ast.walk(e):
            if _sentinel(n, self.mods) or (isinstance(n, ast.Name) and n.id in names):
                return True
            if self._global_float(n) is not None:
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and (
                    n.func.id == self.name or n.func.id in self.helpers):
                return True
        return False

    def generic_visit(self, node):
        if self.ok:
            super().generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, (float, complex)) and not _sentinel(node, self.mods):
            self.ok = False

    def visit_Name(self, node):
        v = self._global_float(node)
        if v is not None and not (math.isinf(v) or math.isnan(v)):
            self.ok = False             # EPS = 1e-9 at the module's top

    def visit_UnaryOp(self, node):
        if _sentinel(node, self.mods):
            return
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, (ast.Div, ast.MatMult)):
            self.ok = False
        elif isinstance(node.op, _MAY_FINITE) and (self._may_hold(node.left, self.tainted)
                                                   or self._may_hold(node.right, self.tainted)):
            self.ok = False
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self.visit_BinOp(ast.BinOp(node.target, node.op, node.value))

    def visit_Attribute(self, node):
        if _sentinel(node, self.mods) or _int_dtype(node, self.mods):
            return                      # -np.inf; np.int64 as a dtype
        if isinstance(node.value, ast.Name) and node.value.id in self.mods:
            self.ok = False        # math.pi, np.e, ...: any other constant or function
            return
        self.generic_visit(node)

    def visit_Call(self, node):
        if _sentinel(node, self.mods):
            return
        f = node.func
        if isinstance(f, ast.Name):
            if f.id not in _CALLS and f.id != self.name and f.id not in self.helpers:
                self.ok = False
                return
        elif isinstance(f, ast.Attribute):
            base = f.value
            if isinstance(base, ast.Name) and self.mods.get(base.id) == "numpy":
                dtype = ([k.value for k in node.keywords if k.arg == "dtype"]
                         + node.args[1:2])
                if f.attr not in _ALLOC or (f.attr in ("empty", "zeros", "array")
                                            and not (dtype and _int_dtype(dtype[0], self.mods))):
                    self.ok = False     # np.zeros(n) is float64; np.sqrt, np.mean, ...
                    return
            elif isinstance(base, ast.Name) and base.id in self.mods:
                self.ok = False         # math.sqrt, ...
                return
            elif f.attr not in _METHODS:
                self.ok = False         # a.astype(float), a.mean(), ...
                return
        else:
            self.ok = False
            return
        if isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name)
                                                 and f.value.id in self.mods):
            self.visit(f.value)                 # a method's object (np.zeros: the module)
        for e in (*node.args, *(k.value for k in node.keywords)):
            self.visit(e)


def int_results(fn) -> bool:
    """Whether ``fn`` (a Python function) and every helper it calls keep their floats to
    infinite and NaN sentinels (module docstring); False when any source is unreadable."""
    from hpu._functional import _helpers, _tree_of

    tree = _tree_of(fn)
    if tree is None:
        return False
    seen = {fn}
    todo = [(fn, tree)]
    pending = _helpers(tree, fn.__globals__, seen)
    helpers = {f.__name__ for f in pending}
    sentinels = False
    while pending:
        f = pending.pop(0)
        t = _tree_of(f)
        if t is None:
            return False
        todo.append((f, t))
        more = _helpers(t, f.__globals__, seen)
        helpers |= {g.__name__ for g in more}
        pending += more
    for f, t in todo:
        t.decorator_list = []       # `@hpu.divide_and_conquer(b=2)` is not the function's code
        check = _Check(t, f.__globals__, tree.name, helpers)
        check.visit(t)
        if not check.ok:
            return False
        sentinels = sentinels or any(_sentinel(n, check.mods) or check._global_float(n)
                                     is not None for n in ast.walk(t))
    return sentinels                # without a sentinel Numba has nothing to unify


def _int_argument(v) -> bool:
    if isinstance(v, (bool, int, np.integer, np.bool_)):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "iub"
    if isinstance(v, (list, tuple)):
        return all(_int_argument(e) for e in v)
    return False


def restore(value, args, kwargs):
    """``value`` with its finite integral floats as ints (alone or in a tuple), when every
    argument is an int, an int array or a list of ints; else ``value`` unchanged."""
    if not all(_int_argument(v) for v in (*args, *kwargs.values())):
        return value
    return _restored(value)


def _restored(v):
    if isinstance(v, tuple):
        return tuple(_restored(e) for e in v)
    if isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer():
        return int(v)
    return v


def past_float(args, kwargs) -> bool:
    """Whether an integer argument (an int, an int array, a list of ints) holds a value of
    magnitude above 2**53: the compiled function computes such a function's ints as
    float64 beside its sentinels, which would round them (1780000999954223419 came back
    as 1780000999954223360), so :func:`restore` could not give Python's int back."""
    for v in (*args, *kwargs.values()):
        if isinstance(v, np.ndarray) and v.dtype.kind in "iu" and v.size:
            if int(v.max()) > EXACT or int(v.min()) < -EXACT:
                return True
        elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            if abs(int(v)) > EXACT:
                return True
        elif isinstance(v, list) and v and all(type(x) is int for x in v):
            if max(v) > EXACT or min(v) < -EXACT:
                return True
    return False
