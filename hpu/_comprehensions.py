"""List comprehensions given to Numba as the loops they stand for.

Why
===

Since Python 3.12 (PEP 709) a list comprehension is inlined into its function, guarded by an
entry of the function's exception table that puts its loop variable back.  Numba 0.68
compiles such a function, but an exception raised later in it by a function it calls is
lost: the call returns as if nothing had been raised (a wrong answer) or the process dies
(a segmentation fault).  Measured with Numba 0.68.0 and 0.68.1 on Python 3.12.1 and 3.13.0,
and first seen on the NVIDIA H200 machine (Python 3.12.3): a list quicksort that never
shrinks killed the process instead of raising hpu's RecursionError, and::

    @numba.njit
    def f(arr):
        left = [x for x in arr if x <= arr[0]]
        g(1)              # raises ValueError in Python; compiled, f returns ``left``
        return left

Python 3.11 keeps comprehensions as functions of their own and is not affected.  The same
function written with a loop and ``append`` compiles correctly on every version.

So hpu gives Numba that loop (:func:`comprehensions_as_loops`, on every version: one path,
tested where CI runs).  A comprehension that its statement evaluates every time becomes,
before the statement, ``hpu__lcN = []`` and the ``for``/``if`` nest that appends to it, its
loop variables renamed (``hpu__cvN_x``) so that they do not leak into the function, as in
Python 3 they do not.  The calls that the statement makes *before* the comprehension (in
Python's order of evaluation) are taken out first, each into a name of its own, so every
call still happens in Python's order -- ``qs(left) + [p] + qs([x for x in a if x > p])``
sorts the left part before it builds the right one.  A ``return``/assignment of a
conditional expression is an ``if`` first (``return a if c else [...]``).

A comprehension that is evaluated only under a condition inside an expression (the branch of
a nested conditional expression, after ``and``/``or``, in a ``while`` test, in a
``lambda``) cannot be moved; :func:`inlined_comprehension_line` finds one left in the
compiled function (the ``LOAD_FAST_AND_CLEAR`` of an inlined comprehension), and on Python
3.12 and later the function runs as plain Python, with the reason.
"""
from __future__ import annotations

import ast
import copy
import dis
import sys

__all__ = ["comprehensions_as_loops", "inlined_comprehension_line", "AFFECTED"]

#: Pythons whose inlined comprehensions Numba mishandles (see the module's docstring)
AFFECTED = sys.version_info >= (3, 12)


def comprehensions_as_loops(tree: ast.FunctionDef) -> int:
    """Rewrites ``tree``'s body in place (see the module); returns how many comprehensions
    became loops."""
    h = _Hoister()
    tree.body = h.block(tree.body)
    ast.fix_missing_locations(tree)
    return h.count


def inlined_comprehension_line(code) -> int | None:
    """The line of an inlined list comprehension in ``code`` (Python 3.12+), else None."""
    if not AFFECTED:
        return None
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_FAST_AND_CLEAR":
            pos = getattr(ins, "positions", None)
            return (pos.lineno if pos is not None and pos.lineno else None) or \
                code.co_firstlineno
    return None


def _has_comp(node) -> bool:
    return any(isinstance(n, ast.ListComp) for n in ast.walk(node))


