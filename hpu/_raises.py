"""``raise ValueError("...")`` and ``assert`` in the numeric subset, on every path.

Why: people guard a recursive function against bad input the way Python
teaches, ``if hi < lo: raise ValueError("empty range")`` or
``assert hi > lo``, and a function was refused for it at decoration.  Python
raises that exception at that line; hpu must raise the same, whichever
device ran the task.

What is accepted: ``raise E``, ``raise E(c, ...)`` and ``assert test[, c]``
where ``E`` is one of Python's built-in exception classes
(:data:`BUILTIN`) and the arguments are constants (a string, a number,
``None``), so that every path can make the very exception Python makes.  A
message computed at run time (an f-string, ``str(x)``: ``raise ValueError(f"n must be >= 0,
got {n}")``, the way Python teaches it) cannot be built by compiled code -- an OpenCL
work-item has no strings -- so such a ``raise`` becomes one of a constant marker
(:data:`REPLAY`, naming the line and the statement): whichever path reaches it, hpu runs the
call again as the plain Python function (from the caller's arguments as they were, as for an
integer past int64), which raises the very exception with its very message at the user's
line (:func:`is_replay`).

How each path raises it:

* **CPU** (the Numba module): the statement as written; Numba raises the class
  with its constant arguments, and the level drivers' ``try`` reruns the
  failing task alone so that it reaches Python (:mod:`hpu._guard`).
* **Device** (the OpenCL translator): the work-item records error code 9 with
  the site of the ``raise`` in the error channel and returns from the
  function (:mod:`hpu._opencl._translate`); the host rebuilds the exception
  from the site's text (:func:`exception_from_site`), which holds the
  statement as the user wrote it.

Every path then adds a note (PEP 678) naming the file and line of the
``raise`` (:func:`add_site_note`): the exception is Python's, and the user's
line is named as for hpu's own checks.

``assert test, msg`` becomes ``if not (test): raise AssertionError(msg)`` before
anything else reads the function (Python's ``-O`` is not followed: hpu keeps
the check).
"""
from __future__ import annotations

import ast
import builtins

__all__ = ["BUILTIN", "REPLAY", "is_replay", "lower_raises", "raise_refusal", "device_raise",
           "exception_from_site",
           "add_site_note", "raise_sites"]

#: The exception classes a task may raise: Python's built-in ones that user code raises.
BUILTIN = frozenset({
    "Exception", "ArithmeticError", "AssertionError", "IndexError", "KeyError",
    "LookupError", "NotImplementedError", "OverflowError", "RecursionError", "RuntimeError",
    "TypeError", "ValueError", "ZeroDivisionError", "FloatingPointError",
    "NameError", "UnboundLocalError",
})

#: the start of the message of a ``raise`` whose own message is computed at run time: an
#: OverflowError with it means "run the call as the plain function" (:func:`is_replay`)
REPLAY = "hpu: the plain function raises this: "


def is_replay(err: BaseException) -> bool:
    """Whether ``err`` is the marker of a ``raise`` whose message is computed at run time
    (:data:`REPLAY`): the caller runs the call again as the plain function."""
    return (type(err) is OverflowError and len(err.args) == 1 and isinstance(err.args[0], str)
            and err.args[0].startswith(REPLAY))


#: mark on a ``raise`` the device and the note can rebuild (its class name and arguments)
_MARK = "hpu_raise"
#: mark on one they cannot: the reason, for the refusal
_REFUSED = "hpu_raise_refused"


def _constant(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, int, float, bool)) or node.value is None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant) and isinstance(
            node.operand.value, (int, float)) and not isinstance(node.operand.value, bool)
    return False


_FOLD_OPS = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y,
             ast.Mult: lambda x, y: x * y, ast.Div: lambda x, y: x / y,
             ast.FloorDiv: lambda x, y: x // y, ast.Mod: lambda x, y: x % y,
             ast.Pow: lambda x, y: x ** y}


def _folded(node, glb):
    """``node`` as the constant it always is -- a literal, arithmetic on literals
    (``10 ** 9``), a module's str/int/float/bool constant (``MSG``) -- or raise
    ``ValueError``."""
    if _constant(node):
        return ast.literal_eval(node)
    if isinstance(node, ast.Name) and node.id in glb:
        v = glb[node.id]
        if isinstance(v, (str, int, float, bool)) or v is None:
            return v
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _folded(node.operand, glb)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLD_OPS:
        x, y = _folded(node.left, glb), _folded(node.right, glb)
        if (isinstance(x, str) and isinstance(y, str) and isinstance(node.op, ast.Add)) or (
                all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
                and not (isinstance(node.op, ast.Pow) and abs(y) > 64)):
            try:
                return _FOLD_OPS[type(node.op)](x, y)
            except (ArithmeticError, ValueError):
                pass
    raise ValueError("not a constant")


