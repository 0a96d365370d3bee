"""Running translated programs in tests: on PoCL, and on a C emulation of OpenCL C.

Two back ends execute a :class:`TranslatedProgram` kernel:

* ``pocl`` — the real thing, through PyOpenCL and :func:`build_program`;
* ``c-ubsan`` — the same OpenCL C compiled by the host's C compiler with a
  small compatibility header (``__global`` is empty, ``get_global_id`` reads a
  loop counter, ``as_long`` is a bit copy) and with UndefinedBehaviorSanitizer,
  so any signed overflow, bad shift or other undefined behaviour in the
  generated code aborts the test.  It runs in a subprocess.

The emulation exists because a translator's semantics must be testable on a
machine whose OpenCL compiler does not work, and because UBSan proves the
generated code free of undefined behaviour, which no device run can; where
PoCL works, every differential test runs on both.

:class:`Differential` is the harness of the differential tests: it runs one
scalar function over arrays of inputs through plain Python, Numba
(``error_model="numpy"``) and each back end (one work-item per input) and
compares the results exactly (floats bit for bit, any NaN equal to any NaN).
"""
from __future__ import annotations

import functools
import hashlib
import math
import os
import shutil
import subprocess
import tempfile
import textwrap

import numpy as np

from hpu._opencl._translate import INT64, Array, FunctionSource, TupleType, translate

_HEADER = r"""
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
#define __kernel
#define __global
#define __private
static long hpu_emu_gid;
static inline size_t get_global_id(uint d) { (void)d; return (size_t)hpu_emu_gid; }
static inline long as_long(ulong x) { long r; memcpy(&r, &x, sizeof r); return r; }
static inline ulong as_ulong(long x) { ulong r; memcpy(&r, &x, sizeof r); return r; }
static inline int as_int(uint x) { int r; memcpy(&r, &x, sizeof r); return r; }
static inline uint as_uint(int x) { uint r; memcpy(&r, &x, sizeof r); return r; }
"""

_CTYPE = {np.dtype(k): v for k, v in {
    "int8": "signed char", "int16": "short", "int32": "int", "int64": "long",
    "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
    "float32": "float", "float64": "double"}.items()}


class CEmulator:
    """Runs generated OpenCL C as C99 with UBSan (see the module docstring)."""

    name = "c-ubsan"

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.cc = shutil.which("gcc") or shutil.which("cc")

    @functools.cached_property
    def available(self) -> bool:
        if self.cc is None:
            return False
        probe = os.path.join(self.workdir, "probe.c")
        with open(probe, "w") as fh:
            fh.write("int main(void) { return 0; }\n")
        r = subprocess.run([self.cc, "-fsanitize=undefined", probe, "-o", probe + ".exe"],
                           capture_output=True)
        return r.returncode == 0

    def _driver(self, prog, kernel) -> str:
        params = prog.kernels[kernel]
        lines = ["int main(void) {"]
        call = []
        for p in params:
            if p.kind == "array":
                ct = _CTYPE[p.dtype]
                lines += [f"    long n_{p.name}; fread(&n_{p.name}, 8, 1, stdin);",
                          f"    {ct} *{p.name} = malloc(n_{p.name} * sizeof({ct}) + 1);",
                          f"    fread({p.name}, sizeof({ct}), n_{p.name}, stdin);"]
                call.append(p.name)
            elif p.kind == "length":
                call.append(f"n_{p.array}")
            else:
                ct = "long" if p.kind in ("start", "stop") else _CTYPE[p.dtype]
                lines.append(f"    {ct} v_{p.name}; fread(&v_{p.name}, sizeof({ct}), 1, stdin);")
                call.append(f"v_{p.name}")
        lines.append("    for (hpu_emu_gid = 0; hpu_emu_gid < v_hpu_stop - v_hpu_start; "
                     f"hpu_emu_gid++) {kernel}({', '.join(call)});")
        for p in params:
            if p.kind == "array":
                lines.append(f"    fwrite({p.name}, sizeof({_CTYPE[p.dtype]}), n_{p.name}, "
                             "stdout);")
        lines += ["    return 0;", "}"]
        return "\n".join(lines)

    def executable(self, prog, kernel) -> str:
        text = _HEADER + prog.source + "\n" + self._driver(prog, kernel) + "\n"
        digest = hashlib.sha256(text.encode()).hexdigest()[:20]
        exe = os.path.join(self.workdir, digest + ".exe")
        if not os.path.exists(exe):
            src = os.path.join(self.workdir, digest + ".c")
            with open(src, "w") as fh:
                fh.write(text)
            r = subprocess.run(
                [self.cc, "-std=gnu11", "-O2", "-ffp-contract=off", "-fno-fast-math",
                 "-fsanitize=undefined", "-fno-sanitize-recover=undefined",
                 "-Wno-unknown-pragmas", "-Werror=uninitialized",
                 src, "-o", exe, "-lm"], capture_output=True, text=True)
            if r.returncode != 0:
                raise AssertionError("generated OpenCL C does not compile as C:\n" + r.stderr)
        return exe

    def run(self, prog, kernel, arrays: dict, scalars: dict, start: int, stop: int) -> dict:
        exe = self.executable(prog, kernel)
        blob = bytearray()
        for p in prog.kernels[kernel]:
            if p.kind == "array":
                a = np.ascontiguousarray(arrays[p.name], dtype=p.dtype)
                blob += np.int64(a.size).tobytes() + a.tobytes()
            elif p.kind == "scalar":
                blob += p.dtype.type(scalars[p.name]).tobytes()
            elif p.kind in ("start", "stop"):
                blob += np.int64(start if p.kind == "start" else stop).tobytes()
        r = subprocess.run([exe], input=bytes(blob), capture_output=True)
        if r.returncode != 0 or b"runtime error" in r.stderr:
            raise AssertionError(f"emulated kernel failed (rc={r.returncode}):\n"
                                 + r.stderr.decode(errors="replace"))
        out, pos = {}, 0
        for p in prog.kernels[kernel]:
            if p.kind == "array":
                n = np.asarray(arrays[p.name]).size
                size = n * p.dtype.itemsize
                out[p.name] = np.frombuffer(r.stdout[pos:pos + size], dtype=p.dtype).copy()
                pos += size
        return out


