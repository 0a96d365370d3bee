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
  measures with ``len``.  A call given a NumPy array runs the plain function
  instead (:func:`array_truths`): the list's meaning is not the array's.
* ``return (a, b) if c else (b, a)`` becomes ``if c: return (a, b)`` /
  ``else: return (b, a)``: a tuple is a result only in a ``return``.

Lists at the call are converted in :mod:`hpu._decorator` (see
:func:`list_to_array`): once, with the dtype NumPy infers (``[1, 2]`` ->
``int64``, ``[1.0, 2]`` -> ``float64``, ``[True]`` -> ``bool``) -- except where a
list means something an array would not: a function written for lists
(:func:`takes_lists`) gets them as lists, and a list the function *writes to*
runs the function as written on that list (``DivideAndConquer._run_as_written``:
a slice of a list is a copy, of an array a view).

The rest of the module is what runs a *functional* function -- one that allocates
arrays or builds lists: compiled by Numba as written (:func:`compile_functional`,
with a depth guard and Python's errors at the user's line, :func:`_clone`), on every
core (:class:`FanOut`), or,
where Numba cannot compile it, as the plain function (the decorator records why).
"""
from __future__ import annotations

import ast
import contextlib
import copy
import math

import numpy as np

__all__ = ["rewrite_values", "array_names", "list_to_array", "compile_functional", "FanOut",
           "Lazy", "fanout_levels", "call_shape", "on_big_stack", "big_stacks", "STACK_BYTES"]

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
    return used_as_arrays(tree) & {a.arg for a in tree.args.args}


def used_as_arrays(tree) -> set[str]:
    """Names used as arrays anywhere in ``tree``: indexed, sliced, measured (``len``,
    ``.size``, ``.shape``)."""
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
    return out


def _len_compare(name_node: ast.Name, op) -> ast.Compare:
    call = ast.Call(func=ast.Name("len", ast.Load()), args=[ast.Name(name_node.id, ast.Load())],
                    keywords=[])
    return ast.Compare(left=call, ops=[op], comparators=[ast.Constant(0)])


class _Rewrite(ast.NodeTransformer):
    def __init__(self, arrays: set[str], tree=None):
        self.arrays = arrays
        # the names the function binds itself (a local divmod is not the builtin)
        self.locals = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                       and isinstance(n.ctx, ast.Store)} | {a.arg for a in ast.walk(tree)
                                                            if isinstance(a, ast.arg)} \
            if tree is not None else set()
        self.truths: list[int] = []      # the lines where an array's truth is read

    def _emptiness(self, name_node, op) -> ast.Compare:
        """``len(name) <op> 0`` for the truth of an array, its line noted (array_truths)."""
        self.truths.append(name_node.lineno)
        return _len_compare(name_node, op)

    def _is_array(self, node) -> bool:
        return isinstance(node, ast.Name) and node.id in self.arrays

    def _truth(self, test):
        """A test in a boolean position: an array name means 'not empty'."""
        if self._is_array(test):
            return ast.copy_location(self._emptiness(test, ast.NotEq()), test)
        return test

    def visit_Call(self, node):
        v = _special_float(node)
        if v is not None:
            return ast.copy_location(ast.Constant(v), node)
        if (isinstance(node.func, ast.Name) and node.func.id in ("divmod", "pow")
                and len(node.args) == 2 and not node.keywords
                and node.func.id not in self.locals
                and not any(isinstance(n, ast.Call) for a in node.args for n in ast.walk(a))):
            # divmod(x, y) is (x // y, x % y) and pow(x, y) is x ** y, for ints and floats
            # alike (the same values, the same ZeroDivisionError); the operands are read
            # twice, so only where reading them has no effect (no call)
            self.generic_visit(node)
            x, y = node.args
            if node.func.id == "pow":
                return ast.copy_location(ast.BinOp(x, ast.Pow(), y), node)
            return ast.copy_location(ast.Tuple([ast.BinOp(x, ast.FloorDiv(), y),
                                                ast.BinOp(copy.deepcopy(x), ast.Mod(),
                                                          copy.deepcopy(y))], ast.Load()), node)
        if (isinstance(node.func, ast.Name) and node.func.id == "bool" and len(node.args) == 1
                and not node.keywords and self._is_array(node.args[0])):
            return ast.copy_location(self._emptiness(node.args[0], ast.NotEq()), node)
        return self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.Not) and self._is_array(node.operand):
            return ast.copy_location(self._emptiness(node.operand, ast.Eq()), node)
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

    def visit_Return(self, node):
        """``return (a, b) if c else (b, a)``: tuples exist only in a return, so the choice
        becomes ``if c: return (a, b)`` / ``else: return (b, a)``."""
        self.generic_visit(node)
        v = node.value
        if isinstance(v, ast.IfExp) and any(isinstance(e, (ast.Tuple, ast.IfExp))
                                            for e in (v.body, v.orelse)) and _tuples_in(v):
            branch = [self.visit_Return(ast.copy_location(ast.Return(value=e), e))
                      for e in (v.body, v.orelse)]
            return ast.copy_location(ast.If(test=v.test, body=[branch[0]], orelse=[branch[1]]),
                                     node)
        return node


def _tuples_in(e) -> bool:
    """Whether the chain of conditional expressions ``e`` chooses between tuples."""
    if isinstance(e, ast.IfExp):
        return _tuples_in(e.body) or _tuples_in(e.orelse)
    return isinstance(e, ast.Tuple)


def rewrite_values(tree: ast.FunctionDef) -> ast.FunctionDef:
    """Rewrite ``tree`` in place (see the module docstring); line numbers are kept."""
    _Rewrite(array_names(tree), tree).visit(tree)
    ast.fix_missing_locations(tree)
    return tree


#: what ``np.iinfo(T)`` and ``np.finfo(T)`` say that is a number
_INFO_FIELDS = frozenset({"max", "min", "bits", "eps", "tiny", "smallest_normal",
                          "resolution", "epsneg"})


def fold_module_constants(tree, glb: dict) -> None:
    """Module constants written by attribute become their values, in place, as a module
    constant by name is read (``LIMIT``): ``sys.maxsize`` (the sentinel ``-sys.maxsize - 1``
    for an empty range), any module's int or float attribute outside math and NumPy (those
    are the subset's own), and ``np.iinfo(np.int64).max``, ``np.finfo(np.float64).eps``
    (``np.iinfo(T)`` of a NumPy type or a dtype name; ``min``, ``max``, ``eps``, ...).  Each
    is a number for the life of the process; the breadth-first path and its kernels take
    numbers, not modules."""
    import builtins
    import types

    def module(e):
        if isinstance(e, ast.Name):
            v = glb.get(e.id, getattr(builtins, e.id, None))
            return v if isinstance(v, types.ModuleType) else None
        return None

    def numpy_type(e):
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            return e.value
        if isinstance(e, ast.Attribute) and module(e.value) is np:
            v = getattr(np, e.attr, None)
            return v if isinstance(v, type) and issubclass(v, np.generic) else None
        if isinstance(e, ast.Name):
            v = glb.get(e.id)
            return v if isinstance(v, type) and issubclass(v, np.generic) else None
        return None

    class _Fold(ast.NodeTransformer):
        def visit_Attribute(self, node):
            if not isinstance(node.ctx, ast.Load):
                return self.generic_visit(node)
            mod = module(node.value)
            if mod is not None and mod is not math and mod is not np:
                v = getattr(mod, node.attr, None)
                if type(v) in (int, float):
                    return ast.copy_location(ast.Constant(v), node)
            c = node.value
            if (node.attr in _INFO_FIELDS and isinstance(c, ast.Call)
                    and isinstance(c.func, ast.Attribute) and module(c.func.value) is np
                    and c.func.attr in ("iinfo", "finfo") and len(c.args) == 1
                    and not c.keywords and numpy_type(c.args[0]) is not None):
                try:
                    v = getattr(getattr(np, c.func.attr)(numpy_type(c.args[0])), node.attr)
                except (TypeError, ValueError, AttributeError):
                    return self.generic_visit(node)
                v = v.item() if isinstance(v, np.generic) else v
                if type(v) in (int, float):
                    return ast.copy_location(ast.Constant(v), node)
            return self.generic_visit(node)

    _Fold().visit(tree)
    ast.fix_missing_locations(tree)


#: ``math`` functions Python computes in double precision whatever its argument: Numba
#: (and OpenCL C) pick a float32 version for a float32 argument (``sqrtf``)
_MATH_IN_DOUBLE = frozenset({
    "sqrt", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
    "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "hypot", "pow", "erf", "erfc", "gamma", "lgamma", "cbrt", "fmod", "degrees", "radians"})


def math_in_double(tree, glb: dict) -> None:
    """``math.sqrt(x)`` becomes ``math.sqrt(x * 1.0)``, in place, for the functions of
    :data:`_MATH_IN_DOUBLE`: Python's ``math`` converts its argument to a double first, so a
    float32 element's square root is the double one (``1.643167687025191`` for
    ``np.float32(2.7)``), where Numba took ``sqrtf``'s (``1.6431677341461182``).  ``* 1.0``
    is that conversion in Numba's types (``float(x)`` of a float32 stays a float32 there)
    and changes no value: not -0.0, NaN or an infinity; an int becomes the float Python's
    ``math`` makes of it."""
    names = {k for k, v in glb.items() if v is math}
    direct = {k: v.__name__ for k, v in glb.items()
              if callable(v) and getattr(v, "__module__", None) == "math"
              and getattr(v, "__name__", None) in _MATH_IN_DOUBLE}

    def wrap(a):
        if isinstance(a, ast.Starred) or (isinstance(a, ast.Constant)
                                          and isinstance(a.value, (int, float))):
            return a
        return ast.copy_location(ast.BinOp(a, ast.Mult(), ast.Constant(1.0)), a)

    for n in ast.walk(tree):
        if not isinstance(n, ast.Call) or n.keywords:
            continue
        f = n.func
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id in names and f.attr in _MATH_IN_DOUBLE) or (
                isinstance(f, ast.Name) and f.id in direct):
            n.args = [wrap(a) for a in n.args]
    ast.fix_missing_locations(tree)


def pow_as_operator(tree, glb: dict) -> None:
    """The builtin ``pow(x, y)`` (two arguments) becomes ``x ** y``, in place: the same
    operation in Python, where hpu's checks and rules of ``**`` apply to it on every path
    (an int to a negative power is Python's float or ValueError, past int64 Python's int)
    -- compiled as a call, it was Numba's integer power (``pow(2, -1)`` gave 1)."""
    import builtins

    if glb.get("pow", builtins.pow) is not builtins.pow:
        return                          # a module's own pow
    for n in ast.walk(tree):
        for field, value in ast.iter_fields(n):
            items = value if isinstance(value, list) else [value]
            for k, c in enumerate(items):
                if (isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                        and c.func.id == "pow" and len(c.args) == 2 and not c.keywords
                        and not any(isinstance(a, ast.Starred) for a in c.args)):
                    op = ast.copy_location(ast.BinOp(c.args[0], ast.Pow(), c.args[1]), c)
                    if isinstance(value, list):
                        value[k] = op
                    else:
                        setattr(n, field, op)
    ast.fix_missing_locations(tree)


