"""Code generation: one Python module per function, from which every backend runs.

Why generate Python source
==========================

The breadth-first conversion (004 §4.1, Algorithm 2) turns one recursive
function into a handful of *per-task* functions — decide whether task ``t`` is
a base case, write its children's parameters, solve its subtree, combine its
children's results — and level drivers that run them for a range of tasks.
We write those as ordinary Python source, built from the user's own
statements, and let Numba compile them (``@njit(cache=True)``; the drivers with
``parallel=True`` and ``prange``).  Source has three virtues over building
Numba IR or closures: it is readable (every inlined statement carries a comment
with the user's line), it can be cached on disk so that a new process loads
machine code instead of compiling (:mod:`hpu._cache`; Numba caches next to the
file), and the OpenCL translator can read the very same functions, because
they stay inside the numeric subset: scalars, 1-D indexing, ``if``/``while``/
``for range``, calls to helpers, no tuples of arrays, no allocation.

What a module holds (``core_source``)
-------------------------------------

* the user's helpers, module constants and the recursive function itself, each
  ``@njit(cache=True)``: the recursive function is the one-core baseline
  (``.sequential``) and the CPU's leaf solver;
* ``count_task(t, ...) -> int``: 1 when task ``t`` is a base case (it is then
  passed down a level unchanged, Algorithm 2 line 6), else ``a``;
* ``fill_task(t, ...)``: writes the children's parameters at ``off[t]`` (the
  exclusive prefix sum of the counts, so children stay in parent order and
  every subtree is a contiguous range of every level below it), and the
  divide's names that the combine reads (``loc__x[t]``), so that the divide
  runs exactly once per task even when it writes arrays;
* ``leaf_task(t, ...)``: solves task ``t``'s whole subtree with the recursive
  function;
* ``combine_task(t, ...)``: the combine statements with the children's results
  read from the level below; a base case passed down copies its one child's
  result;
* ``count_level``, ``fill_level``, ``leaf_level``, ``combine_level``:
  ``for t in prange(start, stop)`` over a *range* of one level's tasks, so a
  hybrid run can give ``[0, s)`` to the CPU and ``[s, m)`` to a device;
* ``count_serial__`` and friends: the same loops without ``parallel=True``,
  for ranges too small to pay for a parallel region (the CPU backend picks);
* ``hpu__probe``: the divide returning the children's parameters and carried
  names; compiled only so that Numba's type inference tells the driver the
  dtypes of the level arrays.

Level arrays are named ``in__p`` / ``out__p`` (a scalar parameter ``p`` at this
level / the next), ``loc__x`` (a carried name), ``off__`` (offsets),
``res__k`` / ``cres__k`` (component ``k`` of the results at this level / the
next); the user's arrays and unchanging scalars keep their names.  User names
may not contain ``__``, so these never clash.

The CPU's module (``cpu_source``): deep recursion without a native stack overflow
----------------------------------------------------------------------------------

The core module is type-independent and serves Numba's type inference.  What
the CPU backend and ``.sequential`` run is ``cpu_source``: the same module,
generated once the types are known, whose recursive function counts its depth
and, at :data:`hpu._guard.NATIVE_DEPTH` calls, continues that subtree in
``solve__grow`` -- the function as a loop over an explicit stack in NumPy
arrays that double when full, raising ``HpuRecursionError`` at the limit.
Native recursion stays for everything shallower because it is faster: the
explicit stack alone measured 1.05x (mergesort) to 7.8x (sum, maximum
subarray) slower, the switch itself no cost (``bench/bench_solver.py``).  Its
parallel level drivers are ``nogil`` and skip the tasks not yet started once
``err__[1]`` is set, which is how Ctrl-C stops a level (:mod:`hpu._cpu`); the
recursive function (both modules) and ``solve__grow``'s loop read the stop flag
(:mod:`hpu._interrupt`) at every call and iteration, which is how Ctrl-C stops a
long task, ``.sequential`` included (its entry point, ``leaf_task`` and
``leaf_serial__`` are ``nogil``: they run on a helper thread).

The iterative solver (``iter_source``)
--------------------------------------

OpenCL has no recursion, so a device solves its leaf subtrees with
``solve_iter``: the same function as a loop over an explicit stack of fixed
depth (``DEPTH``, default 64 frames).  Each frame holds the scalar parameters,
the carried names, the children's parameters and results and a resume counter,
in private arrays ``np.empty(CONST, dtype)``.  The guard and combine blocks are
inlined; their ``return``s become stores into the parent's result slot plus a
``break`` out of a one-trip ``for`` loop (propagated out of inner loops by a
flag).  A subtree deeper than ``DEPTH`` sets ``err[0] = 1`` and stops: it is
never silent.  The iterative source needs the dtypes of the stacks, so it is
generated per type signature, after type inference; it contains the whole core
module too, so that it is self-contained.
"""
from __future__ import annotations

import ast
import copy
import math
import os
from dataclasses import dataclass

import numpy as np

from hpu._checked_ops import SITE_BITS, site_token
from hpu._frontend import Closure, DCSpec, Helper, check_array_params
from hpu._guard import DIGITS, NATIVE_DEPTH
from hpu._reductions import EMPTY_MESSAGES, REDUCE_FIRST, REDUCE_PAIR
from hpu._views import SLICE_COPY, VIEW_INDEX, display, view_index, wrapped_index

__all__ = [
    "Layout", "Types", "DEFAULT_DEPTH", "make_layout", "core_source", "cpu_source", "iter_source",
    "frame_bytes", "helper_source", "device_views", "iter_user_lines", "statements",
    "plain_namespace", "generated_by", "probe_items",
]

#: Frames of the iterative solver's stack: enough for any binary split of 2**63 elements.
DEFAULT_DEPTH = 64


def generated_by() -> str:
    from hpu import __version__
    return f"hpu {__version__}"


# --------------------------------------------------------------------------- layout

@dataclass(frozen=True)
class Layout:
    """How one type signature lays the function's parameters out per level."""

    name: str
    params: tuple[str, ...]
    arrays: tuple[str, ...]       #: array parameters (passed to every task as they are)
    invariants: tuple[str, ...]   #: scalar parameters every call passes unchanged
    varying: tuple[str, ...]      #: scalar parameters stored per task per level
    carried: tuple[str, ...]      #: divide names read by the combine, stored per task
    a: int
    result_arity: int

    @property
    def shared(self) -> tuple[str, ...]:
        """Arguments every task receives unchanged: arrays and invariant scalars, in order."""
        return tuple(p for p in self.params if p in self.arrays or p in self.invariants)

    @property
    def results(self) -> tuple[str, ...]:
        return tuple(f"res__{k}" for k in range(self.result_arity))

    @property
    def child_results(self) -> tuple[str, ...]:
        return tuple(f"cres__{k}" for k in range(self.result_arity))

    def ins(self) -> tuple[str, ...]:
        return tuple(f"in__{v}" for v in self.varying)

    def outs(self) -> tuple[str, ...]:
        return tuple(f"out__{v}" for v in self.varying)

    def locs(self) -> tuple[str, ...]:
        return tuple(f"loc__{c}" for c in self.carried)

    # argument lists of the task functions (after the task index) and level drivers
    # (after start, stop); backends build calls from these names.
    def count_args(self):
        return self.ins() + self.shared

    def fill_args(self):
        return self.ins() + ("off__",) + self.outs() + self.locs() + self.shared

    def leaf_args(self):
        return self.ins() + self.results + self.shared

    def combine_args(self):
        return self.ins() + self.locs() + ("off__",) + self.child_results + self.results + self.shared

    def leaf_iter_args(self):
        return self.leaf_args() + ("err__",)