def _normalised(node: ast.Raise, glb) -> str | None:
    """Mark ``node`` (``raise E(c...)``, ``E`` a built-in class) and return None, or return
    why it cannot run on every path."""
    if node.exc is None:
        return "a bare `raise` re-raises the exception being handled, and tasks handle none"
    if node.cause is not None:
        return "`raise ... from ...` chains exceptions, which a task cannot hold"
    exc = node.exc
    call = exc if isinstance(exc, ast.Call) else None
    name = (call.func if call is not None else exc)
    if not isinstance(name, ast.Name) or name.id not in BUILTIN or (
            name.id in glb and glb[name.id] is not getattr(builtins, name.id)):
        return (f"`{ast.unparse(exc)}` is not one of Python's built-in exception classes "
                f"({', '.join(sorted(BUILTIN))}), which are what a task can raise")
    if call is not None:
        try:
            if call.keywords:
                raise ValueError("keywords")
            values = [_folded(a, glb) for a in call.args]
        except ValueError:
            # computed at run time: a marker every path raises, and hpu replays the call as
            # the plain function, which raises this one (module docstring)
            text = getattr(node, "hpu_shown", None) or ast.unparse(node)
            node.exc = ast.copy_location(ast.Call(
                ast.Name("OverflowError", ast.Load()),
                [ast.copy_location(ast.Constant(f"{REPLAY}line {node.lineno}: {text}"), exc)],
                []), exc)
            ast.fix_missing_locations(node)
            setattr(node, _MARK, "OverflowError")
            return None
        # the constants themselves: what every path (and the device's site text) holds
        call.args = [ast.copy_location(ast.Constant(v), a) if not isinstance(v, (int, float))
                     or isinstance(v, bool) or v >= 0
                     else ast.copy_location(ast.UnaryOp(ast.USub(), ast.Constant(-v)), a)
                     for v, a in zip(values, call.args)]
    if call is None:
        node.exc = ast.copy_location(ast.Call(ast.Name(name.id, ast.Load()), [], []), exc)
    setattr(node, _MARK, name.id)
    return None


def lower_raises(tree, glb) -> None:
    """In place: each ``assert`` becomes ``if not test: raise AssertionError(msg)``, and each
    ``raise`` is marked as accepted (:func:`raise_refusal` is None) or refused."""

    class Asserts(ast.NodeTransformer):
        def visit_Assert(self, node):
            args = [] if node.msg is None else [node.msg]
            exc = ast.Call(ast.Name("AssertionError", ast.Load()), args, [])
            test = ast.UnaryOp(ast.Not(), node.test)
            out = ast.If(test, [ast.Raise(exc, None)], [])
            for n in (exc, exc.func, test, out, out.body[0]):
                ast.copy_location(n, node)
            out.body[0].hpu_shown = ast.unparse(node)   # refusals quote the assert
            return out

    Asserts().visit(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise):
            why = _normalised(node, glb)
            if why is not None:
                setattr(node, _REFUSED, why)
    ast.fix_missing_locations(tree)


def device_raise(node: ast.Raise) -> str | None:
    """The class name of ``raise E(c...)`` as the translator reads it again from generated
    source (no marks there): ``E`` one of :data:`BUILTIN`, constant arguments; else None."""
    exc = node.exc
    if (node.cause is None and isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name)
            and exc.func.id in BUILTIN and not exc.keywords
            and all(_constant(a) for a in exc.args)):
        return exc.func.id
    return None


def raise_refusal(node) -> str | None:
    """Why the ``raise`` ``node`` cannot run on every path (None: it can; :func:`lower_raises`
    has read it)."""
    if getattr(node, _MARK, None) is not None:
        return None
    return getattr(node, _REFUSED, "the raise was not read by hpu")


def raise_sites(fn) -> tuple[tuple[str, tuple, str], ...]:
    """``(class name, arguments, "file:line")`` of every ``raise E(c...)`` and ``assert`` the
    function ``fn`` and its helpers hold as written, for :func:`add_site_note`."""
    import os

    from hpu._functional import _trees

    import copy

    from hpu._unbound import guard_unbound

    out = []
    for f, tree in _trees(fn):
        tree = guard_unbound(copy.deepcopy(tree))   # (its UnboundLocalError checks too)
        name, glb = os.path.basename(f.__code__.co_filename), f.__globals__
        for node in ast.walk(tree):
            try:
                if isinstance(node, ast.Assert):
                    args = () if node.msg is None else (_folded(node.msg, glb),)
                    out.append(("AssertionError", args, f"{name}:{node.lineno}"))
                elif isinstance(node, ast.Raise) and node.exc is not None:
                    exc = node.exc
                    call = exc if isinstance(exc, ast.Call) else None
                    cls = call.func if call is not None else exc
                    if isinstance(cls, ast.Name) and cls.id in BUILTIN and not (call and call.keywords):
                        args = tuple(_folded(a, glb) for a in call.args) if call else ()
                        out.append((cls.id, args, f"{name}:{node.lineno}"))
            except ValueError:   # a message made at run time: no site to match
                continue
    return tuple(out)


def exception_from_site(text: str) -> BaseException | None:
    """The exception a ``raise`` site's text (``"file:line: raise E(c...)"``, as the error
    channel's sites hold it) stands for, or None when the text is not one."""
    where, sep, stmt = text.partition(": raise ")
    if not sep:
        return None
    try:
        call = ast.parse(stmt, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id in BUILTIN):
        return None
    try:
        args = tuple(ast.literal_eval(a) for a in call.args)
    except ValueError:
        return None
    return getattr(builtins, call.func.id)(*args)


def add_site_note(err: BaseException, sites) -> None:
    """Name the user's line of the ``raise`` that made ``err`` (a PEP 678 note): the site of
    ``sites`` (:func:`raise_sites`) with ``err``'s class and arguments; several such sites
    are all named.  Nothing for another exception, or one already noted."""
    if getattr(err, "hpu_noted", False) or not sites:
        return
    hits = [w for name, args, w in sites if type(err).__name__ == name and err.args == args]
    if not hits:
        return
    def line(w):
        file, _, n = w.rpartition(":")
        return file, int(n) if n.isdigit() else 0

    err.add_note("raised at " + " or ".join(sorted(dict.fromkeys(hits), key=line)))
    try:
        err.hpu_noted = True
    except AttributeError:  # pragma: no cover - built-in exceptions take attributes
        pass
