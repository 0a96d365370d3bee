"""Functional-style recursion: the Python values people write at the boundary.

Why its own module
==================

Most recursive divide and conquer published in Python is written functionally:
``float("-inf")`` as a sentinel, ``if not arr:`` for "empty", lists at the call.
These read the same on every device only if they mean one thing, decided when
the function is decorated, not when a device first meets them.  So, on the
stripped AST of the function and of each helper, before views and the subset
check (:func:`rewrite_values`):

* ``float("inf")``, ``float("-inf")``, ``float("nan")`` (any case, with or
  without a sign) become float constants, which the Numba code generator and
  the OpenCL translator already write as ``inf``/``INFINITY`` and ``nan``.
* the truth of an array (``if not arr``, ``if arr``, ``while arr``,
  ``bool(arr)``) becomes ``len(arr) == 0`` / ``len(arr) != 0``: the meaning it
  has for the list the user wrote it for.  (On a NumPy array Python itself
  raises "truth value ... ambiguous", and a device has no truth of an array at
  all.)  An *array* here is a parameter the function indexes, slices or
  measures with ``len``.

Lists at the call are converted in :mod:`hpu._decorator` (see
:func:`list_to_array`): once, with the dtype NumPy infers (``[1, 2]`` ->
``int64``, ``[1.0, 2]`` -> ``float64``, ``[True]`` -> ``bool``).
"""
from __future__ import annotations

import ast
import math

import numpy as np

__all__ = ["rewrite_values", "array_names", "list_to_array"]

_SPECIAL = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
            "+infinity": math.inf, "-infinity": -math.inf, "nan": math.nan, "+nan": math.nan,
            "-nan": math.nan}


def _special_float(node) -> float | None:
    """The value of ``float("inf")``-like calls, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "float" and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return _SPECIAL.get(node.args[0].value.strip().lower())
    return None


def array_names(tree: ast.FunctionDef) -> set[str]:
    """Parameters used as arrays: indexed, sliced or measured with ``len``."""
    params = {a.arg for a in tree.args.args}
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
            out.add(n.value.id)
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len"
              and len(n.args) == 1 and isinstance(n.args[0], ast.Name)):
            out.add(n.args[0].id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                and n.attr in ("size", "shape"):
            out.add(n.value.id)
    return out & params


def _len_compare(name_node: ast.Name, op) -> ast.Compare:
    call = ast.Call(func=ast.Name("len", ast.Load()), args=[ast.Name(name_node.id, ast.Load())],
                    keywords=[])
    return ast.Compare(left=call, ops=[op], comparators=[ast.Constant(0)])


class _Rewrite(ast.NodeTransformer):
    def __init__(self, arrays: set[str]):
        self.arrays = arrays

    def _is_array(self, node) -> bool:
        return isinstance(node, ast.Name) and node.id in self.arrays

    def _truth(self, test):
        """A test in a boolean position: an array name means 'not empty'."""
        if self._is_array(test):
            return ast.copy_location(_len_compare(test, ast.NotEq()), test)
        return test

    def visit_Call(self, node):
        v = _special_float(node)
        if v is not None:
            return ast.copy_location(ast.Constant(v), node)
        if (isinstance(node.func, ast.Name) and node.func.id == "bool" and len(node.args) == 1
                and not node.keywords and self._is_array(node.args[0])):
            return ast.copy_location(_len_compare(node.args[0], ast.NotEq()), node)
        return self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.Not) and self._is_array(node.operand):
            return ast.copy_location(_len_compare(node.operand, ast.Eq()), node)
        if isinstance(node.op, ast.USub):
            inner = _special_float(node.operand)
            if inner is not None:
                return ast.copy_location(ast.Constant(-inner), node)
        return self.generic_visit(node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        node.values = [self._truth(v) for v in node.values]
        return node

    def _test(self, node):
        self.generic_visit(node)
        node.test = self._truth(node.test)
        return node

    visit_If = visit_While = visit_IfExp = _test


def rewrite_values(tree: ast.FunctionDef) -> ast.FunctionDef:
    """Rewrite ``tree`` in place (see the module docstring); line numbers are kept."""
    _Rewrite(array_names(tree)).visit(tree)
    ast.fix_missing_locations(tree)
    return tree


def list_to_array(v):
    """A list (or tuple) of numbers as the NumPy array NumPy infers, else ``v`` unchanged."""
    if isinstance(v, (list, tuple)) and all(
            isinstance(e, (bool, int, float, np.bool_, np.integer, np.floating)) for e in v):
        arr = np.asarray(v) if v else np.empty(0, np.float64)
        if arr.ndim == 1 and arr.dtype.kind in "biuf":
            return arr
    return v