class PoclBackend:
    """Runs kernels on the default OpenCL device through PyOpenCL."""

    name = "pocl"

    @functools.cached_property
    def context(self):
        from hpu._opencl._device import context_and_queue
        return context_and_queue()

    @functools.cached_property
    def unavailable_reason(self) -> str | None:
        try:
            from hpu._opencl._build import build_program
            ctx, _ = self.context
            build_program(ctx, "__kernel void k(__global long *a) { a[0] = 1; }")
        except Exception as err:  # noqa: BLE001 - any failure means "cannot run here"
            return " ".join(str(err).split())[:300]
        return None

    def run(self, prog, kernel, arrays: dict, scalars: dict, start: int, stop: int) -> dict:
        import pyopencl as cl
        from hpu._opencl._build import build_program
        ctx, queue = self.context
        program = build_program(ctx, prog.source)
        bufs, host = {}, {}
        mf = cl.mem_flags
        for p in prog.kernels[kernel]:
            if p.kind == "array":
                a = np.array(arrays[p.name], dtype=p.dtype, copy=True)
                host[p.name] = a
                bufs[p.name] = (cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                          hostbuf=a if a.size else np.zeros(1, p.dtype)), a.size)
        values = dict(scalars)
        values.update(bufs)
        args = prog.kernel_args(kernel, values, start, stop)
        if stop > start:
            cl.Kernel(program, kernel)(queue, (stop - start,), None, *args)
        for name, (buf, n) in bufs.items():
            if n:
                cl.enqueue_copy(queue, host[name], buf)
        queue.finish()
        return host


@functools.lru_cache(maxsize=None)
def backends() -> tuple:
    """The back ends that can run here (at least one, or the tests skip)."""
    workdir = tempfile.mkdtemp(prefix="hpu-cemu-")
    found = []
    pocl = PoclBackend()
    if pocl.unavailable_reason is None:
        found.append(pocl)
    emu = CEmulator(workdir)
    if emu.available:
        found.append(emu)
    return tuple(found)


def pocl_status() -> str:
    reason = PoclBackend().unavailable_reason
    return "pocl: ok" if reason is None else f"pocl: cannot build kernels here ({reason})"


# ------------------------------------------------------------------------ comparisons

def same(a, b, ulps: int = 0) -> bool:
    """Exact equality: ints equal, floats bit-identical, every NaN equal to every NaN;
    with ``ulps``, finite floats may differ by that many units in the last place."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(
            same(x, y, ulps) for x, y in zip(a, b))
    a_float = isinstance(a, (float, np.floating))
    b_float = isinstance(b, (float, np.floating))
    if a_float and b_float:
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        if ulps and math.isfinite(fa) and math.isfinite(fb) and (fa < 0) == (fb < 0):
            bits = np.array([fa, fb]).view(np.int64)
            return abs(int(bits[0]) - int(bits[1])) <= ulps
        return fa == fb and math.copysign(1.0, fa) == math.copysign(1.0, fb)
    if a_float or b_float:  # Python's int where Numba unified to float
        return float(a) == float(b)
    return int(a) == int(b)


def as_python(v, dtype):
    """A NumPy element as the Python value plain Python code would see."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return float(v)
    if dt.kind == "b":
        return bool(v)
    return int(v)