def make_layout(spec: DCSpec, array_params) -> Layout:
    """The layout for a call whose array arguments are ``array_params`` (names).

    Raises :class:`TranslationError` when an array parameter is reassigned or
    not passed through unchanged by every recursive call.
    """
    arrays = frozenset(array_params)
    check_array_params(spec, arrays)
    invariants = tuple(p for p in spec.params if p not in arrays and p in spec.passthrough)
    varying = tuple(p for p in spec.params if p not in arrays and p not in spec.passthrough)
    return Layout(spec.name, spec.params, tuple(p for p in spec.params if p in arrays),
                  invariants, varying, spec.carried, spec.a, spec.result_arity)


@dataclass(frozen=True)
class Types:
    """NumPy dtypes of the level arrays, from Numba's type inference."""

    varying: tuple[np.dtype, ...]   #: per varying parameter (the top-level call's type)
    carried: tuple[np.dtype, ...]   #: per carried name
    results: tuple[np.dtype, ...]   #: per result component


# --------------------------------------------------------------------------- emitting

class _Checked(ast.NodeTransformer):
    """``x // y``, ``x % y``, ``int(x)``, ``round(x)`` -> calls that raise as Python, with the line.

    See :mod:`hpu._guard`.  Line numbers are the user's: every tree checked here
    (the function's, a helper's: :attr:`hpu._frontend.Helper.tree`) carries its
    file's lines, so a site names the line of the failing expression (``line``
    overrides it, for trees without them).  A view's subscript (marked by
    :mod:`hpu._views`) is named as the user wrote it (``v[i]``) and, in
    bounds-checked mode, its index is checked against the view's length.
    """

    _OPS = {ast.FloorDiv: "hpu__floordiv", ast.Mod: "hpu__mod", ast.Div: "hpu__truediv",
            ast.Pow: "hpu__pow", ast.Mult: "hpu__mul", ast.LShift: "hpu__shl"}
    _CONV = {"int": "hpu__int", "round": "hpu__round"}
    #: checks that only look for a zero divisor
    _BY_NONZERO = ("hpu__floordiv", "hpu__mod", "hpu__truediv")

    def __init__(self, filename: str, line: int | None = None, context: str = "",
                 bounds: bool = False, arrays: tuple[str, ...] = (),
                 sites: list[str] | None = None, stores: tuple[str, ...] = ()):
        #: the module's ``hpu__SITES``: each check carries an index into it, not the
        #: text (passing a string per call would cost more than the check itself)
        self.sites = sites if sites is not None else []
        self.filename = filename
        self.line = line
        self.context = context
        #: bounds-checked mode: ``a[i]`` -> ``a[hpu__ix(i, len(a), "file:line: a[i]")]``
        self.bounds = bounds
        self.arrays = set(arrays)
        #: names whose ``x[i] = v`` stores go through ``hpu__store`` without being known
        #: arrays (a helper's parameters: ``hpu__store`` is free unless an int array gets a float)
        self.stores = set(stores) | self.arrays

    def visit_Subscript(self, node):
        where = self._where(node)
        mark = view_index(node)
        if self.bounds and mark is not None:
            # base[offset + wrap(i)] -> base[offset + hpu__vix(i, n, site)]: i against the
            # view's length n, as NumPy checks a view; a view lies inside its base array
            # (its bounds are clamped), so the base array's own check would never fire
            index = ast.Call(ast.Name("hpu__as_index", ast.Load()),
                             [self.visit(copy.deepcopy(mark.index))], [])
            check = ast.Call(ast.Name("hpu__vix", ast.Load()),
                             [index, self.visit(copy.deepcopy(mark.length)), where], [])
            off = self.visit(copy.deepcopy(mark.offset))
            zero = isinstance(off, ast.Constant) and off.value == 0
            node.slice = check if zero else ast.BinOp(off, ast.Add(), check)
            node.value = self.visit(node.value)
            return node
        if mark is not None:
            # base[offset + wrap(i)]: never negative for an index of the view, so unsigned
            # (Numba would test it for a negative index once more); an unsigned i as an
            # int64 (hpu._guard.base_index, as_index)
            idx = wrapped_index(self.visit(copy.deepcopy(mark.index)),
                                self.visit(copy.deepcopy(mark.length)), "hpu__as_index")
            off = self.visit(copy.deepcopy(mark.offset))
            node.slice = ast.Call(ast.Name("hpu__base", ast.Load()),
                                  [ast.BinOp(off, ast.Add(), idx)], [])
            node.value = self.visit(node.value)
            return node
        self.generic_visit(node)
        if not self.bounds or not isinstance(node.value, ast.Name):
            return node
        idx = node.slice
        if isinstance(idx, (ast.Slice, ast.Tuple)):
            return node
        if isinstance(idx, ast.Constant) and node.value.id not in self.arrays:
            return node  # maybe a heterogeneous tuple, which needs a constant index
        length = ast.Call(ast.Name("len", ast.Load()), [ast.Name(node.value.id, ast.Load())], [])
        node.slice = ast.Call(ast.Name("hpu__ix", ast.Load()), [idx, length, where], [])
        return node

    def _where(self, node) -> ast.expr:
        """``hpu__SITE_IDS[k]``, the new site's number k read from an int64 array: a
        constant ``k`` would be typed as a literal by Numba, and every check (and its
        ``hpu__SITES[k]``) compiled once more per site -- seconds and megabytes of machine
        code per function, which a process never frees."""
        line = self.line if self.line is not None else getattr(node, "lineno", 0)
        self.sites.append(f"{self.filename}:{line}: {self.context}{display(node)}")
        return ast.Subscript(ast.Name(SITE_IDS, ast.Load()),
                             ast.Constant(len(self.sites) - 1), ast.Load())

    def visit_Assign(self, node):
        """``a[i] = x`` into one of the function's arrays: ``x`` through ``hpu__store``
        (a float into an int array raises as ``int(x)``; anything else is free)."""
        t = node.targets[0] if len(node.targets) == 1 else None
        if not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                and t.value.id in self.stores and not isinstance(t.slice, (ast.Slice, ast.Tuple))):
            return self.generic_visit(node)
        where = self._where(t)
        self.generic_visit(node)
        node.value = ast.copy_location(ast.Call(
            ast.Name("hpu__store", ast.Load()),
            [ast.Name(t.value.id, ast.Load()), node.value, where], []), node.value)
        return node

    def visit_BinOp(self, node):
        fn = self._OPS.get(type(node.op))
        if fn is None or (fn in self._BY_NONZERO and _nonzero_number(node.right)):
            # nothing to check (`x + y`), or a division by a constant that is not 0
            # (`(lo + hi) // 2`): the operator itself, no call to type and compile
            return self.generic_visit(node)
        where = self._where(node)
        self.generic_visit(node)
        return ast.copy_location(ast.Call(ast.Name(fn, ast.Load()),
                                          [node.left, node.right, where], []), node)

    def visit_AugAssign(self, node):
        fn = self._OPS.get(type(node.op))
        if fn is None or (fn in self._BY_NONZERO and _nonzero_number(node.value)):
            return self.generic_visit(node)
        where = self._where(node)
        self.generic_visit(node)
        load = copy.deepcopy(node.target)
        for n in ast.walk(load):
            if hasattr(n, "ctx"):
                n.ctx = ast.Load()
        for n in ast.walk(node.target):  # only the outermost target stores
            if hasattr(n, "ctx") and n is not node.target:
                n.ctx = ast.Load()
        call = ast.Call(ast.Name(fn, ast.Load()), [load, node.value, where], [])
        return ast.copy_location(ast.Assign([node.target], call), node)

    def visit_Call(self, node):
        where = self._where(node)
        self.generic_visit(node)
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "pow"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "math"
                and len(node.args) == 2 and not node.keywords):
            node.func = ast.copy_location(ast.Name("hpu__mpow", ast.Load()), node.func)
            return node
        if isinstance(node.func, ast.Name) and node.func.id == SLICE_COPY:
            node.func.id = "hpu__slice_copy_chk"
            node.args.append(where)
            return node
        if isinstance(node.func, ast.Name) and node.func.id == REDUCE_FIRST:
            node.func.id = "hpu__reduce_first_chk"
            node.args.append(where)
            return node
        if isinstance(node.func, ast.Name) and node.func.id == REDUCE_PAIR:
            node.func.id = "hpu__reduce_pair_chk"
            node.args.append(where)
            return node
        if (isinstance(node.func, ast.Name) and node.func.id in self._CONV
                and len(node.args) == 1 and not node.keywords):
            return ast.copy_location(ast.Call(ast.Name(self._CONV[node.func.id], ast.Load()),
                                              [node.args[0], where], []), node)
        if _math_rounding(node):
            # math.floor(x): Python's int, so NaN, inf and past int64 as int(x) (Numba
            # would give int64's minimum silently)
            node.args = [ast.Call(ast.Name("hpu__finite", ast.Load()), [node.args[0], where],
                                  [])]
        return node


