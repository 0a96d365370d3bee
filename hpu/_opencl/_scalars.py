"""The types of the translated subset, and Numba's rules for combining them.

Why a table of our own: the OpenCL side must compute what Numba computes for the
same function, and Numba's typing is not Python's and not NumPy's.  Integer
arithmetic on any two integers happens in 64 bits (``int8 + int8`` is ``int64``;
``uint32 + uint32`` is ``uint64``; signed wins: ``int64 + uint64`` is ``int64``);
a ``float32`` mixed with a narrow integer stays ``float32`` but mixed with
``int32`` becomes ``float64``; comparisons of ``int64`` with ``uint64`` happen in
``float64``; a variable assigned values of two types has their NumPy promotion.
These rules are written out here once, and ``tests/opencl/test_scalars.py``
checks every pair against Numba's own typing context, so a Numba upgrade that
changes them fails loudly instead of silently producing different numbers.

Types are plain frozen values: :class:`Scalar` (``BOOL``, ``INT8`` ... ``FLOAT64``),
:class:`Array` (a 1-D array of a supported dtype, in global or private memory) and
:class:`TupleType` (what a function returning ``a, b`` returns).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpu._types import ARRAY_DTYPES, C_TYPES, dtype_name_list

__all__ = [
    "Scalar", "Array", "TupleType", "TypeRuleError",
    "BOOL", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64",
    "FLOAT32", "FLOAT64", "SCALARS", "scalar_of",
    "unify", "arith_result", "compare_type", "negate_result", "invert_result",
    "abs_result", "round_input", "int_result", "float_result", "math_unary_result",
    "math_binary_result", "floor_result", "range_type", "is_lossless",
]


class TypeRuleError(Exception):
    """An operation Numba does not define for these operand types (message says why)."""


@dataclass(frozen=True)
class Scalar:
    """A scalar type, named as NumPy names it."""

    name: str

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.name)

    @property
    def kind(self) -> str:
        """``'b'`` bool, ``'i'`` signed, ``'u'`` unsigned, ``'f'`` float."""
        return self.dtype.kind

    @property
    def bits(self) -> int:
        return 1 if self.kind == "b" else self.dtype.itemsize * 8

    @property
    def c(self) -> str:
        """The OpenCL C spelling."""
        return C_TYPES[self.dtype]

    @property
    def code(self) -> str:
        """Short code used in generated names (``l`` for int64, ``d`` for float64, ...)."""
        return _CODES[self.name]

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_intlike(self) -> bool:
        """bool or an integer: what Numba's integer arithmetic accepts."""
        return self.kind in "biu"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    def __repr__(self) -> str:
        return self.name


_CODES = {"bool": "b", "int8": "c", "int16": "s", "int32": "i", "int64": "l",
          "uint8": "uc", "uint16": "us", "uint32": "ui", "uint64": "ul",
          "float32": "f", "float64": "d"}

BOOL = Scalar("bool")
INT8, INT16, INT32, INT64 = (Scalar(f"int{b}") for b in (8, 16, 32, 64))
UINT8, UINT16, UINT32, UINT64 = (Scalar(f"uint{b}") for b in (8, 16, 32, 64))
FLOAT32, FLOAT64 = Scalar("float32"), Scalar("float64")
SCALARS: tuple[Scalar, ...] = (BOOL, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64,
                               FLOAT32, FLOAT64)


def scalar_of(dtype) -> Scalar:
    """The :class:`Scalar` of a NumPy dtype (or anything ``np.dtype`` accepts)."""
    dt = np.dtype(dtype)
    if dt.name not in _CODES:
        raise TypeRuleError(f"dtype {dt.name} is not supported; expected one of bool, "
                            f"{dtype_name_list()}")
    return Scalar(dt.name)