# ----------------------------------------------------------------------- differential

_WRAPPER = """
def {name}(t, {outs}, {ins}):
    {lhs} = {fn}({args})
{stores}
"""


def _storage(t) -> np.dtype:
    """Array dtype that holds values of scalar type ``t`` (bools as uint8)."""
    return np.dtype(np.uint8) if t.name == "bool" else t.dtype


class Differential:
    """One scalar function run through Python, Numba and every OpenCL back end.

    ``arg_types`` are scalar types; the function may return a scalar or a tuple
    of scalars.  :meth:`check` takes columns of inputs (one list per parameter)
    and asserts that all implementations agree element by element.
    """

    def __init__(self, fn, arg_types, numba_fn=None):
        import numba
        self.fn = fn
        self.arg_types = tuple(arg_types)
        probe = translate([(fn, self.arg_types)])
        info = probe.functions[(fn.__name__, self.arg_types)]
        rt = info.return_type
        self.ret_types = rt.items if isinstance(rt, TupleType) else (rt,)
        self.is_tuple = isinstance(rt, TupleType)
        n_in, n_out = len(self.arg_types), len(self.ret_types)
        ins = [f"x{i}" for i in range(n_in)]
        outs = [f"r{i}" for i in range(n_out)]
        text = _WRAPPER.format(
            name="each", outs=", ".join(outs), ins=", ".join(ins), fn=fn.__name__,
            lhs=", ".join(f"v{i}" for i in range(n_out)) + ("," if n_out == 1 and self.is_tuple
                                                          else ""),
            args=", ".join(f"bool({x}[t])" if t.name == "bool" else f"{x}[t]"
                           for x, t in zip(ins, self.arg_types)),
            stores="\n".join(f"    r{i}[t] = v{i}" for i in range(n_out)))
        src = FunctionSource.from_source(textwrap.dedent(text), "each", {fn.__name__: fn},
                                         filename="differential.py")
        in_arrays = tuple(Array(_storage(t)) for t in self.arg_types)
        out_arrays = tuple(Array(_storage(t)) for t in self.ret_types)
        self.prog = translate([(src, (INT64,) + out_arrays + in_arrays)], kernels={"each": "each"})
        self.numba_fn = numba_fn or numba_version(fn)

    def numba_results(self, columns):
        out = []
        for row in zip(*columns):
            args = [t.dtype.type(v) for t, v in zip(self.arg_types, row)]
            try:
                r = self.numba_fn(*args)
            except ArithmeticError:  # 0.0 ** -1: Numba raises where the device cannot
                out.append(None)
                continue
            out.append(tuple(r) if self.is_tuple else (r,))
        return out

    def python_results(self, columns):
        out = []
        for row in zip(*columns):
            args = [as_python(v, t.dtype) for t, v in zip(self.arg_types, row)]
            try:
                r = self.fn(*args)
            except (ArithmeticError, ValueError):
                out.append(None)
                continue
            out.append(tuple(r) if self.is_tuple else (r,))
        return out

    def device_results(self, backend, columns):
        n = len(columns[0])
        arrays = {}
        for i, t in enumerate(self.arg_types):
            arrays[f"x{i}"] = np.array(columns[i], dtype=_storage(t))
        for i, t in enumerate(self.ret_types):
            arrays[f"r{i}"] = np.zeros(n, dtype=_storage(t))
        got = backend.run(self.prog, "each", arrays, {}, 0, n)
        return [tuple(got[f"r{i}"][k] for i in range(len(self.ret_types))) for k in range(n)]

    def check(self, columns, python: bool = True, ulps: int = 0):
        """Assert Numba == every back end (exactly, or floats within ``ulps``), and
        Python == Numba where Python gives an answer of the same kind (no exception,
        ints within int64)."""
        columns = [list(c) for c in columns]
        ref = self.numba_results(columns)
        for be in backends():
            got = self.device_results(be, columns)
            for k, (r, g) in enumerate(zip(ref, got)):
                if r is None:
                    continue
                row = tuple(c[k] for c in columns)
                assert same(tuple(r), tuple(g), ulps), (
                    f"{self.fn.__name__}{row}: numba {r!r} != {be.name} {g!r}")
        if python:
            for k, (r, p) in enumerate(zip(ref, self.python_results(columns))):
                if p is None or r is None or not _python_comparable(p, self.ret_types):
                    continue
                row = tuple(c[k] for c in columns)
                assert same(tuple(p), tuple(r), ulps), (
                    f"{self.fn.__name__}{row}: python {p!r} != numba {r!r}")