class _CallsRewritten(ast.NodeTransformer):
    """Each call ``c`` for which ``rewrite(c)`` gives a node is replaced by it (inner calls
    first)."""

    def __init__(self, rewrite):
        self.rewrite = rewrite

    def visit_Call(self, node):
        self.generic_visit(node)
        return self.rewrite(node) or node


def _locals(tree) -> set[str]:
    from hpu._frontend import _function_locals

    return _function_locals(tree)


def digits_counted(tree, glb: dict) -> None:
    """``len(str(x))`` -- the digit count textbook Karatsuba takes of its integers --
    becomes ``hpu__ndigits(x)`` (:func:`hpu._guard.ndigits`), in place: the numbers-only
    subset has no strings, and the count needs none.  Integers only, decided where the
    types are known: compiled for Numba's integer types, a counting loop on the OpenCL
    device; any other ``x`` runs the plain function (Python's ``str``).  Where ``len`` or
    ``str`` is the module's own, nothing changes (and ``str`` stays refused)."""
    import builtins

    from hpu._guard import DIGITS

    if glb.get("len", builtins.len) is not builtins.len or \
            glb.get("str", builtins.str) is not builtins.str or {"len", "str"} & _locals(tree):
        return

    def plain_call(c, name) -> bool:
        return (isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == name
                and len(c.args) == 1 and not c.keywords
                and not isinstance(c.args[0], ast.Starred))

    def counted(c):
        if plain_call(c, "len") and plain_call(c.args[0], "str"):
            return ast.copy_location(ast.Call(ast.Name(DIGITS, ast.Load()),
                                              [c.args[0].args[0]], []), c)
        return None

    _CallsRewritten(counted).visit(tree)
    ast.fix_missing_locations(tree)


#: the most parts :func:`array_splits_as_slices` writes out (a wider split is a loop)
SPLIT_PARTS = 16


def array_splits_as_slices(tree, glb: dict) -> None:
    """``np.array_split(a, k)`` of a name and a literal ``k`` becomes the tuple of ``k``
    slices NumPy's parts are, in place: part ``i`` starts at ``i * (n // k) + min(i, n %
    k)`` (the first ``n % k`` parts one longer), ``n = len(a)``.  NumPy's parts are views
    of ``a`` -- exactly these slices -- and slices are what the recursion's subproblems
    are made of, so ``l, r = np.array_split(a, 2)`` and ``for part in np.array_split(a,
    4):`` (a loop hpu then writes out, one copy per part) split as ``a[:m], a[m:]`` does."""
    mods = {k for k, v in glb.items() if v is np} - _locals(tree)
    if not mods:
        return

    def parts(c):
        if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                and c.func.attr == "array_split" and isinstance(c.func.value, ast.Name)
                and c.func.value.id in mods and len(c.args) == 2 and not c.keywords
                and isinstance(c.args[0], ast.Name)
                and isinstance(c.args[1], ast.Constant) and type(c.args[1].value) is int
                and 1 <= c.args[1].value <= SPLIT_PARTS):
            return None
        a, k = c.args[0].id, c.args[1].value

        def start(i):
            if i in (0, k):
                return ""                     # the first part's start, the last's end
            return f"{i} * (len({a}) // {k}) + min({i}, len({a}) % {k})"

        text = "(" + ", ".join(f"{a}[{start(i)}:{start(i + 1)}]"
                               for i in range(k)) + ("," if k == 1 else "") + ")"
        out = ast.parse(text, mode="eval").body
        for n in ast.walk(out):
            ast.copy_location(n, c)
        for i, part in enumerate(out.elts):     # messages quote the part as written
            part.hpu_text = f"{ast.unparse(c)}[{i}]"
        return out

    def unpacked(st):
        """``l, r = np.array_split(a, 2)``: ``l = a[:...]``, ``r = a[...:]`` (a view bound
        to a name each; ``a`` itself, if a target, bound last, after every part is read)."""
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], (ast.Tuple, ast.List))
                and all(isinstance(t, ast.Name) for t in st.targets[0].elts)):
            return None
        new = parts(st.value)
        if new is None or len(new.elts) != len(st.targets[0].elts):
            return None
        src = st.value.args[0].id
        pairs = sorted(zip(st.targets[0].elts, new.elts), key=lambda p: p[0].id == src)
        if len({t.id for t, _ in pairs}) != len(pairs):
            return None
        return [ast.copy_location(ast.Assign([ast.Name(t.id, ast.Store())], v), st)
                for t, v in pairs]

    for n in ast.walk(tree):
        for field, value in ast.iter_fields(n):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                value[:] = [out for st in value for out in (unpacked(st) or [st])]
    _CallsRewritten(parts).visit(tree)
    ast.fix_missing_locations(tree)


def array_truths(fn) -> list[tuple[str, int]]:
    """``(file, line)`` of each place the function or a helper reads the truth of an array
    parameter (``if not arr``, ``while left and right``, ``bool(a)``): the emptiness a
    list's truth is, which :func:`rewrite_values` writes -- and which a NumPy array does
    not have (Python raises "truth value ... ambiguous" for any length but 1, and reads
    the one element's truth for 1), so a call given an array runs the plain function."""
    out = []
    for f, tree in _trees(fn):
        r = _Rewrite(array_names(tree), tree)
        r.visit(copy.deepcopy(tree))
        filename = getattr(getattr(f, "__code__", None), "co_filename", "?")
        out += [(filename, line) for line in r.truths]
    return out


def _emptiness_tested(test):
    """The name ``test`` says is empty (``not p``, ``len(p) == 0``, ``len(p) < 1``,
    ``0 == len(p)``), else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) \
            and isinstance(test.operand, ast.Name):
        return test.operand.id
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
            op = {ast.Eq: ast.Eq(), ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}.get(type(op), op)
        if (isinstance(left, ast.Call) and isinstance(left.func, ast.Name)
                and left.func.id == "len" and len(left.args) == 1
                and isinstance(left.args[0], ast.Name) and isinstance(right, ast.Constant)
                and ((isinstance(op, ast.Eq) and right.value == 0)
                     or (isinstance(op, ast.Lt) and right.value == 1)
                     or (isinstance(op, ast.LtE) and right.value == 0))):
            return left.args[0].id
    return None


def _empty_lists_typed(tree) -> int:
    """``if not arr: return []`` in a function written for lists (:func:`takes_lists`: its
    list arguments stay lists), for Numba: ``[]`` alone has no element type (Numba refuses
    to compile the function, which then ran as plain Python), but ``arr`` is empty there,
    so ``arr[:0]`` -- a new empty list of ``arr``'s type -- is the same value, and its type
    is the one the other returns have when the function sorts or filters ``arr``.  (Where
    they do not, Numba still cannot type it and the plain function runs, as before.)"""
    params = {a.arg for a in tree.args.args}
    empties = []

    def visit(stmts):
        for st in stmts:
            if isinstance(st, ast.If):
                p = _emptiness_tested(st.test)
                if p in params:
                    for r in st.body:
                        if (isinstance(r, ast.Return) and isinstance(r.value, ast.List)
                                and not r.value.elts):
                            empties.append((r, p))
                visit(st.body)
                visit(st.orelse)

    visit(tree.body)
    for r, p in empties:
        r.value = ast.copy_location(ast.Subscript(
            ast.Name(p, ast.Load()), ast.Slice(None, ast.Constant(0), None), ast.Load()),
            r.value)
    return len(empties)


def list_to_array(v):
    """A list (or tuple) of numbers as the NumPy array NumPy infers, else ``v`` unchanged."""
    if isinstance(v, (list, tuple)) and all(
            isinstance(e, (bool, int, float, np.bool_, np.integer, np.floating)) for e in v):
        arr = np.asarray(v) if v else np.empty(0, np.float64)
        if arr.ndim == 1 and arr.dtype.kind in "biuf":
            return arr
    return v


def unfit_list(v) -> str | None:
    """Why the list (or tuple) ``v`` cannot be given to compiled code as an array holding
    its values exactly, in words, else None: bools (hpu's arrays hold numbers), or ints
    that no 64-bit integer array holds (NumPy makes ``[2**63, 1]`` float64, rounded, and
    ``[2**64 + 5]`` an object array)."""
    if not isinstance(v, (list, tuple)) or not v:
        return None
    arr = list_to_array(v)
    what = f"a {type(v).__name__} of {len(v)} items"
    if not isinstance(arr, np.ndarray):
        return f"{what} that no NumPy number array holds (ints beyond 64 bits, or not numbers)"
    if arr.dtype.kind == "b":
        return f"{what} of bools"
    if beyond_int64(v):
        return f"{what} holding ints beyond int64, which no int64 holds"
    return None


# --------------------------------------------------------------------------- allocation
#
# A function that allocates arrays (np.empty, np.zeros, ``a.copy()``, ...) in its body
# or its helpers, or returns them, is *functional*: its results are arrays.  The
# breadth-first driver's levels hold numbers per task, so these functions take another
# road, chosen at decoration: on the CPU the user's function and its helpers are
# compiled by Numba as written (Numba allocates, slices and returns arrays, and the
# root's array comes back as a NumPy array of the dtype Numba's typing gives) -- the
# subtree solver of the design, run on every core below the top levels (:class:`FanOut`,
# "every core" below).  On ``device="gpu"`` and ``"hybrid"``, a function whose results
# are as long as its slices (a functional sort, a sort that counts) runs in an in-place
# form that writes them into one buffer (:mod:`hpu._functional_dps`), breadth-first on
# the CPU and the device.  Per-level allocation buffers for other allocations (a prefix
# sum of each level's sizes, carved per allocation site) and a bounded per-task arena are
# not built, so other functions run on the CPU there too, with an HpuPerformanceWarning
# and the reason in ``run.fallbacks``: never a wrong answer, never a crash.

#
# Lists.  ``[x for x in arr if x < pivot]``, ``result = []`` with ``append``, ``list(...)``
# make a function functional as NumPy allocations do: Numba compiles them as written
# (lists of one item type).  A function that builds lists and makes no NumPy array
# (:func:`takes_lists`) gets the caller's lists as lists (Numba reflects them) and
# returns lists, as plain Python does: the textbook quicksort on a list of 10**6 ints took
# 1.565 s, against 4.431 s as plain Python (bench/bench_lists.py).  Numba types a list by its first item, so a
# list of several number types is converted as NumPy infers (``[1, 2.5]`` -> ``[1.0,
# 2.5]``), and a list it cannot type at all (empty, nested, not numbers) makes hpu call
# the plain function (:data:`UNTYPED`; recorded in ``run.reason``, and, unless the list is
# empty -- a base case -- in ``run.fallbacks`` with a warning).

#: NumPy functions that make a new array, as ``np.NAME(...)``.
ALLOCATORS = frozenset({"empty", "zeros", "ones", "full", "empty_like", "zeros_like",
                        "ones_like", "full_like", "copy", "array", "concatenate", "arange",
                        "sort", "argsort", "cumsum", "cumprod", "diff", "unique", "append",
                        "repeat", "linspace", "hstack"})

FALLBACK_REASON = ("{name} {does} (line {line}: {what}), and its "
                   "device form (guide §10) does not apply: {why}; it runs on the CPU (the "
                   "function compiled by Numba)")


def _numpy_names(glb: dict) -> set[str]:
    return {k for k, v in glb.items() if v is np}


def _list_made(n) -> bool:
    """A new Python list: a comprehension, a list display read as a value (``[]``,
    ``[pivot]``; not an unpacking target), ``list(...)``, or a ``return sorted(...)`` (a
    hybrid sort's base case, ``if len(xs) <= 16: return sorted(xs)``; a ``sorted`` whose
    list is only measured or indexed stays the subset's refusal, with its loop)."""
    return (isinstance(n, ast.ListComp)
            or (isinstance(n, ast.List) and isinstance(n.ctx, ast.Load))
            or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                and n.func.id == "list")
            or (isinstance(n, ast.Return) and isinstance(n.value, ast.Call)
                and isinstance(n.value.func, ast.Name) and n.value.func.id == "sorted"))


def _numpy_allocation(n, nps: set[str]) -> bool:
    """``np.NAME(...)`` making a new array, ``nps`` the names NumPy has in the module."""
    f = getattr(n, "func", None)
    return (isinstance(n, ast.Call) and isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name) and f.value.id in nps and f.attr in ALLOCATORS)


