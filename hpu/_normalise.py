"""Normalisation: the ways people write divide and conquer, rewritten into one shape.

Why a separate pass
===================

:func:`hpu._frontend.parse` recognises one canonical shape — base-case guards,
a divide, 2 to 8 consecutive top-level call statements, a combine — because
that is what the breadth-first conversion needs: the guards decide which tasks
are leaves, the divide writes the children's parameters, the calls are the
edges of the tree and the combine runs once the children's results exist.
People do not write that shape.  They write ``return f(l) + f(r)``,
``if hi - lo > 1: <everything>``, ``if base: return v`` / ``else: ...`` and
``for i in range(4): s += f(...)``.  Each of these *is* the canonical shape
with the parts moved around, so instead of teaching every later stage about
every spelling, this module rewrites the function's syntax tree into the
canonical shape once, right after :func:`hpu._frontend._strip`, and the rest of
hpu never sees the difference.

Three rewrites, in this order:

1. **Blocks.**  The first statement that recurses is an ``if`` whose one branch
   recurses and whose other branch does not: the other branch becomes a base
   guard (``if not COND: <branch>; <rest>; return``) and the recursing branch
   is unindented, followed by a copy of the statements after the ``if``.
   ``return X if COND else <recursion>`` is the same thing written as an
   expression.  Repeated, so ``elif`` chains flatten too.
2. **Loops of calls.**  ``for i in range(K): <body with calls>`` with ``K``
   (and start, step) int literals or int module constants is unrolled, the
   loop variable replaced by its value in each copy: the number of calls must
   be known before the function runs, because it is the tree's branching
   factor ``a``.
3. **Calls inside expressions.**  Every recursive call between the first and
   the last statement that recurses is evaluated first, in Python's
   left-to-right order, into a temporary ``rec__k`` (``__`` names are hpu's),
   and the statements are then run with the temporaries in place of the calls.
   That moves work that Python did *before* a call to *after* it, which is
   harmless for scalar arithmetic and wrong for anything that touches arrays
   while the calls write them: array stores are refused here; array reads and
   helper calls are recorded (:attr:`Normalised.reordered`) and refused by
   :func:`hpu._frontend.resolve` when the function, through any helper, writes
   an array.  A call that Python might skip (an operand of ``and``/``or`` after
   the first, a branch of ``x if c else y``) is evaluated always; that is only
   the same program when the function writes no array
   (:attr:`Normalised.conditional`, checked the same way).

Every node keeps the user's line number, so errors, the generated code's
``# line N:`` comments and the OpenCL source's comments still point at the
user's file.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from hpu._subset import refuse_with


def _shown(node) -> str:
    """``node`` as the user wrote it, for a refusal: a view's hidden length ``a__n`` read
    as ``len(a)`` (:func:`hpu._views.display`)."""
    from hpu._views import display

    return display(node)

__all__ = ["Normalised", "normalise", "named_exprs_hoisted", "TEMP_PREFIX"]

#: Temporaries for hoisted calls; user names may not contain ``__``, so these never clash.
TEMP_PREFIX = "rec__"

#: Calls that only compute a scalar from their arguments (no array access of their own).
_PURE_CALLS = frozenset({"min", "max", "abs", "int", "float", "bool", "round", "len"})


@dataclass
class Normalised:
    """The rewritten body and what resolve must check once it knows which arrays are written."""

    body: list
    #: (node, description) of array reads and helper calls moved after a recursive call
    reordered: list = field(default_factory=list)
    #: recursive calls that Python evaluates only conditionally (now always evaluated)
    conditional: list = field(default_factory=list)


def _is_rec(node, name) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == name)


def _has_rec(node, name) -> bool:
    return any(_is_rec(n, name) for n in ast.walk(node))


def _always_returns(stmts) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _located(node, where):
    ast.copy_location(node, where)
    ast.fix_missing_locations(node)
    return node


# --------------------------------------------------------------------------- 1. blocks

def _negate(test):
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return _located(ast.UnaryOp(op=ast.Not(), operand=test), test)


def _guard_body(branch, rest, at):
    """The base case: the non-recursing branch, then what follows the ``if``, then return."""
    body = copy.deepcopy(branch)
    if not _always_returns(body):
        body += copy.deepcopy(rest)
    body = [s for s in body if not isinstance(s, ast.Pass)] or []
    if not _always_returns(body):
        last = body[-1] if body else at
        body.append(_located(ast.Return(value=None), last))
    return body


def _unelse(body, name):
    """``if base: ...; return`` / ``else: X`` before the recursion -> the guard, then X."""
    out = []
    for s in body:
        if (isinstance(s, ast.If) and s.orelse and _always_returns(s.body)
                and not _has_rec(s, name)):
            out.append(_located(ast.If(test=s.test, body=s.body, orelse=[]), s))
            out.extend(_unelse(s.orelse, name))
        else:
            out.append(s)
    return out


def _in_order(node) -> list:
    """The nodes of ``node`` in Python's order of evaluation (fields left to right)."""
    out = [node]
    for child in ast.iter_child_nodes(node):
        out.extend(_in_order(child))
    return out


def _uses_in_order(node) -> list:
    """The names ``node`` reads, in Python's order of evaluation (:func:`_in_order`)."""
    return [n.id for n in _in_order(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)]


def _one_expression(branch):
    """The expression a branch returns when it is only ``x = e1; y = e2; return E`` (each
    name assigned once and read once, in the order assigned), its names replaced by their
    expressions (evaluated in the same order); else None."""
    if not branch or not isinstance(branch[-1], ast.Return) or branch[-1].value is None:
        return None
    temps: dict = {}
    order: list = []
    for st in branch[:-1]:
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name)) or st.targets[0].id in temps:
            return None
        temps[st.targets[0].id] = st.value
        order.append(st.targets[0].id)
    reads = [n for e in (*temps.values(), branch[-1].value) for n in _uses_in_order(e)
             if n in temps]
    if sorted(reads) != sorted(order) or reads != order:
        return None                     # (read twice, never, or before another)
    expr = copy.deepcopy(branch[-1].value)
    for t in reversed(order):           # the last assigned may read the ones before it
        expr = _Substitute({t: temps[t]}).visit(expr)
    return expr if not (set(_uses_in_order(expr)) & set(temps)) else None


_WRITING_METHODS = frozenset({"sort", "fill", "put", "resize", "append", "extend", "insert",
                              "pop", "remove", "clear", "reverse", "itemset", "setfield"})


def _may_write(body, name) -> bool:
    """Whether statements ``body`` may write an array: a store into a subscript, a call of
    anything but the function itself and pure builtins, or a method that writes."""
    for n in (n for st in body for n in ast.walk(st)):
        if isinstance(n, (ast.Subscript,)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name) and f.id not in _PURE_CALLS and f.id != name:
                return True
            if isinstance(f, ast.Attribute) and f.attr in _WRITING_METHODS:
                return True
    return False


class _ByIdentity(ast.NodeTransformer):
    def __init__(self, names: dict):
        self.names = names          # id(node) -> temporary name

    def visit(self, node):
        if id(node) in self.names:
            return _located(ast.Name(id=self.names[id(node)], ctx=ast.Load()), node)
        return super().visit(node)


def _recursive_choice(stmt, name, body):
    """``if c: return A`` / ``else: return B`` with the same self-calls in both (the naive
    power by halves: ``power(x, n // 2) * power(x, n // 2)`` for an even ``n``, times ``x``
    for an odd one; a combine chosen by a test) as ``hpu_pickc = c``, each call once into a
    temporary, then ``return A' if hpu_pickc else B'``: Python's calls, each made once --
    a conditional expression would make both branches' calls, twice the tree's branching.
    Only where the function writes no array (``body``: its statements), so that no read
    can see the order change.  None when a branch is more than assignments read once and a
    return, when the branches call with different arguments, or when a call is nested in
    another's argument."""
    a, b = _one_expression(stmt.body), _one_expression(stmt.orelse)
    if a is None or b is None or _has_rec(stmt.test, name) or _may_write(body, name):
        return None
    calls_a = [n for n in _in_order(a) if _is_rec(n, name)]
    calls_b = [n for n in _in_order(b) if _is_rec(n, name)]
    if sorted(ast.dump(c) for c in calls_a) != sorted(ast.dump(c) for c in calls_b):
        return None
    if any(_has_rec(arg, name) for c in calls_a + calls_b for arg in c.args):
        return None
    used = {n.id for st in body for n in ast.walk(st) if isinstance(n, ast.Name)}
    fresh = (f"hpu_pick{k}" for k in range(10**6) if f"hpu_pick{k}" not in used)
    test_name = next(fresh)
    temps = [next(fresh) for _ in calls_a]
    free = list(zip(temps, (ast.dump(c) for c in calls_a)))
    in_b = {}
    for c in calls_b:                   # b's k-th call of a text: a's k-th temporary of it
        j = next(i for i, (t, d) in enumerate(free) if d == ast.dump(c))
        in_b[id(c)] = free.pop(j)[0]
    a = _ByIdentity({id(c): t for c, t in zip(calls_a, temps)}).visit(a)
    b = _ByIdentity(in_b).visit(b)
    out = [_located(ast.Assign(targets=[ast.Name(id=test_name, ctx=ast.Store())],
                               value=stmt.test), stmt)]
    out += [_located(ast.Assign(targets=[ast.Name(id=t, ctx=ast.Store())], value=c), c)
            for t, c in zip(temps, calls_a)]
    out.append(_located(ast.Return(value=_located(ast.IfExp(
        test=ast.Name(id=test_name, ctx=ast.Load()), body=a, orelse=b), stmt)), stmt))
    return out