def _python_comparable(values, types) -> bool:
    """Whether plain Python's answer can be compared with Numba's: same kind of value
    (Python's ``2 ** -1`` is a float where Numba's is an int) and ints in range."""
    for v, t in zip(values, types):
        if isinstance(v, float) and not t.is_float:
            return False
        if isinstance(v, int) and not isinstance(v, bool):
            info = np.iinfo(t.dtype) if t.dtype.kind in "iu" else None
            if info is None or not (info.min <= v <= info.max):
                return False
    return True


# ------------------------------------------------------------------------ strategies

def _strategies():
    from hypothesis import strategies as st
    lmin, lmax = -(1 << 63), (1 << 63) - 1
    edge_ints = [0, 1, -1, 2, -2, 3, -3, 7, -7, 63, 64, 65, -64, lmin, lmax, lmin + 1, lmax - 1,
                 1 << 32, -(1 << 32), (1 << 31) - 1, -(1 << 31)]
    ints = st.one_of(st.sampled_from(edge_ints), st.integers(-1000, 1000),
                     st.integers(lmin, lmax))
    small = st.one_of(st.sampled_from([0, 1, -1, 2, -2, 3, -3]), st.integers(-70, 70))
    edge_floats = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -3.0, 0.1, 1e300, -1e300,
                   5e-324, -5e-324, math.inf, -math.inf, math.nan, 2.0 ** 53, 2.0 ** 63,
                   -2.0 ** 63, 0.49999999999999994, 7.0, -7.0]
    floats = st.one_of(st.sampled_from(edge_floats), st.floats(allow_nan=True,
                                                                allow_infinity=True),
                       st.floats(-100, 100))
    return st, ints, small, floats


def columns(*elements, max_size: int = 40):
    """A strategy for ``n`` rows of inputs, returned as columns (one list per argument)."""
    from hypothesis import strategies as st
    return st.lists(st.tuples(*elements), min_size=1, max_size=max_size).map(
        lambda rows: [list(c) for c in zip(*rows)])


st, INTS, SMALL_INTS, FLOATS = _strategies()


# ---------------------------------------------------------------------- range kernels

def _f32(v: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(v))


FLOATS32 = FLOATS.map(_f32)


def same_arrays(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        nan = np.isnan(a) & np.isnan(b)
        return bool(np.all(nan | ((a == b) & (np.signbit(a) == np.signbit(b)))))
    return bool(np.array_equal(a, b))


@functools.lru_cache(maxsize=None)
def numba_version(fn):
    """``fn`` compiled by Numba (error_model="numpy"), with the plain Python helpers
    it calls compiled too (Numba cannot call uncompiled functions)."""
    import inspect
    import types

    import numba
    fn = getattr(fn, "py_func", fn)
    names = dict(fn.__globals__)
    for name in fn.__code__.co_names:
        value = names.get(name)
        if inspect.isfunction(value) and value is not fn:
            names[name] = numba_version(value)
    copy = types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__, fn.__closure__)
    return numba.njit(error_model="numpy")(copy)


@functools.lru_cache(maxsize=None)
def task_program(task, arg_types, private_arrays=False):
    return translate([(task, tuple(arg_types))], kernels={"k": task.__name__},
                     private_arrays=private_arrays)


def check_task(task, arg_types, values: dict, start: int, stop: int, private_arrays=False,
               python: bool = True):
    """Run ``task(t, ...)`` for t in [start, stop) with Numba, plain Python and every back
    end (as a range kernel); assert every array ends up identical.  ``values`` maps
    parameter names to NumPy arrays or scalars.  Returns Numba's arrays."""
    import inspect
    names = list(inspect.signature(task).parameters)[1:]
    prog = task_program(task, tuple(arg_types), private_arrays)
    jit = numba_version(task)

    def fresh():
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}

    ref = fresh()
    for t in range(start, stop):
        jit(t, *[ref[n] for n in names])
    if python:
        plain = fresh()
        with np.errstate(all="ignore"):
            for t in range(start, stop):
                task(t, *[plain[n] for n in names])
        for n in names:
            if isinstance(ref[n], np.ndarray):
                assert same_arrays(plain[n], ref[n]), f"{n}: python {plain[n]} != numba {ref[n]}"
    arrays = {k: v for k, v in values.items() if isinstance(v, np.ndarray)}
    scalars = {k: v for k, v in values.items() if not isinstance(v, np.ndarray)}
    for be in backends():
        got = be.run(prog, "k", arrays, scalars, start, stop)
        for n, arr in got.items():
            assert same_arrays(arr, ref[n]), f"{be.name}: {n} = {arr} but numba gives {ref[n]}"
    return ref