@dataclass(frozen=True)
class Array:
    """A 1-D contiguous array of ``dtype``.

    ``space`` is ``"global"`` for arrays passed in from the host (``__global``
    pointers) and ``"private"`` for small per-work-item arrays made with
    ``np.empty(N, dtype)`` inside a function (``translate(private_arrays=True)``).
    """

    dtype: np.dtype
    space: str = "global"

    def __post_init__(self):
        try:
            dt = np.dtype(self.dtype)
        except TypeError as err:
            raise TypeRuleError(f"Array({self.dtype!r}): not a NumPy dtype; expected one of "
                                f"{dtype_name_list()}") from err
        if dt not in ARRAY_DTYPES and dt != np.bool_:  # bool: result levels of a bool function
            raise TypeRuleError(f"Array({dt.name}): arrays of {dt.name} are not supported; "
                                f"expected one of {dtype_name_list()}")
        if self.space not in ("global", "private"):
            raise TypeRuleError(f"Array space {self.space!r}: expected 'global' or 'private'")
        object.__setattr__(self, "dtype", dt)

    @property
    def elem(self) -> Scalar:
        return scalar_of(self.dtype)

    @property
    def code(self) -> str:
        return ("p" if self.space == "global" else "q") + self.elem.code

    def __repr__(self) -> str:
        return f"Array({self.dtype.name}{', private' if self.space == 'private' else ''})"


@dataclass(frozen=True)
class TupleType:
    """The type of ``return a, b``: a fixed tuple of scalars."""

    items: tuple[Scalar, ...]

    @property
    def code(self) -> str:
        return "_".join(t.code for t in self.items)

    def __repr__(self) -> str:
        return "Tuple(" + ", ".join(map(repr, self.items)) + ")"


# --------------------------------------------------------------------------- rules

def unify(a: Scalar, b: Scalar) -> Scalar:
    """The type of a variable (or ``x if c else y``, ``max``, ...) holding ``a`` or ``b``.

    Numba unifies by NumPy promotion: ``int32|int64 -> int64``,
    ``int64|float64 -> float64``, ``int64|uint64 -> float64``, ``bool|int64 -> int64``.
    """
    if a == b:
        return a
    return Scalar(np.promote_types(a.dtype, b.dtype).name)


def _signedish(t: Scalar) -> bool:
    return t.kind in "bi"


def _int64_result(a: Scalar, b: Scalar) -> Scalar:
    return INT64 if (_signedish(a) or _signedish(b)) else UINT64


_FLOAT32_FRIENDLY = ("bool", "int8", "int16", "uint8")


def _float_result(a: Scalar, b: Scalar) -> Scalar:
    if FLOAT64 in (a, b):
        return FLOAT64
    if a == b == FLOAT32:
        return FLOAT32
    other = b if a == FLOAT32 else a
    return FLOAT32 if other.name in _FLOAT32_FRIENDLY else FLOAT64


def arith_result(op: str, a: Scalar, b: Scalar) -> tuple[Scalar, Scalar, Scalar]:
    """``(result, left operand type, right operand type)`` of ``a OP b`` in Numba.

    The operand types are what each side is converted to before the operation.
    ``op`` is one of ``+ - * / // % ** & | ^ << >>``.
    """
    ints = a.is_intlike and b.is_intlike
    if op in ("&", "|", "^"):
        if not ints:
            raise TypeRuleError(f"{op} needs integer or bool operands, got {a!r} and {b!r}")
        if a == b == BOOL:
            return BOOL, BOOL, BOOL
        r = _int64_result(a, b)
        return r, r, r
    if op in ("<<", ">>"):
        if not ints:
            raise TypeRuleError(f"{op} needs integer operands, got {a!r} and {b!r}")
        r = UINT64 if a.is_unsigned else INT64
        return r, r, (UINT64 if b.is_unsigned else INT64)
    if op == "/":
        r = FLOAT64 if ints else _float_result(a, b)
        return r, r, r
    if op == "**":
        if a == BOOL:
            raise TypeRuleError("** with a bool base has no Python-compatible Numba type")
        if b == UINT64:
            raise TypeRuleError("** with a uint64 exponent is not supported")
        if ints:
            r = _int64_result(a, b)
            return r, r, INT64
        if a.is_float and b.is_intlike:
            return a, a, INT64
        r = _float_result(a, b)
        return r, r, r
    if op in ("+", "-", "*", "//", "%"):
        r = _int64_result(a, b) if ints else _float_result(a, b)
        return r, r, r
    raise TypeRuleError(f"unknown operator {op}")


