"""A Python function as the translator sees it: its syntax tree, its globals, where it lives.

Why a value of its own: the translator works on functions it did not import
itself — the user's decorated function, the helpers it calls (found through its
``__globals__``), and code that hpu generates from the user's function (the
subtree kernel's loop).  All of them become a :class:`FunctionSource`, which
carries what error messages and comments need (file name, first line, source
text) next to what translation needs (the ``ast.FunctionDef`` and the names the
body can see).

Line numbers: ``tree`` is parsed from ``source`` alone, so ``node.lineno == 1``
is the first line of ``source``; :meth:`FunctionSource.line_of` maps it to the
line in ``filename`` (``first_line + node.lineno - 1``).
"""
from __future__ import annotations

import ast
import builtins
import collections
import functools
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any, Mapping

from hpu._errors import TranslationError

__all__ = ["FunctionSource"]


@dataclass(frozen=True, eq=False)
class FunctionSource:
    """One function to translate.

    Equality is identity: two sources of the same text are different functions
    if their globals differ.
    """

    name: str
    tree: ast.FunctionDef
    globals: Mapping[str, Any]
    filename: str
    first_line: int = 1
    source: str = field(default="", repr=False)

    @classmethod
    def from_callable(cls, fn) -> "FunctionSource":
        """The source of a plain Python function (or of ``fn.py_func`` for a Numba
        dispatcher or an hpu-decorated function)."""
        target = getattr(fn, "py_func", fn)
        if not inspect.isfunction(target):
            raise TranslationError(
                f"{fn!r} is not a Python function; expected a function defined with `def`",
                construct="callable", hint="Pass the function itself.")
        code = target.__code__
        filename = inspect.getsourcefile(target) or code.co_filename
        try:
            text = inspect.getsource(target)
        except (OSError, TypeError) as err:
            raise TranslationError(
                f"the source of {target.__qualname__} cannot be read ({err})",
                filename=filename, lineno=code.co_firstlineno, construct="function source",
                hint="Define the function in a .py file (not in an interactive session or exec()).",
            ) from err
        text = textwrap.dedent(text)
        names: Mapping[str, Any] = target.__globals__
        if target.__closure__:
            nonlocals = inspect.getclosurevars(target).nonlocals
            names = collections.ChainMap(dict(nonlocals), target.__globals__)
        return cls._parse(text, target.__name__, names, filename, code.co_firstlineno)

    @classmethod
    def from_source(cls, text: str, name: str, globals: Mapping[str, Any] | None = None,
                    filename: str = "<hpu-generated>", first_line: int = 1) -> "FunctionSource":
        """The function ``name`` defined in ``text`` (for generated code)."""
        return cls._parse(textwrap.dedent(text), name, {} if globals is None else globals,
                          filename, first_line)

    @classmethod
    def _parse(cls, text, name, names, filename, first_line) -> "FunctionSource":
        try:
            module = ast.parse(text, filename=filename)
        except SyntaxError as err:
            raise TranslationError(f"the source does not parse: {err.msg}", filename=filename,
                                   lineno=(err.lineno or 1) + first_line - 1,
                                   construct="syntax") from err
        for node in module.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return cls(name, node, names, filename, first_line, text)
        if any(isinstance(n, ast.AsyncFunctionDef) and n.name == name for n in module.body):
            raise TranslationError(f"async function {name} is not supported", filename=filename,
                                   lineno=first_line, construct="async def",
                                   hint="Write a plain `def` function.")
        raise TranslationError(f"no function named {name!r} in the given source",
                               filename=filename, lineno=first_line, construct="function source")

    def line_of(self, node: ast.AST) -> int:
        """The line of ``node`` in ``filename``."""
        return self.first_line + getattr(node, "lineno", 1) - 1

    @functools.cached_property
    def _lines(self) -> list[str]:
        return self.source.splitlines()

    def text_of_line(self, node: ast.AST) -> str:
        """The source line ``node`` starts on, stripped (empty if unknown)."""
        i = getattr(node, "lineno", 0) - 1
        return self._lines[i].strip() if 0 <= i < len(self._lines) else ""

    def lookup(self, name: str):
        """What ``name`` means at module level: a global, else a builtin.

        Returns ``(True, value)`` or ``(False, None)`` when the name is undefined.
        """
        if name in self.globals:
            return True, self.globals[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None