def _flatten_blocks(body, name, where):
    for _ in range(64):  # one round per if/elif level
        idx = next((i for i, s in enumerate(body) if _has_rec(s, name)), None)
        if idx is None:
            return body
        if idx:
            body = _unelse(body[:idx], name) + body[idx:]
            idx = next(i for i, s in enumerate(body) if _has_rec(s, name))
        stmt = body[idx]
        if (isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.IfExp)
                and not _has_rec(stmt.value.test, name)
                and _has_rec(stmt.value.body, name) != _has_rec(stmt.value.orelse, name)):
            e = stmt.value
            stmt = _located(ast.If(test=e.test,
                                   body=[_located(ast.Return(value=e.body), e.body)],
                                   orelse=[_located(ast.Return(value=e.orelse), e.orelse)]),
                            stmt)
            body = body[:idx] + [stmt] + body[idx + 1:]
        if not isinstance(stmt, ast.If) or _has_rec(stmt.test, name):
            return body
        in_body = any(_has_rec(s, name) for s in stmt.body)
        in_else = any(_has_rec(s, name) for s in stmt.orelse)
        rest = body[idx + 1:]
        if (in_body and not stmt.orelse and _always_returns(stmt.body)
                and any(_has_rec(s, name) for s in rest)
                and max(sum(_is_rec(n, name) for s in part for n in ast.walk(s))
                        for part in (stmt.body, rest)) >= 2):
            # `if c: return A` then `return B`, both recursing (twice, on one side at
            # least: one call each is a loop, refused as one by the frontend): the rest is
            # the else branch; where that is no choice of results, the frontend names the
            # condition, with its advice
            choice = _recursive_choice(
                _located(ast.If(test=stmt.test, body=stmt.body, orelse=rest), stmt), name, body)
            if choice is not None:
                body = body[:idx] + choice
                continue
        if in_body and in_else:
            counts = [sum(_is_rec(n, name) for s in part for n in ast.walk(s))
                      for part in (stmt.body, stmt.orelse)]
            choice = _recursive_choice(stmt, name, body) if max(counts) >= 2 else None
            if choice is not None:
                body = body[:idx] + choice
                continue
            if max(counts) >= 2 and _one_expression(stmt.body) is not None \
                    and _one_expression(stmt.orelse) is not None and not _may_write(body, name):
                where.refuse(stmt, "recursion in both branches of an if, with other calls in "
                             "each", "hpu makes a task's calls before its combine; calls that "
                             "differ between the branches would all be made, and each "
                             "branch's tree grow under the other's",
                             "make the calls once before the `if` (`h = f(..)`, `k = "
                             "f(..)`), then return a choice of their results")
            if max(counts) == 1:    # quickselect: one call down each branch
                lines = sorted({n.lineno for part in (stmt.body, stmt.orelse) for s in part
                                for n in ast.walk(s) if _is_rec(n, name)})
                where.refuse(stmt, "a single recursive call",
                             f"each branch makes one recursive call (lines "
                             f"{', '.join(map(str, lines))}): that is a loop (a quickselect, "
                             "a binary search, decrease and conquer), with no independent "
                             "subproblems to run at once",
                             "write it as a loop (`while lo < hi: ...`), without the decorator")
            refuse_with(where, stmt, "both-branches")
        rest = body[idx + 1:]
        if in_body:
            guard = _located(ast.If(test=_negate(stmt.test),
                                    body=_guard_body(stmt.orelse, rest, stmt), orelse=[]), stmt)
            branch = stmt.body
        else:
            guard = _located(ast.If(test=stmt.test, body=_guard_body(stmt.body, rest, stmt),
                                    orelse=[]), stmt)
            branch = stmt.orelse
        tail = [] if _always_returns(branch) else copy.deepcopy(rest)
        body = body[:idx] + [guard] + list(branch) + tail
    return body


# --------------------------------------------------------------------------- 2. loops

def _constant_int(node, glb):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _constant_int(node.operand, glb)
        return None if v is None else -v
    if isinstance(node, ast.Name):
        v = glb.get(node.id)
        if type(v) is int:
            return v
    return None


class _Substitute(ast.NodeTransformer):
    def __init__(self, names: dict):
        self.names = names

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            return _located(copy.deepcopy(self.names[node.id]), node)
        return node


def _unroll_loops(body, name, where, glb):
    out = []
    for i, s in enumerate(body):
        if not (isinstance(s, ast.For) and _has_rec(s, name)):
            out.append(s)
            continue
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and 1 <= len(it.args) <= 3 and not it.keywords
                and isinstance(s.target, ast.Name) and not s.orelse):
            refuse_with(where, s, "loop-range")
        bounds = [_constant_int(a, glb) for a in it.args]
        if any(b is None for b in bounds):
            bad = next(a for a, b in zip(it.args, bounds) if b is None)
            refuse_with(where, s, "loop-range",
                        detail=f"`{_shown(bad)}` in `{_shown(it)}` is not an int "
                               "literal or int module constant")
        if bounds[-1] == 0 and len(bounds) == 3:
            refuse_with(where, s, "loop-range",
                        detail="range() with step 0")
        rows = [[ast.Constant(value=v)] for v in range(*bounds)]
        out.extend(_copies(s, [s.target.id], rows, where, body[i + 1:]))
    return out


def _copies(loop, names, rows, where, later) -> list:
    """The body of ``loop`` once per row of values, its variables ``names`` replaced by
    the row's; refused if it leaves early (``break``, ``continue``, ``return``) or assigns
    a variable.  Python leaves the last row in the variables: a statement in ``later``
    that reads one gets it assigned after the copies."""
    for sub in loop.body:
        for n in ast.walk(sub):
            if isinstance(n, (ast.Break, ast.Continue, ast.Return)):
                refuse_with(where, n, "loop-exit")
            if isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Store):
                refuse_with(where, n, "loop-range",
                            detail=f"the loop variable {n.id!r} is reassigned in the loop")
    out = [_Substitute(dict(zip(names, row))).visit(copy.deepcopy(sub))
           for row in rows for sub in loop.body]
    read_later = {n.id for x in later for n in ast.walk(x) if isinstance(n, ast.Name)}
    for var, v in zip(names, rows[-1] if rows else ()):
        if var in read_later:
            out.append(_located(ast.Assign(targets=[ast.Name(id=var, ctx=ast.Store())],
                                           value=copy.deepcopy(v)), loop))
    return out


#: calls an unrolled loop's values may make: evaluated at each use instead of once, they
#: give the same value
_PURE_IN_VALUES = frozenset({"len", "min", "max", "abs", "int", "float"})


def unroll_literal_loops(tree: ast.FunctionDef, where) -> None:
    """``for part in (a[:m], a[m:]): total += f(part)`` -- a loop of recursive calls over a
    tuple or list written out -- becomes one copy of the body per value, the loop variable
    (or the names of ``for lo, hi in ((l, m), (m, h))``) replaced by the value; in place,
    in every block.  It runs before the views' rewrite (:mod:`hpu._views`), which then sees
    ``f(a[:m])``.  Each value is evaluated where the variable is used instead of once before
    the loop, so a value may not read a name the body assigns, nor call anything but
    ``len``/``min``/``max``/``abs``/``int``/``float``."""
    name = tree.name

    def rewrite(st, later):
        if (isinstance(st, ast.For) and isinstance(st.iter, (ast.Tuple, ast.List))
                and _has_rec(st, name)):
            return _unrolled(st, where, later)
        return None

    _rewrite_blocks(tree, rewrite)


