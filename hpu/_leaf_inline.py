"""The CPU's recursive solver with its base case written out at each recursive call.

Why
===

Below the cut-off a subtree is solved by the function compiled by Numba, recursing
natively.  In a function that recurses down to single elements (the functional
mergesort's ``if len(a) <= 1: return a.copy()``, a sum down to ``hi - lo == 1``) half of
all calls are base cases that do almost nothing: the call itself -- its arguments, the
depth and stop-flag test, the return -- costs as much as the work.  Measured on the
functional mergesort's in-place form (its compiled module), 2**22 int32 keys on one
thread: 0.68 s with every call made, 0.59 s with the base cases done at the calls.  LLVM
cannot do this itself: it does not inline a function into itself.

So each recursive call statement of the compiled function::

    rec__0 = f(a, lo, mid)

becomes, where the function opens with its base cases (``if TEST: ...; return R``)::

    hpu_l0__a = a; hpu_l0__lo = hpu__like(lo, lo); hpu_l0__hi = hpu__like(mid, hi)
    if hpu_l0__hi - hpu_l0__lo == 1:          # the guard, on the call's arguments
        rec__0 = hpu_l0__a[hpu_l0__lo]          # the base case's body; `return R` assigns R
    else:
        rec__0 = f(hpu_l0__a, hpu_l0__lo, hpu_l0__hi)

The arguments are evaluated once, in Python's order, converted as the call converts
them (``hpu__like``); the base case's own names are renamed per call site so that they
cannot meet the caller's; a chain of leading guards becomes an ``if``/``elif`` chain, and
the plain assignments before them (``n = len(a)``) come along.  The result is the same as
the call's: the callee would evaluate the same guard on the same values and run the same
statements.  Only the depth count differs -- a base case done at the call does not count
one call deeper, which only ever lets a recursion finish that the native stack could hold
anyway (it adds no frame).

What is not written out (the call stays as it is): a base case that reads a name the
function assigns elsewhere, returns from inside a nested block, or holds a ``try``, a
``with``, a comprehension, a lambda, a nested function or a ``yield``; a guard that calls
anything but a pure builtin or one of hpu's checks (it is evaluated at the call and again
in the callee); calls with ``*args``, ``**kwargs``, defaults left out or unknown keywords; a
base case larger than :data:`MAX_NODES` (code size).
"""
from __future__ import annotations

import ast
import copy

__all__ = ["inline_leaves", "MAX_NODES"]

#: the largest base case (guards, bodies and leading assignments, in AST nodes) copied to
#: each call site: a few lines; a larger one costs more code than its call costs time
MAX_NODES = 160
#: calls in a guard that are pure (evaluating the guard twice is evaluating it once)
_PURE_CALLS = frozenset({"len", "min", "max", "abs", "int", "float", "bool"})
_FORBIDDEN = (ast.Try, ast.With, ast.AsyncWith, ast.Lambda, ast.ListComp, ast.SetComp,
              ast.DictComp, ast.GeneratorExp, ast.FunctionDef, ast.AsyncFunctionDef,
              ast.ClassDef, ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await,
              ast.Delete, ast.NamedExpr, ast.TryStar)


def _assigned(nodes) -> set[str]:
    out = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
    return out


def _pure_guard(expr: ast.expr) -> bool:
    for n in ast.walk(expr):
        if isinstance(n, _FORBIDDEN):
            return False
        if isinstance(n, ast.Call):
            f = n.func
            if not (isinstance(f, ast.Name) and (f.id in _PURE_CALLS or f.id.startswith("hpu__"))):
                return False
    return True


def _returns_only_last(body: list[ast.stmt]) -> bool:
    """The body ends in ``return`` or ``raise`` and returns nowhere else."""
    if not body or not isinstance(body[-1], (ast.Return, ast.Raise)):
        return False
    for stmt in body[:-1]:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Return):
                return False
    return not any(isinstance(n, ast.Return) for n in ast.walk(body[-1])
                   if n is not body[-1])


def _calls(node, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               for n in ast.walk(node))


def _base_case(fn: ast.FunctionDef):
    """``(prefix, guards)``: the leading plain assignments and the ``(test, body)`` of the
    leading base cases; None where the function does not open so."""
    prefix, guards, consumed = [], [], 0
    for stmt in fn.body:
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str) and not prefix and not guards):
            consumed += 1
            continue  # the docstring
        if (isinstance(stmt, ast.If) and not stmt.orelse and _returns_only_last(stmt.body)
                and _pure_guard(stmt.test) and not _calls(stmt, fn.name)):
            guards.append((stmt.test, stmt.body))
            consumed += 1
            continue
        if (not guards and isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and all(isinstance(t, ast.Name) for t in
                        (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]))
                and _pure_guard(stmt.value if stmt.value is not None else ast.Constant(0))):
            prefix.append(stmt)
            consumed += 1
            continue
        break
    if not guards:
        return None
    nodes = prefix + [g for g, _ in guards] + [s for _, b in guards for s in b]
    if sum(1 for node in nodes for _ in ast.walk(node)) > MAX_NODES:
        return None
    if any(isinstance(n, _FORBIDDEN) for node in nodes for n in ast.walk(node)):
        return None
    params = {a.arg for a in fn.args.args}
    mine = _assigned(nodes) | params
    elsewhere = _assigned(fn.body[consumed:])
    read = {n.id for node in nodes for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    # a name the base case reads before it is its own: a local of the function, unbound
    # there in Python -- left to the call, which says so as it does now
    if (read - mine) & (elsewhere - params):
        return None
    return prefix, guards, mine, consumed


class _Rename(ast.NodeTransformer):
    def __init__(self, names, prefix):
        self.names, self.prefix = names, prefix

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.prefix + node.id, node.ctx), node)
        return node


