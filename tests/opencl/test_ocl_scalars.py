"""The typing rules of _scalars against Numba's own typing context, pair by pair.

If a Numba upgrade changes how it types an operation, these tests fail before
any generated kernel computes something different from the CPU path.
"""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest
from numba.core import types as nbt
from numba.core.registry import cpu_target

from hpu._opencl import _scalars as S

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
       "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
       "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}

#: operand pairs hpu refuses on purpose (Numba's types there are irregular)
REFUSED = {("**", "bool", b.name) for b in S.SCALARS} | {
    ("**", a.name, "uint64") for a in S.SCALARS}


@pytest.fixture(scope="module")
def numba_typing():
    ctx = cpu_target.typing_context
    ctx.refresh()

    def nb(t):
        return nbt.boolean if t == S.BOOL else getattr(nbt, t.name)

    def resolve(fn, *args):
        try:
            sig = ctx.resolve_function_type(fn, tuple(nb(a) for a in args), {})
        except Exception:  # noqa: BLE001 - Numba rejects: no signature
            return None
        return None if sig is None else sig

    return resolve


def _name(t):
    return "bool" if str(t) == "bool" else str(t)


@pytest.mark.parametrize("op", sorted(OPS))
def test_binary_operator_result_types_match_numba(numba_typing, op):
    for a in S.SCALARS:
        for b in S.SCALARS:
            sig = numba_typing(OPS[op], a, b)
            want = None if sig is None else _name(sig.return_type)
            try:
                got = S.arith_result(op, a, b)[0].name
            except S.TypeRuleError:
                got = None
                if (op, a.name, b.name) in REFUSED:
                    continue
            assert got == want, f"{a} {op} {b}: hpu {got}, numba {want}"


def test_unification_matches_numba_max(numba_typing):
    for a in S.SCALARS:
        for b in S.SCALARS:
            assert S.unify(a, b).name == _name(numba_typing(max, a, b).return_type), (a, b)


def test_comparisons_are_exact_in_the_chosen_type(numba_typing):
    # Numba's chosen comparison type, or one that compares every pair of values alike
    for a in S.SCALARS:
        for b in S.SCALARS:
            numba_args = numba_typing(operator.lt, a, b).args
            want = S.scalar_of(np.dtype(str(numba_args[0]).replace("bool", "bool_")))
            got = S.compare_type(a, b)
            if got != want:
                assert S.is_lossless(want, got) and S.is_lossless(a, got) \
                    and S.is_lossless(b, got), (a, b, got, want)


@pytest.mark.parametrize("name", ["atan2", "hypot", "copysign", "pow"])
def test_two_argument_math_types_match_numba(numba_typing, name):
    for a in S.SCALARS:
        for b in S.SCALARS:
            sig = numba_typing(getattr(math, name), a, b)
            try:
                got = S.math_binary_result(name, a, b).name
            except S.TypeRuleError:
                assert name == "pow" and b in (S.BOOL, S.UINT64)
                continue
            if name == "pow":       # Python's, as the CPU's modules compute it: float64
                assert got == "float64", (a, b)
                continue
            assert got == _name(sig.return_type), (name, a, b)


def test_one_argument_rules_match_numba(numba_typing):
    for a in S.SCALARS:
        for fn, rule in [(operator.neg, S.negate_result), (abs, S.abs_result),
                         (int, S.int_result), (math.sqrt, S.math_unary_result),
                         (math.floor, S.floor_result), (round, lambda t: S.INT64)]:
            assert rule(a).name == _name(numba_typing(fn, a).return_type), (fn, a)
        sig = numba_typing(round, a)
        assert S.round_input(a).name == _name(sig.args[0]), a
        if a != S.BOOL:
            assert S.float_result(a).name == _name(numba_typing(float, a).return_type), a
            if not a.is_float:
                assert S.invert_result(a).name == _name(
                    numba_typing(operator.invert, a).return_type), a


def test_range_types_match_numba(numba_typing):
    ints = [t for t in S.SCALARS if t.is_intlike]
    for a in ints:
        for b in ints:
            want = str(numba_typing(range, a, b).return_type)
            try:
                got = S.range_type([a, b])
            except S.TypeRuleError:
                continue   # mixed signed/unsigned: refused
            assert want.endswith("_" + got.name), (a, b, want)


def test_is_lossless_agrees_with_numpy_round_trips():
    samples = [0, 1, -1, 2**24 + 1, 2**53 + 1, -2**63, 2**63 - 1, 2**64 - 1, 255, 128, -129, 0.5]
    for src in S.SCALARS:
        for dst in S.SCALARS:
            if not S.is_lossless(src, dst):
                continue
            for v in samples:
                with np.errstate(all="ignore"):
                    try:
                        x = src.dtype.type(v)
                    except (OverflowError, ValueError):
                        continue
                    if src.kind in "iu" and int(x) != v:
                        continue
                    assert src.dtype.type(dst.dtype.type(x)) == x, (src, dst, v)
