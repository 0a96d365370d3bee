"""Type inference for the numeric subset: what Numba would type each value as.

Why flow-sensitive: Numba types each *assignment* of a variable separately (it
works on SSA form) and unifies only where control flow merges.  In::

    x = 7
    y = x // 2      # Numba: int64 floor division, y == 3
    x = 0.5

``y`` is an int, not a float, so a translator that gave ``x`` one type for the
whole function would compute something else.  This module therefore runs a
reaching-definitions analysis over the syntax tree (loops iterate to a fixed
point), types every definition from its right-hand side, and types every use
as the unification of the definitions that reach it (:func:`_scalars.unify`).
Definitions that reach a common use form a *web*; each web becomes one C
variable whose type is the unification of its definitions.  A use that sees a
narrower type than its web reads the variable through a cast, which is exact
as long as every definition it sees fits the web's type losslessly; where it
would not (an int64 and a float64 meeting in one variable while some use still
needs the int), translation is refused with a message that says how to give
the variable one type.

The analysis also resolves every name (local, module constant, helper,
builtin, ``math`` function, NumPy cast), folds constant expressions the way
CPython's compiler does before Numba ever sees them (so ``2**63`` is the
uint64 constant it is for Numba), and refuses everything outside the subset
with the user's file, line, construct and a fix.
"""
from __future__ import annotations

import ast
import copy
import inspect
import math
import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpu._errors import TranslationError
from hpu._opencl._scalars import (
    BOOL, FLOAT64, INT64, UINT64, Array, Scalar, TupleType, TypeRuleError,
    abs_result, arith_result, float_result, floor_result, int_result,
    invert_result, is_lossless, math_binary_result, math_unary_result, negate_result,
    range_type, round_input, scalar_of, unify,
)
from hpu._opencl._source import FunctionSource
from hpu._raises import device_raise
from hpu._subset import rule, rule_for_node
from hpu._reductions import REDUCE_FIRST, REDUCE_PAIR
from hpu._guard import DIGITS
from hpu._views import SLICE_COPY

__all__ = [
    "Context", "FunctionTyping", "Web", "CallInfo", "RangeInfo", "infer", "aug_key",
    "fold_constants", "const_type", "BINOPS", "CMPOPS", "MATH_UNARY", "MATH_BINARY",
    "MATH_ROUNDING", "MATH_PREDICATES",
]

BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
          ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
          ast.LShift: "<<", ast.RShift: ">>"}
CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}

#: math functions of one float argument and their OpenCL C names.
MATH_UNARY = {
    math.sqrt: "sqrt", math.exp: "exp", math.expm1: "expm1", math.log: "log",
    math.log2: "log2", math.log10: "log10", math.log1p: "log1p", math.sin: "sin",
    math.cos: "cos", math.tan: "tan", math.asin: "asin", math.acos: "acos",
    math.atan: "atan", math.sinh: "sinh", math.cosh: "cosh", math.tanh: "tanh",
    math.asinh: "asinh", math.acosh: "acosh", math.atanh: "atanh", math.erf: "erf",
    math.erfc: "erfc", math.lgamma: "lgamma", math.gamma: "tgamma", math.fabs: "fabs",
}
MATH_BINARY = {math.atan2: "atan2", math.hypot: "hypot", math.copysign: "copysign",
               math.pow: "pow"}
MATH_ROUNDING = {math.floor: "floor", math.ceil: "ceil", math.trunc: "trunc"}
MATH_PREDICATES = {math.isnan: "isnan", math.isinf: "isinf", math.isfinite: "isfinite"}
BUILTINS = {min: "min", max: "max", abs: "abs", int: "int", float: "float", bool: "bool",
            round: "round", len: "len", range: "range"}
NP_CASTS = {getattr(np, n): scalar_of(n) for n in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64")}
NP_CASTS[np.bool_] = BOOL

#: NumPy's scalar functions of one number that give a float, and their OpenCL C names
#: (``np.sqrt(x)`` of a float32 stays float32, of an int32 or int64 is float64, as in
#: NumPy and Numba; narrower ints and bools, where the two differ, run on the CPU)
NP_UNARY = {np.sqrt: "sqrt", np.exp: "exp", np.log: "log", np.log2: "log2",
            np.log10: "log10", np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arctan: "atan",
            np.fabs: "fabs"}
#: NumPy's float-preserving roundings of a float (of an int NumPy 2 keeps the int)
NP_ROUNDING = {np.floor: "floor", np.ceil: "ceil"}
#: NumPy's two-number extrema: maximum/minimum propagate a NaN, fmax/fmin skip it
NP_EXTREMA = {np.maximum: "npmax", np.minimum: "npmin", np.fmax: "fmax", np.fmin: "fmin"}
NP_PREDICATES = {np.isnan: "isnan", np.isinf: "isinf", np.isfinite: "isfinite"}
#: ``np.abs`` is ``np.absolute``: the builtin ``abs``'s rules
NP_ABS = np.absolute

_UNSUPPORTED_MATH_HINTS = {
    math.fmod: "Use the % operator (Python's modulo) instead.",
}

UNDEF = 0  # the "not yet assigned" definition
#: hpu's own names that may be read where they are not yet assigned on every path: the
#: result of ``max(..., key=...)`` (hpu._reductions.flag_minmax) is assigned in its loop
#: only, and a flag guards every read
LATE = "hpu_late_"


def _member(table: dict, value):
    """``table[value]`` or None, for any value (unhashable globals included)."""
    try:
        return table.get(value)
    except TypeError:
        return None


def _int_type(value: int) -> Scalar | None:
    """How Numba types an int constant (None: too large for Numba)."""
    if -(1 << 63) <= value < (1 << 63):
        return INT64
    if (1 << 63) <= value < (1 << 64):
        return UINT64
    return None


def const_type(value) -> Scalar | None:
    """The type of a Python or NumPy scalar constant, or None if it is not one."""
    if isinstance(value, (bool, np.bool_)):
        return BOOL
    if isinstance(value, int):
        return _int_type(value)
    if isinstance(value, float):
        return FLOAT64
    if isinstance(value, (np.integer, np.floating)):
        try:
            return scalar_of(value.dtype)
        except TypeRuleError:
            return None
    return None


def _constant_trips(it) -> int:
    """How many times ``for _ in it`` runs when ``it`` is range() of int literals; else 0."""
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and not it.keywords and 1 <= len(it.args) <= 3):
        return 0
    vals = []
    for a in it.args:
        if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) \
                and isinstance(a.operand, ast.Constant):
            a = ast.Constant(-a.operand.value) if isinstance(a.operand.value, int) else a
        if not (isinstance(a, ast.Constant) and type(a.value) is int):
            return 0
        vals.append(a.value)
    try:
        return len(range(*vals))
    except ValueError:  # a zero step: refused elsewhere
        return 0


# ----------------------------------------------------------------------- constant folding

_MAX_INT_BITS = 128  # CPython's ast_opt.c MAX_INT_SIZE


def _safe(op, a, b):
    ints = isinstance(a, int) and isinstance(b, int)
    if ints and a and b:
        ab, bb = abs(a).bit_length(), abs(b).bit_length()
        if op is operator.mul and ab + bb > _MAX_INT_BITS:
            return None
        if op is operator.pow and b > 0 and ab > _MAX_INT_BITS // b:
            return None
        if op is operator.lshift and (b > _MAX_INT_BITS or ab > _MAX_INT_BITS - b):
            return None
    try:
        return (op(a, b),)
    except Exception:  # division by zero, negative shift, overflow: CPython leaves it
        return None


