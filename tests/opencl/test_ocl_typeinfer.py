"""Name resolution and typing: what a function can see and how its values are typed."""
from __future__ import annotations

from math import sqrt as square_root

import numba
import numpy as np
import pytest

from hpu._opencl._translate import (BOOL, FLOAT32, FLOAT64, INT8, INT32, INT64, UINT64,
                                    Array, FunctionSource, translate)
from hpu._opencl._typeinfer import Context, infer
from ocl_support import backends, check_task

needs_backend = pytest.mark.skipif(not backends(), reason="no OpenCL back end can run here")

SCALE = 3
OFFSET = 0.25
ENABLED = True
NARROW = np.int32(7)
HUGE = 2**63 + 5          # a uint64 constant for Numba


def _decorate(**options):
    def wrap(fn):
        return fn
    return wrap


@numba.njit
def jitted_helper(x, k=2):
    return x * k


@_decorate(order=[1, 2], key=lambda v: v, note="decorators are not translated")
def with_everything(t, a, out):
    v = a[t] * SCALE + OFFSET if ENABLED else 0.0
    w = square_root(abs(v)) + jitted_helper(t) + jitted_helper(t, k=5) + NARROW
    n = a.size + a.shape[0] + len(a)
    out[t] = v + w + n + np.float32(0.5) + np.int32(2.9)


@needs_backend
def test_globals_builtins_aliases_dispatchers_and_keywords():
    a = np.array([1.5, -2.0, 4.0])
    check_task(with_everything, (INT64, Array(np.float64), Array(np.float64)),
               {"a": a, "out": np.zeros(3)}, 0, 3)


def test_module_constants_are_typed_as_numba_types_them():
    src = FunctionSource.from_source("def consts():\n    return SCALE, OFFSET, ENABLED, "
                                     "NARROW, HUGE\n", "consts", globals())
    t = infer(Context(), src, ())
    assert t.return_type.items == (INT64, FLOAT64, BOOL, INT32, UINT64)


def closure_factory(k):
    def scaled(t, a):
        a[t] = a[t] * k
    return scaled


@needs_backend
def test_closure_variables_are_constants():
    triple = closure_factory(3)
    check_task(triple, (INT64, Array(np.int64)), {"a": np.arange(5)}, 0, 5)


def straight_line(x):
    y = x // 2      # int64 here
    x = x / 4       # now float64
    z = x * 2
    return y, z


def loop_merge(n, a):
    s = 0           # int, but merged with a float in the loop
    for i in range(n):
        s += a[i]
    return s


def test_types_follow_each_assignment_and_merge_at_joins():
    t = infer(Context(), straight_line, (INT64,))
    assert t.return_type.items == (INT64, FLOAT64)
    assert sorted(w.type.name for w in t.webs if w.name == "x") == ["float64", "int64"]
    t2 = infer(Context(), loop_merge, (INT64, Array(np.float32)))
    assert t2.return_type == FLOAT64      # int64 | float32 unify to float64, as in Numba
    t3 = infer(Context(), loop_merge, (INT64, Array(np.int8)))
    assert t3.return_type == INT64        # int8 + int64 is int64
    src = translate([(straight_line, (INT64,))]).source
    assert "(long x)" in src and "double x_2;" in src


def narrow_elements(t, a, out):
    v = a[t]            # int8, as in Numba
    out[t] = abs(v) + (-v)


@needs_backend
def test_array_element_types_come_from_the_array():
    t = infer(Context(), narrow_elements, (INT64, Array(np.int8), Array(np.int64)))
    assert any(w.type == INT8 for w in t.webs if w.name == "v")
    check_task(narrow_elements, (INT64, Array(np.int8), Array(np.int64)),
               {"a": np.array([-128, -1, 0, 127], np.int8), "out": np.zeros(4, np.int64)}, 0, 4,
               python=False)


def float32_only(t, a):
    a[t] = a[t] * np.float32(2) + a[t]


def test_float32_arrays_stay_float32():
    t = infer(Context(), float32_only, (INT64, Array(np.float32)))
    assert all(w.type != FLOAT64 for w in t.webs)
    assert not translate([(float32_only, (INT64, Array(np.float32)))]).uses_fp64


def test_helpers_are_specialised_once_per_signature():
    ctx = Context()
    first = infer(ctx, straight_line, (INT64,))
    assert infer(ctx, straight_line, (INT64,)) is first
    assert infer(ctx, straight_line, (INT32,)) is not first


def test_array_types_validate_their_dtype():
    from hpu._opencl._scalars import TypeRuleError
    with pytest.raises(TypeRuleError, match="float16"):
        Array(np.float16)
    assert Array("int32") == Array(np.dtype(np.int32)) == Array(np.int32)
    assert repr(Array(np.int32)) == "Array(int32)" and repr(FLOAT32) == "float32"