def unroll_value_loops(tree: ast.FunctionDef, own: str) -> None:
    """``for c in (l, r): <body>`` -- a loop over values written out, with no recursive call
    (those are :func:`unroll_literal_loops`'s) -- becomes ``c = l; <body>; c = r; <body>``
    (or, where ``c`` is read only in the body, which does not assign it, the body with
    ``l`` for ``c``, then with ``r``: no alias of an array, which a device form's views
    cannot be):
    what Python runs, as counted loops over ``range`` are all a task can run; in place, in
    every block, in a function or a helper.  Only where that is exactly the same program:
    the target a name, the values numbers or names the body does not assign (Python
    evaluates the tuple once, before the body), no ``break``/``continue`` and no ``else:``.
    Anything else is left as written (the subset checker refuses it, with its line)."""
    def plain_value(v, assigned):
        if isinstance(v, ast.Constant) and type(v.value) in (int, float, bool):
            return True
        if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub):
            return plain_value(v.operand, assigned)
        return isinstance(v, ast.Name) and v.id not in assigned

    def rewrite(st, later):
        if not (isinstance(st, ast.For) and isinstance(st.iter, (ast.Tuple, ast.List))
                and st.iter.elts and isinstance(st.target, ast.Name) and not st.orelse):
            return None
        inner = [n for sub in st.body for n in ast.walk(sub)]
        assigned = {n.id for n in inner if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}
        if (any(isinstance(n, (ast.Break, ast.Continue)) for n in inner)
                or any(_is_rec(n, own) for n in inner)
                or not all(plain_value(v, assigned) for v in st.iter.elts)):
            return None
        out = []
        target = st.target.id
        # the target read nowhere but in the body, which does not assign it: each pass
        # reads its value itself (``for part in (w, x)`` over arrays: ``w``, then ``x``, no
        # alias of either, as the device forms' views need); else ``c = l; <body>``
        mine = {id(m) for m in inner} | {id(st.target)}
        inline = target not in assigned and not any(
            isinstance(n, ast.Name) and n.id == target
            and (id(n) not in mine or isinstance(n.ctx, ast.Del)) for n in ast.walk(tree))
        for v in st.iter.elts:
            if inline:
                out.extend(_substituted(copy.deepcopy(sub), target, v) for sub in st.body)
                continue
            out.append(ast.copy_location(ast.Assign(
                targets=[ast.Name(target, ast.Store())], value=copy.deepcopy(v)), st))
            out.extend(copy.deepcopy(sub) for sub in st.body)
        return out

    _rewrite_blocks(tree, rewrite)


def _stable_value(v) -> bool:
    """A value that gives the same result wherever it is evaluated in its statement: names,
    numbers, slices (views: they alias the same elements whenever they are made),
    arithmetic, tuples of these, and calls of :data:`_PURE_IN_VALUES` -- no element read
    (``a[i]``, which a recursive call may write first) and no other call."""
    for n in ast.walk(v):
        if isinstance(n, ast.Subscript):
            if not isinstance(n.slice, ast.Slice):
                return False
        elif isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id in _PURE_IN_VALUES):
                return False
        elif not isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Tuple,
                                ast.List, ast.Slice, ast.expr_context, ast.operator,
                                ast.unaryop)):
            return False
    return True


def inline_literal_iterables(tree: ast.FunctionDef) -> None:
    """``parts = [a[:t], a[t:2*t], a[2*t:]]`` followed by ``for p in parts: best =
    max(best, f(p))`` (or ``max(f(p) for p in parts)``) -- the children's slices named
    once, then looped over -- becomes the loop over the values written out, which
    :func:`unroll_literal_loops` and :func:`minmax_of_literal_generators` then unroll into
    the recursive calls: the number of children is the tree's branching factor, known
    before the function runs.  In place.  Only where that is exactly the same program:
    the name assigned once, in the function's own block, to a list or tuple written out
    whose values are stable (:func:`_stable_value`) and read no name assigned after it;
    the name read nowhere but as what a ``for`` or a generator loops over, each such loop
    making a recursive call.  Anything else is left as written."""
    own = tree.name
    stores: dict = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    iters: dict = {}        # id(iterable Name node) -> the loop or comprehension over it
    for n in ast.walk(tree):
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Name):
            iters[id(n.iter)] = n
        elif isinstance(n, (ast.GeneratorExp, ast.ListComp)):
            for g in n.generators:
                if isinstance(g.iter, ast.Name):
                    iters[id(g.iter)] = n
    body = tree.body
    for i, st in enumerate(list(body)):
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name)
                and isinstance(st.value, (ast.List, ast.Tuple)) and st.value.elts
                and not any(isinstance(e, ast.Starred) for e in st.value.elts)
                and all(_stable_value(e) for e in st.value.elts)):
            continue
        name = st.targets[0].id
        if stores.get(name) != 1:
            continue
        later = body[i + 1:]
        reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
                 and isinstance(n.ctx, ast.Load)]
        inside = {id(n) for sub in later for n in ast.walk(sub)}
        if not reads or not all(id(r) in iters and id(r) in inside
                                and _has_rec(iters[id(r)], own) for r in reads):
            continue
        used = {n.id for e in st.value.elts for n in ast.walk(e) if isinstance(n, ast.Name)}
        if any(isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in used
               for sub in later for n in ast.walk(sub)):
            continue
        for r in reads:
            loop = iters[id(r)]
            value = ast.copy_location(ast.Tuple(copy.deepcopy(st.value.elts), ast.Load()), r)
            if isinstance(loop, ast.For):
                loop.iter = value
            else:
                for g in loop.generators:
                    if g.iter is r:
                        g.iter = value
        body.remove(st)
    ast.fix_missing_locations(tree)


def _builtin(name: str, glb: dict) -> bool:
    """Whether ``name`` in the module ``glb`` is Python's builtin of that name (not shadowed)."""
    import builtins

    own = getattr(builtins, name)
    return glb.get(name, own) is own


def _constant_range(it, glb):
    """The values of ``range(...)`` of int literals or int module constants, at most 64 of
    them (Python's own ``range``), else None."""
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and _builtin("range", glb) and 1 <= len(it.args) <= 3 and not it.keywords):
        return None
    bounds = [_constant_int(x, glb) for x in it.args]
    if None in bounds or (len(bounds) == 3 and bounds[2] == 0):
        return None
    values = range(*bounds)
    return list(values) if len(values) <= 64 else None


def minmax_of_literal_generators(tree: ast.FunctionDef, glb: dict) -> None:
    """``max(f(p) for p in (a[:t], a[t:2*t], a[2*t:]))`` (or ``min``, or of a list
    comprehension, or over ``range(3)`` of int constants) becomes ``max(f(a[:t]),
    f(a[t:2*t]), f(a[2*t:]))``: the builtin with
    the values written out makes the same comparisons in the same order and keeps the
    same element, and the recursive calls are then calls like any other (their number is
    the branching factor).  One value: the value itself.  In place; only for one ``for``
    with no ``if``, over a tuple or list written out whose values are stable
    (:func:`_stable_value`), its target a name (or a tuple of names matched by each
    value), no ``key=``/``default=``, and ``max``/``min`` Python's own."""
    own = tree.name

    def values_of(gen):
        """The comprehension's values written out (expressions), else None."""
        if len(gen.generators) != 1:
            return None
        g = gen.generators[0]
        counted = _constant_range(g.iter, glb)
        if counted is not None and isinstance(g.target, ast.Name):
            # `for i in range(3)`: the values 0, 1, 2 written out
            g = ast.comprehension(g.target, ast.Tuple(
                [ast.Constant(v) for v in counted], ast.Load()), g.ifs, g.is_async)
        if (g.ifs or g.is_async or not isinstance(g.iter, (ast.Tuple, ast.List))
                or not g.iter.elts or not _has_rec(gen.elt, own)
                or any(isinstance(e, ast.Starred) or not _stable_value(e)
                       for e in g.iter.elts)
                or any(isinstance(m, (ast.NamedExpr, ast.Lambda, ast.GeneratorExp,
                                      ast.ListComp, ast.SetComp, ast.DictComp))
                       for m in ast.walk(gen.elt))):
            return None
        if isinstance(g.target, ast.Name):
            names, rows = [g.target.id], [[e] for e in g.iter.elts]
        elif (isinstance(g.target, ast.Tuple)
              and all(isinstance(t, ast.Name) for t in g.target.elts)
              and all(isinstance(e, (ast.Tuple, ast.List))
                      and len(e.elts) == len(g.target.elts) for e in g.iter.elts)):
            names = [t.id for t in g.target.elts]
            rows = [list(e.elts) for e in g.iter.elts]
        else:
            return None
        values = []
        for row in rows:
            e = copy.deepcopy(gen.elt)
            for nm, v in zip(names, row):
                e = _substituted(e, nm, v)
            values.append(e)
        return values

    class T(ast.NodeTransformer):
        def visit_ListComp(self, n):
            # `[f(p) for p in (a[:h], a[h:])]`: the list of the calls written out
            self.generic_visit(n)
            values = values_of(n)
            return n if values is None else ast.copy_location(ast.List(values, ast.Load()), n)

        def visit_Call(self, n):
            f = n.func
            if not (isinstance(f, ast.Name) and f.id in ("max", "min") and _builtin(f.id, glb)
                    and len(n.args) == 1 and not n.keywords):
                self.generic_visit(n)
                return n
            arg = n.args[0]
            if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
                values = values_of(arg)
            elif (isinstance(arg, ast.List) and arg.elts and _has_rec(arg, own)
                  and not any(isinstance(e, ast.Starred) for e in arg.elts)):
                values = arg.elts           # max([f(l), f(r)]): the same comparisons
            else:
                values = None
            if values is None:
                self.generic_visit(n)
                return n
            out = (values[0] if len(values) == 1
                   else ast.Call(f, values, []))
            return self.visit(ast.copy_location(out, n))

    T().visit(tree)
    ast.fix_missing_locations(tree)