def _loop_literals(tree) -> set[int]:
    """``id``s of the list displays a ``for`` loops over (``for l, h in [(lo, m), (m, hi)]``):
    written-out values, unrolled (:func:`hpu._normalise.unroll_literal_loops`), no list."""
    return {id(n.iter) for n in ast.walk(tree)
            if isinstance(n, ast.For) and isinstance(n.iter, ast.List)}


def _allocation_in(tree, glb) -> tuple[int, str] | None:
    nps = _numpy_names(glb)
    loops = _loop_literals(tree)
    for n in ast.walk(tree):
        if (_list_made(n) and id(n) not in loops) or _numpy_allocation(n, nps):
            return n.lineno, ast.unparse(n)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            f = n.func
            if f.attr == "copy" and not n.args and not n.keywords \
                    and not (isinstance(f.value, ast.Name) and f.value.id in nps):
                return n.lineno, ast.unparse(n)
    return None


#: NumPy functions joining a sequence of arrays, which Numba takes as a tuple
_JOINERS = frozenset({"concatenate", "hstack", "vstack", "stack", "column_stack", "dstack"})


def _joins_as_tuples(tree, numpy_names) -> None:
    """``np.concatenate([x, y])`` as users write it becomes ``np.concatenate((x, y))``, in
    place: Numba takes the arrays to join as a tuple, and types no list of arrays.  The same
    arrays in the same order: the same result.  Only a list display (no ``*rest``) given to
    NumPy's own joining functions (``np``, however the module names NumPy)."""
    for n in ast.walk(tree):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in _JOINERS and isinstance(n.func.value, ast.Name)
                and n.func.value.id in numpy_names and n.args
                and isinstance(n.args[0], ast.List)
                and not any(isinstance(e, ast.Starred) for e in n.args[0].elts)):
            elts = n.args[0]
            n.args[0] = ast.copy_location(ast.Tuple(elts.elts, ast.Load()), elts)


def _tree_of(fn):
    import inspect
    import textwrap

    given = getattr(fn, "__hpu_tree__", None)    # hpu's own rewrite (hpu._functional_dps)
    if given is not None:
        return copy.deepcopy(given[0])
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
    if not isinstance(node, ast.FunctionDef):
        return None
    # the children's calls written out, as hpu._frontend._source_of reads them
    from hpu._normalise import children_written_out

    children_written_out(node, getattr(fn, "__globals__", {}))
    return node


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


def _trees(fn):
    """``(function, its syntax tree)`` for ``fn`` and each module-level helper it calls,
    transitively, in breadth-first order (functions without source are skipped)."""
    seen = {fn}
    todo = [fn]
    while todo:
        f = todo.pop(0)
        tree = _tree_of(f)
        if tree is None:
            continue
        yield f, tree
        todo.extend(_helpers(tree, f.__globals__, seen))


_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "sort", "reverse",
                       "clear"})


def _aliases_of(names: set, tree) -> set:
    """``names`` and every name bound to one of them or to a view of one (``a = arr``,
    ``v = arr[lo:hi]``, ``b, c = a, x``), transitively: a write through such a name is a
    write into the argument (the fan-out must then wait for the children before it)."""
    out = set(names)

    def view_of(v) -> bool:
        while isinstance(v, ast.Subscript) and (isinstance(v.slice, ast.Slice) or (
                isinstance(v.slice, ast.Tuple)
                and any(isinstance(e, ast.Slice) for e in v.slice.elts))):
            v = v.value
        while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) \
                and v.func.attr in ("view", "reshape", "ravel"):
            v = v.func.value
        if isinstance(v, ast.Attribute) and v.attr == "T":
            v = v.value
        return isinstance(v, ast.Name) and v.id in out

    pairs = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(t, ast.Name):
                    pairs.append((t.id, n.value))
                elif (isinstance(t, (ast.Tuple, ast.List)) and isinstance(n.value, ast.Tuple)
                      and len(t.elts) == len(n.value.elts)):
                    pairs += [(x.id, v) for x, v in zip(t.elts, n.value.elts)
                              if isinstance(x, ast.Name)]
        elif isinstance(n, ast.NamedExpr):
            pairs.append((n.target.id, n.value))
    grew = True
    while grew:
        grew = False
        for name, value in pairs:
            if name not in out and view_of(value):
                out.add(name)
                grew = True
    return out


def writes_its_arguments(fn) -> int | None:
    """The line where ``fn`` or a helper it calls writes into one of its own parameters
    (``arr[lo:hi] = ...``, ``arr[i] += 1``, ``arr.append(x)``, ``del arr[i]``), else None."""
    for _, tree in _trees(fn):
        params = _aliases_of({a.arg for a in tree.args.args}, tree)
        for n in ast.walk(tree):
            targets = []
            if isinstance(n, ast.Assign):
                targets = n.targets
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                targets = [n.target]
            elif isinstance(n, ast.Delete):
                targets = n.targets
            elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr in _MUTATORS and isinstance(n.func.value, ast.Name)
                  and n.func.value.id in params):
                return n.lineno
            for t in targets:
                for e in ast.walk(t):
                    if (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name)
                            and e.value.id in params):
                        return n.lineno
    return None


def find_allocation(fn) -> tuple[str, int, str] | None:
    """``(filename, line, construct)`` of the first array allocation in ``fn`` or the
    helpers it calls, or None: a function with one is run functionally (decided at
    decoration, not at the first call)."""
    import inspect

    for f, tree in _trees(fn):
        hit = _allocation_in(tree, f.__globals__)
        if hit is not None:
            return inspect.getsourcefile(f) or "<unknown>", hit[0], hit[1]
    # no allocation, but pieces of its argument joined by `+` (a list reversal whose base
    # case returns `a` or `a[:]`): a function of sequences, run as written (functionally)
    tree = _tree_of(fn)
    if tree is not None and _joins_pieces(tree):
        r = next(r for r in ast.walk(tree) if isinstance(r, ast.Return) and r.value
                 and _piece_of(r.value, _sequence_params(tree)))
        return inspect.getsourcefile(fn) or "<unknown>", r.lineno, ast.unparse(r.value)
    # no allocation, but a slice with a step (``fft(x[0::2])``, ``s(a[::2]) + s(a[1::2])``):
    # NumPy's strided view, which Numba compiles as written; hpu's own views (hpu._views)
    # are contiguous, so the function runs compiled as written, on the CPU
    for f, tree in _trees(fn):
        step = _stepped_slice(tree)
        if step is not None:
            return inspect.getsourcefile(f) or "<unknown>", step.lineno, ast.unparse(step)
    return None


