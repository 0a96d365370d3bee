"""Kernels from the spec: a decorated function's level kernels, in OpenCL C.

Why this is small: the decorator's code generator (:mod:`hpu._codegen`) already
writes every per-task function in the numeric subset, task index first:
``combine_task(t, ...)`` combines task ``t`` of a level, ``leaf_task_iter(t, ...)``
solves task ``t``'s whole subtree with ``solve_iter``, the recursive function
rewritten as a loop over an explicit fixed-depth stack (OpenCL has no
recursion).  Numba compiles exactly these functions for the CPU; here the same
functions go through the translator (:mod:`hpu._opencl._translate`) as range
kernels, one work-item per task (004 Algorithm 3).  One source, two targets:
there is no second, hand-kept copy of the algorithm to drift apart.

A subtree deeper than the stack sets ``err[0]`` and its work-item stops; the
backend reads the flag and raises :class:`hpu._cpu.StackOverflowError`, never
returning a partial result as if it were whole.

The kernels are translated in checked mode: a mistake in the user's code (``// 0``,
NaN -> int, an out-of-range index in bounds-checked mode) is recorded in the
``hpu__err`` buffer at a site whose text is the CPU module's (:class:`_Sites`),
and the backend raises Python's exception after the device's share.

Factories are cached: the translation per (generated source, argument types,
depth), the built program per context (:func:`hpu._opencl._build.build_program`),
so a second run of the same function on the same device compiles nothing.
"""
from __future__ import annotations

import dataclasses
import re
import threading
from typing import Any, Mapping

import numpy as np

from hpu._errors import TranslationError
from hpu._opencl._scalars import INT64, Array, scalar_of
from hpu._opencl._source import FunctionSource
from hpu._opencl._translate import TranslatedProgram, translate

__all__ = ["LEAF", "COMBINE", "translate_levels", "level_arg_types", "opencl_source"]

LEAF = "level_leaf"
COMBINE = "level_combine"

_lock = threading.Lock()
_cache: dict = {}

#: Kernels with the error channel (checked ``//``, ``%``, float -> int, bounds).  Only
#: ``bench/bench_safety.py`` turns it off, to measure what the channel costs.
ERROR_CHANNEL = True


def _value_type(value):
    if isinstance(value, np.ndarray):
        return Array(value.dtype)
    if isinstance(value, (bool, np.bool_)):
        return scalar_of(np.bool_)
    if isinstance(value, np.generic):
        return scalar_of(value.dtype)
    if isinstance(value, int):
        return INT64
    return scalar_of(np.float64)


def level_arg_types(program, shared: Mapping[str, Any]) -> dict[str, Any]:
    """The translator type of every name the level task functions take."""
    lay, types = program.layout, program.types
    out: dict[str, Any] = {"tid__": INT64, "off__": Array(np.int64), "err__": Array(np.int64)}
    out.update({f"in__{v}": Array(dt) for v, dt in zip(lay.varying, types.varying)})
    out.update({f"loc__{c}": Array(dt) for c, dt in zip(lay.carried, types.carried)})
    for k, dt in enumerate(types.results):
        out[f"res__{k}"] = Array(dt)
        out[f"cres__{k}"] = Array(dt)
    out.update({name: _value_type(v) for name, v in shared.items()})
    return out


def _signature_key(program, shared, depth):
    kinds = tuple((n, str(_value_type(v))) for n, v in sorted(shared.items()))
    return (program.iter_source(depth), kinds, depth, bounds_checked(program), ERROR_CHANNEL)


def bounds_checked(program) -> bool:
    """Whether ``program`` was built in bounds-checked mode: the device then checks
    ``a[i]`` too (a view's index against the view's length)."""
    if program.boundscheck is not None:
        return bool(program.boundscheck)
    return program.source.count("hpu__ix(") > 1 or program.source.count("hpu__vix(") > 1