def _append_of(st, r: str):
    """``X`` of the statement ``r.append(X)``, else None."""
    e = st.value if isinstance(st, ast.Expr) else None
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "append"
            and isinstance(e.func.value, ast.Name) and e.func.value.id == r
            and len(e.args) == 1 and not e.keywords and not isinstance(e.args[0], ast.Starred)):
        return e.args[0]
    return None


def results_list_as_names(tree: ast.FunctionDef, glb: dict) -> None:
    """The children's results gathered in a list, then read from it -- ``results = []``
    followed by ``results.append(f(p))`` over the children written out (or one append per
    child), or ``subs = [f(a[:h]), f(a[h:])]`` -- become one name per result
    (``subs_0 = f(a[:h])``, ``subs_1 = f(a[h:])``), each read of the list the names:
    ``subs[1]``, ``l, r = subs``, ``for v in subs``, ``max(subs)``/``min(subs)`` (the
    same comparisons), ``len(subs)`` (its length), ``sum(subs)`` of at most two (``0 + x +
    y``, what Python adds).  In place, in the function's own block; only where every read
    is one of these and the list is assigned once (no other append, no write).  The
    number of children is then known before the function runs, as the tree needs."""
    own = tree.name
    body = tree.body

    def mentions(node, r):
        return any(isinstance(n, ast.Name) and n.id == r for n in ast.walk(node))

    # 1. `r = []` and appends: the list written out
    i = 0
    while i < len(body):
        st = body[i]
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.List)
                and not st.value.elts):
            i += 1
            continue
        r = st.targets[0].id
        values, j = [], i + 1
        while j < len(body) and _append_of(body[j], r) is not None \
                and not mentions(_append_of(body[j], r), r):
            values.append(_append_of(body[j], r))
            j += 1
        if not values and j < len(body):
            loop = body[j]
            x = (_append_of(loop.body[0], r) if isinstance(loop, ast.For)
                 and len(loop.body) == 1 else None)
            if (x is not None and not loop.orelse and isinstance(loop.target, ast.Name)
                    and isinstance(loop.iter, (ast.Tuple, ast.List)) and loop.iter.elts
                    and all(not isinstance(e, ast.Starred) and _stable_value(e)
                            for e in loop.iter.elts)
                    and not mentions(x, r)
                    and not any(mentions(later, loop.target.id) for later in body[j + 1:])):
                values = [_substituted(copy.deepcopy(x), loop.target.id, v)
                          for v in loop.iter.elts]
                j += 1
        if values and any(_has_rec(v, own) for v in values):
            body[i:j] = [ast.copy_location(ast.Assign(
                [ast.Name(r, ast.Store())], ast.List(values, ast.Load())), st)]
        i += 1

    # 2. a list of the results written out, read only as above: a name per result
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(glb)
    for i, st in enumerate(list(body)):
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.List)
                and st.value.elts and _has_rec(st.value, own)
                and not any(isinstance(e, ast.Starred) for e in st.value.elts)):
            continue
        r, n = st.targets[0].id, len(st.value.elts)
        if sum(isinstance(x, ast.Name) and x.id == r and not isinstance(x.ctx, ast.Load)
               for x in ast.walk(tree)) != 1:
            continue                    # assigned more than once
        at = body.index(st)
        later_ids = {id(x) for later in body[at + 1:] for x in ast.walk(later)}
        reads = [x for x in ast.walk(tree) if isinstance(x, ast.Name) and x.id == r
                 and isinstance(x.ctx, ast.Load)]
        parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}

        def kind(x):
            p = parents.get(id(x))
            if isinstance(p, ast.Subscript) and p.value is x and isinstance(p.ctx, ast.Load):
                k = p.slice
                if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) \
                        and isinstance(k.operand, ast.Constant):
                    k = ast.Constant(-k.operand.value)
                if isinstance(k, ast.Constant) and type(k.value) is int and -n <= k.value < n:
                    return "item"
                return None
            if (isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.args == [x]
                    and not p.keywords and p.func.id in ("max", "min", "len", "sum")
                    and _builtin(p.func.id, glb) and (p.func.id != "sum" or n <= 2)):
                return "call"
            if isinstance(p, ast.For) and p.iter is x:
                return "loop"
            if (isinstance(p, ast.Assign) and p.value is x and len(p.targets) == 1
                    and isinstance(p.targets[0], ast.Tuple) and len(p.targets[0].elts) == n
                    and not any(isinstance(t, ast.Starred) for t in p.targets[0].elts)):
                return "unpack"
            return None

        if not reads or not all(id(x) in later_ids and kind(x) for x in reads):
            continue
        names = []
        for k in range(n):
            nm = f"{r}_{k}"
            while nm in taken:
                nm += "_"
            taken.add(nm)
            names.append(nm)

        def names_tuple():
            return ast.Tuple([ast.Name(nm, ast.Load()) for nm in names], ast.Load())

        class Reads(ast.NodeTransformer):
            def visit_Subscript(self, node):
                self.generic_visit(node)
                if isinstance(node.value, ast.Name) and node.value.id == r:
                    k = node.slice
                    v = (-k.operand.value if isinstance(k, ast.UnaryOp) else k.value)
                    return ast.copy_location(ast.Name(names[v], ast.Load()), node)
                return node

            def visit_Call(self, node):
                self.generic_visit(node)
                if (isinstance(node.func, ast.Name) and len(node.args) == 1
                        and isinstance(node.args[0], ast.Name) and node.args[0].id == r):
                    what = node.func.id
                    items = [ast.Name(nm, ast.Load()) for nm in names]
                    if what == "len":
                        out = ast.Constant(n)
                    elif what == "sum":
                        out = ast.Constant(0)
                        for it in items:
                            out = ast.BinOp(out, ast.Add(), it)
                    else:
                        out = items[0] if n == 1 else ast.Call(node.func, items, [])
                    return ast.copy_location(out, node)
                return node

            def visit_For(self, node):
                self.generic_visit(node)
                if isinstance(node.iter, ast.Name) and node.iter.id == r:
                    node.iter = ast.copy_location(names_tuple(), node.iter)
                return node

            def visit_Assign(self, node):
                self.generic_visit(node)
                if isinstance(node.value, ast.Name) and node.value.id == r:
                    node.value = ast.copy_location(names_tuple(), node.value)
                return node

        for later in body[at + 1:]:
            Reads().visit(later)
        body[at:at + 1] = [ast.copy_location(ast.Assign([ast.Name(nm, ast.Store())], v), st)
                           for nm, v in zip(names, st.value.elts)]
    ast.fix_missing_locations(tree)


def children_written_out(tree: ast.FunctionDef, glb: dict) -> None:
    """The children named in a list, looped over by a generator or gathered in a list,
    written out as the calls they are (:func:`inline_literal_iterables`,
    :func:`minmax_of_literal_generators`, :func:`results_list_as_names`, in that order),
    Python's types given as dtypes written as NumPy's (:func:`builtin_dtypes_as_numpy`),
    reversed ranges counted down (:func:`reversed_ranges_counted_down`) and nested
    unpacking of several calls split (:func:`nested_unpacking_split`): in place, wherever
    hpu reads a function's source."""
    inline_literal_iterables(tree)
    minmax_of_literal_generators(tree, glb)
    results_list_as_names(tree, glb)
    builtin_dtypes_as_numpy(tree, glb)
    reversed_ranges_counted_down(tree, glb)
    nested_unpacking_split(tree)


def nested_unpacking_split(tree: ast.FunctionDef) -> None:
    """``(lo1, hi1), (lo2, hi2) = f(a[:m]), f(a[m:])`` as ``lo1, hi1 = f(a[:m])`` then
    ``lo2, hi2 = f(a[m:])``, in place: each call's tuple unpacked where it is made, as hpu's
    levels hold a task's values (a tuple kept whole is refused).  Only where the targets
    are names or tuples of names and no value reads a name an earlier target assigns
    (Python evaluates every value first)."""
    def names(t):
        if isinstance(t, ast.Name):
            return [t.id]
        if isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
            return [e.id for e in t.elts]
        return None

    def split(st, _rest):
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Tuple) and isinstance(st.value, ast.Tuple)
                and len(st.targets[0].elts) == len(st.value.elts)
                and any(isinstance(t, ast.Tuple) for t in st.targets[0].elts)):
            return None
        bound: set = set()
        out = []
        for t, v in zip(st.targets[0].elts, st.value.elts):
            got = names(t)
            if got is None or isinstance(v, ast.Starred) or any(
                    isinstance(n, ast.Name) and n.id in bound for n in ast.walk(v)):
                return None
            bound.update(got)
            out.append(ast.copy_location(ast.Assign([t], v), st))
        return [ast.fix_missing_locations(a) for a in out]

    _rewrite_blocks(tree, split)