def _stepped_slice(tree):
    """The first ``x[i:j:k]`` with a step in ``tree`` (read, not assigned), else None."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice) \
                and n.slice.step is not None and isinstance(n.ctx, ast.Load) \
                and not (isinstance(n.slice.step, ast.Constant) and n.slice.step.value == 1):
            return n
    return None


def is_stepped_slice(what: str) -> bool:
    """Whether a construct :func:`find_allocation` gave is a slice with a step."""
    try:
        node = ast.parse(what, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) \
        and node.slice.step is not None and not (
            isinstance(node.slice.step, ast.Constant) and node.slice.step.value == 1)


def takes_lists(fn) -> bool:
    """Whether lists at the call stay lists: ``fn`` (or a helper) builds Python lists and
    makes no NumPy array (``np.empty``, ...).  Such a function is written for lists, as
    the textbook quicksort ``qsort(left) + middle + qsort(right)`` is: converted to an
    array its base case (``return arr``) and its lists would not even have one type.
    One that makes NumPy arrays gets arrays (:func:`list_to_array`), as before.  (Lists
    at the call stay lists also where :func:`joins_pieces`.)"""
    lists = False
    for f, tree in _trees(fn):
        nps = _numpy_names(f.__globals__)
        loops = _loop_literals(tree)
        for n in ast.walk(tree):
            if _numpy_allocation(n, nps):
                return False
            lists = lists or (_list_made(n) and id(n) not in loops)
    return lists


def joins_pieces(fn) -> bool:
    """Whether lists at the call stay lists because ``fn`` joins its results with ``+`` or
    ``*`` where they are pieces of its argument (``return rev(a[m:]) + rev(a[:m])``, base
    case ``return a.copy()``): on a list that is concatenation, on an array addition --
    converted, the answer would change (:func:`_joins_pieces`).  An array at the call stays
    an array, and adds, as NumPy does.  Not where it (or a helper) makes NumPy arrays: such a
    function is written for arrays, and gets them (:func:`takes_lists`)."""
    tree = _tree_of(fn)
    if tree is None or not _joins_pieces(tree):
        return False
    return not any(_numpy_allocation(n, _numpy_names(f.__globals__))
                   for f, t in _trees(fn) for n in ast.walk(t))


def _sequence_params(tree) -> set:
    """The parameters the function slices (``a[i:j]``) or measures (``len(a)``): sequences,
    where another parameter (``fib(n)``'s ``n``) may be a number."""
    params = {a.arg for a in tree.args.args}
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice) \
                and isinstance(n.value, ast.Name) and n.value.id in params:
            out.add(n.value.id)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" \
                and len(n.args) == 1 and isinstance(n.args[0], ast.Name) \
                and n.args[0].id in params:
            out.add(n.args[0].id)
    return out


def _piece_of(e, params) -> bool:
    """``e`` is a parameter or a piece of one: ``a``, ``a.copy()``, ``a[i:j]``, ``list(a)``."""
    if isinstance(e, ast.Name):
        return e.id in params
    if isinstance(e, ast.Subscript):
        return isinstance(e.slice, ast.Slice) and _piece_of(e.value, params)
    if isinstance(e, ast.Call):
        f = e.func
        if isinstance(f, ast.Attribute) and f.attr == "copy" and not e.args:
            return _piece_of(f.value, params)
        if isinstance(f, ast.Name) and f.id == "list" and len(e.args) == 1:
            return _piece_of(e.args[0], params)
    return False


def _joins_pieces(tree) -> bool:
    """Whether the function returns pieces of a parameter (``a``, ``a.copy()``, ``a[:]``,
    ``a[i:j]``, ``list(a)``, ``a[::-1]``) and applies ``+`` or ``*`` to its own results
    (a call of itself, or a name assigned one) or to such pieces: list concatenation and
    repetition, which an array would turn into arithmetic."""
    name = tree.name
    params = _sequence_params(tree)
    if not params:
        return False

    def piece(e) -> bool:
        return _piece_of(e, params)

    returns = [r.value for r in ast.walk(tree) if isinstance(r, ast.Return) and r.value]
    if not any(piece(v) for v in returns):
        return False
    results = {t.id for st in ast.walk(tree) if isinstance(st, ast.Assign)
               and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name)
               and st.value.func.id == name for t in st.targets if isinstance(t, ast.Name)}

    def result(e) -> bool:
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == name:
            return True
        if isinstance(e, ast.Name):
            return e.id in results
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Mult)):
            return result(e.left) or result(e.right)
        return piece(e)

    for n in ast.walk(tree):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Mult)) \
                and (result(n.left) or result(n.right)):
            return True
        if isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Add, ast.Mult)) \
                and isinstance(n.target, ast.Name) and n.target.id in results:
            return True
    return False


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
    in_loops = [c for loop in ast.walk(tree) if isinstance(loop, _LOOPS)
                for c in ast.walk(loop) if c in calls]
    if len(calls) + len(in_loops) < 2:     # a call in a loop: a call per child
        raise TranslationError(
            f"a function with {len(calls)} recursive call(s) is not supported: divide and "
            f"conquer splits a problem into a >= 2 subproblems", filename=filename,
            lineno=tree.lineno, construct="recursive calls",
            hint=f"call {name}(...) at least twice on the subproblems")
    returns = [r for r in ast.walk(tree) if isinstance(r, ast.Return)]

    def base_case(e) -> bool:       # ``return arr if len(arr) <= 1 else qs(...) + ...``
        if isinstance(e, ast.IfExp):
            return base_case(e.body) or base_case(e.orelse)
        if isinstance(e, ast.BoolOp):   # ``return arr and qs(...) + ...``: any operand
            return any(base_case(v) for v in e.values)
        return not any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                       and c.func.id == name for c in ast.walk(e))

    if not any(r.value is None or base_case(r.value)
               for r in returns) and not _ends_without_recursing(
                tree.body, name):
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


def _ends_without_recursing(stmts, name) -> bool:
    """Whether a path through ``stmts`` reaches their end without calling ``name``: the
    implicit ``return`` of ``if len(a) > 1: <split, recurse, merge>`` is a base case."""
    from hpu._normalise import _has_rec

    for s in stmts:
        if isinstance(s, (ast.Return, ast.Raise)):
            return False            # that path ends here (a return is checked on its own)
        if not _has_rec(s, name):
            continue
        if isinstance(s, ast.If) and not _has_rec(s.test, name) and (
                _ends_without_recursing(s.body, name) or _ends_without_recursing(s.orelse, name)):
            continue
        if isinstance(s, (ast.For, ast.While)) and not _has_rec(
                s.iter if isinstance(s, ast.For) else s.test, name):
            continue                # a loop may run no time
        return False
    return True


def _is_self(obj, fn, self_obj) -> bool:
    """Whether the global ``obj`` is the recursion: the decorated object, the original
    function, or another decoration of it (``hpu.divide_and_conquer(f.py_func)``)."""
    return obj is self_obj or obj is fn or getattr(obj, "py_func", None) is fn


#: the hidden last parameter of the guarded copy (:func:`_clone`)
DEPTH_PARAM = "hpu__depth"


def _clone(f, glb, is_main: bool, checker=None):
    """``f`` as Numba should compile it, from its source, in ``glb`` (a copy of its module's
    globals), or None when its source cannot be rewritten (no source, a closure, ``*args``,
    keyword-only or positional-only parameters): then ``f`` is compiled as it is.

    ``is_main`` (the recursive function): its self-calls pass their depth in a hidden last
    parameter, and it raises :class:`hpu.HpuRecursionError` (a ``RecursionError``) at
    :data:`hpu._guard.NATIVE_DEPTH` calls, naming the user's file, line and recursive calls.
    Compiled recursion has no interpreter to stop it: a runaway (a call that never shrinks
    its problem) overflowed the thread's stack and killed the process.

    ``checker`` (a :class:`hpu._codegen._Checked`): the user's ``//``, ``%``, ``int()``,
    ``round()``, stores into arrays (and, bounds-checked, indices) raise as Python does,
    naming the file, the line and the expression -- as on the breadth-first path.  Numba's
    own messages name neither, and it converts a NaN to an int silently."""
    import inspect

    from hpu._comprehensions import comprehensions_as_loops
    from hpu._errors import HpuRecursionError
    from hpu._list_kinds import lists_keep_kinds
    from hpu._unbound import guard_unbound
    from hpu._guard import DIGITS, NATIVE_DEPTH, max_depth, ndigits

    tree = _tree_of(f)
    a = tree.args if tree is not None else None
    if (tree is None or f.__closure__ or a.vararg or a.kwarg or a.kwonlyargs
            or a.posonlyargs or DEPTH_PARAM in f.__code__.co_varnames):
        return None
    name = tree.name
    filename = inspect.getsourcefile(f) or f.__code__.co_filename
    tree.decorator_list = []
    lists_keep_kinds(tree, glb)         # [0] * n holds floats stored into it (_list_kinds)
    comprehensions_as_loops(tree)       # before Numba sees them: see hpu._comprehensions
    _joins_as_tuples(tree, _numpy_names(f.__globals__))
    math_in_double(tree, f.__globals__)
    pow_as_operator(tree, f.__globals__)
    digits_counted(tree, f.__globals__)  # len(str(x)): Numba's str(-2**63) failed
    glb[DIGITS] = ndigits
    guard_unbound(tree)                 # a local read unassigned raises (hpu._unbound)
    if getattr(checker, "lists", False):  # `if not arr: return []`: a list Numba can type
        _empty_lists_typed(tree)
    if checker is not None:
        checker.filename = filename
        checker.context = "" if is_main else f"in {name}(): "
        checker.stores = {t.value.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
                          for t in n.targets
                          if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)}
        tree.body = [checker.visit(s) for s in tree.body]
    defaults = f.__defaults__ or ()
    if is_main:
        calls = sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Name) and n.func.id == name})
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name:
                n.keywords.append(ast.keyword(DEPTH_PARAM, ast.BinOp(
                    ast.Name(DEPTH_PARAM, ast.Load()), ast.Add(), ast.Constant(1))))
        a.args.append(ast.arg(DEPTH_PARAM))
        a.defaults.append(ast.Constant(0))
        limit = min(NATIVE_DEPTH, max_depth())
        lines = ", ".join(map(str, calls))
        msg = (f"{filename}:{tree.lineno}: {name}() recursed {limit} calls deep (its recursive "
               f"calls at line{'s' if len(calls) > 1 else ''} {lines}): either the base case is "
               "never reached for these arguments (a call that does not shrink its problem), "
               f"or the recursion is legitimately this deep; hpu stops compiled recursion at "
               f"{limit} calls so that the thread's stack cannot overflow")
        check = ast.parse(f"if {DEPTH_PARAM} >= {limit}:\n    raise hpu__RecursionError({msg!r})"
                          ).body[0]
        tree.body.insert(0, check)
        for n in ast.walk(check):
            ast.copy_location(n, tree)
        glb["hpu__RecursionError"] = HpuRecursionError
        defaults = defaults + (0,)
    ast.fix_missing_locations(tree)
    space: dict = {}
    exec(compile(ast.Module([tree], []), filename, "exec"), glb, space)  # noqa: S102
    clone = space[name]
    clone.__defaults__ = defaults or None
    return clone