_FOLD_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
             ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
             ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_FOLD_UN = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
            ast.Not: operator.not_}


def _is_num_const(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, bool)


class _Folder(ast.NodeTransformer):
    """Folds constant arithmetic as CPython's compiler does (what Numba sees)."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if _is_num_const(node.left) and _is_num_const(node.right) and type(node.op) in _FOLD_BIN:
            r = _safe(_FOLD_BIN[type(node.op)], node.left.value, node.right.value)
            if r is not None and type(r[0]) in (int, float, bool):
                return ast.copy_location(ast.Constant(r[0]), node)
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if _is_num_const(node.operand):
            try:
                value = _FOLD_UN[type(node.op)](node.operand.value)
            except Exception:
                return node
            return ast.copy_location(ast.Constant(value), node)
        return node


def fold_constants(tree: ast.FunctionDef) -> ast.FunctionDef:
    """A copy of ``tree`` with constant sub-expressions folded."""
    tree = copy.deepcopy(tree)
    return ast.fix_missing_locations(_Folder().visit(tree))


# ----------------------------------------------------------------------------- results

@dataclass
class Web:
    """One C variable: the definitions of a Python variable that reach common uses."""

    name: str                      # the Python name
    type: Any                      # Scalar or Array
    defs: list[int]                # def ids, in source order
    param_index: int | None = None  # the parameter this web starts from, if any
    private_len: int | None = None  # for private arrays: the constant length
    c_name: str = ""               # filled by the emitter


@dataclass(frozen=True)
class CallInfo:
    """What a call node calls."""

    kind: str                 # helper | builtin | math | math2 | mathround | mathpred | cast |
    #                           empty | intrinsic (SLICE_COPY, REDUCE_FIRST, REDUCE_PAIR)
    name: str                 # builtin/math name, or the helper's Python name
    args: tuple = ()          # argument nodes, in parameter order (helper: with defaults)
    arg_types: tuple = ()
    callee: Any = None        # FunctionTyping of a helper
    target: Any = None        # cast target Scalar, or (length, Array) for np.empty


@dataclass(frozen=True)
class RangeInfo:
    """A ``for i in range(...)`` loop."""

    args: tuple               # (start, stop, step) nodes; start/step may be None
    arg_types: tuple
    var_type: Scalar
    step_const: int | None    # the step if it is a constant


@dataclass
class FunctionTyping:
    """Everything the emitter needs to know about one function at one signature."""

    source: FunctionSource
    tree: ast.FunctionDef
    arg_types: tuple
    return_type: Any = None                       # Scalar, TupleType or None (no value)
    expr_types: dict = field(default_factory=dict)   # id(expr) -> type
    consts: dict = field(default_factory=dict)       # id(expr) -> (value, Scalar)
    calls: dict = field(default_factory=dict)        # id(Call) -> CallInfo
    ranges: dict = field(default_factory=dict)       # id(For) -> RangeInfo
    use_webs: dict = field(default_factory=dict)     # use key -> (Web, use type)
    def_webs: dict = field(default_factory=dict)     # def id -> Web
    def_types: dict = field(default_factory=dict)    # def id -> type
    webs: list = field(default_factory=list)
    params: list = field(default_factory=list)       # (name, type, Web)
    reachable: set = field(default_factory=set)      # ids of reachable statements
    falls_off_end: bool = False
    writes_arrays: bool = False                      # stores into an array parameter

    @property
    def name(self) -> str:
        return self.source.name


def aug_key(node: ast.AugAssign):
    """Use key of the implicit read in ``x += v``."""
    return ("aug", id(node))


# ---------------------------------------------------------------------------- context

class Context:
    """Translation-wide state: options, caches, and the call stack (to refuse recursion)."""

    def __init__(self, private_arrays: bool = False, unbound_checked: bool = False):
        self.private_arrays = private_arrays
        #: the source came through hpu's frontend, whose hpu._unbound put a check before
        #: every read of a user's local that Python may find unassigned
        self.unbound_checked = unbound_checked
        self._sources: dict[Any, FunctionSource] = {}
        self._folded: dict[int, tuple[FunctionSource, ast.FunctionDef]] = {}
        self._typings: dict[tuple, Any] = {}
        self.stack: list[tuple[FunctionSource, ast.AST | None]] = []

    def source_of(self, fn) -> FunctionSource:
        if isinstance(fn, FunctionSource):
            return fn
        key = getattr(fn, "py_func", fn)
        if key not in self._sources:
            self._sources[key] = FunctionSource.from_callable(fn)
        return self._sources[key]

    def folded(self, src: FunctionSource) -> ast.FunctionDef:
        entry = self._folded.get(id(src))
        if entry is None:
            entry = (src, fold_constants(src.tree))
            self._folded[id(src)] = entry
        return entry[1]

    def typing(self, src: FunctionSource, arg_types: tuple, call_node=None,
               caller: FunctionSource | None = None) -> "FunctionTyping":
        for s, _ in self.stack:
            if s is src:
                chain = [f.name for f, _ in self.stack[[f for f, _ in self.stack].index(src):]]
                chain.append(src.name)
                raise TranslationError(
                    "recursion is not supported in OpenCL: " + " -> ".join(chain),
                    filename=(caller or src).filename,
                    lineno=(caller or src).line_of(call_node) if call_node else src.first_line,
                    construct="recursive call",
                    hint="Rewrite the recursion as a loop; hpu converts only the decorated "
                         "divide-and-conquer function itself.")
        key = (id(src), arg_types)
        hit = self._typings.get(key)
        if hit is not None:
            if isinstance(hit, Exception):
                raise hit
            return hit
        self.stack.append((src, call_node))
        try:
            result = _Analysis(self, src, arg_types).run()
        except TranslationError as err:
            self._typings[key] = err
            raise
        finally:
            self.stack.pop()
        self._typings[key] = result
        return result


def infer(ctx: Context, fn, arg_types) -> FunctionTyping:
    """Type ``fn`` (a callable or :class:`FunctionSource`) for ``arg_types``."""
    return ctx.typing(ctx.source_of(fn), tuple(arg_types))


# ---------------------------------------------------------------------------- analysis

class _Soft(Exception):
    """A type not yet known during the fixed-point iteration (not an error yet)."""


def _refused_hint(key: str) -> str:
    r = rule(key).rewrite
    return r[:1].upper() + r[1:] + "."


def _refused(node):
    """(construct, reason, hint) of the one subset table (:mod:`hpu._subset`), or None."""
    r = rule_for_node(node)
    if r is None:
        return None
    return r.construct, r.reason, r.rewrite[:1].upper() + r.rewrite[1:] + "."


def _locals_of(fn: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in fn.args.args}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


class _Analysis:
    def __init__(self, ctx: Context, src: FunctionSource, arg_types: tuple):
        self.ctx = ctx
        self.src = src
        self.fn = ctx.folded(src)
        self.t = FunctionTyping(src, self.fn, arg_types)
        self.locals = _locals_of(self.fn)
        # flow results
        self.reach: dict[Any, frozenset] = {}
        self.def_name: dict[int, str] = {}
        self.def_node: dict[int, ast.AST] = {}
        self.def_order: dict[int, tuple] = {}
        self.loops: list[tuple[list, list]] = []
        self.return_nodes: list[ast.Return] = []
        self.private_len: dict[int, int] = {}
        self.use_node: dict = {}
        self.strict = False

    # ------------------------------------------------------------------ errors
    def fail(self, node, construct: str, reason: str, hint: str = "") -> TranslationError:
        msg = f"{construct} is not supported: {reason}" if reason else construct
        return TranslationError(msg, filename=self.src.filename, lineno=self.src.line_of(node),
                                construct=construct, hint=hint or None)

    def error(self, node, message: str, construct: str, hint: str = "") -> TranslationError:
        return TranslationError(message, filename=self.src.filename,
                                lineno=self.src.line_of(node), construct=construct,
                                hint=hint or None)

    # ------------------------------------------------------------------ driver
    def run(self) -> FunctionTyping:
        self._check_signature()
        self._validate(self.fn)
        self._flow_function()
        self._build_webs()
        self._infer_types()
        self._finish_webs()
        self._check_order()
        return self.t

    def _check_signature(self):
        a = self.fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.fail(self.fn, "*args, **kwargs and keyword-only parameters",
                            "a device function has a fixed parameter list",
                            "List every parameter by name.")
        if len(a.args) != len(self.t.arg_types):
            raise self.error(self.fn, f"{self.src.name} takes {len(a.args)} parameters but was "
                             f"given {len(self.t.arg_types)} argument types",
                             "argument count")
        for arg, ty in zip(a.args, self.t.arg_types):
            if not isinstance(ty, (Scalar, Array)):
                raise self.error(arg, f"parameter {arg.arg} of {self.src.name}: {ty!r} is not a "
                                 "supported type; expected a scalar type or Array(dtype)",
                                 "parameter type")

    # -------------------------------------------------------------- validation
    def _validate(self, fn):
        """Refuse constructs outside the subset anywhere in the body (decorators and
        annotations are Python's business, not the device's)."""
        for node in (n for stmt in fn.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Raise) and device_raise(node) is not None:
                continue   # raise E(constant...): the error channel's code 9 (hpu/_raises.py)
            refused = _refused(node)
            if refused is not None:
                raise self.fail(node, *refused)
            if isinstance(node, (ast.For, ast.While)) and node.orelse:
                # the frontend makes it a flag first (hpu/_iteration.py); code given to the
                # translator directly gets the rewrite to make
                raise self.fail(node, "a loop with an else clause",
                                "the translator takes the flag hpu's frontend makes of it",
                                "Set a flag in the loop and test it afterwards.")

    # ------------------------------------------------------------ flow analysis
    def _new_def(self, node, name: str):
        d = id(node)
        self.def_name[d] = name
        self.def_node[d] = node
        self.def_order[d] = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        return d

    def _use(self, key, name, env, node):
        self.use_node[key] = node
        defs = env.get(name, frozenset([UNDEF]))
        self.reach[key] = self.reach.get(key, frozenset()) | defs

    def _uses_in(self, expr, env):
        if expr is None:
            return
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and node.id in self.locals:
                self._use(id(node), node.id, env, node)

    @staticmethod
    def _merge(*envs):
        live = [e for e in envs if e is not None]
        if not live:
            return None
        if len(live) == 1:
            return dict(live[0])
        out = {}
        for name in set().union(*live):
            acc = frozenset()
            for e in live:
                acc |= e.get(name, frozenset([UNDEF]))
            out[name] = acc
        return out

    def _flow_function(self):
        env = {}
        for i, arg in enumerate(self.fn.args.args):
            env[arg.arg] = frozenset([self._new_def(arg, arg.arg)])
        for default in self.fn.args.defaults:
            if not isinstance(default, ast.Constant):
                raise self.fail(default, "a non-constant default value",
                                "defaults must be numbers", "Use a number or pass the argument.")
        end = self._flow_block(self.fn.body, env)
        self.t.falls_off_end = end is not None

    def _flow_block(self, stmts, env):
        for stmt in stmts:
            if env is None:
                break  # the rest of the block is unreachable
            env = self._flow_stmt(stmt, env)
        return env

    def _assign_targets(self, target, env):
        if isinstance(target, ast.Name):
            env[target.id] = frozenset([self._new_def(target, target.id)])
        elif isinstance(target, ast.Tuple):
            for elt in target.elts:
                self._assign_targets(elt, env)
        elif isinstance(target, ast.Subscript):
            self._uses_in(target.value, env)
            self._uses_in(target.slice, env)
        else:
            raise self.fail(target, f"assignment to {type(target).__name__.lower()}",
                            "only variables, array elements and tuples of them can be assigned")

    def _flow_stmt(self, stmt, env):
        self.t.reachable.add(id(stmt))
        env = dict(env)
        if isinstance(stmt, ast.Assign):
            self._uses_in(stmt.value, env)
            for target in stmt.targets:
                self._assign_targets(target, env)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._uses_in(stmt.value, env)
                self._assign_targets(stmt.target, env)
        elif isinstance(stmt, ast.AugAssign):
            if isinstance(stmt.target, ast.Name):
                self._use(aug_key(stmt), stmt.target.id, env, stmt)
                self._uses_in(stmt.value, env)
                env[stmt.target.id] = frozenset([self._new_def(stmt.target, stmt.target.id)])
            elif isinstance(stmt.target, ast.Subscript):
                self._uses_in(stmt.target.value, env)
                self._uses_in(stmt.target.slice, env)
                self._uses_in(stmt.value, env)
            else:
                raise self.fail(stmt.target, "augmented assignment to an attribute",
                                "only variables and array elements can be assigned")
        elif isinstance(stmt, ast.Expr):
            self._uses_in(stmt.value, env)
        elif isinstance(stmt, ast.Return):
            self._uses_in(stmt.value, env)
            self.return_nodes.append(stmt)
            return None
        elif isinstance(stmt, ast.Raise):   # ends the path, as a return does
            return None
        elif isinstance(stmt, ast.If):
            self._uses_in(stmt.test, env)
            return self._merge(self._flow_block(stmt.body, env),
                               self._flow_block(stmt.orelse, env))
        elif isinstance(stmt, ast.While):
            return self._flow_loop(stmt, env, None)
        elif isinstance(stmt, ast.For):
            if not isinstance(stmt.target, ast.Name):
                raise self.fail(stmt.target, "a for loop over a tuple target",
                                "only `for i in range(...)` is supported")
            self._uses_in(stmt.iter, env)
            d = self._new_def(stmt.target, stmt.target.id)
            return self._flow_loop(stmt, env, (stmt.target.id, d))
        elif isinstance(stmt, ast.Break):
            if not self.loops:
                raise self.fail(stmt, "break outside a loop", "")
            self.loops[-1][0].append(env)
            return None
        elif isinstance(stmt, ast.Continue):
            if not self.loops:
                raise self.fail(stmt, "continue outside a loop", "")
            self.loops[-1][1].append(env)
            return None
        elif isinstance(stmt, ast.Pass):
            pass
        else:
            raise self.fail(stmt, f"a {type(stmt).__name__} statement", "it is not in the subset")
        return env

    def _flow_loop(self, stmt, env_in, target):
        head = env_in
        for _ in range(1000):
            if target is None:
                self._uses_in(stmt.test, head)
                body_in = head
            else:
                body_in = dict(head)
                body_in[target[0]] = frozenset([target[1]])
            self.loops.append(([], []))
            out = self._flow_block(stmt.body, body_in)
            breaks, continues = self.loops.pop()
            new_head = self._merge(env_in, out, *continues)
            if new_head == head:
                break
            head = new_head
        else:  # pragma: no cover - the lattice is finite
            raise self.error(stmt, "loop analysis did not converge", "loop")
        always = (target is None and isinstance(stmt.test, ast.Constant)
                  and bool(stmt.test.value))
        if target is not None and _constant_trips(stmt.iter) > 0:
            # `for i in range(3):` runs its body at least once: leaving it normally
            # means the last trip ran to its end (or continued), never zero trips
            # (the iterative solver's one-trip `for once__ in range(1):` relies on it)
            return self._merge(out, *continues, *breaks)
        return self._merge(*([] if always else [head]), *breaks)

    # ------------------------------------------------------------------- webs
    def _build_webs(self):
        parent: dict[int, int] = {d: d for d in self.def_name}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for key, defs in self.reach.items():
            real = [d for d in defs if d != UNDEF]
            for d in real[1:]:
                ra, rb = find(real[0]), find(d)
                if ra != rb:
                    parent[rb] = ra
        groups: dict[int, list[int]] = {}
        for d in self.def_name:
            groups.setdefault(find(d), []).append(d)
        params = {id(a): i for i, a in enumerate(self.fn.args.args)}
        webs = []
        for members in groups.values():
            members.sort(key=lambda d: (d not in params, self.def_order[d]))
            pidx = params.get(members[0])
            webs.append(Web(self.def_name[members[0]], None, members, pidx))
        webs.sort(key=lambda w: (w.param_index is None,
                                 w.param_index if w.param_index is not None else 0,
                                 self.def_order[w.defs[0]]))
        self.t.webs = webs
        for w in webs:
            for d in w.defs:
                self.t.def_webs[d] = w

    # ------------------------------------------------------------ type passes
    def _infer_types(self):
        t = self.t
        for arg, ty in zip(self.fn.args.args, t.arg_types):
            t.def_types[id(arg)] = ty
        for _ in range(200):
            before = dict(t.def_types)
            self._pass()
            if t.def_types == before:
                break
        else:  # pragma: no cover
            raise self.error(self.fn, "type inference did not converge", "types")
        self.strict = True
        self._pass()
        self._type_return()

    def _pass(self):
        self.t.expr_types = {}
        self.t.calls = {}
        self.t.consts = {}
        self.t.use_webs = {}
        self._block(self.fn.body)

    def _block(self, stmts):
        for stmt in stmts:
            if id(stmt) not in self.t.reachable:
                break
            try:
                self._stmt(stmt)
            except _Soft:
                if self.strict:  # pragma: no cover - strict mode raises real errors
                    raise

    def _set_def(self, node, ty):
        d = id(node)
        if ty is None:
            if self.strict:
                raise self.error(node, "cannot determine the type", "types")
            return
        old = self.t.def_types.get(d)
        if old is None or old == ty:
            self.t.def_types[d] = ty
        elif isinstance(old, Scalar) and isinstance(ty, Scalar):
            self.t.def_types[d] = unify(old, ty)
        else:
            raise self.error(node, f"{self.def_name[d]} changes between {old!r} and {ty!r}",
                             "variable type")

    # --------------------------------------------------------------- statements
    def _stmt(self, stmt):
        if isinstance(stmt, ast.Assign):
            self._assign(stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._assign(ast.Assign(targets=[stmt.target], value=stmt.value,
                                        lineno=stmt.lineno, col_offset=stmt.col_offset))
        elif isinstance(stmt, ast.AugAssign):
            self._augassign(stmt)
        elif isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                return
            if isinstance(stmt.value, ast.Call):
                self._expr(stmt.value, allow_void=True, allow_tuple=True)
            else:
                self._expr(stmt.value)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                self._expr(stmt.value, allow_tuple=True)
        elif isinstance(stmt, ast.Raise):
            pass   # its class and constant arguments are the host's (hpu/_raises.py)
        elif isinstance(stmt, ast.If):
            self._test(stmt.test)
            self._block(stmt.body)
            self._block(stmt.orelse)
        elif isinstance(stmt, ast.While):
            self._test(stmt.test)
            self._block(stmt.body)
        elif isinstance(stmt, ast.For):
            self._for(stmt)
            self._block(stmt.body)

    def _test(self, node):
        ty = self._expr(node)
        if isinstance(ty, Array):
            raise self.fail(node, "the truth value of an array",
                            "an array is neither true nor false", "Compare len(a) with 0.")

    def _assign(self, stmt: ast.Assign):
        value = stmt.value
        targets = stmt.targets
        if self._is_np_empty(value):
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                raise self.fail(stmt, "np.empty(...) outside a simple assignment", "",
                                "Write `name = np.empty(N, np.int64)`.")
            self._set_def(targets[0], self._np_empty(value, targets[0]))
            return
        if any(isinstance(t, ast.Tuple) for t in targets):
            if len(targets) != 1:
                raise self.fail(stmt, "chained assignment to a tuple", "",
                                "Unpack in a separate statement.")
            self._unpack(targets[0], value)
            return
        ty = self._expr(value)
        if isinstance(ty, Array):
            raise self.fail(stmt, "assigning an array to a variable",
                            "arrays cannot be renamed or copied in device code",
                            "Use the array parameter directly.")
        for target in targets:
            self._store(target, ty, value)

    def _unpack(self, target: ast.Tuple, value):
        if isinstance(value, ast.Tuple):
            if len(value.elts) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(value.elts)} values into "
                                 f"{len(target.elts)} targets", "tuple assignment")
            types = [self._expr(v) for v in value.elts]
            for elt, v, ty in zip(target.elts, value.elts, types):
                if isinstance(ty, Array):
                    raise self.fail(v, "an array in a tuple", "tuples hold scalars only")
                self._store(elt, ty, v)
            return
        ty = self._expr(value, allow_tuple=True)
        if ty is None:
            for elt in target.elts:
                if isinstance(elt, ast.Name):
                    self._set_def(elt, None)
            return
        if not isinstance(ty, TupleType):
            raise self.error(value, f"cannot unpack a {ty!r} value into {len(target.elts)} "
                             "targets", "tuple assignment",
                             "Unpack a tuple literal or a call that returns a tuple.")
        if len(ty.items) != len(target.elts):
            raise self.error(target, f"cannot unpack {len(ty.items)} values into "
                             f"{len(target.elts)} targets", "tuple assignment")
        for elt, item in zip(target.elts, ty.items):
            self._store(elt, item, None)

    def _store(self, target, ty, value_node):
        if isinstance(target, ast.Name):
            if ty is not None and not isinstance(ty, Scalar):
                raise self.fail(target, f"assigning {ty!r} to {target.id}",
                                "variables hold scalars")
            self._set_def(target, ty)
        elif isinstance(target, ast.Subscript):
            self._subscript_target(target)
            if ty is not None and not isinstance(ty, Scalar):
                raise self.fail(target, f"storing {ty!r} into an array element",
                                "array elements hold scalars")
        elif isinstance(target, ast.Tuple):
            raise self.fail(target, "nested tuple unpacking", "", "Unpack one level at a time.")
        else:
            raise self.fail(target, f"assignment to {type(target).__name__.lower()}",
                            "only variables and array elements can be assigned")

    def _augassign(self, stmt: ast.AugAssign):
        op = BINOPS.get(type(stmt.op))
        if op is None:
            raise self.fail(stmt, "the @= operator", "matrix products are not in the subset")
        rt = self._expr(stmt.value)
        if isinstance(stmt.target, ast.Name):
            key = aug_key(stmt)
            lt = self._use_type(key, stmt.target.id, stmt)
            if lt is None or rt is None:
                self._set_def(stmt.target, None)
                return
            res = self._arith(stmt, op, lt, rt)
            self._set_def(stmt.target, res)
        else:
            elem = self._subscript_target(stmt.target)
            if rt is not None:
                self._arith(stmt, op, elem, rt)

    def _for(self, stmt: ast.For):
        it = stmt.iter
        if not (isinstance(it, ast.Call) and self._callee_value(it.func) is range):
            raise self.fail(it, "a for loop over anything but range()",
                            "only counted loops exist in OpenCL",
                            "Write `for i in range(start, stop, step)`.")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.fail(it, "range() with these arguments", "",
                            "Use range(stop), range(start, stop) or range(start, stop, step).")
        types = [self._expr(a) for a in it.args]
        if any(t is None for t in types):
            self._set_def(stmt.target, None)
            return
        for a, ty in zip(it.args, types):
            if not isinstance(ty, Scalar):
                raise self.fail(a, f"range() over {ty!r}", "range needs integers")
        try:
            var_type = range_type(types)
        except TypeRuleError as err:
            raise self.fail(it, "this range()", str(err), "Convert the arguments with int().")
        args = list(it.args)
        if len(args) == 1:
            args = [None, args[0], None]
        elif len(args) == 2:
            args = args + [None]
        step_const = None
        if args[2] is not None and isinstance(args[2], ast.Constant):
            step_const = int(args[2].value)
            if step_const == 0:
                raise self.error(args[2], "range() step must not be zero", "range step",
                                 "Use a step of 1 or more, or a negative step.")
        if args[2] is None:
            step_const = 1
        tmap = dict(zip([a for a in it.args], types))
        self.t.ranges[id(stmt)] = RangeInfo(
            tuple(args), tuple(tmap.get(a) if a is not None else None for a in args),
            var_type, step_const)
        self._set_def(stmt.target, var_type)

    # -------------------------------------------------------------- expressions
    def _soft(self):
        if self.strict:  # pragma: no cover - callers raise their own errors in strict mode
            raise AssertionError("unknown type in strict mode")
        raise _Soft()

    def _expr(self, node, allow_void=False, allow_tuple=False):
        ty = self._expr_inner(node, allow_void, allow_tuple)
        if ty is None and self.strict and not allow_void:
            raise self.error(node, "cannot determine the type of this expression", "types")
        if ty is not None:
            self.t.expr_types[id(node)] = ty
        if isinstance(ty, TupleType) and not allow_tuple:
            raise self.fail(node, "a tuple value here",
                            "tuples may only be returned or unpacked",
                            "Write `x, y = f(...)` first.")
        return ty

    def _expr_inner(self, node, allow_void, allow_tuple):
        if isinstance(node, ast.Constant):
            if type(node.value) not in (int, float, bool):
                what = {str: "a string", bytes: "a bytes literal", type(None): "None",
                        complex: "a complex number", type(Ellipsis): "..."}.get(
                    type(node.value), repr(node.value))
                raise self.fail(node, what, "only int, float and bool values exist in OpenCL",
                                "Use numbers; return a status code instead of a string.")
            ty = const_type(node.value)
            if ty is None:
                raise self.fail(node, f"the constant {node.value!r}",
                                "integers must fit in 64 bits")
            self.t.consts[id(node)] = (node.value, ty)
            return ty
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return self._use_type(id(node), node.id, node)
            return self._global_value(node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.BinOp):
            op = BINOPS.get(type(node.op))
            if op is None:
                raise self.fail(node, "the @ operator", "matrix products are not in the subset")
            lt, rt = self._expr(node.left), self._expr(node.right)
            if lt is None or rt is None:
                return None
            return self._arith(node, op, lt, rt)
        if isinstance(node, ast.UnaryOp):
            ty = self._scalar(node.operand)
            if ty is None:
                return None
            try:
                if isinstance(node.op, ast.Not):
                    return BOOL
                if isinstance(node.op, (ast.USub, ast.UAdd)):
                    return negate_result(ty)
                return invert_result(ty)
            except TypeRuleError as err:
                raise self.fail(node, "this use of ~", str(err),
                                "Write `not x` for a bool, or ~int(x).")
        if isinstance(node, ast.BoolOp):
            types = [self._scalar(v) for v in node.values]
            if any(t is None for t in types):
                return None
            res = types[0]
            for t in types[1:]:
                res = unify(res, t)
            return res
        if isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in CMPOPS:
                    name = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
                            ast.NotIn: "not in"}[type(op)]
                    raise self.fail(node, f"the `{name}` operator",
                                    "only numeric comparisons exist in OpenCL",
                                    "Compare numbers with ==, !=, <, <=, >, >=.")
            types = [self._scalar(v) for v in [node.left] + node.comparators]
            if any(t is None for t in types):
                return None
            return BOOL
        if isinstance(node, ast.IfExp):
            self._test(node.test)
            a, b = self._scalar(node.body), self._scalar(node.orelse)
            if a is None or b is None:
                return None
            return unify(a, b)
        if isinstance(node, ast.Call):
            return self._call(node, allow_void)
        if isinstance(node, ast.Tuple):
            if not allow_tuple:
                raise self.fail(node, "a tuple value here",
                                "tuples may only be returned or unpacked",
                                "Unpack it first: x, y = ...")
            types = [self._scalar(e) for e in node.elts]
            if any(t is None for t in types):
                return None
            return TupleType(tuple(types))
        raise self.fail(node, f"the expression {type(node).__name__}", "it is not in the subset")

    def _scalar(self, node):
        ty = self._expr(node)
        if ty is not None and not isinstance(ty, Scalar):
            raise self.fail(node, f"a {ty!r} value here", "this operation needs a number",
                            "Index the array: a[i].")
        return ty

    def _arith(self, node, op, lt, rt):
        if not isinstance(lt, Scalar) or not isinstance(rt, Scalar):
            raise self.fail(node, f"{op} on {lt!r} and {rt!r}", "arithmetic needs numbers",
                            "Index the array: a[i].")
        try:
            return arith_result(op, lt, rt)[0]
        except TypeRuleError as err:
            raise self.fail(node, f"{lt!r} {op} {rt!r}", str(err),
                            "Convert the operands with int() or float() first.")

    def _use_type(self, key, name, node):
        defs = self.reach.get(key)
        if defs is None:  # unreachable use
            self._soft()
        # (a user's local assigned on some path: the frontend's definite assignment, which
        # knows Python's rules -- a loop's else, its breaks -- put a check before any read
        # that may find it unassigned, raising UnboundLocalError, hpu._unbound; a flag this
        # flow analysis cannot follow, `for ... else` made a flag by hpu._iteration, would
        # keep the function off the device for nothing)
        users = self.ctx.unbound_checked and not name.startswith("hpu_")
        if UNDEF in defs and not ((name.startswith(LATE) or users) and len(defs) > 1):
            raise self.error(node, f"variable {name} may be used before it is assigned",
                             "unassigned variable",
                             f"Assign {name} before this line on every path (for example "
                             "before a loop that may run zero times).")
        types = [self.t.def_types.get(d) for d in self._ordered(defs)]
        known = [t for t in types if t is not None]
        if not known or (self.strict and len(known) != len(types)):
            if self.strict:
                raise self.error(node, f"cannot determine the type of {name}", "types")
            return None
        if any(isinstance(t, Array) for t in known):
            if len(known) != 1:  # pragma: no cover - arrays cannot be reassigned
                raise self.error(node, f"{name} is an array on some paths only", "array")
            ty = known[0]
        else:
            ty = known[0]
            for t in known[1:]:
                ty = unify(ty, t)
        web = self.t.def_webs[self._ordered(defs)[0]]
        self.t.use_webs[key] = (web, ty)
        return ty

    def _ordered(self, defs):
        """Definitions in source order (sets of ids have no stable order)."""
        return sorted((d for d in defs if d != UNDEF), key=self.def_order.__getitem__)

    # ---------------------------------------------------------- global names
    def _resolve(self, node):
        """``(found, value, dotted name)`` of a non-local Name or an Attribute chain."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return False, None, node.id
            found, value = self.src.lookup(node.id)
            return found, value, node.id
        if isinstance(node, ast.Attribute):
            found, base, dotted = self._resolve(node.value)
            name = f"{dotted}.{node.attr}"
            if not found:
                return False, None, name
            if not hasattr(base, node.attr):
                raise self.error(node, f"{dotted} has no attribute {node.attr}",
                                 "attribute", "Check the spelling.")
            return True, getattr(base, node.attr), name
        return False, None, "<expression>"

    def _constant_value(self, node, value, dotted):
        ty = const_type(value)
        if ty is None:
            if isinstance(value, (int, np.integer)):
                raise self.error(node, f"the constant {dotted} = {value} does not fit in 64 "
                                 "bits", "constant")
            raise self.fail(node, f"the global {dotted} ({type(value).__name__})",
                            "only int, float and bool module constants can be used",
                            "Pass the value as a parameter.")
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            value = value.item()
        self.t.consts[id(node)] = (value, ty)
        return ty

    def _global_value(self, node: ast.Name):
        found, value, dotted = self._resolve(node)
        if not found:
            raise self.error(node, f"name {node.id!r} is not defined", "undefined name",
                             "Define it at module level or pass it as a parameter.")
        return self._constant_value(node, value, dotted)

    def _attribute(self, node: ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id in self.locals:
            base = self._expr(node.value)
            if base is None:
                return None
            if isinstance(base, Array) and node.attr == "size":
                return INT64
            if isinstance(base, Array) and node.attr == "shape":
                raise self.fail(node, "a.shape on its own", "", "Write a.shape[0] or len(a).")
            raise self.fail(node, f"the attribute .{node.attr} of a {base!r}",
                            "only a.size, a.shape[0] and len(a) exist for arrays")
        found, value, dotted = self._resolve(node)
        if not found:
            raise self.error(node, f"name {dotted.split('.')[0]!r} is not defined",
                             "undefined name")
        return self._constant_value(node, value, dotted)

    # -------------------------------------------------------------- subscripts
    def _array_of(self, node):
        if not isinstance(node, ast.Name) or node.id not in self.locals:
            raise self.fail(node, "indexing something other than an array variable",
                            "only 1-D array parameters (and private arrays) can be indexed")
        ty = self._expr(node)
        if ty is None:
            return None
        if not isinstance(ty, Array):
            raise self.fail(node, f"indexing the {ty!r} value {node.id}",
                            "only arrays can be indexed")
        return ty

    def _index(self, node: ast.Subscript):
        sl = node.slice
        if isinstance(sl, ast.Tuple):
            raise self.fail(node, "a multi-dimensional index", "arrays are 1-D",
                            "Flatten the array and index it with i * ncols + j.")
        ty = self._scalar(sl)
        if ty is not None and (not ty.is_intlike or ty == BOOL):
            raise self.fail(sl, f"an index of type {ty!r}", "indices are integers",
                            "Convert with int().")
        return ty

    def _subscript(self, node: ast.Subscript):
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            base = self._array_of(node.value.value)
            if not (isinstance(node.slice, ast.Constant) and node.slice.value in (0, -1)):
                raise self.fail(node, "a.shape[k] for k other than 0", "arrays are 1-D")
            return None if base is None else INT64
        arr = self._array_of(node.value)
        idx = self._index(node)
        if arr is None or idx is None:
            return None
        return arr.elem

    def _subscript_target(self, node: ast.Subscript):
        arr = self._array_of(node.value)
        idx = self._index(node)
        if arr is None or idx is None:
            self._soft()
        self.t.expr_types[id(node)] = arr.elem
        web = self.t.use_webs.get(id(node.value), (None,))[0]
        if web is not None and web.param_index is not None:
            self.t.writes_arrays = True
        return arr.elem

    # -------------------------------------------------------------------- calls
    def _callee_value(self, func):
        if isinstance(func, (ast.Name, ast.Attribute)):
            if isinstance(func, ast.Name) and func.id in self.locals:
                return None
            found, value, _ = self._resolve(func)
            return value if found else None
        return None

    def _is_np_empty(self, node) -> bool:
        return isinstance(node, ast.Call) and self._callee_value(node.func) is np.empty

    def _np_empty(self, node: ast.Call, target: ast.Name):
        if not self.ctx.private_arrays:
            raise self.error(node, "allocation is not supported in hpu functions (np.empty)",
                             "allocation", _refused_hint("alloc"))
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords}
        if set(kw) - {"dtype"} or len(args) + len(kw) != 2 or not args:
            raise self.fail(node, "this np.empty(...) call", "",
                            "Write np.empty(N, np.int64) with N a constant.")
        size_node = args[0]
        dtype_node = args[1] if len(args) > 1 else kw["dtype"]
        size = None
        if isinstance(size_node, ast.Constant) and type(size_node.value) is int:
            size = size_node.value
        elif isinstance(size_node, (ast.Name, ast.Attribute)):
            found, value, _ = self._resolve(size_node)
            if found and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                size = int(value)
        if size is None or size <= 0:
            raise self.error(size_node, "the size of a private array must be a positive "
                             "constant", "np.empty size",
                             "Use an int literal or a module-level int constant.")
        dtype = None
        if isinstance(dtype_node, ast.Constant) and isinstance(dtype_node.value, str):
            dtype = dtype_node.value
        else:
            found, value, _ = self._resolve(dtype_node)
            if found:
                dtype = value
        try:
            arr = Array(np.dtype(dtype), "private")
        except (TypeError, TypeRuleError) as err:
            raise self.error(dtype_node, f"np.empty dtype: {err}", "np.empty dtype") from None
        self.t.calls[id(node)] = CallInfo("empty", "np.empty", target=(size, arr))
        self.private_len[id(target)] = size
        self.t.expr_types[id(node)] = arr
        return arr

    def _call(self, node: ast.Call, allow_void):
        func = node.func
        if isinstance(func, ast.Name) and func.id in (SLICE_COPY, REDUCE_FIRST, REDUCE_PAIR):
            # hpu's checks (hpu/_views.py, hpu/_reductions.py): operations of the
            # translator, not helpers (their Python definitions raise, which device code
            # cannot)
            args = self._positional(node, 3 if func.id == REDUCE_PAIR else 2, func.id)
            types = [self._scalar(a) for a in args]
            if any(t is None for t in types):
                return None
            self.t.calls[id(node)] = CallInfo("intrinsic", func.id, tuple(args), tuple(types))
            return INT64
        if isinstance(func, ast.Name) and func.id == DIGITS:
            # len(str(x)) of an integer (hpu._functional.digits_counted): a counting loop
            args = self._positional(node, 1, "len(str())")
            ty = self._scalar(args[0])
            if ty is None:
                return None
            if not ty.is_intlike or ty == BOOL:
                raise self.fail(node, f"len(str(x)) of a {ty!r}",
                                "the device counts the digits of integers only")
            self.t.calls[id(node)] = CallInfo("intrinsic", DIGITS, tuple(args), (ty,))
            return INT64
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in self.locals:
            raise self.fail(node, f"calling the method .{func.attr}()",
                            "methods are not in the subset",
                            "Write it as a loop, or compute it in Python and pass it in.")
        if not isinstance(func, (ast.Name, ast.Attribute)):
            raise self.fail(node, "calling a computed function", "",
                            "Call a module-level function by name.")
        if isinstance(func, ast.Name) and func.id in self.locals:
            raise self.fail(node, f"calling the variable {func.id}",
                            "functions cannot be passed around in device code")
        found, value, dotted = self._resolve(func)
        if not found:
            raise self.error(node, f"call to unknown function {dotted}", "unknown function",
                             "Define it at module level (hpu translates it too) or use a "
                             "builtin the subset supports.")
        if value is np.empty:
            raise self.fail(node, "np.empty(...) here", "",
                            "Write `name = np.empty(N, dtype)` as its own statement.")
        for kw in node.keywords:
            if kw.arg is None:
                raise self.fail(node, "**kwargs in a call", "argument lists are fixed")
        if _member(BUILTINS, value):
            return self._builtin(node, BUILTINS[value])
        if any(_member(t, value) for t in (MATH_UNARY, MATH_BINARY, MATH_ROUNDING,
                                           MATH_PREDICATES)):
            return self._math(node, value, dotted)
        if value is NP_ABS or any(_member(t, value) for t in (NP_UNARY, NP_ROUNDING,
                                                              NP_EXTREMA, NP_PREDICATES)):
            return self._numpy_scalar(node, value, dotted)
        if isinstance(value, type) and _member(NP_CASTS, value) is not None:
            args = self._positional(node, 1, dotted)
            ty = self._scalar(args[0])
            if ty is None:
                return None
            target = NP_CASTS[value]
            self.t.calls[id(node)] = CallInfo("cast", dotted, tuple(args), (ty,), target=target)
            return target
        if _member(_UNSUPPORTED_MATH_HINTS, value):
            raise self.fail(node, f"{dotted}()", "Numba does not support it",
                            _UNSUPPORTED_MATH_HINTS[value])
        fn = getattr(value, "py_func", value)
        if inspect.isfunction(fn):
            return self._helper(node, value, dotted, allow_void)
        raise self.error(node, f"call to unknown function {dotted}", "unknown function",
                         "Only helpers defined with def, min, max, abs, int, float, bool, "
                         "round, len, math functions and NumPy's scalar functions (np.sqrt, "
                         "np.maximum, ...) can be called.")

    def _positional(self, node, n, name, at_least=False):
        if node.keywords:
            raise self.fail(node, f"keyword arguments to {name}()", "",
                            "Pass the arguments by position.")
        if (len(node.args) < n) if at_least else (len(node.args) != n):
            raise self.error(node, f"{name}() takes {'at least ' if at_least else ''}{n} "
                             f"argument{'s' if n != 1 else ''} here, got {len(node.args)}",
                             f"{name}()")
        return list(node.args)

    def _builtin(self, node, name):
        if name == "range":
            raise self.fail(node, "range() outside a for loop", "",
                            "Use range only as `for i in range(...)`.")
        if name in ("min", "max"):
            if len(node.args) < 2:
                raise self.fail(node, f"{name}() of a single argument (an iterable)",
                                "only min/max of two or more numbers exist in device code",
                                f"Write {name}(a, b, ...) or a loop.")
            args = self._positional(node, 2, name, at_least=True)
            types = [self._scalar(a) for a in args]
            if any(t is None for t in types):
                return None
            res = types[0]
            for t in types[1:]:
                res = unify(res, t)
            self.t.calls[id(node)] = CallInfo("builtin", name, tuple(args), tuple(types))
            return res
        if name == "len":
            args = self._positional(node, 1, name)
            ty = self._expr(args[0])
            if ty is None:
                return None
            if not isinstance(ty, Array):
                raise self.fail(node, f"len() of a {ty!r}", "only arrays have a length")
            self.t.calls[id(node)] = CallInfo("builtin", name, tuple(args), (ty,))
            return INT64
        if name == "round" and len(node.args) == 2:
            raise self.fail(node, "round(x, ndigits)", "only round(x) is in the subset",
                            "Scale, round and divide explicitly.")
        if name in ("int", "float", "bool") and len(node.args) != 1:
            raise self.fail(node, f"{name}() with {len(node.args)} arguments",
                            "only conversions of one number exist in device code")
        args = self._positional(node, 1, name)
        ty = self._scalar(args[0])
        if ty is None:
            return None
        self.t.calls[id(node)] = CallInfo("builtin", name, tuple(args), (ty,))
        if name == "abs":
            return abs_result(ty)
        if name == "round":
            round_input(ty)
            return INT64
        if name == "int":
            return int_result(ty)
        if name == "float":
            return float_result(ty)
        return BOOL  # bool

    def _math(self, node, value, dotted):
        if _member(MATH_BINARY, value):
            args = self._positional(node, 2, dotted)
            a, b = (self._scalar(x) for x in args)
            if a is None or b is None:
                return None
            cname = MATH_BINARY[value]
            try:
                res = math_binary_result(cname, a, b)
            except TypeRuleError as err:
                raise self.fail(node, f"{dotted} with these arguments", str(err),
                                "Convert the exponent with int() or float().")
            self.t.calls[id(node)] = CallInfo("math2", cname, tuple(args), (a, b), target=res)
            return res
        args = self._positional(node, 1, dotted)
        a = self._scalar(args[0])
        if a is None:
            return None
        if _member(MATH_UNARY, value):
            res = math_unary_result(a)
            self.t.calls[id(node)] = CallInfo("math", MATH_UNARY[value], tuple(args), (a,),
                                              target=res)
            return res
        if _member(MATH_ROUNDING, value):
            res = floor_result(a)
            self.t.calls[id(node)] = CallInfo("mathround", MATH_ROUNDING[value], tuple(args),
                                              (a,), target=res)
            return res
        self.t.calls[id(node)] = CallInfo("mathpred", MATH_PREDICATES[value], tuple(args), (a,),
                                          target=BOOL)
        return BOOL

    def _numpy_scalar(self, node, value, dotted):
        """NumPy's scalar functions of numbers (``np.sqrt(x)``, ``np.maximum(a, b)``), with
        NumPy's types and NumPy's answers: a NaN and signed zeros as NumPy's loops give them.
        An argument type where NumPy and Numba (the CPU path) disagree runs on the CPU."""
        binary = _member(NP_EXTREMA, value) is not None
        args = self._positional(node, 2 if binary else 1, dotted)
        types = [self._scalar(a) for a in args]
        if any(t is None for t in types):
            return None
        for t in types:
            if t == BOOL or (not t.is_float and t.dtype.itemsize < 4):
                raise self.fail(node, f"{dotted}() of a {t!r}",
                                "NumPy's and Numba's result types differ for bools and "
                                "narrow ints", "Convert it with int() or float() first.")
        a = types[0]
        if binary:
            res = unify(a, types[1])
            self.t.calls[id(node)] = CallInfo("npext", NP_EXTREMA[value], tuple(args),
                                              tuple(types), target=res)
            return res
        if value is NP_ABS:
            self.t.calls[id(node)] = CallInfo("builtin", "abs", tuple(args), (a,))
            return abs_result(a)
        if _member(NP_PREDICATES, value):
            self.t.calls[id(node)] = CallInfo("mathpred", NP_PREDICATES[value], tuple(args),
                                              (a,), target=BOOL)
            return BOOL
        if _member(NP_ROUNDING, value):
            if not a.is_float:
                raise self.fail(node, f"{dotted}() of a {a!r}", "NumPy 2 keeps an int's type "
                                "here", "Leave the int as it is, or round a float.")
            self.t.calls[id(node)] = CallInfo("math", NP_ROUNDING[value], tuple(args), (a,),
                                              target=a)
            return a
        res = a if a.is_float else FLOAT64
        self.t.calls[id(node)] = CallInfo("math", NP_UNARY[value], tuple(args), (a,),
                                          target=res)
        return res

    def _helper(self, node, value, dotted, allow_void):
        callee_src = self.ctx.source_of(value)
        params = callee_src.tree.args
        if params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs:
            raise self.fail(node, f"calling {dotted}, which has *args, **kwargs or "
                            "keyword-only parameters", "device functions have fixed parameters")
        names = [a.arg for a in params.args]
        if len(node.args) > len(names):
            raise self.error(node, f"{dotted}() takes {len(names)} arguments, got "
                             f"{len(node.args)}", "call")
        bound: dict[str, ast.AST] = dict(zip(names, node.args))
        for kw in node.keywords:
            if kw.arg not in names:
                raise self.error(node, f"{dotted}() has no parameter {kw.arg!r}", "call")
            if kw.arg in bound:
                raise self.error(node, f"{dotted}() got two values for {kw.arg!r}", "call")
            bound[kw.arg] = kw.value
        defaults = dict(zip(names[len(names) - len(params.defaults):],
                            self.ctx.folded(callee_src).args.defaults))
        ordered = []
        for n in names:
            if n in bound:
                ordered.append(bound[n])
            elif n in defaults:
                ordered.append(defaults[n])
            else:
                raise self.error(node, f"{dotted}() is missing the argument {n!r}", "call")
        types = []
        for n, a in zip(names, ordered):
            if n not in bound:
                ty = const_type(a.value) if isinstance(a, ast.Constant) else None
                if ty is None:
                    raise self.fail(a, "this default value", "defaults must be numbers")
                self.t.consts[id(a)] = (a.value, ty)
                self.t.expr_types[id(a)] = ty
            else:
                ty = self._expr(a)
            types.append(ty)
        if any(t is None for t in types):
            return None
        for a, ty in zip(ordered, types):
            if isinstance(ty, Array) and not isinstance(a, ast.Name):
                raise self.fail(a, "passing an array expression", "",
                                "Pass the array variable itself.")
        try:
            callee = self.ctx.typing(callee_src, tuple(types), node, self.src)
        except TranslationError:
            if not self.strict:  # the types may still change; the strict pass decides
                return None
            raise
        if callee.writes_arrays:
            self.t.writes_arrays = True
        self.t.calls[id(node)] = CallInfo("helper", callee_src.name, tuple(ordered),
                                          tuple(types), callee=callee)
        if callee.return_type is None and not allow_void:
            raise self.error(node, f"{dotted}() returns no value", "void call",
                             f"Call {dotted}(...) as a statement.")
        return callee.return_type

    # ---------------------------------------------------------------- returns
    def _type_return(self):
        types = []
        bare = []
        for ret in self.return_nodes:
            if ret.value is None:
                bare.append(ret)
            else:
                types.append((ret, self.t.expr_types[id(ret.value)]))
        if self.t.falls_off_end:
            bare.append(self.fn.body[-1])
        if types and bare:
            where = bare[0]
            raise self.error(where, f"{self.src.name} returns a value on some paths and nothing "
                             "on others (here: a bare return or the end of the function)",
                             "missing return value",
                             "Return a value on every path.")
        if not types:
            self.t.return_type = None
            return
        res = types[0][1]
        for node, ty in types[1:]:
            if isinstance(res, Array) or isinstance(ty, Array):
                break
            if isinstance(res, TupleType) != isinstance(ty, TupleType) or (
                    isinstance(res, TupleType) and len(res.items) != len(ty.items)):
                raise self.error(node, f"{self.src.name} returns {ty!r} here but {res!r} "
                                 "elsewhere", "return type", "Return the same shape everywhere.")
            if isinstance(res, TupleType):
                res = TupleType(tuple(unify(a, b) for a, b in zip(res.items, ty.items)))
            else:
                res = unify(res, ty)
        for node, ty in types:
            if isinstance(ty, Array):
                raise self.fail(node, "returning an array", "device functions return scalars",
                                "Write results into an array parameter.")
        self.t.return_type = res

    # -------------------------------------------------------------- webs done
    def _finish_webs(self):
        t = self.t
        for w in t.webs:
            types = [t.def_types.get(d) for d in w.defs]
            if any(x is None for x in types):
                bad = w.defs[types.index(None)]
                raise self.error(self.def_node[bad], f"cannot determine the type of {w.name}",
                                 "types")
            if any(isinstance(x, Array) for x in types):
                if len(types) != 1:
                    raise self.error(self.def_node[w.defs[1]], f"the array {w.name} is assigned "
                                     "more than once", "array assignment",
                                     "Allocate each private array once, with its own name.")
                w.type = types[0]
                w.private_len = self.private_len.get(w.defs[0])
                continue
            ty = types[0]
            for x in types[1:]:
                ty = unify(ty, x)
            w.type = ty
        # every use that reads a web through a narrower type must see exact values
        for key, (web, use_ty) in t.use_webs.items():
            if use_ty == web.type or isinstance(web.type, Array):
                continue
            for d in self._ordered(self.reach[key]):
                dty = t.def_types[d]
                if not is_lossless(dty, web.type):
                    line = self.src.line_of(self.def_node[d])
                    other = next(x for x in web.defs if t.def_types[x] != dty)
                    raise self.error(
                        self.use_node[key],
                        f"variable {web.name} is {dty.name} (line {line}) and "
                        f"{t.def_types[other].name} (line {self.src.line_of(self.def_node[other])})"
                        f"; here Numba uses its {use_ty.name} value, which one OpenCL variable "
                        f"of type {web.type.name} cannot hold exactly", "variable type change",
                        f"Give {web.name} one type (for example write {web.name} = float(...) "
                        f"at line {line}), or use two names.")

    # --------------------------------------------------- evaluation order
    def _check_order(self):
        """Refuse expressions whose result would depend on C's unspecified evaluation
        order: a call that writes arrays next to an operand that reads them."""
        for stmt in ast.walk(self.fn):
            if id(stmt) not in self.t.reachable:
                continue
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript):
                if self._effects(stmt.value)[0]:
                    raise self._order_error(stmt, stmt.value)
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Subscript):
                        self._unsequenced(stmt, [target.slice, stmt.value])
            for node in ast.walk(stmt):
                if isinstance(node, ast.BinOp):
                    self._unsequenced(node, [node.left, node.right])
                elif isinstance(node, ast.Compare):
                    self._unsequenced(node, [node.left, node.comparators[0]])
                elif isinstance(node, ast.Call):
                    self._unsequenced(node, list(node.args) + [k.value for k in node.keywords])
                elif isinstance(node, ast.Tuple):
                    self._unsequenced(node, list(node.elts))

    def _effects(self, expr):
        """(writes arrays, reads arrays) of an expression."""
        writes = reads = False
        for node in ast.walk(expr):
            if isinstance(node, ast.Call):
                info = self.t.calls.get(id(node))
                if info is not None and info.kind == "helper":
                    if info.callee.writes_arrays:
                        writes = True
                    if any(isinstance(ty, Array) for ty in info.arg_types):
                        reads = True
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                reads = True
        return writes, reads

    def _unsequenced(self, node, operands):
        effects = [self._effects(o) for o in operands]
        for i, (w, _) in enumerate(effects):
            if not w:
                continue
            for j, (w2, r2) in enumerate(effects):
                if j != i and (w2 or r2):
                    raise self._order_error(node, operands[i])

    def _order_error(self, node, culprit):
        return self.error(node, "this expression calls a function that writes arrays next to "
                          "another array access; OpenCL C does not fix the order of evaluation "
                          "as Python does", "evaluation order",
                          f"Assign the result of {ast.unparse(culprit)} to a variable in its "
                          "own statement first.")