#: what a bound of a range written reversed may call: it is evaluated in the other order
_PURE_CALLS = frozenset({"len", "min", "max", "abs", "int"})


def reversed_ranges_counted_down(tree: ast.FunctionDef, glb: dict) -> None:
    """``for i in reversed(range(lo, hi))`` (and ``reversed(range(n))``) as ``for i in
    range(hi - 1, lo - 1, -1)``, in place: the same integers in the same order, empty where
    the range is.  Numba refuses ``reversed``, and hpu's levels count loops over ``range``
    only, so the crossing sums of a maximum subarray written this way were refused.  Only
    for the builtins (not shadowed), a range without a step, and bounds that call nothing
    but ``len``, ``min``, ``max``, ``abs``, ``int`` (the two bounds are then evaluated in the
    other order)."""
    if not (_builtin("reversed", glb) and _builtin("range", glb)):
        return

    def pure(e):
        return all(not isinstance(n, ast.Call) or (isinstance(n.func, ast.Name)
                                                   and n.func.id in _PURE_CALLS
                                                   and _builtin(n.func.id, glb))
                   for n in ast.walk(e)) and not any(
            isinstance(n, ast.NamedExpr) for n in ast.walk(e))

    for loop in ast.walk(tree):
        if not isinstance(loop, (ast.For, ast.comprehension)):
            continue
        it = loop.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "reversed" and len(it.args) == 1 and not it.keywords):
            continue
        r = it.args[0]
        if not (isinstance(r, ast.Call) and isinstance(r.func, ast.Name) and r.func.id == "range"
                and 1 <= len(r.args) <= 2 and not r.keywords and all(map(pure, r.args))):
            continue
        lo, hi = (ast.Constant(0), r.args[0]) if len(r.args) == 1 else r.args

        def minus_one(e):
            return ast.BinOp(copy.deepcopy(e), ast.Sub(), ast.Constant(1))

        down = ast.Call(ast.Name("range", ast.Load()),
                        [minus_one(hi), minus_one(lo),
                         ast.UnaryOp(ast.USub(), ast.Constant(1))], [])
        loop.iter = ast.copy_location(down, it)
        ast.fix_missing_locations(loop.iter)
        for n in ast.walk(loop.iter):
            ast.copy_location(n, it)


#: Python's types as NumPy reads them as dtypes (``np.dtype(int)`` is ``int64``: NumPy 2's
#: default integer, on every platform)
_DTYPE_OF_TYPE = {"float": "float64", "int": "int64", "bool": "bool_"}

#: NumPy's functions taking a dtype, and its position when given without ``dtype=``
_DTYPE_POSITION = {"empty": 1, "zeros": 1, "ones": 1, "full": 2, "array": 1, "asarray": 1,
                   "empty_like": 1, "zeros_like": 1, "ones_like": 1, "full_like": 2,
                   "arange": None}


def builtin_dtypes_as_numpy(tree: ast.FunctionDef, glb: dict) -> None:
    """``a.astype(float)``, ``np.zeros(n, dtype=int)``, ``np.empty(n, bool)``: Python's
    ``float``, ``int`` and ``bool`` given as a dtype written ``np.float64``, ``np.int64``,
    ``np.bool_`` -- the dtypes NumPy reads them as -- in place.  Numba takes NumPy's dtypes
    but refuses ``astype(float)`` and ``dtype=int``, the commonest way people write them,
    so such a function ran only as plain Python.  Only where the name is Python's own (not
    assigned in the function, not shadowed in its module) and the module has NumPy under
    some name."""
    import numpy as np

    nps = sorted(k for k, v in glb.items() if v is np)
    if not nps:
        return
    stored = {n.id for n in ast.walk(tree)
              if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    stored |= {a.arg for a in ast.walk(tree.args) if isinstance(a, ast.arg)}

    def fix(e):
        if (isinstance(e, ast.Name) and e.id in _DTYPE_OF_TYPE and e.id not in stored
                and _builtin(e.id, glb)):
            return ast.copy_location(ast.Attribute(ast.Name(nps[0], ast.Load()),
                                                   _DTYPE_OF_TYPE[e.id], ast.Load()), e)
        return e

    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        f = call.func
        if f.attr == "astype" and len(call.args) == 1:
            call.args[0] = fix(call.args[0])
        elif f.attr in _DTYPE_POSITION and isinstance(f.value, ast.Name) and f.value.id in nps:
            at = _DTYPE_POSITION[f.attr]
            if at is not None and len(call.args) > at:
                call.args[at] = fix(call.args[at])
        else:
            continue
        for k in call.keywords:
            if k.arg == "dtype":
                k.value = fix(k.value)
    ast.fix_missing_locations(tree)


def _substituted(node, name: str, value):
    """``node`` with each read of ``name`` replaced by a copy of ``value``."""
    class S(ast.NodeTransformer):
        def visit_Name(self, n):
            if n.id == name and isinstance(n.ctx, ast.Load):
                return ast.copy_location(copy.deepcopy(value), n)
            return n
    return ast.fix_missing_locations(S().visit(node))


def _rewrite_blocks(tree: ast.FunctionDef, rewrite) -> None:
    """Each statement of every block of ``tree`` (inner blocks first) replaced by the
    statements ``rewrite(statement, the statements after it)`` gives, or kept (None)."""
    def block(stmts):
        out = []
        for i, st in enumerate(stmts):
            for field_name in ("body", "orelse", "finalbody"):
                inner = getattr(st, field_name, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field_name, block(inner))
            new = rewrite(st, stmts[i + 1:])
            out.extend([st] if new is None else new)
        return out

    tree.body = block(tree.body)
    ast.fix_missing_locations(tree)


def _unrolled(loop, where, later):
    values = loop.iter.elts
    if not values or loop.orelse or any(isinstance(v, ast.Starred) for v in values):
        refuse_with(where, loop, "loop-range",
                    detail=f"`{_shown(loop.iter)}`: write each value out, with no "
                           "`*` and no `else:` on the loop")
    if isinstance(loop.target, ast.Name):
        names = [loop.target.id]
        rows = [[v] for v in values]
    elif isinstance(loop.target, ast.Tuple) and all(isinstance(t, ast.Name)
                                                     for t in loop.target.elts):
        names = [t.id for t in loop.target.elts]
        if not all(isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == len(names)
                   for v in values):
            refuse_with(where, loop, "loop-range",
                        detail=f"each value of `{_shown(loop.iter)}` must be a tuple of "
                               f"{len(names)} written out")
        rows = [list(v.elts) for v in values]
    else:
        refuse_with(where, loop, "loop-range",
                    detail=f"the loop's target `{_shown(loop.target)}` is not a name or "
                           "a tuple of names")
    assigned = {n.id for sub in loop.body for n in ast.walk(sub)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - set(names)
    for row in rows:
        for v in row:
            for n in ast.walk(v):
                if isinstance(n, ast.Name) and n.id in assigned:
                    refuse_with(where, loop, "loop-range",
                                detail=f"the value `{_shown(v)}` reads {n.id!r}, which "
                                       "the loop's body assigns")
                if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name)
                                                    and n.func.id in _PURE_IN_VALUES):
                    refuse_with(where, loop, "loop-range",
                                detail=f"the value `{_shown(v)}` calls "
                                       f"`{_shown(n.func)}`: compute it into a name "
                                       "before the loop")
    return _copies(loop, names, rows, where, later)


# --------------------------------------------------------------------------- 3. calls

def _plain_call_stmt(stmt, name):
    """True for ``f(...)``, ``x = f(...)``, ``x, y = f(...)`` (the canonical call statements)."""
    if isinstance(stmt, ast.Expr):
        return _is_rec(stmt.value, name)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0]
        ok = isinstance(t, ast.Name) or (isinstance(t, (ast.Tuple, ast.List))
                                         and all(isinstance(e, ast.Name) for e in t.elts))
        return ok and _is_rec(stmt.value, name)
    return False


def _evaluated(stmt):
    """The expressions a statement evaluates unconditionally, in order, with their role."""
    if isinstance(stmt, ast.Expr):
        return [stmt.value]
    if isinstance(stmt, ast.Assign):
        return [stmt.value] + list(stmt.targets)
    if isinstance(stmt, ast.AugAssign):
        return [stmt.target, stmt.value]
    if isinstance(stmt, ast.Return):
        return [stmt.value] if stmt.value is not None else []
    if isinstance(stmt, ast.If):
        return [stmt.test]
    return None