#: the clones' global array of site numbers: ``hpu__SITE_IDS[k]`` is k, typed int64 -- a
#: constant k would be a literal, and every check compiled once per call site
_SITE_IDS = "hpu__SITE_IDS"


def _sited():
    """:class:`hpu._codegen._Checked` whose checks name their site ``hpu__SITE_IDS[k]``, k a
    number of :data:`hpu._checked_ops.SITES` (made here: hpu._codegen imports this module)."""
    from hpu._checked_ops import add_site
    from hpu._codegen import _Checked
    from hpu._views import _PURE_CALLS, _int_const

    class _Sited(_Checked):
        def __init__(self, *args, lists: bool = False, numpy_names=frozenset(), **kwargs):
            super().__init__(*args, **kwargs)
            self.lists = lists          # a function of lists: their indices checked
            self.numpy_names = numpy_names   # the names the module binds to numpy

        def _numpy_reduction(self, node):
            """``np.sum(x)``, ``x.sum()``, ``np.mean(x)``, ``x.mean()`` -> ``hpu__npsum(x)``,
            ``hpu__npmean(x)``: NumPy's pairwise order of a float sum (Numba adds in order,
            and the last bits differed from the plain function's)."""
            f = node.func
            if node.keywords or not isinstance(f, ast.Attribute) or f.attr not in ("sum",
                                                                                  "mean"):
                return None
            if (isinstance(f.value, ast.Name) and f.value.id in self.numpy_names
                    and len(node.args) == 1 and not isinstance(node.args[0], ast.Starred)):
                arg = node.args[0]
            elif not node.args and not (isinstance(f.value, ast.Name)
                                        and f.value.id in self.numpy_names):
                arg = f.value
            else:
                return None
            call = ast.Call(ast.Name(f"hpu__np{f.attr}", ast.Load()), [self.visit(arg)], [])
            return ast.copy_location(call, node)

        def visit_Call(self, node):
            """``max(x)``/``min(x)`` of one sequence -> ``max(hpu__nonempty(x, 1, site))``:
            an empty one raises Python's ValueError (Numba's list max raised StopIteration)."""
            f = node.func
            made = self._numpy_reduction(node)
            if made is not None:
                return made
            if (isinstance(f, ast.Name) and f.id in ("min", "max") and len(node.args) == 1
                    and not node.keywords and not isinstance(node.args[0], ast.Starred)):
                where = self._where(node)
                node = super().visit_Call(node)
                node.args[0] = ast.copy_location(ast.Call(
                    ast.Name("hpu__nonempty", ast.Load()),
                    [node.args[0], ast.Constant(int(f.id == "max")), where], []), node)
                return node
            if (isinstance(f, ast.Name) and f.id == "sum" and len(node.args) == 1
                    and not node.keywords and not isinstance(
                        node.args[0], (ast.Starred, ast.GeneratorExp))):
                # a list of floats sums as this Python sums it (3.12: compensated)
                node = super().visit_Call(node)
                node.func = ast.copy_location(ast.Name("hpu__sum", ast.Load()), node.func)
                return node
            return super().visit_Call(node)

        def visit_Subscript(self, node):
            """``a[s:e]`` -> ``a[hpu__slice_ix(s, site):...]``: a float bound raises
            Python's TypeError (Numba slices with it: ``a[:len(a) / 2]`` gave a result)."""
            if isinstance(node.slice, ast.Slice):
                for part in ("lower", "upper", "step"):
                    bound = getattr(node.slice, part)
                    if bound is not None and not (isinstance(bound, ast.Constant)
                                                  and type(bound.value) is int):
                        setattr(node.slice, part, ast.copy_location(ast.Call(
                            ast.Name("hpu__slice_ix", ast.Load()),
                            [bound, self._where(node)], []), bound))
            if (self.bounds and isinstance(node.value, ast.Name)
                    and node.value.id not in self.arrays
                    and not node.value.id.startswith("hpu__")
                    and _int_const(node.slice) is not None):
                # bounds-checked, `x[1]`: the base class leaves a constant index to Numba
                # (a tuple needs it), whose error names no line; hpu__cix keeps it constant
                node.value = self.visit(node.value)
                node.slice = ast.copy_location(ast.Call(
                    ast.Name("hpu__cix", ast.Load()),
                    [ast.Name(node.value.id, ast.Load()), node.slice, self._where(node)], []),
                    node.slice)
                return node
            if (self.lists and not self.bounds
                    and isinstance(node.value, ast.Name)
                    and not node.value.id.startswith("hpu__")   # hpu's own (site numbers)
                    and not isinstance(node.slice, (ast.Slice, ast.Tuple))):
                # a function of lists: x[i] of a list out of range raises Python's IndexError
                # at its line (arrays are left as Numba indexes them: the check is compiled
                # away for them)
                check = "hpu__lsix" if isinstance(node.ctx, ast.Store) else "hpu__lix"
                node.slice = ast.copy_location(ast.Call(
                    ast.Name(check, ast.Load()),
                    [ast.Name(node.value.id, ast.Load()), node.slice, self._where(node)], []),
                    node.slice)
            return super().visit_Subscript(node)

        def _where(self, node):
            super()._where(node)
            k = add_site(self.sites[-1])
            return ast.Subscript(ast.Name(_SITE_IDS, ast.Load()), ast.Constant(k), ast.Load())

        def visit_Assign(self, node):
            """``t[s:e] = v`` -> ``t[s:e] = hpu__fit(t[s:e], v, site)``: NumPy's error for
            lengths it refuses, at the user's line (the target is read twice: only when its
            bounds call nothing but builtins without effects, ``len``, ``min``, ...)."""
            t = node.targets[0] if len(node.targets) == 1 else None
            if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                    and isinstance(t.slice, ast.Slice) and all(
                        isinstance(c.func, ast.Name) and c.func.id in _PURE_CALLS
                        for c in ast.walk(t.slice) if isinstance(c, ast.Call))):
                where = self._where(node)       # the statement, as written
                self.generic_visit(node)
                read = copy.deepcopy(node.targets[0])
                for n in ast.walk(read):
                    if hasattr(n, "ctx"):
                        n.ctx = ast.Load()
                node.value = ast.copy_location(ast.Call(ast.Name("hpu__fit", ast.Load()),
                                                        [read, node.value, where], []),
                                               node.value)
                return node
            return super().visit_Assign(node)

    return _Sited


def _refuse_inlined_comprehension(f, clone):
    """On Python 3.12+, a list comprehension hpu could not turn into a loop (one evaluated
    only under a condition inside an expression) is refused as a Numba error: the plain
    function runs, with this reason (see :mod:`hpu._comprehensions`)."""
    import inspect

    from numba.core.errors import UnsupportedError

    from hpu._comprehensions import inlined_comprehension_line

    line = inlined_comprehension_line(clone.__code__)
    if line is None:
        return
    filename = inspect.getsourcefile(f) or f.__code__.co_filename
    raise UnsupportedError(
        f"a list comprehension evaluated only under a condition inside an expression "
        f"(line {line}, in {f.__name__}): on Python 3.12 and later Numba loses an exception "
        "raised after an inlined comprehension, so hpu compiles a comprehension only as the "
        "loop it stands for, which it can place only where its statement always evaluates "
        "it: write it as a statement of its own (name = [...]) or as a loop with append\n"
        f'File "{filename}", line {line}')


def compile_functional(fn, self_obj, done: dict | None = None, boundscheck: bool = False,
                       lists: bool = False):
    """``fn`` and the helpers it calls compiled by Numba as written (recursion through
    ``self_obj``, the decorated object, resolves to the compiled function itself), with
    ``nogil=True``: subtrees run at once on threads (:class:`FanOut`).  ``done``, when
    given, is filled with each Python function (``fn`` and its helpers) -> its dispatcher.
    ``boundscheck``: Numba's bounds checking (an index out of range raises ``IndexError``),
    the function's ``boundscheck=`` or ``HPU_BOUNDSCHECK``, as on the other paths."""
    import types

    import numba

    _Sited = _sited()
    done = {} if done is None else done
    from hpu._checked_ops import OPERATIONS, SITES

    made: list[dict] = []               # each clone's globals

    def jit(f, is_main):
        if f in done:
            return done[f]
        glb = dict(f.__globals__)
        glb.update(OPERATIONS)
        clone = _clone(f, glb, is_main, _Sited(
            "", bounds=boundscheck, sites=[], lists=lists,
            numpy_names=frozenset(k for k, v in f.__globals__.items() if v is np)))
        made.append(glb)
        if clone is None:
            clone = types.FunctionType(f.__code__, glb, f.__name__, f.__defaults__,
                                       f.__closure__)
        _refuse_inlined_comprehension(f, clone)
        # a function of no module, for Numba: it keeps the clone's own globals instead of
        # importing the user's module -- which, while that module is being imported (a call
        # at its top level), waits for the import lock the importing thread holds: a hang,
        # as the compile runs on another thread (on_big_stack, FanOut)
        clone.__module__ = None
        disp = numba.njit(nogil=True, boundscheck=boundscheck)(clone)
        done[f] = disp
        for n in clone.__code__.co_names:
            obj = glb.get(n)
            if _is_self(obj, fn, self_obj) and (is_main or obj is not fn):
                glb[n] = disp if is_main else done[fn]
            elif (isinstance(obj, types.FunctionType) and obj is not OPERATIONS.get(n)
                  and obj.__module__ != "hpu._list_kinds"):     # (overloaded: Numba's own)
                glb[n] = jit(obj, False)    # a helper (hpu's checks are Numba's already)
        return disp

    main = jit(fn, True)
    ids = np.arange(max(1, len(SITES)), dtype=np.int64)
    for glb in made:
        glb[_SITE_IDS] = ids
    return main


_NUMBER = (bool, int, float, np.bool_, np.integer, np.floating)