def _math_rounding(node) -> bool:
    """``math.floor(x)``, ``math.ceil(x)``, ``math.trunc(x)``: an int from a float."""
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr in ("floor", "ceil", "trunc")
            and isinstance(f.value, ast.Name) and f.value.id == "math"
            and len(node.args) == 1 and not node.keywords)


def _nonzero_number(e) -> bool:
    """An int or float constant other than 0 (``-2`` too): a divisor no run makes 0."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    return (isinstance(e, ast.Constant) and type(e.value) in (int, float)
            and e.value != 0)


#: the checked module's array of its site numbers (``hpu__SITE_IDS[k]`` is k, typed int64)
SITE_IDS = "hpu__SITE_IDS"


def _sites_source(sites) -> str:
    """The module's site texts, registered when it is imported under a token read from
    them (:func:`hpu._checked_ops.register_sites`), and the array of their numbers, the
    token's bits above the index's (see :meth:`_Checked._where`): the same in every process
    that loads the module, as its machine code, cached on disk, holds them."""
    texts = tuple(sites or [""])
    token = site_token(texts)
    return (f"hpu__SITES = {texts!r}\n"
            f"hpu__register_sites({token}, hpu__SITES)\n"
            f"{SITE_IDS} = hpu__numpy.arange({len(texts)}, dtype=hpu__numpy.int64) + "
            f"{token << SITE_BITS}")


_CHECKED_PRELUDE = """
import numpy as hpu__numpy

from hpu._checked_ops import _badconv as hpu__badconv
from hpu._checked_ops import _badconv_grows as hpu__badconv_grows
from hpu._checked_ops import _grows as hpu__grows
from hpu._checked_ops import _broadcast as hpu__broadcast
from hpu._checked_ops import _outofbounds as hpu__outofbounds
from hpu._checked_ops import _empty_reduction as hpu__empty_reduction
from hpu._checked_ops import _pair_mismatch as hpu__pair_mismatch
from hpu._checked_ops import _truezerodiv as hpu__truezerodiv
from hpu._checked_ops import _zerodiv as hpu__zerodiv
from hpu._checked_ops import register_sites as hpu__register_sites
from hpu._errors import HpuRecursionError as hpu__RecursionError
from hpu._guard import bad_float as hpu__bad_float
from hpu._guard import bad_int_store as hpu__bad_int_store
from hpu._guard import divides_by_zero as hpu__divides_by_zero
from hpu._guard import float_operands as hpu__float_operands
from hpu._guard import as_index as hpu__as_index
from hpu._guard import base_index as hpu__base
from hpu._guard import like as hpu__like
from hpu._guard import power as hpu__power
from hpu._guard import power_grows as hpu__power_grows
from hpu._guard import product_grows as hpu__product_grows
from hpu._guard import shift_grows as hpu__shift_grows
from hpu._interrupt import Stopped as hpu__Stopped
from hpu._interrupt import stop_requested as hpu__stop_requested


# ---- Ctrl-C (hpu/_interrupt.py) and the checks of the user's operations (hpu/_guard.py):
# ---- compiled once per process, cached on disk (hpu/_module_checks.py); the raises
# ---- are hpu._checked_ops's.  site__ is a number of hpu._checked_ops.register_sites:
# ---- this module's token and the index of the text "file:line: expression" in
# ---- hpu__SITES (at the end of the module).
from hpu._module_checks import stopped as hpu__stopped
from hpu._module_checks import floordiv as hpu__floordiv
from hpu._module_checks import truediv as hpu__truediv
from hpu._module_checks import pow_ as hpu__pow
from hpu._module_checks import mul as hpu__mul
from hpu._module_checks import shl as hpu__shl
from hpu._module_checks import mpow as hpu__mpow
from hpu._module_checks import mod as hpu__mod
from hpu._module_checks import ix as hpu__ix
from hpu._module_checks import vix as hpu__vix
from hpu._module_checks import to_int as hpu__int
from hpu._module_checks import finite as hpu__finite
from hpu._module_checks import store as hpu__store
from hpu._module_checks import to_round as hpu__round
from hpu._module_checks import slice_copy_chk as hpu__slice_copy_chk
from hpu._module_checks import reduce_first_chk as hpu__reduce_first_chk
from hpu._module_checks import reduce_pair_chk as hpu__reduce_pair_chk
"""

_REDUCE_FIRST_DEF = f"""

hpu__EMPTY = {EMPTY_MESSAGES!r}


@njit(cache=True)
def {REDUCE_FIRST}(n, kind):
    \"\"\"min(a), np.max(a)... (hpu/_reductions.py): 0, the index of the first element, or
    Python's or NumPy's ValueError when the array is empty (on the device, the OpenCL
    translator records it).\"\"\"
    if n == 0:
        raise ValueError(hpu__EMPTY[kind])
    return 0"""

_REDUCE_PAIR_DEF = f"""


