"""The generated source: deterministic, readable, and shaped as callers expect."""
from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys

import numpy as np

from hpu._opencl._translate import FLOAT64, INT32, INT64, Array, TupleType, translate

I64, I32 = Array(np.int64), Array(np.int32)


def clamp_sum(a, lo, hi, limit):
    """Sum of a[lo:hi] with each term clamped to [-limit, limit]."""
    total = 0
    for i in range(lo, hi):
        total += max(-limit, min(a[i], limit))
    big = 1 << 40
    return total + big - (1 << 40)


def pair(x):
    return x // 3, x * 0.5


def use_pair(t, a, out):
    q, h = pair(a[t])
    out[t] = q + h


def awkward_names(int, double, hpu_x, float4):  # noqa: A002 - C keywords on purpose
    global_ = int + double
    kernel = hpu_x * float4
    return global_ + kernel


def test_same_input_gives_byte_identical_source():
    entries = [(clamp_sum, (I64, INT64, INT64, INT64)), (use_pair, (INT64, I32, Array(np.float64)))]
    first = translate(entries, kernels={"k": "use_pair"}).source
    assert translate(entries, kernels={"k": "use_pair"}).source == first
    # and in a fresh interpreter (no dependence on id() or hash seeds)
    code = ("import sys, numpy as np; sys.path.insert(0, %r); import test_ocl_translate as m;"
            "from hpu._opencl._translate import *;"
            "print(translate([(m.clamp_sum, (Array(np.int64), INT64, INT64, INT64)),"
            " (m.use_pair, (INT64, Array(np.int32), Array(np.float64)))],"
            " kernels={'k': 'use_pair'}).source, end='')") % os.path.dirname(__file__)
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out == first


def test_python_lines_appear_as_comments_before_their_statements():
    src = translate([(clamp_sum, (I64, INT64, INT64, INT64))]).source
    first = inspect.getsourcelines(clamp_sum)[1]
    lines = src.splitlines()
    k = lines.index(f"    /* test_ocl_translate.py:{first + 3}: for i in range(lo, hi): */")
    assert lines[k + 1].lstrip().startswith("for (")
    assert (f"/* test_ocl_translate.py:{first + 4}: total += max(-limit, min(a[i], limit)) */"
            in src)
    assert f"/* clamp_sum(a, lo, hi, limit) from test_ocl_translate.py:{first}" in src


def test_every_integer_literal_is_64_bit():
    src = translate([(clamp_sum, (I64, INT64, INT64, INT64))]).source
    body = src[src.index("hpu_clamp_sum__"):]
    code = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    ints = re.findall(r"(?<![\w.+-])\d+\w*", code)
    assert ints and all(re.fullmatch(r"\d+U?L", tok) for tok in ints), ints
    assert "1099511627776L" in code          # 1 << 40, folded as CPython folds it


def test_pragmas_and_only_the_helpers_used():
    src = translate([(clamp_sum, (I64, INT64, INT64, INT64))]).source
    assert src.count("#pragma OPENCL FP_CONTRACT OFF") == 1
    assert "cl_khr_fp64" not in src
    assert "long hpu_max_l(long a, long b)" in src and "hpu_floordiv_l" not in src
    src64 = translate([(pair, (INT64,))]).source
    assert src64.index("#pragma OPENCL EXTENSION cl_khr_fp64 : enable") < src64.index("double")


def test_one_function_per_helper_signature_with_global_pointers():
    def caller(t, a, b):
        a[0] = clamp_sum(a, 0, 2, t) + clamp_sum(b, 0, 2, t) + clamp_sum(a, 1, 2, t)
    prog = translate([(caller, (INT64, I64, I32))])
    src = prog.source
    assert "long hpu_clamp_sum__pl_l_l_l(__global long *a, long a_len, long lo" in src
    assert "long hpu_clamp_sum__pi_l_l_l(__global int *a, long a_len, long lo" in src
    assert src.count("hpu_clamp_sum__pl_l_l_l(") == 3   # definition + two calls
    # callees are defined before their callers
    assert src.index("long hpu_clamp_sum__pi_l_l_l(") < src.index("void hpu_caller__")
    assert set(prog.functions) == {("clamp_sum", (I64, INT64, INT64, INT64)),
                                   ("clamp_sum", (I32, INT64, INT64, INT64)),
                                   ("caller", (INT64, I64, I32))}


def test_tuple_return_is_a_struct_and_the_kernel_calls_the_task():
    prog = translate([(use_pair, (INT64, I32, Array(np.float64)))], kernels={"step": "use_pair"})
    info = prog.functions[("pair", (INT32,))]
    assert info.return_type == TupleType((INT64, FLOAT64))
    assert "typedef struct {\n    long f0;\n    double f1;\n} hpu_tuple_l_d;" in prog.source
    assert re.search(r"__kernel void step\(__global int \*a, long a_len, __global double \*out, "
                     r"long out_len, long hpu_start, long hpu_stop\)", prog.source)
    assert "long t = hpu_start + (long)get_global_id(0);" in prog.source
    assert [p.kind for p in prog.kernels["step"]] == ["array", "length", "array", "length",
                                                      "start", "stop"]


def test_python_names_that_are_c_keywords_are_renamed():
    src = translate([(awkward_names, (INT64, INT64, INT64, INT64))]).source
    assert "long int_, long double_, long u_hpu_x, long float4_" in src
    assert "    long global_;\n    long kernel_;\n" in src   # kernel is reserved in OpenCL C


def test_kernel_args_packs_numpy_scalars_in_order():
    prog = translate([(use_pair, (INT64, I32, Array(np.float64)))], kernels={"k": "use_pair"})

    class Buf:
        pass
    a, out = Buf(), Buf()
    args = prog.kernel_args("k", {"a": (a, 5), "out": (out, 7)}, 3, 9)
    assert args[0] is a and args[2] is out
    assert [type(v) for v in (args[1], args[3], args[4], args[5])] == [np.int64] * 4
    assert [int(args[1]), int(args[3]), int(args[4]), int(args[5])] == [5, 7, 3, 9]


def test_kernel_args_name_what_is_missing_or_wrong():
    import pytest
    prog = translate([(use_pair, (INT64, I32, Array(np.float64)))], kernels={"k": "use_pair"})
    with pytest.raises(KeyError, match=r"needs values for \['out'\]"):
        prog.kernel_args("k", {"a": (object(), 1)}, 0, 1)
    with pytest.raises(TypeError, match="expected \\(buffer, length\\)"):
        prog.kernel_args("k", {"a": np.zeros(3, np.int32), "out": (object(), 1)}, 0, 1)
    with pytest.raises(KeyError, match="no kernel 'nope'"):
        prog.kernel_args("nope", {}, 0, 1)


def test_function_info_lists_c_parameters():
    prog = translate([(clamp_sum, (I64, INT64, INT64, INT64))])
    info = prog.functions[("clamp_sum", (I64, INT64, INT64, INT64))]
    assert info.c_name == "hpu_clamp_sum__pl_l_l_l" and info.return_type == INT64
    assert info.params == (("a", "__global long *"), ("a_len", "long"), ("lo", "long"),
                           ("hi", "long"), ("limit", "long"))