def _as_list(v):
    """A list argument of a function that builds lists: the list itself (Numba reflects
    its changes back), its numbers as NumPy infers them when they are of several types
    (``[1, 2.5]`` -> ``[1.0, 2.5]``: Numba types a list by its first item), or
    :data:`UNTYPED` when Numba cannot take it (empty, nested, not numbers)."""
    if not v:
        return UNTYPED
    kinds = set(map(type, v))
    if not all(issubclass(k, _NUMBER) for k in kinds):
        return UNTYPED
    return v if len(kinds) == 1 else np.asarray(v).tolist()


def beyond_int64(v) -> bool:
    """Whether the list (or tuple) ``v`` holds an int no int64 holds (``2**63``): Numba
    types a list's ints as int64 (a first item past it as uint64, and then cannot unbox
    the rest), NumPy makes such a list uint64 or float64 (rounded); only the plain
    function answers exactly."""
    # by the items' types first (C loops: a list of 10**6 ints is read in ~35 ms, where a
    # test of each item in Python took ~150 ms on every call)
    kinds = set(map(type, v))
    if kinds == {int}:
        return min(v) < -2**63 or max(v) >= 2**63
    wide = tuple(k for k in kinds if k is np.uint64 or (issubclass(k, int) and k is not bool))
    if not wide:
        return False        # floats, bools, NumPy's signed ints: all within int64
    return any(isinstance(e, wide) and not -2**63 <= int(e) < 2**63 for e in v)


class _Untyped:
    def __repr__(self):
        return "UNTYPED"


#: a list that Numba cannot type (empty, nested, not numbers): the plain function runs
UNTYPED = _Untyped()


def convert_arguments(args, kwargs, lists: bool = False):
    """The arguments as the compiled function takes them: lists of numbers as NumPy
    arrays, or, for a function that builds lists (``lists``), as lists (:func:`_as_list`).
    Returns None when a list is one Numba cannot type: the caller runs the plain
    function."""
    if any(type(v) in (list, tuple) and beyond_int64(v) for v in (*args, *kwargs.values())):
        return None
    if not lists:
        return (tuple(list_to_array(a) for a in args),
                {k: list_to_array(v) for k, v in kwargs.items()})
    out_args = tuple(_as_list(a) if type(a) is list else a for a in args)
    out_kwargs = {k: _as_list(v) if type(v) is list else v for k, v in kwargs.items()}
    if any(v is UNTYPED for v in (*out_args, *out_kwargs.values())):
        return None
    return out_args, out_kwargs


UNTYPED_REASON = ("{name} was given {what}, which Numba cannot type exactly (a list's type "
                  "is its first item's; no Numba integer holds an int past int64): the plain "
                  "Python function runs")


def untyped_what(args, kwargs) -> str:
    """Which argument :func:`convert_arguments` could not convert, in words."""
    for v in (*args, *kwargs.values()):
        if type(v) in (list, tuple) and beyond_int64(v):
            return f"a {type(v).__name__} holding an int past int64"
        if type(v) is list and _as_list(v) is UNTYPED:
            return "an empty list" if not v else "a list that is not of numbers"
    return "an argument"


@contextlib.contextmanager
def quiet_reflection():
    """Numba's notice that reflected lists (Python lists passed to compiled code) are
    "scheduled for deprecation" is not shown inside: hpu passes them, not the user.  And
    an exception raised inside Numba's compiler (not by the compiled code) is raised as
    Numba's own error: the function cannot be compiled, and the plain function runs."""
    import warnings

    from numba.core.errors import NumbaPendingDeprecationWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=NumbaPendingDeprecationWarning,
                                message=r"(?s).*reflected list")
        try:
            yield
        except Exception as err:
            if not _inside_numba(err):
                raise
            # Numba's compiler itself failed (``result += [comprehension]`` on an array:
            # an AttributeError deep in its typing): it cannot compile the function, as a
            # typing error would say -- the plain function runs, with this reason
            from numba.core.errors import NumbaError

            raise NumbaError(f"Numba's compiler failed ({type(err).__name__}: {err})") from err


def _inside_numba(err) -> bool:
    """Whether ``err`` was raised inside Numba's own Python code (its compiler), not by
    the compiled function (whose exceptions come from machine code: no Numba frame)."""
    import os

    import numba
    from numba.core.errors import NumbaError

    if isinstance(err, NumbaError):
        return False
    root = os.path.dirname(os.path.abspath(numba.__file__)) + os.sep
    tb = err.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(root):
            return True
        tb = tb.tb_next
    return False


# --------------------------------------------------------------------------- every core
#
# Sibling calls of divide and conquer are independent: that is hpu's premise.  A
# functional function cannot go through the breadth-first driver (its results are
# arrays), but its tree can still be cut at level K: the top K levels run as *Python*
# (a copy of the user's function whose recursive name is rebound), and each call made
# at level K runs the function compiled by Numba (``nogil=True``) on a pool of
# ``numba.get_num_threads()`` threads.  So ``merge(msort(a[:m]), msort(a[m:]))`` at the
# top sorts a^K slices at once and merges the top levels with the compiled helper.
#
# The order matters: every subtree must be submitted before anything waits for one.
# A self-call therefore never computes its value: it *starts* the child and returns a
# :class:`Lazy` proxy at once --
#
# * at level K: the compiled function submitted to the pool; the proxy wraps its Future;
# * above K: the Python copy run on a thread of its own (one per top-level call, a few
#   dozen at most: a^1 + ... + a^(K-1)); the proxy wraps the Future that thread sets.
#
# A proxy resolves (waits) on first use: NumPy (``__array__``), arithmetic and
# comparison, ``len``, indexing, iteration, conversions, attributes; the helpers the
# copy calls (compiled by Numba too) get their arguments resolved first; a node's value
# is resolved before its Future is set, and the root's before the call returns.  Tuple
# results (``left, x = f(a[:m])``) unpack into element proxies without waiting, when
# every ``return`` of the function is a tuple of one length: otherwise the unpacking
# would wait for the left child before the right one is even called.
#
# Why threads for the top-level calls and not deferred evaluation on the calling
# thread: a deferred call runs only when its value is first used, and its own combine
# then waits for its children; the next sibling's subtrees would be submitted only after
# that, so at most ``a`` subtrees would ever run at once, whatever the pool's size.  A
# thread per top-level call submits the whole level-K frontier immediately, and the
# combines of one level (compiled, without the GIL) run side by side as well.  No pool
# worker ever waits: the pool runs compiled subtrees only, and the top-level threads,
# which do wait, are outside it and one per call, so no call waits for a free thread.
#
# Waiting is in slices (``concurrent.futures.wait`` with a timeout) so the calling
# thread sees Ctrl-C; any exception on the calling thread sets the run's cancel flag
# (the top-level threads stop at their next self-call or wait) and cancels the pending
# subtrees; subtrees already running finish in the background.  A subtree's exception
# travels up through the Futures: the caller gets the user's exception itself, the
# first one in the order the values are used (the order ``.sequential`` meets them).
#
# Memory: glibc raises its mmap threshold each time a large block is freed, and blocks
# under it then stay in the allocating thread's arena after ``free``; with several
# threads allocating, the peak doubled (6x the input for the functional mergesort at
# 2**24, one core's 3x).  hpu leaves the C library's settings alone (a process-wide
# change would slow every large allocation of the user's own code) but gives freed pages
# back (``malloc_trim(0)``, :func:`trim_memory`) before every combine at the top levels,
# after every top-level call and at the end: 4.5-4.7x with 4 subtrees per thread, a few per
# cent of time; 3.0-3.25x with 2 (:data:`TASKS_PER_THREAD`).  Not
# after each subtree: the next subtree on that thread would fault the same pages in
# again.  What is left is each thread arena's top block, which ``malloc_trim`` does not
# release outside the main arena; ``MALLOC_MMAP_THRESHOLD_=131072`` in the environment
# bounds the peak at 3x (guide §10).
#
# The top levels are the user's code run by Python on the values Numba returns, so
# their arithmetic follows Python's and NumPy's rules where Numba's typing may differ
# (narrow integer dtypes); the root's value is boxed as Numba boxes it (``float``,
# ``int``, tuples of them) so ``.run`` returns what ``.sequential`` returns.

import concurrent.futures as _cf
import operator as _op
import threading as _threading
import time as _time

#: The stack of every thread that runs compiled functional recursion (:func:`on_big_stack`,
#: the fan-out's pool): the depth guard stops it at :data:`hpu._guard.NATIVE_DEPTH` calls,
#: and this many bytes hold that many frames of up to 13 KiB (a runaway mergesort's frame
#: measured ~300 bytes here).  The default stack is not a bound: it is ``ulimit -s`` on the
#: main thread, and a machine's own choice for new threads -- on one GPU machine a runaway
#: crashed the process at a depth that raised here.  Address space only: the pages a
#: recursion never reaches are never touched.
STACK_BYTES = 64 << 20
_STACK_LOCK = _threading.Lock()


@contextlib.contextmanager
def big_stacks():
    """Threads started inside get :data:`STACK_BYTES` of stack (``threading.stack_size``
    is the process's setting: it is put back at once, under a lock)."""
    with _STACK_LOCK:
        try:
            old = _threading.stack_size(STACK_BYTES)
        except (ValueError, RuntimeError):   # a platform that cannot size stacks
            yield
            return
        try:
            yield
        finally:
            _threading.stack_size(old)


