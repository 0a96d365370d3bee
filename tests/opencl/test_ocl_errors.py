"""Everything outside the subset is refused with the user's file, line, construct and a fix.

Each refused function marks its offending line with a ``# refused`` comment; the
test finds that line in this file and checks that the error names it.
"""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from hpu import TranslationError
from hpu._opencl._translate import BOOL, FLOAT64, INT64, Array, FunctionSource, translate

I64 = Array(np.int64)


def uses_list(a):
    xs = [1, 2, 3]  # refused
    return xs[0]


def uses_string(a):
    return "hello"  # refused


def uses_try(a):
    try:  # refused
        return a // 2
    except ZeroDivisionError:
        return 0


def uses_lambda(a):
    f = lambda v: v + 1  # refused  # noqa: E731
    return f(a)


def calls_unknown(a):
    return undefined_helper(a) + 1  # refused  # noqa: F821


def calls_print(a):
    print(a)  # refused
    return a


def nested_def(a):
    def inner(v):  # refused
        return v
    return inner(a)


def rec_a(n):
    return rec_b(n - 1) + 1  # closes the cycle when translation starts at rec_b


def rec_b(n):
    if n <= 0:
        return 0
    return rec_a(n)  # closes the cycle when translation starts at rec_a


def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)  # refused


def allocates(a):
    tmp = np.empty(16, np.int64)  # refused
    tmp[0] = a
    return tmp[0]


def for_else(a):
    s = 0
    for i in range(a):  # refused
        s += i
    else:
        s = -1
    return s


def maybe_unassigned(a):
    for i in range(a):
        pass
    return i  # refused


def lossy_variable(a):
    x = a
    y = x * 2  # refused
    while x > 10:
        x = x / 2
    return x + y


def half_returns(a):
    if a > 0:
        return a
    a = a + 1  # refused


def zero_step(a):
    s = 0
    for i in range(0, a, 0):  # refused
        s += i
    return s


def uses_fmod(a):
    return math.fmod(a, 2.0)  # refused


def uses_is(a, b):
    return a is b  # refused


def uses_slice(a):
    return a[1:3]  # refused


def uses_method(a):
    return a.sum()  # refused


def two_dimensional(a):
    return a[0, 1]  # refused


def array_alias(a):
    b = a  # refused
    return b[0]


def bool_invert(a):
    return ~a  # refused


def writer(a):
    a[0] += 1
    return a[0]


def order_conflict(a):
    return a[0] + writer(a)  # refused


def tuple_misuse(a):
    return (a, a) + 1  # refused


def round_digits(x):
    return round(x, 2)  # refused


def global_stmt(a):
    global COUNTER  # refused
    return a


CASES = [
    (uses_list, (INT64,), "a list literal", "preallocated array"),
    (uses_string, (INT64,), "a string", "numbers"),
    (uses_try, (INT64,), "a try statement", "if"),
    (uses_lambda, (INT64,), "a lambda", "module level"),
    (calls_unknown, (INT64,), "unknown function undefined_helper", "module level"),
    (calls_print, (INT64,), "unknown function print", "helpers defined with def"),
    (nested_def, (INT64,), "nested function definition", "module level"),
    (factorial, (INT64,), "factorial -> factorial", "loop"),
    (allocates, (INT64,), "allocation is not supported in hpu functions",
     "preallocated array as a parameter"),
    (for_else, (INT64,), "else clause", "flag"),
    (maybe_unassigned, (INT64,), "i may be used before it is assigned", "on every path"),
    (lossy_variable, (INT64,), "variable x is int64 (line", "one type"),
    (half_returns, (INT64,), "returns a value on some paths", "every path"),
    (zero_step, (INT64,), "step must not be zero", "step"),
    (uses_fmod, (FLOAT64,), "math.fmod() is not supported: Numba does not support it",
     "% operator"),
    (uses_is, (INT64, INT64), "`is` operator", "=="),
    (uses_slice, (I64,), "a slice", "lo, hi"),
    (uses_method, (I64,), "method .sum()", "loop"),
    (two_dimensional, (I64,), "multi-dimensional index", "Flatten"),
    (array_alias, (I64,), "assigning an array to a variable", "parameter directly"),
    (bool_invert, (BOOL,), "~", "not x"),
    (order_conflict, (I64,), "order of evaluation", "own statement"),
    (tuple_misuse, (INT64,), "a tuple value here", "Unpack"),
    (round_digits, (FLOAT64,), "round(x, ndigits)", "Scale"),
    (global_stmt, (INT64,), "a global statement", "parameter"),
]


def _marked_line(fn, marker="# refused") -> int:
    lines, first = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if marker in text:
            return first + k
    raise AssertionError(f"{fn.__name__} has no {marker!r} marker")


@pytest.mark.parametrize("fn,types,what,fix", CASES, ids=[c[0].__name__ for c in CASES])
def test_refused_with_file_line_construct_and_fix(fn, types, what, fix):
    with pytest.raises(TranslationError) as info:
        translate([(fn, types)])
    err = info.value
    text = str(err)
    assert err.filename == __file__
    assert err.lineno == _marked_line(fn), text
    assert text.startswith(f"{__file__}:{err.lineno}: "), text
    assert what in text, text
    assert fix in text, text
    assert err.construct


@pytest.mark.parametrize("entry,closer,cycle", [(rec_a, rec_b, "rec_a -> rec_b -> rec_a"),
                                                (rec_b, rec_a, "rec_b -> rec_a -> rec_b")])
def test_recursion_through_a_helper_names_the_cycle_and_the_closing_call(entry, closer, cycle):
    with pytest.raises(TranslationError) as info:
        translate([(entry, (INT64,))])
    assert cycle in str(info.value)
    assert info.value.lineno == _marked_line(closer, "# closes the cycle")


def test_error_line_numbers_of_generated_source_map_to_its_file():
    src = FunctionSource.from_source("def gen(a):\n    b = 1\n    return [b]\n", "gen",
                                     filename="generated_by_lead.py", first_line=40)
    with pytest.raises(TranslationError) as info:
        translate([(src, (INT64,))])
    assert (info.value.filename, info.value.lineno) == ("generated_by_lead.py", 42)


def test_private_arrays_need_a_constant_size():
    def sized(n):
        tmp = np.empty(n, np.int64)
        tmp[0] = n
        return tmp[0]
    with pytest.raises(TranslationError, match="positive constant"):
        translate([(sized, (INT64,))], private_arrays=True)


def test_kernel_entry_must_take_the_task_index_first():
    def task(x, a):
        a[0] = x
    with pytest.raises(TranslationError, match="int64 task index"):
        translate([(task, (FLOAT64, I64))], kernels={"k": "task"})
    with pytest.raises(TranslationError, match="no entry function named 'nope'"):
        translate([(task, (INT64, I64))], kernels={"k": "nope"})
    with pytest.raises(TranslationError, match="not a valid C identifier"):
        translate([(task, (INT64, I64))], kernels={"bad name": "task"})


def test_wrong_argument_types_are_named():
    def f(a, b):
        return a + b
    with pytest.raises(TranslationError, match="takes 2 parameters but was given 1"):
        translate([(f, (INT64,))])
    with pytest.raises(TranslationError, match="not a supported type"):
        translate([(f, (INT64, "int64"))])


def test_unreadable_source_is_refused_clearly():
    namespace = {}
    exec("def made(a):\n    return a\n", namespace)
    with pytest.raises(TranslationError, match="cannot be read"):
        translate([(namespace["made"], (INT64,))])
