"""A function's own loops outlined, so that the fan-out's top levels run them compiled.

Why
===

A functional function -- one that allocates or returns arrays -- runs on the CPU's cores
as a fan-out (:class:`hpu._functional.FanOut`): its top ``K`` levels as Python, each call
at level ``K`` as the whole function compiled by Numba, on a thread of its own.  The top
levels are few calls, but each of them runs its own statements as Python: a merge loop
written in the function itself (the commonest mergesort in Python, with ``L =
arr[:mid].copy()`` and three ``while`` loops that merge into ``arr``) would merge the
whole array element by element in the interpreter at the root -- slower than the compiled
function alone.  So such a function ran as one compiled call, on one core, and its reason
told the user to move the loop into a helper.

That move is mechanical, and :func:`outline_loops` makes it: each statement of the
function that loops (``for``, ``while``, a comprehension, or a builtin that loops over its
argument, ``sum(a)``) and makes no recursive call becomes a call of a helper whose body is
that statement, compiled by Numba as the function's other helpers are (the user's file and
lines in its messages, hpu's checks).  The helper takes the function's local names the
statement reads, and returns those it assigns that the function reads elsewhere::

    i = j = k = 0                                 i = j = k = 0
    while i < len(L) and j < len(R):     ->       i, j, k = hpu_loop0_msort(L, R, arr, i, j, k)
        ...                                       # def hpu_loop0_msort(L, R, arr, i, j, k):
                                                  #     while ...: ...
                                                  #     return i, j, k

Only the fan-out's Python copy of the function uses the outlined form; the compiled
subtrees are the function as written.

What is outlined (else nothing is: the function keeps its one compiled call)
---------------------------------------------------------------------------

* a statement of any block (the function's body, an ``if``'s, a loop's that makes
  recursive calls) with a loop or looping builtin in it, no recursive call, and nothing
  that leaves it: no ``return`` (a ``return`` whose value loops is outlined as its value),
  ``yield``, ``break`` or ``continue`` of an enclosing loop, nested function, ``global``,
  ``nonlocal``, ``try`` or ``with``;
* every local name it reads, and every name it assigns that the function reads elsewhere,
  is assigned on every path before it (a parameter, or a statement earlier in its block or
  an enclosing one; an ``if`` whose branches all assign it): the helper is handed the
  value.  Else the call could raise ``UnboundLocalError`` where Python does not;
* after the outlining no loop is left outside a helper except those that make recursive
  calls (``for part in parts: out.append(f(part))``).

A helper Numba cannot compile for the values it gets (a loop over a dict) runs as the
Python statement it was: the top levels are then as slow as before, never wrong.
"""
from __future__ import annotations

import ast
import copy
import inspect
import threading
from dataclasses import dataclass, field

from hpu._functional import _LOOPS, _reduction

__all__ = ["Outlined", "outline_loops", "OutlinedCall"]

_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: statements a helper cannot hold (they leave it, or bind names elsewhere)
_LEAVING = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
            ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Try,
            ast.With, ast.AsyncWith, ast.AsyncFor, ast.Delete)


@dataclass
class Outlined:
    """The function with its loops outlined (``tree``, to compile in the function's file)
    and, by name, each helper as a Python function (its ``__hpu_tree__`` set, for the
    compiler)."""

    tree: ast.FunctionDef
    helpers: dict = field(default_factory=dict)


def _looping(n) -> bool:
    """A loop, or a builtin that loops over its one argument (``sum(a)``), as
    :func:`hpu._functional.call_shape` finds them."""
    return isinstance(n, _LOOPS) or _reduction(n)


def _loops(node) -> bool:
    return any(_looping(n) for n in ast.walk(node))


def _calls(node, selves) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in selves
               for n in ast.walk(node))


def _leaves(st) -> bool:
    """Whether ``st`` holds something that leaves it, or binds names a helper cannot: see
    the module's list.  A ``break``/``continue`` counts where no loop inside ``st`` holds
    it."""
    if any(isinstance(n, _LEAVING) for n in ast.walk(st)):
        return True

    def jumps(stmts, inside: bool) -> bool:
        for s in stmts:
            if isinstance(s, (ast.Break, ast.Continue)) and not inside:
                return True
            if isinstance(s, (ast.For, ast.While)):
                if jumps(s.body, True) or jumps(s.orelse, inside):
                    return True
            else:
                for f in ("body", "orelse"):
                    inner = getattr(s, f, None)
                    if isinstance(inner, list) and jumps(inner, inside):
                        return True
        return False

    return jumps([st], False)