def on_big_stack(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on a thread of its own with :data:`STACK_BYTES` of stack:
    its value, or its exception.  Ctrl-C meanwhile is raised once ``fn`` has returned, as
    it is when compiled code runs on the calling thread (never while ``fn`` still writes
    the caller's arrays or lists)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as err:  # noqa: BLE001 - raised on the calling thread
            box["error"] = err

    worker = _threading.Thread(target=target, name="hpu-compiled", daemon=True)
    with big_stacks():
        worker.start()
    interrupt = None
    while worker.is_alive():
        try:
            worker.join(WAIT_SLICE)
        except KeyboardInterrupt as err:
            interrupt = err
    if "error" in box:
        raise box["error"]
    if interrupt is not None:
        raise interrupt
    return box["value"]


#: the fewest elements (longest array argument) for which the top levels fan out
FANOUT_MIN = 1 << 15
#: subtrees per thread.  Two, not more: every top level whose arrays the C library keeps in
#: a thread's arena (below its 32 MB mmap ceiling) holds about one more input's worth at the
#: peak (see "Memory" above).  The functional mergesort at 2**24 int32 keys on 2 threads,
#: alternating processes, 4 pairs: K=2 (2 per thread) 1.59-1.86 s and 3.0-3.25x the input,
#: K=3 (4 per thread) 1.70-1.82 s and 4.75-5.41x.  Uneven subtrees (a quicksort's) balance
#: a little worse with two; K= sets more.
TASKS_PER_THREAD = 2
#: the fewest elements a subtree is cut to when K is chosen automatically
MIN_SUBTREE = 1 << 11
#: at most this many top-level calls run as Python threads; deeper calls become subtrees
MAX_NODES = 512
#: seconds per wait slice: how soon a waiting thread sees Ctrl-C or a cancelled run
WAIT_SLICE = 0.1


_LOOPS = (ast.For, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: builtins that loop over their one argument (in Python, element by element)
_LOOPING_BUILTINS = frozenset({"sum", "min", "max", "sorted", "list", "tuple", "any", "all"})


def _reduction(node) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _LOOPING_BUILTINS and len(node.args) == 1
            and not node.keywords)


def call_shape(fn) -> tuple[int, int | None, tuple[int, str] | None]:
    """``(a, arity, loop)``: how many self-calls ``fn``'s source makes (at least 2), the
    length of the tuple every ``return`` returns (None when they are not all tuples of
    one length), and ``(line, text)`` of the first loop in ``fn``'s own body that makes no
    self-call, or call of a builtin looping over one argument (``sum(a)``), None if none:
    at the top levels it would run as Python, element by element, so such a function
    fans out only when ``K`` is given."""
    tree = _tree_of(fn)
    if tree is None:
        return 2, None, None
    name = tree.name

    def self_calls(node):
        return sum(1 for n in ast.walk(node) if isinstance(n, ast.Call)
                   and isinstance(n.func, ast.Name) and n.func.id == name)

    lengths = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else None
               for r in ast.walk(tree) if isinstance(r, ast.Return)}
    arity = lengths.pop() if len(lengths) == 1 else None
    loop = next(((n.lineno, ast.unparse(n).splitlines()[0].rstrip(":"))
                 for n in ast.walk(tree) if (isinstance(n, _LOOPS) or _reduction(n))
                 and not self_calls(n)), None)
    return max(self_calls(tree), 2), arity, loop


def recursion_through_globals(fn, self_obj) -> bool:
    """Whether ``fn`` reaches itself through a global name (the fan-out rebinds that name
    in its copy; a recursion through a closure cell it cannot see)."""
    return any(_is_self(fn.__globals__.get(n), fn, self_obj)
               for n in _code_names(fn.__code__))


def fanout_levels(n: int, a: int, b: float, threads: int, K: int | None = None,
                  loop: tuple[int, str] | None = None,
                  lists: bool = False) -> tuple[int, str]:
    """``(K, reason)``: how many top levels run as Python before the compiled subtrees
    (0: the compiled function alone, as one call).  ``n``: elements of the longest array
    argument; ``a``: self-calls per call; ``b``: the shrink factor; ``loop``: a loop of
    the function's own (:func:`call_shape`); ``lists``: the function builds Python lists
    (each crossing between Python and compiled code converts a list item by item: a
    mergesort of 10**6 listed ints took 1.389 s as one call, 2.842 s with K=1, 5.828 s
    with K=3, against 3.597 s as plain Python: bench/bench_lists.py --ks 0,1,2,3)."""
    if K is not None:
        if K == 0:
            return 0, "K=0 given: the function compiled by Numba, as one call"
        return K, (f"K={K} given: the top {K} levels as Python, each call at level {K} "
                   f"compiled by Numba on {threads} thread(s)")
    if threads <= 1:
        return 0, ("one thread (numba.get_num_threads() == 1): the function compiled by "
                   "Numba, as one call")
    if lists:
        return 0, ("the function compiled by Numba, as one call: it builds Python lists, "
                   "and every list that crosses between the top levels (Python) and the "
                   "compiled subtrees is converted item by item, which costs more than the "
                   "threads save; pass K to fan out anyway")
    if n < FANOUT_MIN:
        return 0, (f"{n} elements (< {FANOUT_MIN}): the function compiled by Numba, as one "
                   "call; threads would cost more than they save")
    if loop is not None:
        return 0, (f"the function compiled by Numba, as one call: its own loop at line "
                   f"{loop[0]} (`{loop[1]}`) would run as Python in the top levels that "
                   "share the work among threads; move the loop into a helper function "
                   "(compiled by Numba) to use every core, or pass K to fan out anyway")
    want = TASKS_PER_THREAD * threads
    K = 1
    while a ** K < want and n / b ** (K + 1) >= MIN_SUBTREE:
        K += 1
    return K, (f"{a ** K} subtrees of about {n / b ** K:.0f} elements on {threads} threads: "
               f"the top {K} levels as Python, the subtrees compiled by Numba")


_PENDING = object()


class _Cancelled(Exception):
    """The run stopped (Ctrl-C or an error elsewhere): a top-level thread gives up."""


def resolve(v):
    """``v`` with every :class:`Lazy` in it (inside tuples, lists and dicts too) replaced
    by its value, waiting as needed."""
    if isinstance(v, Lazy):
        return resolve(v._force())
    t = type(v)
    if t is tuple or t is list:
        out = [resolve(e) for e in v]
        if all(x is y for x, y in zip(out, v)):
            return v
        return tuple(out) if t is tuple else out
    if t is dict:
        out = {k: resolve(e) for k, e in v.items()}
        return v if all(out[k] is e for k, e in v.items()) else out
    return v


class Lazy:
    """The value of a self-call still being computed; any use waits for it and acts on
    the value.  ``arity``: the length of the tuple it will be, when known (then
    unpacking, ``len`` and constant indexing do not wait)."""

    __slots__ = ("_get", "_value", "_arity")

    def __init__(self, get, arity=None):
        self._get = get
        self._value = _PENDING
        self._arity = arity

    def _force(self):
        if self._value is _PENDING:
            v = self._get()
            while isinstance(v, Lazy):
                v = v._force()
            self._value = v
            self._get = None
        return self._value

    def _item(self, i):
        return Lazy(lambda: self._force()[i])

    def __iter__(self):
        if self._arity is not None and self._value is _PENDING:
            return iter([self._item(i) for i in range(self._arity)])
        return iter(self._force())

    def __len__(self):
        if self._arity is not None:
            return self._arity
        return len(self._force())

    def __getitem__(self, key):
        if (self._arity is not None and self._value is _PENDING and type(key) is int
                and -self._arity <= key < self._arity):
            return self._item(key % self._arity)
        return self._force()[resolve(key)]

    def __setitem__(self, key, value):
        self._force()[resolve(key)] = resolve(value)

    def __getattr__(self, name):
        return getattr(self._force(), name)

    def __array__(self, dtype=None, copy=None):
        arr = np.asarray(self._force(), dtype=dtype)
        return arr.copy() if copy else arr

    def __bool__(self):
        return bool(self._force())

    def __float__(self):
        return float(self._force())

    def __int__(self):
        return int(self._force())

    def __index__(self):
        return _op.index(self._force())

    def __complex__(self):
        return complex(self._force())

    def __round__(self, *nd):
        return round(self._force(), *nd)

    def __trunc__(self):
        return math.trunc(self._force())

    def __floor__(self):
        return math.floor(self._force())

    def __ceil__(self):
        return math.ceil(self._force())

    def __hash__(self):
        return hash(self._force())

    def __contains__(self, x):
        return resolve(x) in self._force()

    def __repr__(self):
        return repr(self._force())

    def __str__(self):
        return str(self._force())

    def __format__(self, spec):
        return format(self._force(), spec)

    def __divmod__(self, o):
        return divmod(self._force(), resolve(o))

    def __rdivmod__(self, o):
        return divmod(resolve(o), self._force())


def _binary(fn):
    return (lambda s, o: fn(s._force(), resolve(o))), (lambda s, o: fn(resolve(o), s._force()))


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift",
              "and", "or", "xor", "matmul"):
    _fwd, _rev = _binary(getattr(_op, _name + "_" if _name in ("and", "or") else _name))
    setattr(Lazy, f"__{_name}__", _fwd)
    setattr(Lazy, f"__r{_name}__", _rev)
for _name in ("lt", "le", "eq", "ne", "gt", "ge"):
    setattr(Lazy, f"__{_name}__", _binary(getattr(_op, _name))[0])
for _name in ("neg", "pos", "abs", "invert"):
    setattr(Lazy, f"__{_name}__", (lambda fn: lambda s: fn(s._force()))(getattr(_op, _name)))
del _name, _fwd, _rev


def _code_names(code) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _code_names(c)
    return names


def _numba_return_type(disp, args=(), kwargs=None, strict: bool = False):
    """The return type of ``disp`` for these arguments (compiled for them if no subtree
    was: a root that is a base case), else its only return type, else None.  ``strict``:
    Numba's error typing the function for these arguments is raised, not passed over."""
    if not kwargs:
        try:
            key = tuple(disp.typeof_pyval(a) for a in args)
            if len(key) < disp.py_func.__code__.co_argcount and \
                    DEPTH_PARAM in disp.py_func.__code__.co_varnames:
                from numba import types as nbtypes

                key += (nbtypes.Omitted(0),)   # the depth guard's hidden parameter, left out
            if key not in disp.overloads:
                disp.compile(key)
            return disp.overloads[key].signature.return_type
        except Exception:  # noqa: BLE001 - arguments Numba does not take as given: no boxing
            if strict:
                raise
    types = {sig.return_type for sig in disp.nopython_signatures}
    return types.pop() if len(types) == 1 else None


def _wrapping(v):
    """A compiled subtree's value with its ints as NumPy's int64 (uint64 past it), tuples
    item by item: Numba boxes an int64 as a Python int, whose sums in the Python top
    levels would grow past 64 bits where the plain function's NumPy scalars wrap (and
    the compiled function's ints)."""
    if type(v) is int:
        try:
            return np.int64(v)
        except OverflowError:
            return np.uint64(v)
    if type(v) is tuple:
        return tuple(_wrapping(x) for x in v)
    return v