def _kids(e) -> list[tuple]:
    """``e``'s sub-expressions that Python evaluates whenever it evaluates ``e``, in that
    order, each as ``(child, put)`` with ``put(new)`` replacing it in ``e``.  Not the
    branches of a conditional expression, the operands after the first of ``and``/``or``,
    the comparisons after the first of a chain, a lambda's body, a comprehension's inside."""
    out = []

    def field(name, node=e):
        v = getattr(node, name, None)
        if isinstance(v, ast.expr):
            out.append((v, lambda new, n=node, f=name: setattr(n, f, new)))

    def items(name, node=e):
        seq = getattr(node, name, None) or []
        for i, v in enumerate(seq):
            if isinstance(v, ast.Starred):
                field("value", v)
            elif isinstance(v, ast.expr):
                out.append((v, lambda new, s=seq, i=i: s.__setitem__(i, new)))

    if isinstance(e, ast.Call):
        items("args")                   # the callee itself is never taken out (a bound
        for kw in e.keywords:           # method is no value to Numba)
            field("value", kw)
    elif isinstance(e, ast.BinOp):
        field("left")
        field("right")
    elif isinstance(e, ast.UnaryOp):
        field("operand")
    elif isinstance(e, ast.BoolOp):
        out.append((e.values[0], lambda new: e.values.__setitem__(0, new)))
    elif isinstance(e, ast.Compare):
        field("left")
        out.append((e.comparators[0], lambda new: e.comparators.__setitem__(0, new)))
    elif isinstance(e, ast.IfExp):
        field("test")
    elif isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        items("elts")
    elif isinstance(e, ast.Subscript):
        field("value")
        field("slice")
    elif isinstance(e, ast.Slice):
        field("lower")
        field("upper")
        field("step")
    elif isinstance(e, ast.Attribute):
        field("value")
    elif isinstance(e, ast.Starred):
        field("value")
    elif isinstance(e, ast.ListComp):
        out.append((e.generators[0].iter,
                    lambda new: setattr(e.generators[0], "iter", new)))
    elif isinstance(e, (ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        out.append((e.generators[0].iter,
                    lambda new: setattr(e.generators[0], "iter", new)))
    elif isinstance(e, ast.Dict):
        for i, k in enumerate(e.keys):
            if k is not None:
                out.append((k, lambda new, i=i: e.keys.__setitem__(i, new)))
            out.append((e.values[i], lambda new, i=i: e.values.__setitem__(i, new)))
    elif isinstance(e, ast.JoinedStr):
        items("values")
    elif isinstance(e, ast.FormattedValue):
        field("value")
    elif isinstance(e, ast.NamedExpr):
        field("value")
    return out


def _trivial(e) -> bool:
    return isinstance(e, (ast.Constant, ast.Name))


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            new = ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
            new.hpu_text = node.id          # error messages show the user's name
            return new
        return node


class _Hoister:
    """Takes the expressions :meth:`target` picks out of the statements that evaluate them
    every time, into the statements :meth:`build` makes, before their statement.  List
    comprehensions here; :mod:`hpu._reductions` takes whole-array reductions the same way."""

    def __init__(self):
        self.k = 0
        self.count = 0

    def target(self, e) -> bool:
        return isinstance(e, ast.ListComp)

    def build(self, e, pre: list):
        """The statements computing ``e`` appended to ``pre``; the expression standing for
        it afterwards."""
        out = self.fresh("lc")
        pre.extend(self.loop(e, out))
        name = ast.copy_location(ast.Name(out, ast.Load()), e)
        name.hpu_text = ast.unparse(e)  # error messages show the comprehension
        return name

    def has(self, node) -> bool:
        return any(isinstance(n, ast.expr) and self.target(n) for n in ast.walk(node))

    def movable(self, e) -> bool:
        """``e`` holds a target that is evaluated whenever ``e`` is."""
        return self.target(e) or any(self.movable(c) for c, _ in _kids(e))

    def fresh(self, what: str) -> str:
        self.k += 1
        return f"hpu__{what}{self.k}"

    def block(self, stmts: list) -> list:
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s) -> list:
        if not self.has(s):
            return [s]
        s = _split_conditional(s, self.has)
        if isinstance(s, ast.If):
            pre = self.before(s, "test")
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return pre + [s]
        if isinstance(s, ast.For):
            pre = self.before(s, "iter")
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return pre + [s]
        if isinstance(s, ast.While):        # its test is evaluated again every time round
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return [s]
        if isinstance(s, ast.With):
            s.body = self.block(s.body)
            return [s]
        if isinstance(s, ast.Try):
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            s.finalbody = self.block(s.finalbody)
            for h in s.handlers:
                h.body = self.block(h.body)
            return [s]
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
            return self.before(s, "value") + [s]
        if isinstance(s, ast.Raise):
            return self.before(s, "exc") + [s]
        return [s]                          # nested definitions and the rest: as written

    def before(self, holder, name: str) -> list:
        """The statements that take the movable comprehensions out of ``holder.name``
        (and, first, the calls evaluated before them)."""
        e = getattr(holder, name, None)
        if not isinstance(e, ast.expr) or not self.movable(e):
            return []
        pre: list = []
        setattr(holder, name, self.take(e, pre))
        return pre

    def take(self, e, pre: list):
        if self.target(e):
            return self.build(e, pre)
        kids = _kids(e)
        last = max(i for i, (c, _) in enumerate(kids) if self.movable(c))
        for i, (c, put) in enumerate(kids):
            if i < last and not _trivial(c):
                # evaluated before the last comprehension: first, into a name of its own
                tmp = self.fresh("t")
                assign = ast.copy_location(ast.Assign([ast.Name(tmp, ast.Store())], c), c)
                pre.extend(self.stmt(assign))
                put(ast.copy_location(ast.Name(tmp, ast.Load()), c))
            elif i == last:
                put(self.take(c, pre))
        return e

    def loop(self, comp: ast.ListComp, out: str) -> list:
        self.count += 1
        names = {}
        for g in comp.generators:
            for n in ast.walk(g.target):
                if isinstance(n, ast.Name) and n.id not in names:
                    names[n.id] = f"{self.fresh('cv')}_{n.id}"
        rename = _Renamer(names)
        gens = copy.deepcopy(comp.generators)
        first_iter = gens[0].iter           # evaluated in the enclosing scope: as written
        gens = [rename.visit(g) for g in gens]
        gens[0].iter = first_iter
        elt = rename.visit(copy.deepcopy(comp.elt))
        body: list = [ast.Expr(ast.Call(ast.Attribute(ast.Name(out, ast.Load()), "append",
                                                      ast.Load()), [elt], []))]
        for g in reversed(gens):
            for cond in reversed(g.ifs):
                body = [ast.If(cond, body, [])]
            body = [ast.For(g.target, g.iter, body, [])]
        made = [ast.Assign([ast.Name(out, ast.Store())], ast.List([], ast.Load())), *body]
        for s in made:
            for n in ast.walk(s):
                if not hasattr(n, "lineno") or n.lineno is None:
                    ast.copy_location(n, comp)
        return self.block(made)             # comprehensions inside it, in turn


def _split_conditional(s, has=_has_comp):
    """``return A if c else B`` (or ``x = ...``) holding a comprehension (what ``has``
    finds) -> ``if c: return A`` / ``else: return B``: each branch's comprehension is then
    evaluated whenever its statement is."""
    if (isinstance(s, (ast.Return, ast.Assign)) and isinstance(s.value, ast.IfExp)
            and (has(s.value.body) or has(s.value.orelse))):
        def branch(v):
            t = copy.deepcopy(s)            # the targets: one copy for each branch
            t.value = v
            return t
        return ast.copy_location(ast.If(s.value.test, [branch(s.value.body)],
                                        [branch(s.value.orelse)]), s)
    return s