def _events(expr, name, out, conditional=False):
    """Append (kind, node, conditional) in Python's evaluation order (post-order), kind one
    of 'call' (a recursive call), 'read'/'store' (an array element), 'helper' (a call that
    may touch arrays); ``conditional``: Python may skip it."""
    if expr is None:
        return
    if isinstance(expr, ast.IfExp):
        _events(expr.test, name, out, conditional)
        _events(expr.body, name, out, True)
        _events(expr.orelse, name, out, True)
        return
    if isinstance(expr, ast.BoolOp):
        for k, v in enumerate(expr.values):
            _events(v, name, out, conditional or k > 0)
        return
    if _is_rec(expr, name):
        for a in expr.args:  # arguments are checked when the call is hoisted
            if _has_rec(a, name):
                _events(a, name, out, conditional)
        out.append(("call", expr, conditional))
        return
    for child in ast.iter_child_nodes(expr):
        _events(child, name, out, conditional)
    if isinstance(expr, ast.Subscript):
        out.append(("store" if isinstance(expr.ctx, ast.Store) else "read", expr, conditional))
    elif isinstance(expr, ast.Call):
        f = expr.func
        if isinstance(f, ast.Name) and f.id not in _PURE_CALLS:
            out.append(("helper", expr, conditional))


class _ReplaceCalls(ast.NodeTransformer):
    def __init__(self, temps: dict):
        self.temps = temps

    def visit_Call(self, node):
        if id(node) in self.temps:
            temp = _located(ast.Name(id=self.temps[id(node)], ctx=ast.Load()), node)
            temp.hpu_text = _shown(node)    # errors quote the call (hpu._views.display)
            return temp
        return self.generic_visit(node)


def _pure_scalar(expr, tainted) -> bool:
    for n in ast.walk(expr):
        if isinstance(n, ast.Subscript):
            return False
        if isinstance(n, ast.Call) and not (
                (isinstance(n.func, ast.Name) and n.func.id in _PURE_CALLS)
                or isinstance(n.func, ast.Attribute)):
            return False
        if isinstance(n, ast.Name) and n.id in tainted:
            return False
    return True


def _hoist_calls(body, name, where, result):
    rec_idx = [i for i, s in enumerate(body) if _has_rec(s, name)]
    if not rec_idx:
        return body
    first, last = rec_idx[0], rec_idx[-1]
    region = body[first:last + 1]
    # the leading run of canonical call statements stays as written
    lead = 0
    while lead < len(region) and _plain_call_stmt(region[lead], name):
        lead += 1
    if lead == len(region):
        return body
    for s in region[lead:]:
        if _has_rec(s, name) and _evaluated(s) is None:
            return body  # a call nested in a loop or an if's block: parse explains why not
        if isinstance(s, ast.If) and any(_has_rec(x, name) for x in s.body + s.orelse):
            return body
    events = []
    may_return = False  # a return before a call makes that call conditional
    for k, s in enumerate(region[lead:], lead):
        mark = len(events)
        for e in _evaluated(s):
            if isinstance(s, ast.Assign) and e in s.targets and isinstance(e, ast.Name):
                continue
            if isinstance(s, ast.AugAssign) and e is s.target:
                if isinstance(e, ast.Subscript):  # a[i] += v: a[i] is read first, stored last
                    _events(e.value, name, events)
                    _events(e.slice, name, events)
                    events.append(("read", e, False))
                continue
            _events(e, name, events)
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript):
            events.append(("store", s.target, False))
        if may_return:
            events[mark:] = [(kind, node, cond or kind == "call")
                             for kind, node, cond in events[mark:]]
        may_return = may_return or any(isinstance(n, ast.Return) for n in ast.walk(s))
        if not isinstance(s, (ast.Expr, ast.Assign, ast.AugAssign, ast.Return, ast.If)):
            for n in ast.walk(s):
                if isinstance(n, ast.Subscript):
                    events.append(("store" if isinstance(n.ctx, ast.Store) else "read", n, False))
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                        and n.func.id not in _PURE_CALLS:
                    events.append(("helper", n, False))
        if isinstance(s, ast.If):
            for x in s.body + s.orelse:
                for n in ast.walk(x):
                    if isinstance(n, ast.Subscript):
                        events.append(("store" if isinstance(n.ctx, ast.Store) else "read",
                                       n, False))
                    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                            and n.func.id not in _PURE_CALLS:
                        events.append(("helper", n, False))
    calls_at = [j for j, ev in enumerate(events) if ev[0] == "call"]
    last_call = calls_at[-1] if calls_at else -1
    for kind, node, cond in events[:last_call]:
        if kind == "store":
            refuse_with(where, node, "store-before-call",
                        detail=f"`{_shown(node)}` would run after the call instead of "
                               "before it")
        if kind in ("read", "helper"):
            result.reordered.append((node, ast.unparse(node)))
    for kind, node, cond in events:
        if kind == "call" and cond:
            result.conditional.append((node, ast.unparse(node)))

    # hoist: calls in evaluation order; arguments may read only names settled before the calls
    env: dict = {}          # name -> pure scalar expression it holds (over settled names)
    tainted: set = set()    # names assigned from calls, arrays or helpers inside the region
    hoisted, temps, counter = [], {}, [0]

    def check_args(call):
        new_args = []
        for a in call.args:
            for n in ast.walk(a):
                if isinstance(n, ast.Name) and n.id in tainted:
                    refuse_with(where, call, "arg-between",
                                detail=f"{n.id!r} is set between the recursive calls from a "
                                       "call result, an array or a helper")
            new_args.append(_Substitute(env).visit(copy.deepcopy(a)))
        new = copy.copy(call)
        new.args = new_args
        new.keywords = [ast.keyword(arg=k.arg, value=_Substitute(env).visit(copy.deepcopy(k.value)))
                        for k in call.keywords]
        return _located(new, call)

    def assign(names_values, stmt):
        # env's expressions are over the values names had at the hoist point (every name
        # the region assigned is substituted or tainted), so a later assignment cannot
        # change what an earlier entry means
        for tname, value in names_values:
            if value is not None and _pure_scalar(value, tainted):
                env[tname] = _Substitute(env).visit(copy.deepcopy(value))
                tainted.discard(tname)
            else:
                env.pop(tname, None)
                tainted.add(tname)

    moved = []
    for s in region[:lead]:
        hoisted.append(s)
        t = s.targets[0] if isinstance(s, ast.Assign) else None
        if t is not None:
            tainted.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    for s in region[lead:]:
        evs = []
        for e in (_evaluated(s) or []):
            _events(e, name, evs)
        if _plain_call_stmt(s, name) and isinstance(s, ast.Expr):
            # a call statement stays one, its arguments substituted (no temporary: a
            # function that returns nothing has no result to hold)
            hoisted.append(_located(ast.Expr(value=check_args(s.value)), s))
            continue
        if _plain_call_stmt(s, name) and isinstance(s, ast.Assign) \
                and isinstance(s.targets[0], (ast.Tuple, ast.List)):
            names = [f"{TEMP_PREFIX}{counter[0] + k}" for k in range(len(s.targets[0].elts))]
            counter[0] += len(names)
            hoisted.append(_located(ast.Assign(
                targets=[ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names],
                                   ctx=ast.Store())], value=check_args(s.value)), s))
            tainted.update(names)
            moved.append(_located(ast.Assign(
                targets=[copy.deepcopy(s.targets[0])],
                value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names],
                                ctx=ast.Load())), s))
            assign([(e.id, None) for e in s.targets[0].elts], s)
            continue
        for kind, node, _ in evs:
            if kind != "call":
                continue
            tmp = f"{TEMP_PREFIX}{counter[0]}"
            counter[0] += 1
            temps[id(node)] = tmp
            hoisted.append(_located(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())],
                                               value=check_args(node)), node))
            tainted.add(tmp)
        new = s
        if evs:  # a copy with the calls replaced, matched by evaluation order
            new = _replace_by_order(s, name, [temps[id(n)] for k, n, _ in evs if k == "call"])
        moved.append(new)
        if isinstance(s, ast.Assign):
            for t in s.targets:
                if isinstance(t, ast.Name):
                    assign([(t.id, s.value)], s)
                else:
                    assign([(n.id, None) for n in ast.walk(t)
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)], s)
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            v = ast.BinOp(left=ast.Name(id=s.target.id, ctx=ast.Load()), op=s.op, right=s.value)
            assign([(s.target.id, v)], s)
        else:
            assign([(n.id, None) for x in [s] for n in ast.walk(x)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)], s)
    return body[:first] + hoisted + moved + body[last + 1:]


def _replace_by_order(stmt, name, temps):
    """A copy of ``stmt`` with its recursive calls (in evaluation order) replaced by ``temps``."""
    new = copy.deepcopy(stmt)
    evs = []
    for e in (_evaluated(new) or []):
        _events(e, name, evs)
    mapping = {id(n): t for (k, n, _), t in zip([ev for ev in evs if ev[0] == "call"], temps)}
    return _ReplaceCalls(mapping).visit(new)


# --------------------------------------------------------------------------- entry