@njit(cache=True)
def {REDUCE_PAIR}(n1, n2, kind):
    \"\"\"np.dot(a, b), np.sum(a - b)... (hpu/_reductions.py): how many elements the two
    arrays give -- equal lengths, or (kind 0, NumPy's broadcasting) one of them 1 -- else
    NumPy's ValueError.\"\"\"
    if n1 == n2:
        return n1
    if kind == 0 and n1 == 1:
        return n2
    if kind == 0 and n2 == 1:
        return n1
    if kind == 1:
        raise ValueError("shapes (" + str(n1) + ",) and (" + str(n2) + ",) not aligned: "
                         + str(n1) + " (dim 0) != " + str(n2) + " (dim 0)")
    raise ValueError("operands could not be broadcast together with shapes (" + str(n1)
                     + ",) (" + str(n2) + ",) ")"""

_SLICE_COPY_DEF = f"""

@njit(cache=True)
def {SLICE_COPY}(nd, ns):
    \"\"\"How many elements dst[...] = src[...] copies (hpu/_views.py): len(dst), when the
    lengths are equal or src has one element; else NumPy's ValueError (on the device, the
    OpenCL translator records it and copies nothing).\"\"\"
    if ns != nd and ns != 1:
        raise ValueError("could not broadcast input array from shape (" + str(ns)
                         + ",) into shape (" + str(nd) + ",)")
    return nd"""


def _checked_source(h: Helper, bounds: bool = False, sites: list[str] | None = None) -> str:
    """A helper's checked source: its parameters' stores too (a float into an int array
    parameter raises as into the function's own arrays).  Sites name the failing line
    (the helper's tree carries its file's lines)."""
    if h.tree is None:  # no tree: the text, its sites at the def line
        tree, line = ast.parse(h.source).body[0], h.lineno
    else:
        tree, line = copy.deepcopy(h.tree), None
    params = tuple(a.arg for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs)
    checker = _Checked(h.filename, line, h.context, bounds, sites=sites, stores=params)
    return ast.unparse(checker.visit(tree))


class _DeviceViews(ast.NodeTransformer):
    """The device's bounds-checked form of a view's subscript: ``base[offset +
    hpu__view_index(i, n)]``, which the OpenCL translator checks against the view's
    length ``n`` (:mod:`hpu._opencl._translate`); Numba runs it as the plain wrap."""

    def visit_Subscript(self, node):
        mark = view_index(node)
        if mark is None:
            return self.generic_visit(node)
        call = ast.Call(ast.Name(VIEW_INDEX, ast.Load()),
                        [self.visit(copy.deepcopy(mark.index)),
                         self.visit(copy.deepcopy(mark.length))], [])
        off = self.visit(copy.deepcopy(mark.offset))
        zero = isinstance(off, ast.Constant) and off.value == 0
        out = ast.Subscript(self.visit(node.value),
                            call if zero else ast.BinOp(off, ast.Add(), call), node.ctx)
        return ast.fix_missing_locations(ast.copy_location(out, node))


def device_views(node):
    """A copy of ``node`` with its views' subscripts in the device's bounds-checked form."""
    return _DeviceViews().visit(copy.deepcopy(node))


_VIEW_INDEX_DEF = f"""

@njit(cache=True)
def {VIEW_INDEX}(i, n):
    \"\"\"A view's index i (hpu/_views.py) wrapped as NumPy does; in bounds-checked mode
    the OpenCL translator checks it against the view's length n (hpu/_codegen.py).\"\"\"
    return i + n if i < 0 else i"""


def helper_source(h: Helper, bounds: bool = False) -> str:
    """A helper as the device's module holds it: its source, with views' subscripts in
    their checked form when ``bounds`` (the OpenCL translator reads this text)."""
    if not bounds or h.tree is None or not any(view_index(n) for n in ast.walk(h.tree)):
        return h.source
    return ast.unparse(device_views(h.tree))


def _recursion_message(spec: DCSpec, limit: int, how: str) -> str:
    call_lines = sorted({c.lineno for c in spec.calls})
    where = ", ".join(map(str, call_lines))
    return (f"{spec.filename}:{spec.lineno}: {spec.name}() recursed {limit} calls deep "
            f"(its recursive calls at line{'s' if len(call_lines) > 1 else ''} {where}): either "
            "the base case is never reached for these arguments (check the guard, e.g. an "
            "empty range), or the recursion is legitimately this deep; hpu stops at "
            f"{limit} calls {how} " + (
                "(set HPU_MAX_DEPTH to change the limit)" if limit > NATIVE_DEPTH else
                f"(native recursion: HPU_MAX_DEPTH can lower this limit, not raise it past "
                f"{NATIVE_DEPTH})"))


def _depth_limited_source(spec: DCSpec, bounds: bool = False,
                          arrays: tuple[str, ...] = (), sites: list[str] | None = None,
                          grow: tuple[int, str] | None = None) -> str:
    """The recursive function as a wrapper of ``<name>__d``, which counts its depth.

    Numba compiles the recursion natively: a runaway or very deep recursion
    would overflow the thread's stack and kill the process.  ``<name>__d``
    takes the depth as a last parameter; ``<name>`` keeps the user's
    signature and is compiled ``nogil``.  Every call reads the stop flag
    (:mod:`hpu._interrupt`): Ctrl-C unwinds the recursion at its next call.
    With ``grow=(native, solver)`` (the CPU module,
    :func:`cpu_source`), a call at depth ``native`` continues its subtree in
    ``solver`` (the explicit, growable stack), which raises at the limit.
    Without it (the type-independent core module, used for type inference),
    the call at :data:`hpu._guard.NATIVE_DEPTH` raises ``RecursionError``
    naming the function, its line, its recursive calls' lines and the depth.
    """
    from hpu._guard import NATIVE_DEPTH, max_depth

    from hpu._leaf_inline import inline_leaves

    tree = _Checked(spec.filename, bounds=bounds, arrays=arrays,
                    sites=sites).visit(copy.deepcopy(spec.tree))
    # each recursive call tests the base case and does it in place (hpu/_leaf_inline.py)
    tree = inline_leaves(tree, spec.name, arrays)
    inner = f"{spec.name}__d"

    given = [a.arg for a in tree.args.args]

    def like(arg, param):
        # a scalar passed as the parameter's own kind (hpu._guard.like): `f(a, lo, k, True)`
        # would compile a second function for the literal True, and Numba's cache of a
        # recursion through several signatures crashes the next process that loads it
        if param in arrays or (isinstance(arg, ast.Name) and arg.id == param):
            return arg
        return ast.copy_location(ast.Call(ast.Name("hpu__like", ast.Load()),
                                          [arg, ast.Name(param, ast.Load())], []), arg)

    class _Calls(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id == spec.name:
                if len(node.args) <= len(given) and not any(
                        isinstance(x, ast.Starred) for x in node.args):
                    node.args = [like(x, p) for x, p in zip(node.args, given)]
                    for k in node.keywords:
                        if k.arg in given:
                            k.value = like(k.value, k.arg)
                node.func = ast.Name(inner, ast.Load())
                node.keywords = node.keywords + [  # by keyword: the call may use keywords
                    ast.keyword("depth__", ast.parse("depth__ + 1", mode="eval").body)]
            return node

    tree = _Calls().visit(tree)
    params = [a.arg for a in tree.args.args]
    tree.name = inner
    tree.args.args.append(ast.arg("depth__"))
    # Ctrl-C's stop flag (hpu/_interrupt.py) is 0, or 2**62 when set: subtracted from the
    # depth limit it folds into the depth test, so a call pays one load and one
    # subtraction (measured: a separate test cost more on a function of one add per call)
    stop = "    if hpu__stop_requested():\n        hpu__stopped()\n"
    if grow is not None:
        native, solver = grow
        call = f"{solver}({', '.join(params + ['depth__'])})"
        body = f"{call}\n    return" if spec.result_arity == 0 else f"return {call}"
        check = ast.parse(f"if depth__ >= {native} - hpu__stop_requested():\n{stop}"
                          f"    {body}").body
    else:
        limit = min(NATIVE_DEPTH, max_depth())
        msg = _recursion_message(spec, limit, "so that the thread's stack cannot overflow")
        check = ast.parse(f"if depth__ >= {limit} - hpu__stop_requested():\n{stop}"
                          f"    raise hpu__RecursionError({msg!r})").body
    tree.body = check + tree.body
    outer = f"def {spec.name}({', '.join(params)}):\n    return {inner}({', '.join(params + ['np.int64(0)'])})"
    # nogil: .sequential runs it on a helper thread while the caller waits (hpu/_interrupt.py)
    return ast.unparse(tree) + "\n\n\n@njit(cache=True, nogil=True)\n" + outer


def statements(tree):
    """``tree`` (a statement or a function) and the statements inside it, in source order;
    the same order for a tree and the tree parsed again from its unparsed text."""
    if isinstance(tree, (ast.stmt, ast.excepthandler)) and not isinstance(tree, ast.FunctionDef):
        yield tree
    for name in ("body", "orelse", "handlers", "finalbody"):
        for sub in getattr(tree, name, None) or ():
            if isinstance(sub, (ast.stmt, ast.excepthandler)):
                yield from statements(sub)


class _Writer:
    def __init__(self, spec: DCSpec, checked: bool = False, bounds: bool = False,
                 arrays: tuple[str, ...] = (), views: bool = False):
        self.spec = spec
        self.bounds = bounds
        #: the device's bounds-checked form of views' subscripts (_DeviceViews)
        self.views = views
        self.arrays = arrays
        self.sites: list[str] = []  # hpu__SITES of the checked module
        self.lines: list[str] = []
        #: line of the body (1-based) -> the user's line of the statement emitted there
        #: (nested statements too, where a "# line N" comment names only the outermost)
        self.stmt_lines: dict[int, int] = {}
        self._last = None  # the user line last named in a comment
        self._last_end = -1  # len(self.lines) after that statement: a comment is repeated
        # where anything was emitted since (another function's statement on the same line
        # got none, so its checks had no line and the device left them out)
        #: rewrite the user's ``//``, ``%``, ``int()``, ``round()`` into checked calls (CPU)
        self.checked = checked

    def __call__(self, text: str = "", indent: int = 0):
        pad = "    " * indent
        for line in text.splitlines() or [""]:
            self.lines.append(pad + line if line else "")

    def user(self, stmts, indent: int, *, comment: bool = True):
        """Emit (possibly transformed) user statements, each after a comment with its line."""
        for s in stmts:
            ln = getattr(s, "lineno", None)
            if comment and ln is not None and (ln != self._last
                                               or len(self.lines) != self._last_end):
                text = self.spec.line(ln)
                self(f"# line {ln}: {text}" if text else f"# line {ln}", indent)
            self._last = ln
            if self.checked:
                s = _Checked(self.spec.filename, bounds=self.bounds, arrays=self.arrays,
                             sites=self.sites).visit(copy.deepcopy(s))
            elif self.views:
                s = device_views(s)
            text = ast.unparse(s)
            first = len(self.lines)
            for mine, theirs in zip(statements(s), statements(ast.parse(text).body[0])):
                if getattr(mine, "lineno", 0) >= self.spec.lineno:  # not generated (line 1..)
                    self.stmt_lines.setdefault(first + theirs.lineno, mine.lineno)
            self(text, indent)
            self._last_end = len(self.lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _dtype_expr(dt: np.dtype) -> str:
    dt = np.dtype(dt)
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


def _const_expr(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
    return repr(v)


def _guard_tests(stmt: ast.If) -> list[ast.expr]:
    tests, node = [], stmt
    while True:
        tests.append(node.test)
        if node.orelse and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
        else:
            return tests


def _stmt(text: str) -> ast.stmt:
    return ast.parse(text).body[0]


def _check_with(spec: DCSpec, on_base: str) -> list[ast.stmt]:
    """The check region with each guard replaced by ``if COND: <on_base>`` (one per test)."""
    out = []
    for s in spec.check:
        if isinstance(s, ast.If):
            for test in _guard_tests(s):
                node = ast.If(test=copy.deepcopy(test), body=ast.parse(on_base).body, orelse=[])
                ast.copy_location(node, test)
                out.append(node)
        else:
            out.append(copy.deepcopy(s))
    return out


def _components(value, arity: int) -> list[ast.expr]:
    if arity == 0:
        return []
    if arity == 1:
        return [value]
    assert isinstance(value, ast.Tuple) and len(value.elts) == arity
    return list(value.elts)


def _store(target: str, value: ast.expr) -> ast.stmt:
    """``target = value`` keeping ``value``'s own nodes, so their user lines stay (the
    checked module's error texts name the line of the expression, hpu/_guard.py)."""
    stmt = _stmt(f"{target} = 0")
    stmt.value = copy.deepcopy(value)
    return stmt


class _ReturnsToStores(ast.NodeTransformer):
    """``return v`` -> ``res__k[idx] = v_k; return`` (for a task function's own return)."""

    def __init__(self, arity: int, target: str, index: str):
        self.arity, self.target, self.index = arity, target, index

    def visit_Return(self, node):
        out = [_store(f"{self.target}{k}[{self.index}]", c)
               for k, c in enumerate(_components(node.value, self.arity))]
        out.append(ast.Return(value=None))
        return [ast.copy_location(s, node) for s in out]


def _returns_to_breaks(stmts, arity: int, target: str, index: str, flag: str) -> list[ast.stmt]:
    """Rewrite returns for code inlined in a loop body wrapped in a one-trip ``for``.

    ``return v`` stores ``v``'s components at ``target{k}[index]``, sets ``flag``
    and breaks; after every inner loop that contains a return, ``if flag: break``
    carries the exit outwards to the wrapper.
    """
    out = []
    for s in stmts:
        if isinstance(s, ast.Return):
            new = [_store(f"{target}{k}[{index}]", c)
                   for k, c in enumerate(_components(s.value, arity))]
            new += [_stmt(f"{flag} = True"), ast.Break()]
            out.extend(ast.copy_location(n, s) for n in new)
        elif isinstance(s, ast.If):
            s = copy.copy(s)
            s.body = _returns_to_breaks(s.body, arity, target, index, flag)
            s.orelse = _returns_to_breaks(s.orelse, arity, target, index, flag)
            out.append(s)
        elif isinstance(s, (ast.For, ast.While)):
            has = any(isinstance(n, ast.Return) for b in s.body for n in ast.walk(b))
            s = copy.copy(s)
            s.body = _returns_to_breaks(s.body, arity, target, index, flag)
            out.append(s)
            if has:  # carry the exit out of this loop too
                out.append(ast.copy_location(_stmt(f"if {flag}:\n    break"), s))
        else:
            out.append(s)
    return out


def _header(spec: DCSpec, closure: Closure, what: str) -> list[str]:
    w = [
        f"# Generated by {generated_by()} from {spec.name}() in "
        f"{os.path.basename(spec.filename)}:{spec.lineno} ({what}).",
        "# Do not edit: hpu writes a new file whenever the function, its helpers or hpu change.",
        "import math",
        "import numpy as np",
        "from numba import njit, prange",
    ]
    for alias, mod in closure.modules:
        if (alias, mod) not in (("math", "math"), ("np", "numpy")):
            w.append(f"import {mod} as {alias}")
    for alias, mod, attr in closure.imported:
        w.append(f"from {mod} import {attr} as {alias}")
    if _uses(spec, closure, DIGITS):  # len(str(x)) (hpu._functional.digits_counted)
        w.append(f"from hpu._guard import ndigits as {DIGITS}")
    return w


def _body(spec: DCSpec, closure: Closure, lay: Layout, checked: bool = False,
          bounds: bool = False, grow: tuple[int, str] | None = None) -> _Writer:
    """Everything but the header: user code, task functions, level drivers, the probe.

    ``checked``: the CPU module's form, where the user's ``//``, ``%``,
    ``int()`` and ``round()`` raise as Python with the user's line
    (:mod:`hpu._guard`); the device's source keeps the plain operators, and
    with ``bounds`` marks the views' indices for the translator (_DeviceViews).
    """
    views = bounds and not checked and _has_views(spec, closure)
    w = _Writer(spec, checked, bounds and checked, tuple(lay.arrays), views)
    if checked:
        w(_CHECKED_PRELUDE)
    A, r = lay.a, lay.result_arity
    if closure.constants:
        w("")
        w("# ---- module constants of the user's code")
        for name, value in closure.constants:
            w(f"{name} = {_const_expr(value)}")
    if views:
        w(_VIEW_INDEX_DEF)
    if not checked and _has_slice_copies(spec, closure):
        w(_SLICE_COPY_DEF)
    if not checked and _uses(spec, closure, REDUCE_FIRST):
        w(_REDUCE_FIRST_DEF)
    if not checked and _uses(spec, closure, REDUCE_PAIR):
        w(_REDUCE_PAIR_DEF)
    for h in closure.helpers:
        w("")
        w("")
        shown = f" (from {h.shown})" if h.shown else ""
        w(f"# ---- helper {h.name}{shown}, from {os.path.basename(h.filename)}:{h.lineno}")
        w("@njit(cache=True)")
        w(_checked_source(h, bounds, w.sites) if checked else helper_source(h, views))
    w("")
    w("")
    w(f"# ---- {spec.name}, the recursive function as written "
      f"({os.path.basename(spec.filename)}:{spec.lineno}):")
    w("# the one-core baseline (.sequential) and the CPU's leaf solver")
    w("@njit(cache=True)")
    w(_depth_limited_source(spec, bounds, tuple(lay.arrays), w.sites, grow) if checked
      else ast.unparse(spec.tree))

    def load_params(indent, index="tid__"):
        for v in lay.varying:
            w(f"{v} = in__{v}[{index}]", indent)

    def sig(name, args, first="tid__"):
        return f"def {name}({', '.join((first,) + tuple(args))}):"

    # count
    w("")
    w("")
    w("# ---- per-task functions (task index first); see hpu/_codegen.py")
    w("@njit(cache=True)")
    w(sig("count_task", lay.count_args()))
    w('"""1 if task tid__ is a base case (passed down unchanged), else the number of calls."""', 1)
    load_params(1)
    w.user(_check_with(spec, "return 1"), 1)
    w(f"return {A}", 1)

    # fill
    w("")
    w("")
    w("@njit(cache=True)")
    w(sig("fill_task", lay.fill_args()))
    w('"""Write task tid__\'s children at off__[tid__] (a base case: itself, unchanged)."""', 1)
    w("o__ = off__[tid__]", 1)
    load_params(1)
    copy_down = "\n".join([f"out__{v}[o__] = in__{v}[tid__]" for v in lay.varying] + ["return"])
    w.user(_check_with(spec, copy_down), 1)
    w.user([copy.deepcopy(s) for s in spec.divide], 1)
    for j, c in enumerate(spec.calls):
        w(f"# child {j + 1}: line {c.lineno}: {spec.line(c.lineno)}", 1)
        for k, p in enumerate(lay.params):
            if p in lay.varying:
                w(f"out__{p}[o__ + {j}] = {ast.unparse(c.args[k])}", 1)
    for name in lay.carried:
        w(f"loc__{name}[tid__] = {name}", 1)

    # leaf
    call_args = ", ".join(p if p not in lay.varying else f"in__{p}[tid__]" for p in lay.params)
    w("")
    w("")
    # nogil (CPU): a one-task leaf phase runs it on a helper thread (Ctrl-C, hpu/_interrupt.py)
    w("@njit(cache=True, nogil=True)" if checked else "@njit(cache=True)")
    w(sig("leaf_task", lay.leaf_args()))
    w(f'"""Solve task tid__\'s whole subtree with {spec.name} itself."""', 1)
    if r == 0:
        w(f"{spec.name}({call_args})", 1)
    elif r == 1:
        w(f"res__0[tid__] = {spec.name}({call_args})", 1)
    else:
        w(f"{', '.join(f'r__{k}' for k in range(r))} = {spec.name}({call_args})", 1)
        for k in range(r):
            w(f"res__{k}[tid__] = r__{k}", 1)

    # combine
    w("")
    w("")
    w("@njit(cache=True)")
    w(sig("combine_task", lay.combine_args()))
    w('"""Combine task tid__\'s children\'s results (a base case copies its one child\'s)."""', 1)
    w("o__ = off__[tid__]", 1)
    w("if off__[tid__ + 1] - o__ == 1:", 1)
    for k in range(r):
        w(f"res__{k}[tid__] = cres__{k}[o__]", 2)
    w("return", 2)
    load_params(1)
    for name in lay.carried:
        w(f"{name} = loc__{name}[tid__]", 1)
    for j, c in enumerate(spec.calls):
        if c.targets:
            w(f"# results of child {j + 1}: line {c.lineno}: {spec.line(c.lineno)}", 1)
        names = c.targets if len(c.targets) == max(r, 1) else ()
        for k, t in enumerate(names):
            w(f"{t} = cres__{k}[o__ + {j}]", 1)
    combine = [_ReturnsToStores(r, "res__", "tid__").visit(copy.deepcopy(s)) for s in spec.combine]
    flat = []
    for s in combine:
        flat.extend(s if isinstance(s, list) else [s])
    w.user(flat, 1)
    if not flat:
        w("pass", 1)

    # level drivers
    drivers = [
        ("count_level", ("off__",) + lay.count_args(),
         "off__[tid__ + 1] = count_task(tid__, {})", lay.count_args()),
        ("fill_level", lay.fill_args(), "fill_task(tid__, {})", lay.fill_args()),
        ("leaf_level", lay.leaf_args(), "leaf_task(tid__, {})", lay.leaf_args()),
        ("combine_level", lay.combine_args(), "combine_task(tid__, {})", lay.combine_args()),
    ]
    w("")
    w("")
    w("# ---- level drivers: the tasks [start__, stop__) of one level, on Numba's threads")
    if checked:
        w("# An exception inside prange is lost or becomes an opaque SystemError, and a try")
        w("# in the loop body makes Numba run it serially: so each task runs inside a")
        w("# *_safe function that records a failing task in err__[0] (tid + 1); the host then")
        w("# runs that one task again alone, where the exception surfaces (hpu/_guard.py).")
        w("# err__[1] != 0 cancels the tasks not yet started: the host sets it on Ctrl-C while")
        w("# the driver runs on a helper thread without the GIL (nogil), hpu/_cpu.py.")
    for name, args, body, targs in drivers:
        if checked:
            task = name.replace("_level", "_task_safe")
            w("@njit(cache=True)")
            w(f"def {task}({', '.join(('tid__', 'err__') + tuple(args))}):")
            w("try:", 1)
            w(body.format(", ".join(targs)), 2)
            w("except Exception:", 1)
            w("err__[0] = tid__ + 1", 2)
            w("")
            w("")
            w("@njit(parallel=True, cache=True, nogil=True)")
            w(f"def {name}({', '.join(('start__', 'stop__', 'err__') + tuple(args))}):")
            w("for tid__ in prange(start__, stop__):", 1)
            w("if err__[1] == 0:  # not cancelled (Ctrl-C: hpu/_cpu.py)", 2)
            w(f"{task}(tid__, err__, {', '.join(args)})", 3)
        else:
            w("@njit(parallel=True, cache=True)")
            w(f"def {name}({', '.join(('start__', 'stop__') + tuple(args))}):")
            w("for tid__ in prange(start__, stop__):", 1)
            w(body.format(", ".join(targs)), 2)
        w("")
        w("")
    w("# ---- the same on the calling thread: for ranges too small to pay for a parallel")
    w("# region (its fork and join cost more than the tasks, and stall when cores are busy)")
    for name, args, body, targs in drivers:
        w("@njit(cache=True, nogil=True)" if checked and name == "leaf_level"
          else "@njit(cache=True)")
        w(f"def {name.replace('_level', '_serial__')}"
          f"({', '.join(('start__', 'stop__') + tuple(args))}):")
        w("for tid__ in range(start__, stop__):", 1)
        w(body.format(", ".join(targs)), 2)
        w("")
        w("")

    # probe
    w("# ---- for type inference only: the children's parameters and the carried names")
    w("@njit(cache=True)")
    w(f"def hpu__probe({', '.join(lay.params)}):")
    w.user([copy.deepcopy(s) for s in spec.check if not isinstance(s, ast.If)], 1)
    w.user([copy.deepcopy(s) for s in spec.divide], 1)
    items = [ast.unparse(c.args[k]) for c in spec.calls for k, p in enumerate(lay.params)
             if p in lay.varying] + list(lay.carried)
    w(f"return ({', '.join(items)},)" if items else "return 0", 1)
    if checked:
        w("")
        w("")
        w("# ---- where each checked operation is in the user's code (see hpu__zerodiv)")
        w(_sites_source(w.sites))
    return w


def _has_views(spec: DCSpec, closure: Closure) -> bool:
    """Whether the function or a helper indexes a view (hpu/_views.py)."""
    trees = [spec.tree] + [h.tree for h in closure.helpers if h.tree is not None]
    return any(view_index(n) is not None for t in trees for n in ast.walk(t))


def _has_slice_copies(spec: DCSpec, closure: Closure) -> bool:
    """Whether the function or a helper assigns to a slice (hpu/_views.py)."""
    return _uses(spec, closure, SLICE_COPY)


def _uses(spec: DCSpec, closure: Closure, name: str) -> bool:
    """Whether the function or a helper uses the name ``name`` (one of hpu's checks)."""
    trees = [spec.tree] + [h.tree for h in closure.helpers if h.tree is not None]
    return any(isinstance(n, ast.Name) and n.id == name for t in trees for n in ast.walk(t))


def core_source(spec: DCSpec, closure: Closure, lay: Layout,
                boundscheck: bool | None = None) -> str:
    """The module source the CPU backend imports (type-independent).

    ``boundscheck``: every ``a[i]`` of the user's code raises ``IndexError``
    naming the array, the index, the length and the line when out of range;
    ``None`` reads ``HPU_BOUNDSCHECK`` (:func:`hpu._guard.boundscheck_default`).
    """
    from hpu._guard import boundscheck_default

    if boundscheck is None:
        boundscheck = boundscheck_default()
    head = _header(spec, closure, f"{lay.a} calls; arrays: {', '.join(lay.arrays) or 'none'}")
    body = _body(spec, closure, lay, checked=True, bounds=bool(boundscheck))
    return "\n".join(head) + "\n" + body.text()


def frame_bytes(lay: Layout, types: Types) -> int:
    """Bytes of one frame of the explicit stacks (``solve__grow`` and ``solve_iter``)."""
    A = lay.a
    return (sum(np.dtype(t).itemsize for t in types.varying) * (1 + A)
            + sum(np.dtype(t).itemsize for t in types.carried)
            + sum(np.dtype(t).itemsize for t in types.results) * A + 8)


def cpu_source(spec: DCSpec, closure: Closure, lay: Layout, types: Types,
               boundscheck: bool | None = None) -> str:
    """The module the CPU backend and ``.sequential`` run: the core module, deep recursion safe.

    The same source as :func:`core_source`, except that the recursive function,
    at depth :data:`hpu._guard.NATIVE_DEPTH`, continues the subtree in
    ``solve__grow``: the function as a loop over an explicit stack held in NumPy
    arrays that double when full (:func:`_grow_solver`).  Shallow recursions
    (all of a balanced split's) keep the native recursion's speed and pay one
    comparison per call, as the depth limit did before; a legitimately deep one
    (a first-element-pivot quicksort of sorted keys) goes on as deep as memory
    allows; a runaway one raises ``HpuRecursionError`` at the limit
    (:func:`hpu._guard.depth_limits`).  The switch continues the computation
    where it is -- nothing is run twice -- so arrays the subtree has already
    written need no restoring.  Generated per type signature (the stacks'
    dtypes come from Numba's type inference of the core module).
    """
    from hpu._guard import boundscheck_default, depth_limits

    if boundscheck is None:
        boundscheck = boundscheck_default()
    native, limit = depth_limits(frame_bytes(lay, types))
    head = _header(spec, closure, f"{lay.a} calls; arrays: {', '.join(lay.arrays) or 'none'}; "
                   f"native recursion to depth {native}, then an explicit stack to {limit}")
    w = _body(spec, closure, lay, checked=True, bounds=bool(boundscheck),
              grow=(native, "solve__grow"))
    _grow_solver(w, spec, lay, types, limit, frame_bytes(lay, types))
    if w.sites:  # the checks the solver added: hpu__SITES again, complete (the last one wins)
        w("")
        w(_sites_source(w.sites))
    return "\n".join(head) + "\n" + w.text()


def _stack_loop(w: _Writer, spec: DCSpec, lay: Layout, full, stop: bool = False) -> None:
    """The explicit-stack loop of both iterative solvers (``solve_iter``, ``solve__grow``).

    Emitted once the stacks exist; ``full()`` emits, at indent 3, what a frame about to
    push a child does when the stack is full (stop with ``err__``, or grow the stacks).
    ``stop`` (the CPU's ``solve__grow``): every iteration reads the stop flag, as every
    call of the recursion does (Ctrl-C, :mod:`hpu._interrupt`).
    """
    A, r = lay.a, lay.result_arity
    w("st__next[0] = 1", 1)
    for v in lay.varying:
        w(f"st__{v}[1] = {v}", 1)
    w("st__next[1] = 0", 1)
    w("d__ = 1", 1)
    w("while d__ > 0:", 1)
    if stop:
        w("if hpu__stop_requested():", 2)
        w("hpu__stopped()", 3)
    for v in lay.varying:
        w(f"{v} = st__{v}[d__]", 2)
    w("s__ = st__next[d__]", 2)
    w(f"slot__ = (d__ - 1) * {A} + st__next[d__ - 1] - 1  # where this frame's result goes", 2)
    w("if s__ == 0:", 2)
    w("ret__ = False", 3)
    w("for once__ in range(1):", 3)
    check = _returns_to_breaks([copy.deepcopy(s) for s in spec.check], r, "cr__", "slot__", "ret__")
    w.user(check, 4)
    w("if ret__:", 3)
    w("d__ -= 1  # a base case: solved", 4)
    w("continue", 4)
    w.user([copy.deepcopy(s) for s in spec.divide], 3)
    for j, c in enumerate(spec.calls):
        w(f"# child {j + 1}: line {c.lineno}: {spec.line(c.lineno)}", 3)
        for k, p in enumerate(lay.params):
            if p in lay.varying:
                w(f"ch__{p}[d__ * {A} + {j}] = {ast.unparse(c.args[k])}", 3)
    for name in lay.carried:
        w(f"st__{name}[d__] = {name}", 3)
    w(f"if s__ < {A}:", 2)
    full()
    for v in lay.varying:
        w(f"st__{v}[d__ + 1] = ch__{v}[d__ * {A} + s__]", 3)
    w("st__next[d__] = s__ + 1", 3)
    w("st__next[d__ + 1] = 0", 3)
    w("d__ += 1", 3)
    w("continue", 3)
    w("# every child is solved: combine", 2)
    for name in lay.carried:
        w(f"{name} = st__{name}[d__]", 2)
    for j, c in enumerate(spec.calls):
        names = c.targets if len(c.targets) == max(r, 1) else ()
        for k, t in enumerate(names):
            w(f"{t} = cr__{k}[d__ * {A} + {j}]", 2)
    w("ret__ = False", 2)
    w("for once__ in range(1):", 2)
    combine = _returns_to_breaks([copy.deepcopy(s) for s in spec.combine], r, "cr__", "slot__",
                                 "ret__")
    w.user(combine, 3)
    if not combine:
        w("pass", 3)
    w("d__ -= 1", 2)


def _grow_solver(w: _Writer, spec: DCSpec, lay: Layout, types: Types, limit: int,
                 fbytes: int) -> None:
    """Emit ``solve__grow(<params>, depth0__)``: the subtree of a call at depth ``depth0__``.

    The loop of ``solve_iter`` (:func:`iter_source`) with stacks that start at
    64 frames and double (a copy) when full, up to ``limit - depth0__``
    frames; the call that would go deeper raises ``HpuRecursionError``.  It
    returns the subtree's result, as the recursive call it replaces.
    """
    A, r = lay.a, lay.result_arity
    vt = dict(zip(lay.varying, types.varying))
    ct = dict(zip(lay.carried, types.carried))
    mib = max(1, limit * fbytes >> 20)
    msg = _recursion_message(spec, limit, f"(an explicit stack of about {mib} MiB) so that "
                             "a runaway recursion cannot fill the memory")
    stacks = ([(f"st__{v}", 1, vt[v]) for v in lay.varying]
              + [(f"ch__{v}", A, vt[v]) for v in lay.varying]
              + [(f"st__{c}", 1, ct[c]) for c in lay.carried]
              + [(f"cr__{k}", A, types.results[k]) for k in range(r)]
              + [("st__next", 1, np.dtype(np.int64))])
    w("")
    w("")
    w(f"# ---- {spec.name}'s deep subtrees: an explicit stack that grows (see cpu_source)")
    w("@njit(cache=True)")
    w(f"def solve__grow({', '.join(lay.params + ('depth0__',))}):")
    w(f'"""{spec.name}({", ".join(lay.params)}) called at depth depth0__, as a loop."""', 1)
    w(f"if depth0__ >= {limit}:", 1)
    w(f"raise hpu__RecursionError({msg!r})", 2)
    w(f"cap__ = min(64, {limit} - depth0__)  # frames 1..cap__; slot 0 gets the result", 1)
    for name, per, dt in stacks:
        w(f"{name} = np.empty((cap__ + 1) * {per}, {_dtype_expr(dt)})", 1)
    def full():
        w("if d__ == cap__:  # full: double the stack, or stop at the limit", 3)
        w(f"if depth0__ + d__ >= {limit}:", 4)
        w(f"raise hpu__RecursionError({msg!r})", 5)
        w(f"new__ = min(2 * cap__, {limit} - depth0__)", 4)
        for name, per, dt in stacks:
            w(f"grown__{name} = np.empty((new__ + 1) * {per}, {_dtype_expr(dt)})", 4)
            w(f"grown__{name}[:(cap__ + 1) * {per}] = {name}", 4)
            w(f"{name} = grown__{name}", 4)
        w("cap__ = new__", 4)

    _stack_loop(w, spec, lay, full, stop=True)
    if r == 1:
        w("return cr__0[0]", 1)
    elif r > 1:
        w(f"return ({', '.join(f'cr__{k}[0]' for k in range(r))})", 1)


def probe_items(lay: Layout, spec: DCSpec) -> list[tuple[str, int, str]]:
    """What ``hpu__probe`` returns, in order: ("child", call index, param) or ("carried", -1, name)."""
    out = [("child", j, p) for j, c in enumerate(spec.calls) for p in lay.params if p in lay.varying]
    return out + [("carried", -1, n) for n in lay.carried]


def iter_source(spec: DCSpec, closure: Closure, lay: Layout, types: Types,
                depth: int = DEFAULT_DEPTH, bounds: bool = False) -> str:
    """The core module plus ``solve_iter``, ``leaf_task_iter`` and ``leaf_level_iter``.

    ``bounds`` (bounds-checked mode): views' subscripts in the form whose index the
    OpenCL translator checks against the view's length (``hpu__view_index``); without
    views, or unchecked, the source is the same either way.
    """
    head, w = _iter(spec, closure, lay, types, depth, bounds)
    return "\n".join(head) + "\n" + w.text()


def iter_user_lines(spec: DCSpec, closure: Closure, lay: Layout, types: Types,
                    depth: int = DEFAULT_DEPTH, bounds: bool = False) -> dict[int, int]:
    """Line of :func:`iter_source`'s text -> the user's line of the statement of the
    decorated function emitted there (the device's error texts name it)."""
    head, w = _iter(spec, closure, lay, types, depth, bounds)
    return {len(head) + k: line for k, line in w.stmt_lines.items()}


def _iter(spec, closure, lay, types, depth, bounds) -> tuple[list[str], _Writer]:
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth={depth!r} must be an int >= 1 (frames of the iterative "
                         "solver's stack); pass e.g. 64")
    A, r = lay.a, lay.result_arity
    head = _header(spec, closure, f"{lay.a} calls; arrays: {', '.join(lay.arrays) or 'none'}; "
                   f"iterative solver, depth {depth}")
    w = _body(spec, closure, lay, bounds=bounds)
    frames = depth + 1
    slots = (depth + 1) * A
    vt = dict(zip(lay.varying, types.varying))
    ct = dict(zip(lay.carried, types.carried))
    outs = tuple(f"res__{k}" for k in range(r))
    w("")
    w("")
    w(f"# ---- {spec.name} without recursion: an explicit stack of {depth} frames")
    w("@njit(cache=True)")
    w(f"def solve_iter({', '.join(lay.params + outs + ('ridx__', 'err__'))}):")
    w(f'"""{spec.name}({", ".join(lay.params)}) as a loop; its result goes to res__k[ridx__].',
      1)
    w("", 1)
    w(f"A subtree deeper than {depth} frames sets err__[0] = 1 and returns at once.", 1)
    w('"""', 1)
    w(f"# frame d (1..{depth}) holds a task; slot 0 of the result stacks receives the root's result",
      1)
    for v in lay.varying:
        w(f"st__{v} = np.empty({frames}, {_dtype_expr(vt[v])})", 1)
        w(f"ch__{v} = np.empty({slots}, {_dtype_expr(vt[v])})  # children's {v}, {A} per frame",
          1)
    for c in lay.carried:
        w(f"st__{c} = np.empty({frames}, {_dtype_expr(ct[c])})", 1)
    for k in range(r):
        w(f"cr__{k} = np.empty({slots}, {_dtype_expr(types.results[k])})"
          f"  # results, {A} per frame", 1)
    w(f"st__next = np.empty({frames}, np.int64)  # next child to start; {A}: combine", 1)
    def full():
        w(f"if d__ == {depth}:", 3)
        w("err__[0] = 1  # deeper than the stack", 4)
        w("return", 4)

    _stack_loop(w, spec, lay, full)
    for k in range(r):
        w(f"res__{k}[ridx__] = cr__{k}[0]", 1)
    w("")
    w("")
    call = ", ".join(p if p not in lay.varying else f"in__{p}[tid__]" for p in lay.params)
    w("@njit(cache=True)")
    w(f"def leaf_task_iter({', '.join(('tid__',) + lay.leaf_iter_args())}):")
    w(f"solve_iter({', '.join([call] + list(outs) + ['tid__', 'err__'])})", 1)
    w("")
    w("")
    w("@njit(parallel=True, cache=True)")
    w(f"def leaf_level_iter({', '.join(('start__', 'stop__') + lay.leaf_iter_args())}):")
    w("for tid__ in prange(start__, stop__):", 1)
    w(f"leaf_task_iter(tid__, {', '.join(lay.leaf_iter_args())})", 2)
    return head, w


_PLAIN_HEADER = '''
def njit(*args, **kwargs):
    """Plain-Python stand-in for numba.njit: leaves the function as it is."""
    if args and callable(args[0]):
        return args[0]
    return lambda f: f
prange = range
'''


def plain_namespace(source: str, filename: str = "<hpu generated>") -> dict:
    """Execute generated source as plain Python (no Numba): for tests and debugging."""
    lines = [ln for ln in source.splitlines() if ln.strip() != "from numba import njit, prange"]
    ns: dict = {"__name__": "hpu_plain"}
    exec(compile(_PLAIN_HEADER, "<hpu plain header>", "exec"), ns)
    exec(compile("\n".join(lines) + "\n", filename, "exec"), ns)
    return ns