class _Sites:
    """The error channel's sites: checked operation -> index into :attr:`texts`.

    A text is what the CPU module's ``hpu__SITES`` holds for the same operation
    ("file:line: expression", "file:line: in helper(): expression" in a
    helper; :class:`hpu._codegen._Checked`), so a mistake gives the same message
    on every path.  A view's subscript is named as the user wrote it (``v[i]``,
    :func:`hpu._views.display`).  Generated code (names with ``__``, lines no
    user line maps to) is not checked.
    """

    def __init__(self, program, depth: int):
        import ast
        import os

        from hpu._codegen import device_views, helper_source, statements
        from hpu._views import display, shown_as, view_index

        self.spec = program.spec
        self.helpers = {h.name: h for h in program.closure.helpers}
        self.lines = user_lines(program.iter_source(depth), os.path.basename(program.spec.filename))
        #: generated line -> the user's line of the statement there (nested ones included)
        self.stmt_lines = program.iter_user_lines(depth)
        self.texts: list[str] = []
        self._seen: dict[tuple, int | None] = {}
        trees = [program.spec.tree] + [h.tree for h in program.closure.helpers
                                       if h.tree is not None]
        # views' subscripts as the generated module holds them (plain, or the device's
        # bounds-checked form) -> as the user wrote them
        self._views: dict[str, str] = {}
        for t in trees:
            for n in ast.walk(t):
                mark = view_index(n)
                if mark is not None:
                    if "__" in ast.unparse(n):  # not `a[0]` (from `a[:m][0]`): a plain one too
                        self._views.setdefault(ast.unparse(n), mark.text)
                    self._views.setdefault(ast.unparse(device_views(n)), mark.text)
                elif shown_as(n) is not None:  # a slice assignment's check and copies
                    self._views.setdefault(ast.unparse(n), shown_as(n))
        self._display = lambda node: display(node, self._views)
        # the user's own line of each expression: a "# line N" comment names the line where
        # a statement starts; the expression may sit on a later line of it (an if's body)
        self._at: dict[str, list[int]] = {}
        for n in ast.walk(program.spec.tree):
            if isinstance(n, (ast.BinOp, ast.Call, ast.Subscript, ast.AugAssign)):
                self._at.setdefault(display(n), []).append(n.lineno)
        for v in self._at.values():
            v.sort()
        # a helper's lines: statement k lines below the def in the generated module ->
        # (its line in the user's file, {expression in it: its line})
        self._helper_lines: dict[str, dict[int, tuple[int, dict[str, int]]]] = {}
        bounds = bounds_checked(program)
        for h in program.closure.helpers:
            if h.tree is None:
                continue
            gen = ast.parse(helper_source(h, bounds)).body[0]
            table = {}
            for mine, theirs in zip(statements(h.tree), statements(gen)):
                exprs: dict[str, int] = {}
                for child in ast.iter_child_nodes(mine):
                    if isinstance(child, ast.expr):
                        for e in ast.walk(child):
                            if hasattr(e, "lineno"):
                                exprs.setdefault(display(e), e.lineno)
                table.setdefault(theirs.lineno - gen.lineno, (mine.lineno, exprs))
            self._helper_lines[h.name] = table

    def __call__(self, typing, node) -> int | None:
        import ast

        key = (typing.name, id(node))
        if key in self._seen:
            return self._seen[key]
        k = None
        target = node.target if isinstance(node, ast.AugAssign) else node
        generated = isinstance(target, ast.Subscript) and (
            not isinstance(target.value, ast.Name) or "__" in target.value.id)
        expr = self._display(node)
        if not generated:
            h = self.helpers.get(typing.name)
            if h is not None:
                # the failing line: the statement's, or the expression's within it
                line, exprs = self._helper_lines.get(h.name, {}).get(
                    getattr(node, "lineno", 0) - typing.tree.lineno, (h.lineno, {}))
                text = f"{h.filename}:{exprs.get(expr, line)}: {h.context}{expr}"
            else:
                gen_line = typing.source.line_of(node)
                at = self.lines.get(gen_line)
                text = None
                if at is not None:
                    line = self.stmt_lines.get(gen_line, int(at.rpartition(":")[2]))
                    line = next((n for n in self._at.get(expr, ()) if n >= line), line)
                    text = f"{self.spec.filename}:{line}: {expr}"
            if text is not None:
                self.texts.append(text)
                k = len(self.texts) - 1
        self._seen[key] = k
        return k


def translate_levels(program, shared: Mapping[str, Any], depth: int) -> TranslatedProgram:
    """Translate ``leaf_task_iter`` and ``combine_task`` of ``program`` (cached)."""
    key = _signature_key(program, shared, depth)
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    module = program.iter_module(depth)
    lay = program.layout
    types = level_arg_types(program, shared)
    leaf_names = ("tid__",) + tuple(lay.leaf_iter_args())
    combine_names = ("tid__",) + tuple(lay.combine_args())
    entries = [
        (FunctionSource.from_callable(module.leaf_task_iter), tuple(types[n] for n in leaf_names)),
        (FunctionSource.from_callable(module.combine_task), tuple(types[n] for n in combine_names)),
    ]
    sites = _Sites(program, depth)
    try:
        result = translate(entries, kernels={LEAF: "leaf_task_iter", COMBINE: "combine_task"},
                           private_arrays=True, checked=sites if ERROR_CHANNEL else None,
                           bounds=bounds_checked(program), unbound_checked=True)
    except TranslationError as err:
        raise _at_user_line(err, program, depth) from None
    result = dataclasses.replace(result, sites=tuple(sites.texts))
    with _lock:
        _cache.setdefault(key, result)
        return _cache[key]