def _own_nodes(stmts):
    """The nodes of ``stmts``, not those of functions or lambdas defined inside them."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                              ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))


def _tuple_arity(body) -> int:
    """How many values the function returns where it writes a tuple out (``return x, y``),
    0 where none does or two lengths disagree."""
    sizes = {len(n.value.elts) for n in _own_nodes(body)
             if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)}
    return sizes.pop() if len(sizes) == 1 and min(sizes) > 1 else 0


def _unpack_results(body, name):
    """``l = f(...)`` of a function that returns ``k`` values, then ``l[0]``, ``l[-1]``,
    ``return l``, ``x, y = l``: the call unpacked into ``l__t0, ..., l__t{k-1}`` and each
    use written with them (a kernel holds scalars, not tuples).  A name used any other way
    (a computed index, passed on, assigned twice) is left as it is: the frontend's refusal
    says how to unpack it."""
    k = _tuple_arity(body)
    if not k:
        return body
    nodes = list(_own_nodes(body))
    stores: dict = {}
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    calls = {}
    for n in nodes:
        if (isinstance(n, ast.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and _is_rec(n.value, name)
                and stores.get(n.targets[0].id) == 1 and "__" not in n.targets[0].id):
            calls[n.targets[0].id] = n
    if not calls:
        return body
    parents = {}
    for n in nodes:
        for c in ast.iter_child_nodes(n):
            parents[id(c)] = n

    def index_of(sub):
        c = sub.slice
        if isinstance(c, ast.UnaryOp) and isinstance(c.op, ast.USub) \
                and isinstance(c.operand, ast.Constant):
            c = ast.Constant(-c.operand.value) if isinstance(c.operand.value, int) else None
        if isinstance(c, ast.Constant) and type(c.value) is int and -k <= c.value < k:
            return c.value % k
        return None

    ok = set(calls)
    for n in nodes:
        if not (isinstance(n, ast.Name) and n.id in ok and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(id(n))
        if isinstance(up, ast.Subscript) and up.value is n and isinstance(up.ctx, ast.Load) \
                and index_of(up) is not None:
            continue
        if isinstance(up, ast.Return) or (isinstance(up, ast.Assign) and up.value is n
                                          and all(isinstance(t, ast.Tuple) for t in up.targets)):
            continue
        ok.discard(n.id)
    if not ok:
        return body

    def parts(v, ctx):
        return [ast.Name(f"{v}__t{i}", ctx()) for i in range(k)]

    class Unpack(ast.NodeTransformer):
        def visit_Assign(self, n):
            self.generic_visit(n)
            if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and n.targets[0].id in ok and calls.get(n.targets[0].id) is n:
                n.targets = [_located(ast.Tuple(parts(n.targets[0].id, ast.Store),
                                                ast.Store()), n.targets[0])]
            return n

        def visit_Subscript(self, n):
            if isinstance(n.value, ast.Name) and n.value.id in ok \
                    and isinstance(n.ctx, ast.Load):
                return _located(ast.Name(f"{n.value.id}__t{index_of(n)}", ast.Load()), n)
            return self.generic_visit(n)

        def visit_Name(self, n):
            if n.id in ok and isinstance(n.ctx, ast.Load):
                return _located(ast.Tuple(parts(n.id, ast.Load), ast.Load()), n)
            return n

        def visit_FunctionDef(self, n):
            return n

        visit_Lambda = visit_FunctionDef

    return [Unpack().visit(s) for s in body]


def _helper_arity(fn) -> int:
    """``k`` where every ``return`` of the Python function ``fn`` (a helper) writes a tuple of
    ``k >= 2`` values out (``return lo, hi``), else 0."""
    import types

    if not isinstance(fn, types.FunctionType):
        return 0
    from hpu._functional import _tree_of

    tree = _tree_of(fn)
    if tree is None:
        return 0
    sizes = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else 0
             for r in _own_nodes(tree.body) if isinstance(r, ast.Return)}
    return sizes.pop() if len(sizes) == 1 and min(sizes) > 1 else 0


def _returned_helper_tuples(tree: ast.FunctionDef, name, glb) -> None:
    """``return combine(l1, h1, l2, h2)`` where the helper ``combine`` returns ``k`` values
    (every ``return`` of it a tuple of ``k``) -> ``r__t0, ..., r__t{k-1} = combine(...)`` then
    ``return r__t0, ..., r__t{k-1}``: the values written out, as the frontend reads a
    function's results (a kernel holds scalars, not tuples).  The same program: Python
    returns that tuple.  In place, in every block of ``tree``."""
    count = [0]

    def rewrite(st, _later):
        call = st.value if isinstance(st, ast.Return) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id != name
                and not any(_has_rec(x, name) for x in (*call.args, *call.keywords))):
            return None
        k = _helper_arity(glb.get(call.func.id))
        if not k:
            return None
        names = [f"ret__{count[0]}t{i}" for i in range(k)]
        count[0] += 1
        return [_located(ast.Assign(
                    targets=[_located(ast.Tuple([_located(ast.Name(v, ast.Store()), st)
                                                 for v in names], ast.Store()), st)],
                    value=call), st),
                _located(ast.Return(_located(ast.Tuple(
                    [_located(ast.Name(v, ast.Load()), st) for v in names], ast.Load()), st)),
                    st)]

    _rewrite_blocks(tree, rewrite)


def _exchange(st, bound: set) -> bool:
    """An ``if`` without ``else`` whose body only assigns names already bound, each
    statement ``x = e`` or ``x, y = e1, e2`` (an exchange of values: P-MERGE's ``if n1 <
    n2: p1, p2 = p2, p1``)."""
    if not (isinstance(st, ast.If) and st.body and not st.orelse):
        return False
    for a in st.body:
        if not (isinstance(a, ast.Assign) and len(a.targets) == 1):
            return False
        t = a.targets[0]
        if isinstance(t, ast.Name):
            names = [t]
        elif (isinstance(t, ast.Tuple) and isinstance(a.value, ast.Tuple)
              and len(t.elts) == len(a.value.elts)
              and all(isinstance(e, ast.Name) for e in t.elts)):
            names = t.elts
        else:
            return False
        if any(n.id not in bound for n in names):
            return False
    return True


def _prefix_ifs_as_values(body, name, params: set) -> list:
    """``if hi == -1: hi = len(a)`` before the recursion -> ``hi = len(a) if hi == -1 else
    hi``: a scalar statement, which may stand before the base-case guards (it is evaluated
    again wherever hpu tests whether a task is a leaf, as pure scalar code can be).  Only an
    ``if`` (with or without ``else``) whose branches each assign one name, the same one,
    already bound (a parameter, or assigned by an earlier statement here): else the value
    would read a name Python never reads."""
    bound = set(params)
    out = []
    for i, st in enumerate(body):
        if _has_rec(st, name):
            return out + body[i:]
        one = (isinstance(st, ast.If) and len(st.body) == 1
               and isinstance(st.body[0], ast.Assign) and len(st.body[0].targets) == 1
               and isinstance(st.body[0].targets[0], ast.Name))
        if one:
            var = st.body[0].targets[0].id
            other = st.orelse
            one = (not other or (len(other) == 1 and isinstance(other[0], ast.Assign)
                                 and len(other[0].targets) == 1
                                 and isinstance(other[0].targets[0], ast.Name)
                                 and other[0].targets[0].id == var))
            one = one and (var in bound or bool(other))
        if one:
            otherwise = other[0].value if other else ast.Name(id=var, ctx=ast.Load())
            value = ast.IfExp(test=st.test, body=st.body[0].value, orelse=otherwise)
            st = _located(ast.Assign(targets=[ast.Name(id=var, ctx=ast.Store())],
                                     value=_located(value, st)), st)
        elif _exchange(st, bound):
            # CLRS's P-MERGE: `if n1 < n2: p1, p2 = p2, p1; ...` -- the test once, into a
            # name of hpu's, then each assignment made only where it holds
            test = f"if__{len(out)}"
            out.append(_located(ast.Assign(targets=[ast.Name(id=test, ctx=ast.Store())],
                                           value=st.test), st))
            for a in st.body:
                names = a.targets[0].elts if isinstance(a.targets[0], ast.Tuple) \
                    else [a.targets[0]]
                values = a.value.elts if isinstance(a.targets[0], ast.Tuple) else [a.value]
                new = [_located(ast.IfExp(test=ast.Name(id=test, ctx=ast.Load()), body=v,
                                          orelse=ast.Name(id=t.id, ctx=ast.Load())), a)
                       for t, v in zip(names, values)]
                out.append(_located(ast.Assign(
                    targets=a.targets, value=new[0] if len(new) == 1 else _located(
                        ast.Tuple(elts=new, ctx=ast.Load()), a)), a))
            continue
        if isinstance(st, ast.Assign):
            bound |= {n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        out.append(st)
    return out


def normalise(tree: ast.FunctionDef, where, glb) -> Normalised:
    """Rewrite ``tree.body`` (in place) into the canonical shape; see the module docstring."""
    name = tree.name
    result = Normalised(body=list(tree.body))
    _returned_helper_tuples(tree, name, glb)
    body = _unpack_results(list(tree.body), name)
    body = _prefix_ifs_as_values(body, name, {a.arg for a in tree.args.args})
    body = _flatten_blocks(body, name, where)
    body = _unroll_loops(body, name, where, glb)
    body = _flatten_blocks(body, name, where)
    body = _hoist_calls(body, name, where, result)
    tree.body = body
    ast.fix_missing_locations(tree)
    result.body = body
    return result


# --- assignment expressions ------------------------------------------------------------

def _walrus_events(e, cond: bool, out: list) -> None:
    """``e``'s evaluation in Python's order, as events: ``("load", name)``, ``("call",
    node)`` (after its arguments), ``("walrus", node, start)`` (``start``: the index of
    the first event of its value).  ``cond`` marks what Python may skip (an operand of
    ``and``/``or`` after the first, a branch of ``x if c else y``, a chained comparison's
    later operands, anything inside a comprehension or a lambda)."""
    if isinstance(e, ast.NamedExpr):
        start = len(out)
        _walrus_events(e.value, cond, out)
        out.append(("walrus", e, start, cond))
        return
    if isinstance(e, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        for n in ast.walk(e):
            if isinstance(n, ast.NamedExpr):
                out.append(("walrus", n, len(out), True))
        out.append(("call", e, cond))
        return
    if isinstance(e, ast.BoolOp):
        _walrus_events(e.values[0], cond, out)
        for v in e.values[1:]:
            _walrus_events(v, True, out)
        return
    if isinstance(e, ast.IfExp):
        _walrus_events(e.test, cond, out)
        _walrus_events(e.body, True, out)
        _walrus_events(e.orelse, True, out)
        return
    if isinstance(e, ast.Compare):
        _walrus_events(e.left, cond, out)
        for i, c in enumerate(e.comparators):
            _walrus_events(c, cond or i > 0, out)
        return
    if isinstance(e, ast.Call):
        for child in [e.func, *e.args, *(k.value for k in e.keywords)]:
            _walrus_events(child, cond, out)
        out.append(("call", e, cond))
        return
    if isinstance(e, ast.Name):
        if isinstance(e.ctx, ast.Load):
            out.append(("load", e.id, cond))
        return
    for child in ast.iter_child_nodes(e):
        _walrus_events(child, cond, out)


def _pure_call(node) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _PURE_CALLS)


class _WalrusAsName(ast.NodeTransformer):
    def visit_NamedExpr(self, node):
        return ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node)


def _hoisted_walruses(stmt) -> list | None:
    """The assignments that ``stmt``'s assignment expressions stand for, in order, when
    each can run before the statement with the same effect (``if (n := len(a)) <= 1:``:
    ``n = len(a)`` first); None when ``stmt`` has none, or one Python might skip or whose
    move would change what the statement computes (left to the subset's refusal)."""
    if isinstance(stmt, ast.If):
        exprs = [stmt.test]
    elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)):
        exprs = [stmt.value] if stmt.value is not None else []
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            exprs = [ast.Name(id=stmt.target.id, ctx=ast.Load()), stmt.value]
    else:
        return None
    out: list = []
    for e in exprs:
        _walrus_events(e, False, out)
    walruses = [ev for ev in out if ev[0] == "walrus"]
    if not walruses:
        return None
    moved = []
    for kind, node, start, cond in walruses:
        target = node.target.id
        if cond:
            return None
        for ev in out[:start]:
            if ev[0] == "call" and not _pure_call(ev[1]):
                return None             # a call Python makes before the assignment
            if ev[0] == "load" and ev[1] == target:
                return None             # the old value is read before it is replaced
        if isinstance(stmt, ast.Assign) and any(
                isinstance(n, ast.Name) and n.id == target
                for t in stmt.targets for n in ast.walk(t) if not isinstance(t, ast.Name)):
            return None
        value = _WalrusAsName().visit(copy.deepcopy(node.value))
        moved.append(ast.copy_location(
            ast.Assign(targets=[ast.Name(id=target, ctx=ast.Store())], value=value), node))
    return moved


