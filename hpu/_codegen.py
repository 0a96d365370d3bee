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

from hpu._frontend import Closure, DCSpec, check_array_params

__all__ = [
    "Layout", "Types", "DEFAULT_DEPTH", "make_layout", "core_source", "iter_source",
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

class _Writer:
    def __init__(self, spec: DCSpec):
        self.spec = spec
        self.lines: list[str] = []
        self._last = None  # the user line last named in a comment

    def __call__(self, text: str = "", indent: int = 0):
        pad = "    " * indent
        for line in text.splitlines() or [""]:
            self.lines.append(pad + line if line else "")

    def user(self, stmts, indent: int, *, comment: bool = True):
        """Emit (possibly transformed) user statements, each after a comment with its line."""
        for s in stmts:
            ln = getattr(s, "lineno", None)
            if comment and ln is not None and ln != self._last:
                text = self.spec.line(ln)
                self(f"# line {ln}: {text}" if text else f"# line {ln}", indent)
            self._last = ln
            self(ast.unparse(s), indent)

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


class _ReturnsToStores(ast.NodeTransformer):
    """``return v`` -> ``res__k[idx] = v_k; return`` (for a task function's own return)."""

    def __init__(self, arity: int, target: str, index: str):
        self.arity, self.target, self.index = arity, target, index

    def visit_Return(self, node):
        out = [_stmt(f"{self.target}{k}[{self.index}] = {ast.unparse(c)}")
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
            new = [_stmt(f"{target}{k}[{index}] = {ast.unparse(c)}")
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
    return w


def _body(spec: DCSpec, closure: Closure, lay: Layout) -> _Writer:
    """Everything but the header: user code, task functions, level drivers, the probe."""
    w = _Writer(spec)
    A, r = lay.a, lay.result_arity
    if closure.constants:
        w("")
        w("# ---- module constants of the user's code")
        for name, value in closure.constants:
            w(f"{name} = {_const_expr(value)}")
    for h in closure.helpers:
        w("")
        w("")
        w(f"# ---- helper {h.name}, from {os.path.basename(h.filename)}:{h.lineno}")
        w("@njit(cache=True)")
        w(h.source)
    w("")
    w("")
    w(f"# ---- {spec.name}, the recursive function as written "
      f"({os.path.basename(spec.filename)}:{spec.lineno}):")
    w("# the one-core baseline (.sequential) and the CPU's leaf solver")
    w("@njit(cache=True)")
    w(ast.unparse(spec.tree))

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
    w("@njit(cache=True)")
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
    for name, args, body, targs in drivers:
        w("@njit(parallel=True, cache=True)")
        w(f"def {name}({', '.join(('start__', 'stop__') + tuple(args))}):")
        w("for tid__ in prange(start__, stop__):", 1)
        w(body.format(", ".join(targs)), 2)
        w("")
        w("")
    w("# ---- the same on the calling thread: for ranges too small to pay for a parallel")
    w("# region (its fork and join cost more than the tasks, and stall when cores are busy)")
    for name, args, body, targs in drivers:
        w("@njit(cache=True)")
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
    return w


def core_source(spec: DCSpec, closure: Closure, lay: Layout) -> str:
    """The module source the CPU backend imports (type-independent)."""
    head = _header(spec, closure, f"{lay.a} calls; arrays: {', '.join(lay.arrays) or 'none'}")
    return "\n".join(head) + "\n" + _body(spec, closure, lay).text()


def probe_items(lay: Layout, spec: DCSpec) -> list[tuple[str, int, str]]:
    """What ``hpu__probe`` returns, in order: ("child", call index, param) or ("carried", -1, name)."""
    out = [("child", j, p) for j, c in enumerate(spec.calls) for p in lay.params if p in lay.varying]
    return out + [("carried", -1, n) for n in lay.carried]


def iter_source(spec: DCSpec, closure: Closure, lay: Layout, types: Types,
                depth: int = DEFAULT_DEPTH) -> str:
    """The core module plus ``solve_iter``, ``leaf_task_iter`` and ``leaf_level_iter``."""
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth={depth!r} must be an int >= 1 (frames of the iterative "
                         "solver's stack); pass e.g. 64")
    A, r = lay.a, lay.result_arity
    head = _header(spec, closure, f"{lay.a} calls; arrays: {', '.join(lay.arrays) or 'none'}; "
                   f"iterative solver, depth {depth}")
    w = _body(spec, closure, lay)
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
    w("st__next[0] = 1", 1)
    for v in lay.varying:
        w(f"st__{v}[1] = {v}", 1)
    w("st__next[1] = 0", 1)
    w("d__ = 1", 1)
    w("while d__ > 0:", 1)
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
    w(f"if d__ == {depth}:", 3)
    w("err__[0] = 1  # deeper than the stack", 4)
    w("return", 4)
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
    return "\n".join(head) + "\n" + w.text()


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
