"""A local read before it is assigned raises UnboundLocalError, as in Python.

Why
===

Python raises ``UnboundLocalError`` where a function reads a local variable that no
statement has assigned on the path taken::

    if left[0] > 0:
        bonus = 1
    ...
    out[t] = left[t] + bonus            # UnboundLocalError when left[0] <= 0

Numba compiles such a read without complaint and gives the variable's zero value (the
function above returned an array where Python raised; a ``last`` assigned only inside a
loop that ran no turn came back as 0).  Every compiled path of hpu inherited that: a
silently wrong answer.

:func:`guard_unbound` finds, in one function's tree, each read of a local that is not
assigned on *every* path before it (a definite-assignment analysis: an ``if`` assigns what
both its branches assign, a loop what was assigned before it, a branch that returns or
raises assigns everything), and only for those variables adds a flag set where the
variable is assigned and checked before the statement that reads it::

    hpu_bound_bonus = False            # at the start
    if left[0] > 0:
        bonus = 1
        hpu_bound_bonus = True
    ...
    if not hpu_bound_bonus:
        raise UnboundLocalError("cannot access local variable 'bonus' where it is not "
                                "associated with a value")
    out[t] = left[t] + bonus

The rest of the machinery raises it as any ``raise`` of the user's: at the user's line, on
the CPU and through the device's error channel.  Functions whose every read is of a
variable assigned before it -- nearly all -- are left exactly as they were.
"""
from __future__ import annotations

import ast

__all__ = ["guard_unbound", "FLAG"]

FLAG = "hpu_bound_"
_ALL = None        # "everything": a block that does not complete


def _message(name: str) -> str:
    return f"cannot access local variable '{name}' where it is not associated with a value"


def _stores(node) -> set[str]:
    """Names ``node`` assigns in the function's own scope (not a comprehension's, a
    lambda's or a nested function's)."""
    out: set[str] = set()

    def visit(n):
        if isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            return
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        for c in ast.iter_child_nodes(n):
            visit(c)

    visit(node)
    return out


def _loads(node) -> list[ast.Name]:
    """The reads of names in ``node``'s own scope (a comprehension's variables and a
    lambda's body are not the function's)."""
    out: list[ast.Name] = []

    def visit(n, hidden: frozenset):
        if isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            inner = hidden | {x.id for g in n.generators for x in ast.walk(g.target)
                              if isinstance(x, ast.Name)}
            for c in ast.iter_child_nodes(n):
                visit(c, inner)
            return
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in hidden:
            out.append(n)
        for c in ast.iter_child_nodes(n):
            visit(c, hidden)

    visit(node, frozenset())
    return out


def _header(st) -> list:
    """The parts of a compound statement evaluated before its blocks."""
    if isinstance(st, (ast.If, ast.While)):
        return [st.test]
    if isinstance(st, ast.For):
        return [st.iter]
    if isinstance(st, ast.With):
        return [i.context_expr for i in st.items]
    if isinstance(st, ast.Try):
        return []
    return [st]


def _meet(a, b):
    if a is _ALL:
        return b
    if b is _ALL:
        return a
    return a & b


def guard_unbound(tree: ast.FunctionDef) -> ast.FunctionDef:
    """``tree`` with the checks of the module docstring, in place (and returned); unchanged
    where every read of a local is of one assigned on every path before it."""
    a = tree.args
    params = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    local = _stores(ast.Module(tree.body, [])) - params
    if not local or any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(tree)):
        return tree
    risky: dict[int, set] = {}          # id(statement) -> names it may read unbound
    breaks: list[list] = []             # per enclosing loop: what is assigned at each break

    def check(st, parts, defined):
        if defined is _ALL:
            return
        for part in parts:
            for n in _loads(part):
                if n.id in local and n.id not in defined:
                    risky.setdefault(id(st), set()).add(n.id)

    def block(stmts, defined):
        for st in stmts:
            if defined is _ALL:
                return _ALL
            defined = statement(st, defined)
        return defined

    def statement(st, defined):
        if isinstance(st, (ast.Return, ast.Raise)):
            check(st, [st], defined)
            return _ALL
        if isinstance(st, ast.Break):
            if breaks:                  # what the loop's code after it may rely on
                breaks[-1].append(set(defined))
            return _ALL
        if isinstance(st, ast.Continue):
            return _ALL
        if isinstance(st, ast.If):
            check(st, [st.test], defined)
            return _meet(block(st.body, set(defined)), block(st.orelse, set(defined)))
        if isinstance(st, (ast.For, ast.While)):
            check(st, _header(st), defined)
            inner = set(defined)
            if isinstance(st, ast.For):
                inner |= _stores(st.target)
            breaks.append([])
            block(st.body, inner)
            broke = breaks.pop()
            # after the loop: its else ran (the loop ended), or a break left it -- with
            # what was assigned before that break (`found = True; break`), not the else's
            after = block(st.orelse, set(defined))
            for b in broke:
                after = _meet(after, b)
            return defined if after is _ALL else after
        if isinstance(st, ast.With):
            check(st, _header(st), defined)
            inner = set(defined) | {x for i in st.items if i.optional_vars is not None
                                    for x in _stores(i.optional_vars)}
            return block(st.body, inner)
        if isinstance(st, ast.Try):
            block(st.body, set(defined))
            for h in st.handlers:
                block(h.body, set(defined))
            block(st.orelse, set(defined))
            block(st.finalbody, set(defined))
            return defined
        if isinstance(st, ast.Delete):
            return defined - _stores_deleted(st)
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return defined | {st.name}
        check(st, [st], defined)
        if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
            if st.target.id in local and st.target.id not in defined:
                risky.setdefault(id(st), set()).add(st.target.id)
        return defined | _stores(st)

    block(tree.body, set())
    if not risky:
        return tree
    names = sorted(set().union(*risky.values()))

    def made(src, at):
        out = ast.parse(src).body
        for x in out:
            for n in ast.walk(x):
                ast.copy_location(n, at)
        return out

    def rewrite(stmts):
        out = []
        for st in stmts:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field, rewrite(inner))
            if isinstance(st, ast.Try):
                for h in st.handlers:
                    h.body = rewrite(h.body)
            for name in sorted(risky.get(id(st), ())):
                out += made(f"if not {FLAG}{name}:\n"
                            f"    raise UnboundLocalError({_message(name)!r})", st)
            out.append(st)
            if isinstance(st, ast.For):
                hit = [x for x in names if x in _stores(st.target)]
                if hit:
                    st.body = made("\n".join(f"{FLAG}{x} = True" for x in hit),
                                   st.body[0]) + st.body
            elif isinstance(st, ast.Delete):
                hit = [x for x in names if x in _stores_deleted(st)]
                if hit:
                    out += made("\n".join(f"{FLAG}{x} = False" for x in hit), st)
            elif not isinstance(st, (ast.If, ast.While, ast.With, ast.Try)):
                hit = [x for x in names if x in _stores(st)]
                if hit:
                    out += made("\n".join(f"{FLAG}{x} = True" for x in hit), st)
        return out

    body = rewrite(tree.body)
    first = tree.body[0]
    start = made("\n".join(f"{FLAG}{x} = False" for x in names), first)
    # (after a docstring, which stays the first statement)
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        tree.body = body[:1] + start + body[1:]
    else:
        tree.body = start + body
    ast.fix_missing_locations(tree)
    return tree


def _stores_deleted(st: ast.Delete) -> set[str]:
    return {t.id for t in st.targets if isinstance(t, ast.Name)}
