"""The exceptions hpu raises, in one place.

Every hpu error derives from :class:`HpuError` so that callers can catch the
library's failures without catching their own.  Messages follow one rule: they
name the offending value, what was expected, and how to fix it.
"""
from __future__ import annotations

__all__ = [
    "HpuError",
    "TranslationError",
    "DeviceUnavailableError",
    "KernelBuildError",
    "ProfileError",
    "HistoryError",
    "DeviceFault",
    "StackOverflowError",
    "HpuPerformanceWarning",
    "HpuRecursionError",
    "ArrayMismatchError",
    "SettingError",
]


class HpuError(Exception):
    """Base class of every error raised by hpu."""


class TranslationError(HpuError):
    """A function cannot be converted: it is outside the shape or subset hpu accepts.

    ``filename`` and ``lineno`` point into the user's source; ``construct`` names
    what was refused and ``hint`` what to write instead.  ``str(err)`` reads
    ``file:line: construct is not supported: reason. hint``.
    """

    def __init__(self, message: str, *, filename: str | None = None,
                 lineno: int | None = None, construct: str | None = None,
                 hint: str | None = None):
        self.filename = filename
        self.lineno = lineno
        self.construct = construct
        self.hint = hint
        self.reason = message
        where = ""
        if filename is not None:
            where = f"{filename}:{lineno}: " if lineno is not None else f"{filename}: "
        text = where + message
        if hint:
            text += f" {hint}" if text.endswith(".") else f". {hint}"
        super().__init__(text)


class DeviceUnavailableError(HpuError):
    """No usable OpenCL device matches what was asked for."""


class KernelBuildError(HpuError):
    """The OpenCL compiler rejected generated source.

    The message carries the numbered source and the compiler's log.
    """

    def __init__(self, message: str, *, source: str = "", log: str = ""):
        self.source = source
        self.log = log
        super().__init__(message)


class ProfileError(HpuError):
    """A calibration profile is missing, corrupt or stale."""


class HistoryError(HpuError):
    """The store of measured rates (``strategy="adaptive"``, ``hpu history``) is unreadable."""


class DeviceFault(HpuError):
    """The OpenCL device failed during a run (its share is redone on the CPU)."""


class StackOverflowError(HpuError):
    """A subtree was deeper than the iterative solver's fixed stack."""


class HpuPerformanceWarning(UserWarning):
    """A run did not use a device that was asked for, or fell back to the CPU."""


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning issued by the caller of this function name
    the first frame outside hpu -- the user's line, however many of hpu's frames lie
    between (``f(x)``, ``f.run(x)``, ``f.options(...)(x)``, an algorithm's ``sort(x)`` each
    add their own)."""
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level


class HpuRecursionError(HpuError, RecursionError):
    """The user's recursion went deeper than hpu lets compiled code go.

    Both an :class:`HpuError` and a :class:`RecursionError` (what Python raises
    for the same runaway recursion).  Compiled recursion has no interpreter
    to stop it: without this limit a stack overflow kills the process.
    """


class ArrayMismatchError(HpuError, TypeError):
    """An array is stored into one whose dtype cannot hold its values (int64 into int32).

    Raised before anything runs, naming both arrays, their dtypes, the user's
    line and the fix.
    """


class SettingError(HpuError, ValueError):
    """A setting hpu cannot use: an ``HPU_*`` environment variable's value, or a path to
    write to that is not a file (a folder, a device).  Also a :class:`ValueError`, what
    hpu raised for these before; the ``hpu`` command reports it in one line."""
