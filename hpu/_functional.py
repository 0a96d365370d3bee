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


# --------------------------------------------------------------------------- allocation
#
# A function that allocates arrays (np.empty, np.zeros, ``a.copy()``, ...) in its body
# or its helpers, or returns them, is *functional*: its results are arrays.  The
# breadth-first driver's levels hold numbers per task, so these functions take another
# road, chosen at decoration: on the CPU the user's function and its helpers are
# compiled by Numba as written (Numba allocates, slices and returns arrays, and the
# root's array comes back as a NumPy array of the dtype Numba's typing gives), on one
# core -- the subtree solver of the design, applied to the whole tree.  Per-level
# allocation buffers (a prefix sum of each level's sizes, carved per allocation site)
# and a bounded per-task arena on the device are not built yet, so ``device="gpu"``
# and ``"hybrid"`` run these functions on the CPU too, with an HpuPerformanceWarning
# and the reason in ``run.fallbacks``: never a wrong answer, never a crash.

#: NumPy functions that make a new array, as ``np.NAME(...)``.
ALLOCATORS = frozenset({"empty", "zeros", "ones", "full", "empty_like", "zeros_like",
                        "ones_like", "full_like", "copy", "array", "concatenate", "arange"})

FALLBACK_REASON = ("{name} allocates or returns arrays (line {line}: {what}); such functions "
                   "run on the CPU (the function compiled by Numba): per-level allocation "
                   "buffers for the device are not built yet")


def _numpy_names(glb: dict) -> set[str]:
    return {k for k, v in glb.items() if v is np}


def _allocation_in(tree, glb) -> tuple[int, str] | None:
    nps = _numpy_names(glb)
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            f = n.func
            if isinstance(f.value, ast.Name) and f.value.id in nps and f.attr in ALLOCATORS:
                return n.lineno, ast.unparse(n)
            if f.attr == "copy" and not n.args and not n.keywords \
                    and not (isinstance(f.value, ast.Name) and f.value.id in nps):
                return n.lineno, ast.unparse(n)
    return None


def _tree_of(fn):
    import inspect
    import textwrap

    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    try:
        mod = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    ast.increment_lineno(mod, start - 1)
    node = mod.body[0] if mod.body else None
    return node if isinstance(node, (ast.FunctionDef,)) else None


def _helpers(tree, glb, seen) -> list:
    """Module-level Python functions ``tree`` calls by name (transitively)."""
    import types

    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            obj = glb.get(n.func.id)
            if isinstance(obj, types.FunctionType) and obj not in seen:
                seen.add(obj)
                out.append(obj)
    return out


def _array_return(tree) -> tuple[int, str] | None:
    """A return of an array parameter (or of a slice of one), alone or in a tuple."""
    arrays = array_names(tree)
    for r in ast.walk(tree):
        if isinstance(r, ast.Return) and r.value is not None:
            parts = r.value.elts if isinstance(r.value, ast.Tuple) else [r.value]
            for e in parts:
                if (isinstance(e, ast.Name) and e.id in arrays) or (
                        isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice)
                        and isinstance(e.value, ast.Name) and e.value.id in arrays):
                    return r.lineno, f"return {ast.unparse(r.value)}"
    return None


def find_allocation(fn) -> tuple[str, int, str] | None:
    """``(filename, line, construct)`` of the first array allocation in ``fn`` or the
    helpers it calls, or None: a function with one is run functionally (decided at
    decoration, not at the first call)."""
    import inspect

    seen = {fn}
    todo = [fn]
    while todo:
        f = todo.pop(0)
        tree = _tree_of(f)
        if tree is None:
            continue
        hit = _allocation_in(tree, f.__globals__)
        if hit is not None:
            return inspect.getsourcefile(f) or "<unknown>", hit[0], hit[1]
        todo.extend(_helpers(tree, f.__globals__, seen))
    return None


def check_shape(fn, where) -> None:
    """The divide-and-conquer shape of a functional function, refused at decoration:
    at least two calls of itself and a base case (a return without one)."""
    from hpu._errors import TranslationError

    tree = _tree_of(fn)
    filename, line = where
    if tree is None:
        raise TranslationError(f"the source of {fn.__name__!r} cannot be read",
                               filename=filename, lineno=line, construct="source",
                               hint="Define it in a .py file")
    name = tree.name
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == name]
    if len(calls) < 2:
        raise TranslationError(
            f"a function with {len(calls)} recursive call(s) is not supported: divide and "
            f"conquer splits a problem into a >= 2 subproblems", filename=filename,
            lineno=tree.lineno, construct="recursive calls",
            hint=f"call {name}(...) at least twice on the subproblems")
    returns = [r for r in ast.walk(tree) if isinstance(r, ast.Return)]
    if not any(r.value is None or not any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == name
            for c in ast.walk(r.value)) for r in returns):
        raise TranslationError(
            f"a function without a base case is not supported: every return of {name} "
            "calls it again", filename=filename, lineno=tree.lineno, construct="base case",
            hint="start with the base case, e.g. `if len(a) <= 1: return a.copy()`")
    for r in returns:
        if r.value is not None and isinstance(r.value, ast.Constant) and r.value.value is None:
            raise TranslationError(
                "`return None` as a \"no result\" sentinel is not supported: the result has "
                "one type", filename=filename, lineno=r.lineno, construct="return None",
                hint="return an empty array (np.empty(0, a.dtype)) or a sentinel number")


def compile_functional(fn, self_obj):
    """``fn`` and the helpers it calls compiled by Numba as written (recursion through
    ``self_obj``, the decorated object, resolves to the compiled function itself)."""
    import types

    import numba

    done: dict = {}

    def jit(f, is_main):
        if f in done:
            return done[f]
        glb = dict(f.__globals__)
        clone = types.FunctionType(f.__code__, glb, f.__name__, f.__defaults__, f.__closure__)
        disp = numba.njit(clone)
        done[f] = disp
        for n in f.__code__.co_names:
            obj = glb.get(n)
            if obj is self_obj or (is_main and obj is fn):
                glb[n] = disp if is_main else done[fn]
            elif isinstance(obj, types.FunctionType):
                glb[n] = jit(obj, False)
        return disp

    return jit(fn, True)


def convert_arguments(args, kwargs):
    return (tuple(list_to_array(a) for a in args),
            {k: list_to_array(v) for k, v in kwargs.items()})