def _comprehension_names(node) -> set[str]:
    return {n.id for c in ast.walk(node) if isinstance(c, _COMPS) for g in c.generators
            for n in ast.walk(g.target) if isinstance(n, ast.Name)}


def _stored(node, skip_comprehensions: bool = True) -> set[str]:
    """Names ``node`` assigns (not a comprehension's own variables)."""
    inner = set()
    if skip_comprehensions:
        for c in ast.walk(node):
            if isinstance(c, _COMPS):
                inner |= {id(n) for g in c.generators for n in ast.walk(g.target)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store) and id(n) not in inner}


def _loaded(node, own: set[str]) -> list[str]:
    """Names ``node`` reads, in order of first reading, that are in ``own``; a
    comprehension's own variables are not read from outside it."""
    inner = _comprehension_names(node) - _stored(node)
    out: list[str] = []
    for n in ast.walk(node):
        if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in own
                and n.id not in inner and n.id not in out):
            out.append(n.id)
    return out


_ALL = None     # "every name": a block that never completes (ends in return or raise)


def _assigns(st):
    """Names ``st`` assigns on every path that goes on after it (:data:`_ALL` where none
    does)."""
    if isinstance(st, (ast.Return, ast.Raise)):
        return _ALL
    if isinstance(st, ast.Assign):
        return {n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(st, (ast.AugAssign, ast.AnnAssign)):
        return ({st.target.id} if isinstance(st.target, ast.Name)
                and (isinstance(st, ast.AugAssign) or st.value is not None) else set())
    if isinstance(st, ast.If):
        a, b = _block_assigns(st.body), _block_assigns(st.orelse) if st.orelse else set()
        return b if a is _ALL else a if b is _ALL else a & b
    return set()


def _block_assigns(stmts):
    out: set = set()
    for st in stmts:
        got = _assigns(st)
        if got is _ALL:
            return _ALL
        out |= got
    return out


class _NotOutlined(Exception):
    pass


def outline_loops(fn, selves: set[str]) -> Outlined | None:
    """The function ``fn`` (its source) with its loops outlined, or None where it has none
    or one cannot be (see the module's list).  ``selves``: the names the function calls
    itself by."""
    from hpu._functional import _tree_of

    tree = _tree_of(fn)
    if tree is None or fn.__closure__ or not _loops(ast.Module(tree.body, [])):
        return None
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(tree)):
        return None         # (a helper's assignment would be its own local)
    tree.decorator_list = []
    params = [a.arg for a in (*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs)]
    for extra in (tree.args.vararg, tree.args.kwarg):
        if extra is not None:
            params.append(extra.arg)
    own = set(params) | _stored(tree)
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    helpers: dict = {}

    def live(x: str, following) -> bool:
        """Whether ``x`` may be read after a statement, ``following`` being what may run
        next, in order (a loop's whole statement stands for its next iteration)."""
        for s2 in following:
            if any(isinstance(n, ast.Name) and n.id == x and isinstance(n.ctx, ast.Load)
                   for n in ast.walk(s2)):
                return True
            got = _assigns(s2)
            if got is _ALL or x in got:
                return False
        return False

    def helper(st, known: set[str], following, value=None):
        """The call that replaces ``st`` (``value``: a ``return``'s looping value;
        ``following``: what may run after it)."""
        body = value if value is not None else st
        outs = [] if value is not None else sorted(
            x for x in _stored(st) & own if live(x, following))
        # a name the statement assigns before it reads it (a loop's variable) is its own
        # where nothing assigned it before; one it reads first would raise
        # UnboundLocalError in the helper as in Python
        mine = _stored(body)
        ins = [x for x in _loaded(body, own) if x in known or x not in mine]
        for o in outs:
            if o not in ins and o in known:
                ins.append(o)       # its value before, kept where the loop assigns none
        always = _assigns(st)
        missing = [x for x in (*ins, *outs) if x not in known and not (
            x in outs and always is not _ALL and x in always)]
        if missing:
            raise _NotOutlined(missing)
        name = f"hpu_loop{len(helpers)}_{tree.name}"
        if value is not None:
            hbody = [ast.copy_location(ast.Return(copy.deepcopy(value)), st)]
        else:
            hbody = [copy.deepcopy(st)]
            if outs:
                ret = ast.Return(ast.Tuple([ast.Name(o, ast.Load()) for o in outs], ast.Load()))
                hbody.append(ast.copy_location(ret, st))
        h = ast.FunctionDef(name=name, args=ast.arguments(
            posonlyargs=[], args=[ast.arg(x) for x in ins], kwonlyargs=[], kw_defaults=[],
            defaults=[]), body=hbody, decorator_list=[], returns=None, type_params=[])
        ast.copy_location(h, st)
        ast.fix_missing_locations(h)
        space: dict = {}
        exec(compile(ast.Module([h], []), filename, "exec"), fn.__globals__, space)  # noqa: S102
        pyh = space[name]
        pyh.__hpu_tree__ = (h, filename, text, tree.lineno)
        helpers[name] = pyh
        call = ast.Call(ast.Name(name, ast.Load()), [ast.Name(x, ast.Load()) for x in ins], [])
        if value is not None:
            new = ast.Return(call)
        elif outs:
            new = ast.Assign([ast.Tuple([ast.Name(o, ast.Store()) for o in outs],
                                        ast.Store())], call)
        else:
            new = ast.Expr(call)
        for n in ast.walk(new):
            ast.copy_location(n, st)
        return new

    def block(stmts, known: set[str], after: list) -> list:
        """``stmts`` outlined; ``known``: names assigned on every path before them;
        ``after``: what may run once they complete."""
        out = []
        for idx, st in enumerate(stmts):
            rest = stmts[idx + 1:]
            following = rest + (after if _block_assigns(rest) is not _ALL else [])
            if not _loops(st) or (_calls(st, selves) and not isinstance(
                    st, (ast.If, ast.For, ast.While))):
                out.append(st)              # (a loop beside a call: left, found below)
            elif (isinstance(st, ast.Return) and st.value is not None
                  and not _calls(st, selves) and not _leaves(ast.Expr(st.value))):
                out.append(helper(st, known, following, st.value))
            elif not _calls(st, selves) and not _leaves(st):
                out.append(helper(st, known, following))
            elif isinstance(st, (ast.If, ast.For, ast.While)):
                inner = set(known)
                again = following
                if isinstance(st, (ast.For, ast.While)):
                    again = [st] + following            # the next iteration, or on
                if isinstance(st, ast.For):
                    inner |= {n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)}
                st.body = block(st.body, inner, again)
                st.orelse = block(st.orelse, set(known), following)
                out.append(st)
            else:
                out.append(st)
            got = _assigns(st)
            if got is not _ALL:
                known = known | got
        return out

    try:
        tree.body = block(tree.body, set(params), [])
    except _NotOutlined:
        return None
    # what is left looping outside a helper must make recursive calls itself
    if any(_looping(n) and not _calls(n, selves) for n in ast.walk(tree)):
        return None
    if not helpers:
        return None
    ast.fix_missing_locations(tree)
    return Outlined(tree=tree, helpers=helpers)


class OutlinedCall:
    """An outlined helper as the fan-out's top levels call it: compiled by ``compile_``
    (once, on its first call), its arguments resolved first; where Numba cannot compile it
    for the values it gets, the Python statement it was."""

    def __init__(self, py, compile_):
        self.py, self._compile = py, compile_
        self._disp = None
        self._python = False
        self._lock = threading.Lock()

    def __call__(self, *args):
        from hpu._functional import resolve

        args = resolve(args)
        if not self._python and self._typed(args):
            from numba.core.errors import NumbaError, UnsupportedBytecodeError

            with self._lock:
                if self._disp is None:
                    self._disp = self._compile(self.py)
            try:
                return self._disp(*args)
            except (NumbaError, UnsupportedBytecodeError):
                self._python = True
        return self.py(*args)

    @staticmethod
    def _typed(args) -> bool:
        """Whether Numba can type every argument (an empty list it cannot: this call then
        runs as Python, the next ones compiled as before)."""
        import numba

        try:
            for a in args:
                numba.typeof(a)
        except (ValueError, TypeError):
            return False
        return True