def compare_type(a: Scalar, b: Scalar) -> Scalar:
    """The type both sides of a comparison are converted to (the result is bool).

    Equivalent to Numba's choice for every pair: where Numba compares a narrow
    pair in a narrow type, comparing in 64 bits gives the same answer.
    """
    if a.is_float or b.is_float:
        if a == b == FLOAT32:
            return FLOAT32
        return FLOAT64
    if (a == UINT64 and b.kind == "i") or (b == UINT64 and a.kind == "i"):
        return FLOAT64
    if a.kind in "bu" and b.kind in "bu":
        return UINT64 if "u" in (a.kind, b.kind) else BOOL
    return INT64


def negate_result(a: Scalar) -> Scalar:
    """Type of ``-a`` and ``+a`` (Numba negates a narrow integer in its own width first)."""
    if a.is_float:
        return a
    return UINT64 if a.is_unsigned else INT64


def invert_result(a: Scalar) -> Scalar:
    """Type of ``~a``."""
    if a == BOOL:
        raise TypeRuleError("~ on a bool is -2 or -1 in Python but logical not in Numba")
    if a.is_float:
        raise TypeRuleError(f"~ needs an integer operand, got {a!r}")
    return UINT64 if a.is_unsigned else INT64


def abs_result(a: Scalar) -> Scalar:
    """Type of ``abs(a)``: the operand's own type (``abs`` of an int8 wraps in int8)."""
    return INT8 if a == BOOL else a


def round_input(a: Scalar) -> Scalar:
    """The float type ``round(a)`` rounds in (the result is int64)."""
    if a.is_float:
        return a
    return FLOAT32 if a.name in _FLOAT32_FRIENDLY else FLOAT64


def int_result(a: Scalar) -> Scalar:
    """Type of ``int(a)``."""
    if a.is_float or a == BOOL:
        return INT64
    return a


def float_result(a: Scalar) -> Scalar:
    """Type of ``float(a)``."""
    return FLOAT32 if a == FLOAT32 else FLOAT64


def math_unary_result(a: Scalar) -> Scalar:
    """Type of ``math.sqrt(a)`` and the other one-argument float functions."""
    return FLOAT32 if a == FLOAT32 else FLOAT64


def math_binary_result(name: str, a: Scalar, b: Scalar) -> Scalar:
    """Type of ``math.NAME(a, b)`` for ``atan2``, ``hypot``, ``copysign`` and ``pow``.

    ``math.pow`` is Python's: both operands as float64, ``pow()`` (the CPU's modules
    compute it so too, :mod:`hpu._codegen`'s ``hpu__mpow``).
    """
    if name == "pow":
        if b == BOOL or b == UINT64:
            raise TypeRuleError(f"math.pow with a {b.name} exponent has an irregular Numba type")
        return FLOAT64
    if a.is_intlike and b.is_intlike:
        if name == "copysign" and a.name in _FLOAT32_FRIENDLY and b.name in _FLOAT32_FRIENDLY:
            return FLOAT32
        return FLOAT64
    return _float_result(a, b)


def floor_result(a: Scalar) -> Scalar:
    """Type of ``math.floor``, ``math.ceil``, ``math.trunc``."""
    return UINT64 if a.is_unsigned else INT64


def range_type(args: list[Scalar]) -> Scalar:
    """Type of the loop variable of ``for i in range(*args)``."""
    for t in args:
        if not t.is_intlike:
            raise TypeRuleError(f"range() needs integer arguments, got {t!r}")
    if INT64 in args:
        return INT64
    if all(t.kind in "bu" for t in args):
        return UINT64 if any(t.is_unsigned for t in args) else INT32
    if all(t.kind in "bi" for t in args):
        return INT32
    raise TypeRuleError("range() with mixed signed and unsigned arguments "
                        f"({', '.join(map(repr, args))}) has an unexpected type in Numba")


def is_lossless(src: Scalar, dst: Scalar) -> bool:
    """Whether every value of ``src`` is exactly representable in ``dst``."""
    if src == dst or src == BOOL:
        return True
    if dst == BOOL:
        return False
    if src.is_float:
        return dst.is_float and dst.bits >= src.bits
    if dst.is_float:
        mantissa = 24 if dst == FLOAT32 else 53
        return src.bits - (1 if src.kind == "i" else 0) <= mantissa
    if src.kind == dst.kind:
        return dst.bits >= src.bits
    if src.is_unsigned:  # unsigned into signed
        return dst.bits > src.bits
    return False  # signed into unsigned
