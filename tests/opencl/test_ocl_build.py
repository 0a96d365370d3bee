"""build_program: the program cache, float64 on devices without it, compiler errors."""
from __future__ import annotations

import types

import numpy as np
import pytest

from hpu import DeviceUnavailableError, KernelBuildError
from hpu._opencl import _build
from hpu._opencl._build import build_program, check_fp64, numbered
from hpu._opencl._translate import FLOAT32, FLOAT64, INT64, Array, translate
from ocl_support import PoclBackend


def _device(name="fake device", extensions="cl_khr_byte_addressable_store",
            single_fp_config=0):
    return types.SimpleNamespace(name=name, extensions=extensions,
                                 single_fp_config=single_fp_config)


def average(a, n):
    s = 0.0
    for i in range(n):
        s += a[i]
    return s / n


def count(a, n):
    c = 0
    for i in range(n):
        if a[i] > 0:
            c += 1
    return c


def test_float64_code_on_a_device_without_fp64_is_refused_with_the_line():
    prog = translate([(average, (Array(np.float64), INT64))])
    assert prog.uses_fp64 and prog.fp64_first_use.startswith("test_ocl_build.py:")
    with pytest.raises(DeviceUnavailableError) as info:
        check_fp64([_device("tiny gpu")], prog.source)
    text = str(info.value)
    assert "'tiny gpu'" in text and "cl_khr_fp64" in text
    assert prog.fp64_first_use in text and "float32" in text
    check_fp64([_device(extensions="cl_khr_fp64 cl_khr_int64")], prog.source)  # has fp64: fine


def test_integer_and_float32_code_needs_no_fp64():
    prog = translate([(count, (Array(np.int32), INT64))])
    assert not prog.uses_fp64 and "cl_khr_fp64" not in prog.source
    check_fp64([_device()], prog.source)

    def scale32(a, f):
        a[0] = a[0] * f
    prog32 = translate([(scale32, (Array(np.float32), FLOAT32))])
    assert not prog32.uses_fp64
    check_fp64([_device()], prog32.source)
    # ... but a Python float literal is a float64, as in Numba
    prog64 = translate([(scale32, (Array(np.float32), FLOAT64))])
    assert prog64.uses_fp64


class _Context:
    """Stands in for a pyopencl.Context (hashable by identity, like the real one)."""

    def __init__(self, devices):
        self.devices = devices


class _FakeProgram:
    built = 0

    def __init__(self, ctx, source):
        self.source = source

    def build(self, options=()):
        type(self).built += 1
        self.options = tuple(options)
        return self


def test_build_program_caches_per_context_source_and_options(monkeypatch):
    import pyopencl as cl
    monkeypatch.setattr(cl, "Program", _FakeProgram)
    _build.clear_cache()
    _FakeProgram.built = 0
    ctx = _Context([_device(extensions="cl_khr_fp64", single_fp_config=1 << 7)])
    other = _Context(ctx.devices)
    src = translate([(count, (Array(np.int64), INT64))]).source
    p1 = build_program(ctx, src)
    assert build_program(ctx, src) is p1 and _FakeProgram.built == 1
    assert build_program(ctx, translate([(count, (Array(np.int64), INT64))]).source) is p1
    assert build_program(other, src) is not p1
    assert build_program(ctx, src, ["-DX=1"]) is not p1
    assert _FakeProgram.built == 3
    # float32 / and sqrt must round correctly: the option is added where supported
    assert p1.options[0] == "-cl-fp32-correctly-rounded-divide-sqrt"
    _build.clear_cache()


def test_result_changing_options_are_refused():
    ctx = _Context([_device()])
    with pytest.raises(ValueError, match="-cl-fast-relaxed-math"):
        build_program(ctx, "__kernel void k() {}", ["-cl-fast-relaxed-math"])


def test_numbered_source():
    assert numbered("a\nb\n" * 5).splitlines()[9] == "10 | b"


def test_build_failure_shows_numbered_source_and_compiler_log():
    pytest.importorskip("pyopencl")
    try:
        ctx, _ = PoclBackend().context
    except Exception as err:  # noqa: BLE001
        pytest.skip(f"no OpenCL device: {err}")
    bad = "__kernel void broken(__global long *a)\n{\n    a[0] = no_such_name + 1;\n}\n"
    with pytest.raises(KernelBuildError) as info:
        build_program(ctx, bad)
    err = info.value
    text = str(err)
    assert err.source == bad and err.log.strip()
    assert "--- compiler log ---" in text and err.log.strip() in text
    assert "3 |     a[0] = no_such_name + 1;" in text   # the numbered source
    if PoclBackend().unavailable_reason is None:       # a working compiler names the error
        assert "no_such_name" in err.log


def test_build_program_returns_the_cached_program_on_a_real_device():
    be = PoclBackend()
    if be.unavailable_reason is not None:
        pytest.skip(be.unavailable_reason)
    ctx, _ = be.context
    src = translate([(count, (Array(np.int64), INT64))]).source
    assert build_program(ctx, src) is build_program(ctx, src)


def test_the_drivers_log_of_a_good_build_is_kept_quiet(monkeypatch):
    """NVIDIA's driver logs every build, and PyOpenCL turns the log into a CompilerWarning
    the user can do nothing with (an `hpu run` on an H200 printed four): quiet while hpu
    builds, shown with PYOPENCL_COMPILER_OUTPUT=1."""
    import warnings

    import pyopencl as cl

    from hpu._opencl import _build

    real = cl.Program.build

    def logging_build(self, *args, **kwargs):
        warnings.warn("Non-empty compiler output encountered.", cl.CompilerWarning)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cl.Program, "build", logging_build)
    ctx = cl.Context([next(d for p in cl.get_platforms() for d in p.get_devices())])
    src = "__kernel void quiet_k(__global int *x) { x[get_global_id(0)] = 2; }"
    monkeypatch.delenv("PYOPENCL_COMPILER_OUTPUT", raising=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _build.build_program(ctx, src)
    assert not [w for w in seen if issubclass(w.category, cl.CompilerWarning)]
    monkeypatch.setenv("PYOPENCL_COMPILER_OUTPUT", "1")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with _build.quiet_compiler():
            warnings.warn("log", cl.CompilerWarning)
    assert [w for w in seen if issubclass(w.category, cl.CompilerWarning)]
