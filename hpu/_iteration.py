"""``for v in a``, ``for i, v in enumerate(a)``, ``for x, y in zip(a, b)`` as index loops;
a loop's ``else`` as a flag.

Why
===

Python code walks an array by its elements far more often than by ``range(len(a))``::

    for v in a:                       # a majority vote's count, a histogram, a search
        if v == candidate:
            count += 1

A device has no iterator objects, but it runs ``for i in range(...)``; and for a 1-D
array (or a view) iterating is indexing: NumPy's iterator reads ``a[0]``, ``a[1]``, ... at
each step, so an element the body changes before the loop reaches it is read changed, as
the index loop reads it.  So :func:`array_loops_indexed` rewrites each such loop, before
slices become views (:mod:`hpu._views`), into::

    for hpu_k1 in range(len(a)):
        v = a[hpu_k1]
        ...

``enumerate(a, start)`` sets ``i = hpu_k1 + start`` first; ``zip(a, b, ...)`` runs to the
shortest.  A slice (``for v in a[lo:hi]``) is bound once to a name first, as Python
evaluates it once.  Left as written (the subset then refuses it, with its line): a loop
whose body rebinds the array's name, a target that is not a name (or a pair for
``enumerate``/one name per array for ``zip``), anything that is not an array.

A loop's ``else:`` block (``for``/``while``), which runs when the loop ends without a
``break``, becomes ``hpu_brokeN = False`` before the loop, ``hpu_brokeN = True`` before each
of the loop's own ``break``s (not a nested loop's), and ``if not hpu_brokeN:`` with the block
after it -- the same statements in the same order, with no construct the device lacks.
"""
from __future__ import annotations

import ast
import copy

from hpu._reductions import _arrayish

__all__ = ["array_loops_indexed"]


def _base(e) -> str:
    while isinstance(e, ast.Subscript):
        e = e.value
    return e.id


def array_loops_indexed(tree: ast.FunctionDef, arrays: set, shadowed=frozenset()) -> int:
    """Rewrites ``tree`` in place (see the module); returns how many loops it rewrote.
    ``arrays``: the names that are arrays in ``tree``; ``shadowed``: builtins the module
    defines itself (its own ``zip`` is not Python's)."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    count = 0

    def fresh(what):
        k = 0
        while f"hpu_{what}{k}" in used:
            k += 1
        used.add(f"hpu_{what}{k}")
        return f"hpu_{what}{k}"

    def name(n, store=False):
        return ast.Name(n, ast.Store() if store else ast.Load())

    def is_builtin(call, f):
        return (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == f and f not in shadowed and not call.keywords
                and not any(isinstance(a, ast.Starred) for a in call.args))

    class Index(ast.NodeTransformer):
        def visit_For(self, st):
            nonlocal count
            self.generic_visit(st)
            it, target = st.iter, st.target
            start = None
            if _arrayish(it, arrays) and isinstance(target, ast.Name):
                seqs, targets = [it], [target]
            elif (is_builtin(it, "enumerate") and len(it.args) in (1, 2)
                  and _arrayish(it.args[0], arrays) and isinstance(target, ast.Tuple)
                  and len(target.elts) == 2
                  and all(isinstance(t, ast.Name) for t in target.elts)):
                seqs, targets = [it.args[0]], [target.elts[1]]
                start = (target.elts[0], it.args[1] if len(it.args) == 2 else None)
            elif (is_builtin(it, "zip") and it.args
                  and all(_arrayish(a, arrays) for a in it.args)
                  and isinstance(target, ast.Tuple) and len(target.elts) == len(it.args)
                  and all(isinstance(t, ast.Name) for t in target.elts)):
                seqs, targets = list(it.args), list(target.elts)
            else:
                return st
            stored = {n.id for n in ast.walk(ast.Module(st.body + st.orelse, []))
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            if any(_base(s) in stored for s in seqs):
                return st
            pre, bound = [], []
            for s in seqs:
                if isinstance(s, ast.Name):
                    bound.append(s.id)
                else:                        # a slice: evaluated once, as Python does
                    v = fresh("seq")
                    pre.append(ast.Assign([name(v, True)], copy.deepcopy(s)))
                    bound.append(v)
            k = fresh("k")
            lengths = [ast.Call(name("len"), [name(b)], []) for b in bound]
            stop = lengths[0] if len(lengths) == 1 else ast.Call(name("min"), lengths, [])
            head = []
            if start is not None:
                counter, first = start
                if first is not None and not isinstance(first, (ast.Constant, ast.Name)):
                    v = fresh("start")       # enumerate's start: evaluated once
                    pre.append(ast.Assign([name(v, True)], copy.deepcopy(first)))
                    first = name(v)
                value = name(k) if first is None else ast.BinOp(name(k), ast.Add(),
                                                                copy.deepcopy(first))
                head.append(ast.Assign([name(counter.id, True)], value))
            for t, b in zip(targets, bound):
                head.append(ast.Assign([name(t.id, True)],
                                       ast.Subscript(name(b), name(k), ast.Load())))
            loop = ast.For(name(k, True), ast.Call(name("range"), [stop], []),
                           head + st.body, st.orelse)
            out = pre + [loop]
            for s in out:
                for n in ast.walk(s):
                    if not hasattr(n, "lineno") or n.lineno is None:
                        ast.copy_location(n, st)
            count += 1
            return out

    Index().visit(tree)
    count += _loop_else_as_flag(tree, fresh)
    ast.fix_missing_locations(tree)
    return count


def _loop_else_as_flag(tree, fresh) -> int:
    """``for ...: ... break ... else: E`` (``while`` too) as a flag the loop's own breaks
    set, and ``if not flag: E`` after it: what Python runs, in the subset's terms."""
    count = 0

    class Breaks(ast.NodeTransformer):
        """The loop's own breaks (not a nested loop's): set the flag first."""

        def __init__(self, flag):
            self.flag = flag

        def visit_Break(self, node):
            set_flag = ast.copy_location(ast.Assign([ast.Name(self.flag, ast.Store())],
                                                    ast.Constant(True)), node)
            return [set_flag, node]

        def visit_For(self, node):           # a nested loop's breaks are its own
            return node

        visit_While = visit_For

        def visit_FunctionDef(self, node):
            return node

    class Else(ast.NodeTransformer):
        def visit_For(self, st):
            nonlocal count
            self.generic_visit(st)
            if not st.orelse:
                return st
            flag = fresh("broke")
            st.body = [Breaks(flag).visit(s) for s in st.body]
            st.body = [x for s in st.body for x in (s if isinstance(s, list) else [s])]
            orelse, st.orelse = st.orelse, []
            init = ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(False))
            after = ast.If(ast.UnaryOp(ast.Not(), ast.Name(flag, ast.Load())), orelse, [])
            for n in (init, after):
                ast.copy_location(n, st)
            count += 1
            return [init, st, after]

        visit_While = visit_For

    Else().visit(tree)
    return count