def box_like_numba(v, t):
    """``v`` as Numba boxes a value of type ``t``: Python ``float``/``int``/``bool``, tuples
    of them; anything else unchanged."""
    from numba.core import types as nt

    if t is None:
        return v
    if isinstance(t, nt.Boolean) and isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(t, nt.Integer) and isinstance(v, (int, np.integer)) \
            and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(t, nt.Float) and isinstance(v, (int, float, np.integer, np.floating)) \
            and not isinstance(v, (bool, np.bool_)):
        return float(v)
    if isinstance(t, nt.BaseTuple) and isinstance(v, tuple) and len(v) == len(t.types):
        return tuple(box_like_numba(e, u) for e, u in zip(v, t.types))
    return v


#: the name of the fan-out's barrier in the Python copy of a function that writes arrays
BARRIER = "hpu__wait_children"


def with_barriers(tree: ast.FunctionDef, selves: set) -> ast.FunctionDef:
    """``tree`` with ``hpu__wait_children()`` before each statement that follows one making a
    recursive call (a call of a name in ``selves``), in every block, and before each return
    after one: in the fan-out's top levels a call returns at once, its subtree running on a
    thread, so a function that writes into its arrays must not read or write them again
    (``merge(a, lo, mid, hi)`` after ``f(a, lo, mid); f(a, mid, hi)``) until its children are
    done.  Consecutive calls stay side by side."""
    def calls(node) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                   and n.func.id in selves for n in ast.walk(node))

    def pure_call(st) -> bool:
        """``f(...)`` or ``x = f(...)`` (``x, k = f(...)``): a call started, nothing read."""
        if isinstance(st, ast.Assign) and not all(
                isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Store))
                for t in st.targets for n in ast.walk(t)):
            return False
        return (isinstance(st, (ast.Expr, ast.Assign)) and isinstance(st.value, ast.Call)
                and isinstance(st.value.func, ast.Name) and st.value.func.id in selves
                and not any(calls(a) for a in [*st.value.args, *st.value.keywords]))

    def block(stmts):
        out, after = [], False
        for st in stmts:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field, block(inner))
            if after and not pure_call(st):
                out.append(ast.copy_location(ast.Expr(ast.Call(
                    ast.Name(BARRIER, ast.Load()), [], [])), st))
                after = False
            out.append(st)
            after = after or calls(st)
        return out

    tree = copy.deepcopy(tree)
    tree.decorator_list = []
    tree.body = block(tree.body)
    return ast.fix_missing_locations(tree)


class FanOut:
    """One call of a functional function with its top ``K`` levels run as Python and
    each call at level ``K`` as the compiled function on ``threads`` threads (see the
    essay above).  After :meth:`run`: ``subtrees`` (calls run compiled),
    ``level_sizes`` (calls made at each level ``0..K``), ``submitted`` and ``spans`` (when
    each compiled call was submitted, and its ``(start, end)``, in ``time.perf_counter()``
    seconds)."""

    def __init__(self, fn, self_obj, compiled, helpers: dict, *, K: int, threads: int,
                 arity: int | None, barriers: bool = False, outlined=None):
        self.fn, self.self_obj, self.compiled = fn, self_obj, compiled
        #: ``(tree, {name: callable})``: the function with its own loops outlined into
        #: compiled helpers (:mod:`hpu._outline`), for the Python copy; None: as written
        self.outlined = outlined
        #: the function writes into its arrays: wait for a node's children before its next
        #: statement (:func:`with_barriers`)
        self.barriers = barriers
        self.helpers = helpers
        self.K, self.threads, self.arity = K, threads, arity
        self.subtrees = 0
        self.level_sizes = [1] + [0] * K
        self.submitted: list[float] = []
        self.spans: list[tuple[float, float]] = []
        self._nodes = 0
        self._pending: set = set()   # Futures whose value no proxy has taken yet
        self._lock = _threading.Lock()
        self._cancel = _threading.Event()
        self._threads: list = []        # the Python levels' node threads, joined on an error
        self._local = _threading.local()
        self._pool = None
        self._py = None

    def _python_copy(self):
        """The user's function with its own globals: the recursive name starts a child
        (:meth:`_self_call`), helpers are their compiled versions, resolving proxies."""
        import types

        fn = self.fn
        glb = dict(fn.__globals__)
        py = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__,
                                fn.__closure__)
        py.__kwdefaults__ = fn.__kwdefaults__
        tree = None
        if self.outlined is not None:
            tree, calls = self.outlined
            glb.update(calls)
        if self.barriers or tree is not None:
            py = self._with_barriers(glb, tree) or py
        for name in _code_names(fn.__code__):
            obj = glb.get(name)
            if _is_self(obj, fn, self.self_obj):
                glb[name] = self._self_call
            elif isinstance(obj, types.FunctionType) and obj in self.helpers:
                glb[name] = _resolving(self.helpers[obj])
            elif _is_dispatcher(obj):
                glb[name] = _resolving(obj)
        return py

    def _with_barriers(self, glb, tree=None):
        """The Python copy of a function that writes arrays, with :func:`with_barriers`'s
        waits (None where its source cannot be read or it is a closure); ``tree``: the
        function's tree to start from (its loops outlined), else its source's."""
        import inspect

        fn = self.fn
        tree = _tree_of(fn) if tree is None else tree
        if tree is None or fn.__closure__:
            return None
        if self.barriers:
            selves = {n for n in _code_names(fn.__code__)
                      if _is_self(glb.get(n), fn, self.self_obj)}
            tree = with_barriers(tree, selves)
        code = compile(ast.Module([tree], []),
                       inspect.getsourcefile(fn) or fn.__code__.co_filename, "exec")
        ns: dict = {}
        exec(code, glb, ns)     # noqa: S102 - the user's own function, with waits added
        py = ns[tree.name]
        py.__defaults__, py.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
        glb[BARRIER] = self._wait_children
        return py

    def _wait_children(self):
        """Until every call this node has made so far has finished (its subtree's writes
        done); their errors are raised here, as the calls' own."""
        mine = getattr(self._local, "children", None) or []
        self._local.children = []
        for fut in mine:
            self._result(fut)

    def _self_call(self, *args, **kwargs):
        if self._cancel.is_set():
            raise _Cancelled()
        args, kwargs = resolve(args), resolve(kwargs)
        depth = getattr(self._local, "depth", 0) + 1
        with self._lock:
            inline = depth < self.K and self._nodes < MAX_NODES
            self._nodes += inline
            if depth < len(self.level_sizes):
                self.level_sizes[depth] += 1
            self.subtrees += not inline
        if inline:
            fut = _cf.Future()
            node = _threading.Thread(target=self._node, args=(fut, depth, args, kwargs),
                                     name=f"hpu-{self.fn.__name__}-level{depth}", daemon=True)
            with big_stacks():
                node.start()
            with self._lock:
                self._threads.append(node)
        else:
            with self._lock:
                self.submitted.append(_time.perf_counter())
            with big_stacks():      # the pool starts its threads in submit
                fut = self._pool.submit(self._subtree, args, kwargs)
        with self._lock:
            self._pending.add(fut)
        if self.barriers:
            if getattr(self._local, "children", None) is None:
                self._local.children = []
            self._local.children.append(fut)
        return Lazy(lambda: self._result(fut), self.arity)

    def _subtree(self, args, kwargs):
        start = _time.perf_counter()
        try:
            converted = convert_arguments(args, kwargs, lists=True)
            if converted is None:
                # a list Numba cannot type (an empty one: a base case, as often as not) --
                # the plain function answers for this subtree, as it does for the whole call
                return self.fn(*args, **kwargs)
            return _wrapping(self.compiled(*converted[0], **converted[1]))
        finally:
            end = _time.perf_counter()
            with self._lock:
                self.spans.append((start, end))

    def _node(self, fut, depth, args, kwargs):
        self._local.depth = depth
        try:
            value = resolve(self._py(*args, **kwargs))
            if self.barriers:       # done only when its subtrees' writes are
                self._wait_children()
        except BaseException as err:  # noqa: BLE001 - handed to whoever waits for it
            fut.set_exception(err)
        else:
            fut.set_result(value)
        finally:
            trim_memory()   # the children this call combined

    def _result(self, fut):
        while not fut.done():
            _cf.wait((fut,), timeout=WAIT_SLICE)
            if self._cancel.is_set() and not fut.done():
                raise _Cancelled()
        value = fut.result()
        with self._lock:  # the value is the proxy's now: kept no longer than the user keeps it
            self._pending.discard(fut)
        return value

    def run(self, args, kwargs):
        """The call's value, computed as described above."""
        self._py = self._python_copy()
        self._local.depth = 0
        self._pool = _cf.ThreadPoolExecutor(self.threads,
                                            thread_name_prefix=f"hpu-{self.fn.__name__}")
        try:
            value = resolve(self._py(*args, **kwargs))
            # every call made, its value used or not, has finished; an error in one is the
            # call's error, as in the compiled function
            while self._pending:
                with self._lock:
                    fut = next(iter(self._pending))
                self._result(fut)
        except BaseException:
            # nothing may write into the caller's arrays once the error is raised (the call
            # puts back what it wrote): the subtrees not started are dropped, those running
            # (compiled code cannot be stopped) and the Python levels' nodes are waited for
            self._cancel.set()
            self._pool.shutdown(wait=True, cancel_futures=True)
            with self._lock:
                nodes = list(self._threads)
            for node in nodes:
                node.join()
            raise
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)
            trim_memory()
        return box_like_numba(value, _numba_return_type(self.compiled, args, kwargs))


def _c_trim():
    """The C library's ``malloc_trim``, or None where there is none (not glibc)."""
    import ctypes
    import ctypes.util

    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


_MALLOC_TRIM = _c_trim()


def trim_memory() -> None:
    """Give the pages of freed blocks back to the system (glibc's ``malloc_trim(0)``; a
    no-op elsewhere): see "Memory" in the essay above."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _is_dispatcher(obj) -> bool:
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, Dispatcher)


def _resolving(disp):
    """``disp`` called with every proxy in its arguments resolved first."""
    def call(*args, **kwargs):
        args, kwargs = resolve(args), resolve(kwargs)
        trim_memory()   # the children's freed blocks, before the combine allocates
        return disp(*args, **kwargs)

    call.__wrapped__ = disp
    return call