_HELPER = re.compile(r"^# ---- .*?(?:, from |\()(?P<file>[^:()]+):(?P<line>\d+)\)?:?\s*$")
_STMT = re.compile(r"^\s*# (?:child \d+: )?line (?P<line>\d+): ")
_COMMENT = re.compile(r"/\* (?P<file>[^:*]+\.py):(?P<line>\d+): ")


def user_lines(generated: str, user_file: str,
               sources: Mapping[str, list[str]] | None = None) -> dict[int, str]:
    """Generated-module line -> ``"file.py:N"`` of the user's line it came from.

    Copied functions (the recursive function, its helpers) start at the line
    their ``# ---- ..., from file.py:N`` banner names; each copied line is then
    found, in order, in the user's file (``sources``: basename -> lines), since
    the copy drops docstrings and comments.  Generated task code maps to the
    nearest preceding ``# line N:`` comment of the same function.
    """
    sources = sources or {}
    out: dict[int, str] = {}
    cursor = 0
    copied: tuple[str, int, int] | None = None   # (file, user line of def, generated line of def)
    stmt: int | None = None
    for i, text in enumerate(generated.splitlines(), 1):
        m = _HELPER.match(text)
        if m:
            copied, stmt = (m.group("file"), int(m.group("line")), -1), None
            continue
        if text.startswith("# ----"):
            copied, stmt = None, None
            continue
        if copied is not None:
            if copied[2] < 0 and text.startswith("def "):
                copied = (copied[0], copied[1], i)
                cursor = copied[1] - 1
            if copied[2] > 0:
                lines = sources.get(copied[0])
                want = text.strip()
                if lines is None:
                    out[i] = f"{copied[0]}:{copied[1] + i - copied[2]}"
                    continue
                for j in range(cursor, min(len(lines), cursor + 200)):
                    if lines[j].strip() == want and want:
                        out[i], cursor = f"{copied[0]}:{j + 1}", j + 1
                        break
            continue
        if text.startswith("def "):
            stmt = None
        m = _STMT.match(text)
        if m:
            stmt = int(m.group("line"))
        elif stmt is not None and text.strip():
            out[i] = f"{user_file}:{stmt}"
    return out


def _at_user_line(err: TranslationError, program, depth: int) -> TranslationError:
    """``err`` re-pointed from the generated module to the user's file and line.

    The translator reads the generated per-task functions; a user must never be
    sent into that file, so the line is mapped back through the ``# line N:``
    comments and the copied functions' banners (:func:`user_lines`).
    """
    import linecache
    import os

    generated = program.iter_source(depth)
    gen_file = getattr(program.iter_module(depth), "__file__", None)
    if err.filename is not None and not (
            gen_file and os.path.abspath(err.filename) == os.path.abspath(gen_file)):
        return err  # already the user's file
    files = {program.spec.filename}
    files.update(h.filename for h in program.closure.helpers)
    full = {os.path.basename(f): f for f in files if f}
    sources = {b: linecache.getlines(f) for b, f in full.items()}
    where = user_lines(generated, os.path.basename(program.spec.filename), sources)
    at = where.get(err.lineno or -1)
    if at is None:  # no user line maps here: point at the def, never at generated code
        filename, lineno = program.spec.filename, program.spec.lineno
    else:
        base, _, line = at.rpartition(":")
        filename, lineno = full.get(base, program.spec.filename), int(line)
    return TranslationError(err.reason, filename=filename, lineno=lineno,
                            construct=err.construct, hint=err.hint)


def opencl_source(program, shared: Mapping[str, Any], depth: int) -> str:
    """The OpenCL C of the level kernels, its comments pointing at the user's lines."""
    import os

    import linecache

    source = translate_levels(program, shared, depth).source
    files = {program.spec.filename}
    files.update(h.filename for h in program.closure.helpers)
    sources = {os.path.basename(f): linecache.getlines(f) for f in files if f}
    mapping = user_lines(program.iter_source(depth), os.path.basename(program.spec.filename),
                         sources)

    def repl(m):
        where = mapping.get(int(m.group("line")))
        return f"/* {where}: " if where else m.group(0)

    return _COMMENT.sub(repl, source)