def named_exprs_hoisted(tree: ast.FunctionDef) -> None:
    """``if (n := len(a)) <= 1:`` becomes ``n = len(a)`` then ``if n <= 1:`` (in place; in
    every block, an ``elif``'s in its own), and likewise in an assignment, a ``return`` or
    an expression statement: an assignment expression that Python always evaluates, after
    nothing that calls a function of the user's or reads the name it assigns, is the
    assignment before the statement.  Python's order of evaluation is kept, so the rest of
    hpu sees ordinary assignments; one under a condition (after ``and``, in a comprehension,
    in a ``while`` test) is left as written, for the subset's refusal, with its line."""

    def block(stmts):
        new = []
        for st in stmts:
            for field_ in ("body", "orelse", "finalbody"):
                inner = getattr(st, field_, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field_, block(inner))
            for h in getattr(st, "handlers", []) or []:
                h.body = block(h.body)
            moved = _hoisted_walruses(st)
            if moved:
                new.extend(moved)
                # only the expression they were taken from: a block inside keeps its own
                field_ = "test" if isinstance(st, ast.If) else "value"
                setattr(st, field_, _WalrusAsName().visit(getattr(st, field_)))
            new.append(st)
        return new

    tree.body = block(tree.body)
    ast.fix_missing_locations(tree)


# --- nested tuples as results -----------------------------------------------------------

def _tuple_shape(node):
    """``(s, (mx, c))`` -> ``(None, (None, None))``: where each element is a tuple of its own;
    None for what is not a tuple display, or holds a starred item or a tuple of fewer than
    two elements (whose flat form would not say where it was)."""
    if not isinstance(node, ast.Tuple) or len(node.elts) < 2:
        return None
    out = []
    for e in node.elts:
        if isinstance(e, ast.Starred):
            return None
        if isinstance(e, ast.Tuple):
            inner = _tuple_shape(e)
            if inner is None:
                return None
            out.append(inner)
        else:
            out.append(None)
    return tuple(out)


def _leaves(node) -> list:
    return [x for e in node.elts for x in (_leaves(e) if isinstance(e, ast.Tuple) else [e])]


def shape_leaves(shape) -> int:
    """How many values a result of ``shape`` holds."""
    return sum(1 if s is None else shape_leaves(s) for s in shape)


def regrouped(value, shape):
    """A flat tuple of :func:`shape_leaves` values, nested as ``shape`` says; anything else
    (a value already nested, as Python's or Numba's own run gives it) unchanged."""
    if (shape is None or not isinstance(value, tuple) or len(value) != shape_leaves(shape)
            or len(value) == len(shape)):
        return value
    it = iter(value)

    def build(s):
        return tuple(next(it) if e is None else build(e) for e in s)

    return build(shape)


def nested_results_flattened(tree: ast.FunctionDef, name: str):
    """A function whose results are nested tuples, ``return s, (mx, c)``, its recursive
    calls' unpacked alike (``s1, (mx1, c1) = f(a[:m])``), rewritten in place to return the
    flat ``s, mx, c`` and unpack ``s1, mx1, c1``: hpu's levels hold a task's values side by
    side.  Returns the nesting (:func:`_tuple_shape`) for :func:`regrouped` to give the
    caller the value as Python makes it, or None where the function is not such a function
    (then nothing is changed, and a tuple kept whole is refused as before): every
    ``return`` a tuple display of that one nesting or a recursive call, and every recursive
    call returned or unpacked into targets of the same nesting."""
    own = list(_own_nodes(tree.body))
    returns = [n for n in own if isinstance(n, ast.Return)]
    shapes = {_tuple_shape(r.value) for r in returns if not _is_rec(r.value, name)}
    if len(shapes) != 1:
        return None
    shape = shapes.pop()
    if shape is None or all(s is None for s in shape):
        return None
    rec_ok = set()
    targets = []
    for n in own:
        if isinstance(n, ast.Return) and _is_rec(n.value, name):
            rec_ok.add(id(n.value))
        elif (isinstance(n, ast.Assign) and len(n.targets) == 1 and _is_rec(n.value, name)
              and isinstance(n.targets[0], ast.Tuple)):
            if _tuple_shape(n.targets[0]) != shape or not all(
                    isinstance(x, ast.Name) for x in _leaves(n.targets[0])):
                return None
            rec_ok.add(id(n.value))
            targets.append(n)
    if any(_is_rec(n, name) and id(n) not in rec_ok for n in own):
        return None
    for r in returns:
        if not _is_rec(r.value, name):
            r.value = ast.copy_location(ast.Tuple(elts=_leaves(r.value), ctx=ast.Load()),
                                        r.value)
    for a in targets:
        a.targets = [ast.copy_location(ast.Tuple(elts=_leaves(a.targets[0]), ctx=ast.Store()),
                                       a.targets[0])]
    ast.fix_missing_locations(tree)
    return shape