def _bind(call: ast.Call, params: list[str]):
    """The call's argument expressions by parameter, or None where they cannot be matched."""
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(params):
        return None
    bound = dict(zip(params, call.args))
    for k in call.keywords:
        if k.arg is None or k.arg not in params or k.arg in bound:
            return None
        bound[k.arg] = k.value
    if len(bound) != len(params):
        return None
    order = [*call.args, *(k.value for k in call.keywords)]
    names = [*params[:len(call.args)], *(k.arg for k in call.keywords)]
    return list(zip(names, order))


def inline_leaves(tree: ast.FunctionDef, name: str, arrays=()) -> ast.FunctionDef:
    """``tree`` (a copy) with its base cases written out at its recursive call statements
    (the module docstring); ``tree`` itself where there is nothing to write out."""
    found = _base_case(tree)
    if found is None:
        return tree
    prefix_stmts, guards, mine, consumed = found
    params = [a.arg for a in tree.args.args]
    if tree.args.vararg or tree.args.kwarg or tree.args.kwonlyargs:
        return tree
    arrays = set(arrays)
    counter = [0]

    def expand(stmt):
        if isinstance(stmt, ast.Expr):
            call, targets = stmt.value, None
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            call, targets = stmt.value, stmt.targets[0]
            if not all(isinstance(n, ast.Name) for n in (
                    targets.elts if isinstance(targets, ast.Tuple) else [targets])):
                return None
        else:
            return None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == name):
            return None
        bound = _bind(call, params)
        if bound is None:
            return None
        pre = f"hpu_l{counter[0]}__"
        counter[0] += 1
        ren = _Rename(mine, pre)
        out = []
        for p, value in bound:
            if p not in arrays and not (isinstance(value, ast.Name) and value.id == p):
                value = ast.Call(ast.Name("hpu__like", ast.Load()),
                                 [value, ast.Name(p, ast.Load())], [])
            out.append(ast.copy_location(
                ast.Assign([ast.Name(pre + p, ast.Store())], value, lineno=stmt.lineno),
                stmt))
        out.extend(ren.visit(copy.deepcopy(s)) for s in prefix_stmts)
        new_call = ast.Call(ast.Name(name, ast.Load()),
                            [ast.Name(pre + p, ast.Load()) for p in params], [])
        node = (ast.Expr(new_call) if targets is None
                else ast.Assign([copy.deepcopy(targets)], new_call, lineno=stmt.lineno))
        orelse = [ast.copy_location(node, stmt)]
        for test, body in reversed(guards):
            body = [ren.visit(copy.deepcopy(s)) for s in body]
            last = body[-1]
            if isinstance(last, ast.Return):
                body = body[:-1]
                value = last.value
                if targets is not None:
                    body.append(ast.copy_location(ast.Assign(
                        [copy.deepcopy(targets)],
                        value if value is not None else ast.Constant(None)), last))
                elif value is not None:
                    body.append(ast.copy_location(ast.Assign(
                        [ast.Name(pre + "r", ast.Store())], value), last))
                if not body:
                    body = [ast.Pass()]
            orelse = [ast.copy_location(ast.If(ren.visit(copy.deepcopy(test)), body, orelse),
                                        stmt)]
        out.extend(orelse)
        return out

    class _Calls(ast.NodeTransformer):
        def generic_visit(self, node):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    new = []
                    for s in block:
                        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                            new.append(s)
                            continue
                        self.generic_visit(s)
                        got = expand(s)
                        new.extend(got if got is not None else [s])
                    setattr(node, field, new)
            for h in getattr(node, "handlers", ()) or ():
                self.generic_visit(h)
            return node

    tree = copy.deepcopy(tree)
    # the base cases themselves hold no recursive call (they are the function's first
    # statements): walk the rest
    head, rest = tree.body[:consumed], tree.body[consumed:]
    holder = ast.Module(body=rest, type_ignores=[])
    _Calls().generic_visit(holder)
    if counter[0] == 0:
        return tree
    tree.body = head + holder.body
    ast.fix_missing_locations(tree)
    return tree
