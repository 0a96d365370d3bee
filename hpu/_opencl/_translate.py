"""Translate numeric Python functions to OpenCL C that computes what Numba computes.

Why hpu owns a translator: the same function must run as Numba CPU threads and
as OpenCL kernels and give the same numbers, and no maintained Python-to-OpenCL
translator exists.  This one is small because the subset is small (scalars,
1-D arrays, loops, helpers; see DESIGN.md section 7), and exact because every
operator whose C meaning differs from Python's goes through a helper of
:mod:`hpu._opencl._prelude` and every type follows Numba's rules
(:mod:`hpu._opencl._scalars`, :mod:`hpu._opencl._typeinfer`).

Use::

    prog = translate([(mergesort_task, (INT64, Array(np.int32), Array(np.int32)))],
                     kernels={"level": "mergesort_task"})
    prog.source          # OpenCL C, formatted, with the Python lines as comments
    prog.kernels["level"]  # the kernel's parameters, in order, to set its arguments

The generated C, in order: a header comment, ``#pragma OPENCL FP_CONTRACT OFF``
(no fused multiply-add: Numba does not fuse either), the ``cl_khr_fp64`` pragma
when doubles appear, the helpers used, one ``struct`` per tuple type returned,
one C function per (Python function, argument types) in dependency order, and
the range kernels.  Names are stable (``hpu_<name>__<type codes>``), so the same
input always gives byte-identical source and compiled-program caches hit.

C conventions a caller must know:

* an array parameter ``a`` becomes two C parameters, ``__global T *a`` and
  ``long a_len`` (its length, for ``len(a)`` and negative indices);
* a scalar kernel parameter has the C type of its NumPy dtype (``long`` for
  int64, ``double`` for float64, ...); pass it as the NumPy scalar
  (``np.int64(x)``); a bool parameter is passed as ``uchar`` (``np.uint8``);
* a tuple-returning function returns ``hpu_tuple_<codes>`` (fields ``f0``,
  ``f1``, ...).

The kernels of a decorated function are translated in checked mode
(``checked=``, the error channel: :func:`translate`): there integer ``//`` and
``%`` by zero, ``int()``/``round()`` of a NaN, infinite or out-of-range float,
a float stored into an integer array and (``bounds=``) an out-of-range index
record an error that the host raises as Python's exception, naming the user's
line; the items below marked so hold only outside checked mode.  A view's index
(``base[offset + hpu__view_index(i, n)]``, :mod:`hpu._views` and
:func:`hpu._codegen.iter_source`) is checked against the view's length ``n``
before the base array's check, under the same site.

Where Numba's result is undefined or Numba raises, the device does something
definite, documented rather than hidden:

* int64 ``+ - * << -x abs`` wrap on overflow (two's complement).  Numba compiles
  signed arithmetic as "no signed wrap": plain arithmetic wraps, but a
  comparison such as ``a - 13 >= a`` may be folded as if it could not;
* a shift count outside 0..63 is taken modulo 64 (what Numba's x86-64 code does
  with a count known only at run time; LLVM calls the result poison);
* ``range()`` with a step of 0 known only at run time runs zero times (Python
  and Numba raise ``ValueError``; a constant 0 step is refused);
* converting a NaN or out-of-range float to an integer (``int(x)``, storing into
  an integer array) gives an unspecified value, as it does in Numba (outside
  checked mode);
* ``x ** LONG_MIN`` is computed with ``pow()`` (Numba raises ``OverflowError``)
  and ``0.0 ** -n`` is ``inf`` (Numba and Python raise ``ZeroDivisionError``).

Everything else (floor ``//`` and ``%``, integer division by zero (outside
checked mode) and ``LONG_MIN // -1`` giving 0 as with ``error_model="numpy"``, NaN-aware ``min``
and ``max``, ``round`` half to even, narrow and unsigned types, float32
staying float32) is exactly Numba's.
"""
from __future__ import annotations

import ast
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from hpu._errors import TranslationError
from hpu._opencl._prelude import helper_needs_fp64, prelude_source
from hpu._opencl._scalars import (
    BOOL, FLOAT32, FLOAT64, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64,
    Array, Scalar, TupleType, abs_result, arith_result, compare_type, round_input,
)
from hpu._opencl._source import FunctionSource
from hpu._guard import DIGITS
from hpu._reductions import REDUCE_FIRST, REDUCE_PAIR
from hpu._views import VIEW_INDEX
from hpu._opencl._typeinfer import (
    BINOPS, CMPOPS, Context, FunctionTyping, Web, aug_key, infer,
)

__all__ = [
    "FunctionSource", "translate", "TranslatedProgram", "FunctionInfo", "KernelParam",
    "Array", "Scalar", "TupleType", "BOOL", "INT8", "INT16", "INT32", "INT64",
    "UINT8", "UINT16", "UINT32", "UINT64", "FLOAT32", "FLOAT64",
]


# ------------------------------------------------------------------------- results

@dataclass(frozen=True)
class FunctionInfo:
    """One translated function: its C name, C parameters and return type."""

    python_name: str
    arg_types: tuple
    c_name: str
    params: tuple[tuple[str, str], ...]   # (C name, C type) in order; arrays add a length
    return_type: Any                      # Scalar, TupleType or None
    filename: str
    line: int


@dataclass(frozen=True)
class KernelParam:
    """One parameter of a generated kernel.

    ``kind`` is ``"array"`` (a ``__global`` buffer of ``dtype``), ``"length"``
    (a ``long``: the length of ``array``), ``"scalar"`` (pass ``dtype.type(value)``),
    or ``"start"`` / ``"stop"`` (``long``: the range of task indices).
    """

    name: str
    kind: str
    dtype: np.dtype
    array: str | None = None


@dataclass(frozen=True)
class TranslatedProgram:
    """The result of :func:`translate`."""

    source: str
    functions: Mapping[tuple, FunctionInfo]
    kernels: Mapping[str, tuple[KernelParam, ...]]
    uses_fp64: bool
    fp64_first_use: str | None = None   # "file.py:LINE" of the first float64 value
    #: checked mode: the text of each site index the error channel may report
    sites: tuple[str, ...] = ()

    def kernel_args(self, kernel: str, values: Mapping[str, Any], start: int, stop: int) -> list:
        """The argument list for ``kernel`` over tasks ``[start, stop)``.

        ``values`` maps each task parameter after the task index to a scalar, or
        for an array to ``(buffer, length)`` or a ``pyopencl.array.Array``.
        Scalars become NumPy scalars of the kernel's C types.
        """
        if kernel not in self.kernels:
            raise KeyError(f"no kernel {kernel!r}; this program has {sorted(self.kernels)}")
        wanted = [p.name for p in self.kernels[kernel] if p.kind in ("array", "scalar")]
        missing = [n for n in wanted if n not in values]
        if missing:
            raise KeyError(f"kernel {kernel!r} needs values for {missing}; it takes {wanted}")
        out = []
        for p in self.kernels[kernel]:
            if p.kind == "array":
                out.append(_array_arg(p.name, values[p.name])[0])
            elif p.kind == "length":
                out.append(np.int64(_array_arg(p.array, values[p.array])[1]))
            elif p.kind == "scalar":
                out.append(p.dtype.type(values[p.name]))
            else:
                out.append(np.int64(start if p.kind == "start" else stop))
        return out


def _array_arg(name: str, value) -> tuple[Any, int]:
    """``(buffer, length)`` of a kernel array argument."""
    if isinstance(value, tuple) and len(value) == 2:
        return value[0], int(value[1])
    if hasattr(value, "data") and hasattr(value, "size") and not isinstance(value, np.ndarray):
        return value.data, int(value.size)   # a pyopencl.array.Array
    raise TypeError(f"kernel argument {name!r}: expected (buffer, length) or a "
                    f"pyopencl.array.Array, got {type(value).__name__}")


# --------------------------------------------------------------------------- names

_C_RESERVED = set("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Bool _Complex _Imaginary bool true false uchar ushort
uint ulong half size_t ptrdiff_t intptr_t uintptr_t global local constant private kernel
__global __local __constant __private __kernel read_only write_only read_write
__read_only __write_only __read_write image1d_t image2d_t image3d_t image1d_array_t
image2d_array_t image1d_buffer_t sampler_t event_t queue_t clk_event_t reserve_id_t
ndrange_t cl_mem_fence_flags complex imaginary typeof
sqrt exp expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh asinh acosh
atanh erf erfc lgamma tgamma fabs floor ceil trunc rint round pow atan2 hypot copysign fmod
isnan isinf isfinite as_long as_ulong as_double as_float get_global_id min max abs
INFINITY NAN HUGE_VAL HUGE_VALF MAXFLOAT LONG_MIN LONG_MAX ULONG_MAX INT_MIN INT_MAX
CHAR_BIT M_PI M_E FLT_MAX DBL_MAX NULL
""".split())
_VECTOR = re.compile(r"^(char|uchar|short|ushort|int|uint|long|ulong|float|double|half|bool)"
                     r"(2|3|4|8|16)$")


def _c_ident(name: str, taken: set[str]) -> str:
    """A C identifier for a Python name, unique in ``taken`` (which it joins)."""
    base = "".join(c if c.isascii() and (c.isalnum() or c == "_") else f"_u{ord(c):04x}"
                   for c in name)
    if base in _C_RESERVED or _VECTOR.match(base) or base.startswith("__"):
        base = base + "_"
    if base.startswith("hpu_"):
        base = "u_" + base
    out, k = base, 2
    while out in taken:
        out, k = f"{base}_{k}", k + 1
    taken.add(out)
    return out


def _type_code(t) -> str:
    return t.code


def _tuple_c(t: TupleType) -> str:
    return f"hpu_tuple_{t.code}"


# ------------------------------------------------------------------- expressions

ATOM, UNARY, MUL, ADD, SHIFT, REL, EQ, BAND, BXOR, BOR, LAND, LOR, COND, ASSIGN = (
    100, 90, 80, 70, 60, 50, 45, 40, 35, 30, 25, 20, 15, 10)


@dataclass(frozen=True)
class _E:
    """A C expression with its precedence (for minimal parentheses); a literal also
    carries its Python value, so conversions of constants fold."""

    text: str
    prec: int = ATOM
    value: Any = None

    def at(self, prec: int) -> str:
        """The text, parenthesised if it binds looser than ``prec``."""
        return self.text if self.prec >= prec else f"({self.text})"


def _binary(a: _E, op: str, b: _E, prec: int) -> _E:
    return _E(f"{a.at(prec)} {op} {b.at(prec + 1)}", prec)


def _mask(count_type) -> str:
    """The shift-count mask literal (counts are taken modulo 64, as Numba on x86-64)."""
    return "63UL" if count_type == UINT64 else "63L"


def _call(name: str, *args: _E) -> _E:
    return _E(f"{name}({', '.join(a.text for a in args)})")


#: int64 operations whose result Python's int may grow past int64 -> the checked helper's
#: name (hpu_mul_chk_l, ...: hpu._opencl._prelude)
_GROWS = {"*": "mul", "**": "pow", "<<": "shl"}

_C_BINOP_PREC = {"*": MUL, "/": MUL, "%": MUL, "+": ADD, "-": ADD, "<<": SHIFT, ">>": SHIFT,
                 "&": BAND, "^": BXOR, "|": BOR}
_CMP_PREC = {"<": REL, "<=": REL, ">": REL, ">=": REL, "==": EQ, "!=": EQ}


# ------------------------------------------------------------------------ program

class _Program:
    """Collects functions, helpers and tuple types while emitting."""

    def __init__(self, checked=None, bounds: bool = False):
        #: checked mode: ``checked(typing, node)`` -> the site index of a checked operation
        #: (None: leave it unchecked); every function takes ``__global long *hpu_err``
        self.checked = checked
        self.bounds = bounds and checked is not None
        self.helpers: set[str] = set()
        self.tuples: dict[TupleType, None] = {}
        self.c_names: dict[int, str] = {}           # id(typing) -> C name
        self.taken_fn_names: set[str] = set()
        self.fp64_at: str | None = None

    def note_fp64(self, where: str | None) -> None:
        if self.fp64_at is None:
            self.fp64_at = where or "generated code"

    def use_helper(self, name: str, where: str | None) -> str:
        self.helpers.add(name)
        if helper_needs_fp64(name):
            self.note_fp64(where)
        return name

    def c_name_of(self, t: FunctionTyping) -> str:
        name = self.c_names.get(id(t))
        if name is None:
            codes = "_".join(_type_code(a) for a in t.arg_types) or "v"
            base = f"hpu_{_c_ident(t.name, set())}__{codes}"
            name, k = base, 2
            while name in self.taken_fn_names:
                name, k = f"{base}_{k}", k + 1
            self.taken_fn_names.add(name)
            self.c_names[id(t)] = name
        return name


class _FunctionEmitter:
    """Emits one :class:`FunctionTyping` as a C function."""

    def __init__(self, prog: _Program, t: FunctionTyping):
        self.prog = prog
        self.t = t
        self.src = t.source
        self.lines: list[str] = []
        self.indent = 1
        self.taken: set[str] = set()
        self.temps: list[tuple[str, str]] = []   # (C type, name)
        self.temp_count = 0
        self.loop_count = 0
        self.last_comment_line: int | None = None
        self.fname = os.path.basename(self.src.filename)
        self.param_decls: list[tuple[str, str]] = []
        self.prologue: list[str] = []
        self.where = f"{self.fname}:{self.src.line_of(t.tree)}"
        self.checked = prog.checked
        if self.checked is not None:
            self.taken.add("hpu_err")
        self._name_variables()
        if self.checked is not None:  # the error channel, passed down to every callee
            self.param_decls.append(("__global long *", "hpu_err"))

    # -------------------------------------------------------------- naming
    def _name_variables(self):
        t = self.t
        for w in t.webs:
            w.c_name = ""
        lengths = {}
        for i, arg in enumerate(t.tree.args.args):
            web = t.def_webs[id(arg)]
            ptype = t.arg_types[i]
            if isinstance(ptype, Array):
                cname = _c_ident(arg.arg, self.taken)
                web.c_name = cname
                lengths[cname] = _c_ident(f"{cname}_len", self.taken)
                space = "__global" if ptype.space == "global" else "__private"
                elem = "uchar" if ptype.elem == BOOL else self._ctype(ptype.elem)  # 1 byte, 0/1
                self.param_decls.append((f"{space} {elem} *", cname))
                self.param_decls.append(("long ", lengths[cname]))
            elif web.type != ptype:
                pname = _c_ident(f"{arg.arg}_arg", self.taken)
                web.c_name = _c_ident(arg.arg, self.taken)
                self.param_decls.append((self._ctype(ptype) + " ", pname))
                self.prologue.append(
                    f"{self._ctype(web.type)} {web.c_name} = "
                    f"{self._conv(_E(pname), ptype, web.type).text};")
            else:
                web.c_name = _c_ident(arg.arg, self.taken)
                self.param_decls.append((self._ctype(ptype) + " ", web.c_name))
        self.lengths = lengths
        for w in t.webs:
            if not w.c_name:
                w.c_name = _c_ident(w.name, self.taken)

    def _temp(self, ctype: str) -> str:
        name = f"hpu_t{self.temp_count}"
        self.temp_count += 1
        self.temps.append((ctype, name))
        return name

    def _ctype(self, t) -> str:
        if isinstance(t, TupleType):
            self.prog.tuples[t] = None
            for item in t.items:
                self._ctype(item)
            return _tuple_c(t)
        if t == FLOAT64:
            self.prog.note_fp64(self.where)
        return t.c

    def _site(self, node) -> _E | None:
        """The site index of a checked operation at ``node`` (None: unchecked)."""
        if self.checked is None or node is None:
            return None
        k = self.checked(self.t, node)
        return None if k is None else _E(f"{int(k)}L")

    def _helper(self, name: str) -> str:
        return self.prog.use_helper(name, self.where)

    # ------------------------------------------------------------ literals
    def _literal(self, value, ty: Scalar) -> _E:
        e = self._literal_text(value, ty)
        return _E(e.text, e.prec, value)

    def _literal_text(self, value, ty: Scalar) -> _E:
        if ty == BOOL:
            return _E("true" if value else "false")
        if ty == INT64:
            v = int(value)
            if v == -(1 << 63):
                return _E("LONG_MIN")
            return _E(f"{v}L", ATOM if v >= 0 else UNARY)
        if ty == UINT64:
            return _E(f"{int(value)}UL")
        if ty.is_intlike:
            v = int(value)
            return _E(f"({ty.c}){v}{'UL' if ty.is_unsigned else 'L'}", UNARY)
        v = float(value)
        if ty == FLOAT64:
            self.prog.note_fp64(self.where)
        if math.isnan(v):
            return _E("NAN" if ty == FLOAT32 else "(double)NAN", ATOM if ty == FLOAT32 else UNARY)
        if math.isinf(v):
            text = "INFINITY" if ty == FLOAT32 else "(double)INFINITY"
            return _E(("-" if v < 0 else "") + text, UNARY if (v < 0 or ty == FLOAT64) else ATOM)
        text = repr(v) + ("f" if ty == FLOAT32 else "")
        return _E(text, UNARY if text.startswith("-") else ATOM)

    # --------------------------------------------------------- conversions
    def _conv(self, e: _E, src, dst) -> _E:
        if src == dst:
            return e
        folded = self._fold_conv(e, src, dst)
        if folded is not None:
            return folded
        if dst == BOOL:
            return _E(f"{e.at(EQ + 1)} != 0", EQ)
        return _E(f"({self._ctype(dst)}){e.at(UNARY)}", UNARY)

    def _fold_conv(self, e: _E, src, dst) -> _E | None:
        """A constant converted at translation time, where that is exact."""
        v = e.value
        if v is None or not isinstance(src, Scalar) or not isinstance(dst, Scalar) \
                or src.is_float:
            return None
        v = int(v)
        if dst == BOOL:
            return self._literal(v != 0, BOOL)
        if dst.is_float:
            return self._literal(float(v), dst) if abs(v) <= (1 << 24 if dst == FLOAT32
                                                                else 1 << 53) else None
        info = np.iinfo(dst.dtype)
        return self._literal(v, dst) if info.min <= v <= info.max else None

    # ------------------------------------------------------------ comments
    def _comment(self, node):
        """``/* file.py:LINE: python source */`` before the C of a new line."""
        line = self.src.line_of(node)
        self.where = f"{self.fname}:{line}"
        if line == self.last_comment_line:
            return
        self.last_comment_line = line
        self._line(f"/* {self.fname}:{line}: {self._safe_text(node)} */")

    def _line(self, text: str):
        self.lines.append("    " * self.indent + text)

    # --------------------------------------------------------------- emit
    def emit(self) -> str:
        t = self.t
        self._block(t.tree.body)
        ret = "void" if t.return_type is None else self._ctype(t.return_type)
        name = self.prog.c_name_of(t)
        params = ", ".join(f"{ty}{n}" for ty, n in self.param_decls) or "void"
        sig_text = ", ".join(repr(a) for a in t.arg_types)
        head = [f"/* {t.name}({', '.join(a.arg for a in t.tree.args.args)}) from "
                f"{self.fname}:{self.src.line_of(t.tree)}, for ({sig_text}) */",
                f"{ret} {name}({params})", "{"]
        decls = ["    " + p for p in self.prologue]
        for w in t.webs:
            if w.param_index is not None:
                continue
            if isinstance(w.type, Array):
                decls.append(f"    {self._ctype(w.type.elem)} {w.c_name}[{w.private_len}];")
            else:
                decls.append(f"    {self._ctype(w.type)} {w.c_name};")
        for ctype, n in self.temps:
            decls.append(f"    {ctype} {n};")
        if decls:
            decls.append("")
        return "\n".join(head + decls + self.lines + ["}"]) + "\n"

    def _block(self, stmts):
        for stmt in stmts:
            if id(stmt) not in self.t.reachable:
                break
            self._stmt(stmt)

    def _stmt(self, stmt):
        if isinstance(stmt, ast.If):
            self._if(stmt)
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # docstring or string statement
        self._comment(stmt)
        if isinstance(stmt, ast.Assign):
            self._assign(stmt.targets, stmt.value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._assign([stmt.target], stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            self._augassign(stmt)
        elif isinstance(stmt, ast.Expr):
            e = self._expr(stmt.value)
            self._line(f"{e.text};" if isinstance(stmt.value, ast.Call) else f"(void)({e.text});")
        elif isinstance(stmt, ast.Return):
            self._return(stmt)
        elif isinstance(stmt, ast.Raise):
            self._raise(stmt)
        elif isinstance(stmt, ast.While):
            cond = self._cond(stmt.test)
            self._line(f"while ({cond}) {{")
            self._body(stmt.body)
            self._line("}")
        elif isinstance(stmt, ast.For):
            self._for(stmt)
        elif isinstance(stmt, ast.Break):
            self._line("break;")
        elif isinstance(stmt, ast.Continue):
            self._line("continue;")
        elif isinstance(stmt, ast.Pass):
            pass
        else:  # pragma: no cover - the analysis refused everything else
            raise AssertionError(type(stmt).__name__)

    def _body(self, stmts):
        self.indent += 1
        self.last_comment_line = None
        self._block(stmts)
        self.indent -= 1
        self.last_comment_line = None

    def _if(self, stmt: ast.If):
        self._comment(stmt)
        self._line(f"if ({self._cond(stmt.test)}) {{")
        self._if_rest(stmt)

    def _if_rest(self, stmt: ast.If):
        """The body of ``if``, then ``elif`` branches as ``} else if``, then ``else``."""
        self._body(stmt.body)
        orelse = [s for s in stmt.orelse if id(s) in self.t.reachable]
        if len(orelse) == 1 and isinstance(orelse[0], ast.If) \
                and self.src.text_of_line(orelse[0]).startswith("elif"):
            nxt = orelse[0]
            line = self.src.line_of(nxt)
            self.where = f"{self.fname}:{line}"
            self._line(f"}} else if ({self._cond(nxt.test)}) {{  "
                       f"/* {self.fname}:{line}: {self._safe_text(nxt)} */")
            self._if_rest(nxt)
            return
        if orelse:
            self._line("} else {")
            self._body(stmt.orelse)
        self._line("}")

    def _safe_text(self, node) -> str:
        """The Python line of ``node``, safe inside a C comment."""
        return self.src.text_of_line(node).encode("ascii", "replace").decode(
            "ascii").replace("*/", "* /")

    def _cond(self, node) -> str:
        return self._expr(node).text

    # ---------------------------------------------------------- assignment
    def _target_store(self, target, value: _E, vtype):
        """Emit ``target = value`` (value of type vtype), converting as Numba does."""
        if isinstance(target, ast.Name):
            web: Web = self.t.def_webs[id(target)]
            self._line(f"{web.c_name} = {self._conv(value, vtype, web.type).text};")
        else:
            ref, elem = self._element(target, store=True)
            guard, self._guard = self._guard, None
            site = (self._site(target) if getattr(vtype, "is_float", False)
                    and elem != BOOL and not elem.is_float else None)
            if site is not None:
                # a float into an int array: NaN/inf/out of range raise as int(x) does
                value = _call(self._helper(f"hpu_toint_{vtype.code}"), value, site,
                              _E("hpu_err"))
            text = f"{ref} = {self._conv(value, vtype, elem).text};"
            self._line(text if guard is None else f"if ({guard} >= 0L) {text}")

    def _assign(self, targets, value):
        info = self.t.calls.get(id(value)) if isinstance(value, ast.Call) else None
        if info is not None and info.kind == "empty":
            web = self.t.def_webs[id(targets[0])]
            self._line(f"/* {web.c_name}: a private array, declared above */")
            return
        if len(targets) == 1 and isinstance(targets[0], ast.Tuple):
            self._unpack(targets[0], value)
            return
        vtype = self.t.expr_types[id(value)]
        e = self._expr(value)
        # bounds-checked: the value first, as Python evaluates it (``out[k] = l[i]`` with
        # both out of range reports ``l[i]``); the store's check comes after
        if len(targets) > 1 or (self.prog.bounds and isinstance(targets[0], ast.Subscript)):
            tmp = self._temp(self._ctype(vtype))
            self._line(f"{tmp} = {e.text};")
            e = _E(tmp)
        for target in targets:
            self._target_store(target, e, vtype)

    def _unpack(self, target: ast.Tuple, value):
        if isinstance(value, ast.Tuple):
            vals = []
            for v in value.elts:
                vt = self.t.expr_types[id(v)]
                tmp = self._temp(self._ctype(vt))
                self._line(f"{tmp} = {self._expr(v).text};")
                vals.append((_E(tmp), vt))
        else:
            tt: TupleType = self.t.expr_types[id(value)]
            tmp = self._temp(self._ctype(tt))
            self._line(f"{tmp} = {self._expr(value).text};")
            vals = [(_E(f"{tmp}.f{i}"), item) for i, item in enumerate(tt.items)]
        for elt, (e, vt) in zip(target.elts, vals):
            self._target_store(elt, e, vt)

    def _augassign(self, stmt: ast.AugAssign):
        op = BINOPS[type(stmt.op)]
        rt = self.t.expr_types[id(stmt.value)]
        if isinstance(stmt.target, ast.Name):
            read, lt = self.t.use_webs[aug_key(stmt)]      # x as read ...
            write = self.t.def_webs[id(stmt.target)]         # ... and as (re)defined
            cur = self._conv(_E(read.c_name), read.type, lt)
            res, e = self._arith(op, cur, lt, self._expr(stmt.value), rt, stmt)
            self._line(f"{write.c_name} = {self._conv(e, res, write.type).text};")
            return
        ref, elem = self._element(stmt.target, once=True, store=True)
        guard, self._guard = self._guard, None
        res, e = self._arith(op, _E(ref), elem, self._expr(stmt.value), rt, stmt)
        text = f"{ref} = {self._conv(e, res, elem).text};"
        self._line(text if guard is None else f"if ({guard} >= 0L) {text}")

    _guard = None   #: a checked store's index temporary (-1: out of range, skip the store)
    #: the site of the checked subscript being emitted: its view index, if any, is checked
    #: under it (see _callexpr)
    _vsite = None

    def _element(self, node: ast.Subscript, once: bool = False,
                 store: bool = False) -> tuple[str, Scalar]:
        """``(C lvalue text, element type)`` of ``a[i]``; with ``once`` the index is
        computed into a temporary first unless it is a name or a constant.

        Bounds-checked mode: the index goes through ``hpu_index_chk`` (a read of an
        out-of-range index reads element 0 after recording the error); for a ``store``
        the index is put in a temporary left in ``self._guard``, -1 when out of range,
        and the caller emits the store under ``if (guard >= 0)``."""
        web, arr = self.t.use_webs[id(node.value)]
        site = None
        if self.prog.bounds and not isinstance(node.slice, ast.Constant):
            site = self._site(node)
        outer, self._vsite = self._vsite, site
        try:
            return self._element_at(node, web, arr, site, once, store)
        finally:
            self._vsite = outer

    def _element_at(self, node, web, arr, site, once, store) -> tuple[str, Scalar]:
        if site is not None:
            e = self._expr(node.slice)
            ity = self.t.expr_types[id(node.slice)]
            kind = "hpu_uindex_chk" if ity.is_unsigned else "hpu_index_chk"
            idx_e = e if ity.is_unsigned else self._conv(e, ity, INT64)
            if store:
                tmp = self._temp("long")
                chk = _call(self._helper(kind + "_st"), idx_e, self._length(web), site,
                            _E("hpu_err"))
                self._line(f"{tmp} = {chk.text};")
                self._guard = tmp
                return f"{web.c_name}[{tmp}]", arr.elem
            idx = _call(self._helper(kind), idx_e, self._length(web), site, _E("hpu_err")).text
        else:
            idx = self._index_text(node, web, arr)
        if once and not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*|-?[0-9]+U?L", idx):
            tmp = self._temp("long")
            self._line(f"{tmp} = {idx};")
            idx = tmp
        return f"{web.c_name}[{idx}]", arr.elem

    def _length(self, web: Web) -> _E:
        if web.private_len is not None:
            return _E(f"{web.private_len}L")
        return _E(self.lengths[web.c_name])

    def _index_text(self, node: ast.Subscript, web: Web, arr: Array) -> str:
        sl = node.slice
        ity = self.t.expr_types[id(sl)]
        if isinstance(sl, ast.Constant):
            v = int(sl.value)
            if v >= 0:
                return f"{v}L"
            return _binary(self._length(web), "-", _E(f"{-v}L"), ADD).text
        e = self._expr(sl)
        if ity.is_unsigned:
            return e.text
        return _call(self._helper("hpu_index"), self._conv(e, ity, INT64),
                     self._length(web)).text

    # --------------------------------------------------------------- return
    def _return(self, stmt: ast.Return):
        rt = self.t.return_type
        if stmt.value is None:
            self._line("return;")
            return
        vt = self.t.expr_types[id(stmt.value)]
        if isinstance(rt, TupleType):
            if isinstance(stmt.value, ast.Tuple):
                parts = [self._conv(self._expr(v), self.t.expr_types[id(v)], want)
                         for v, want in zip(stmt.value.elts, rt.items)]
                self._ctype(rt)
                self._line(f"return {_call(_tuple_c(rt) + '_make', *parts).text};")
                return
            e = self._expr(stmt.value)
            if vt == rt:
                self._line(f"return {e.text};")
                return
            tmp = self._temp(self._ctype(vt))
            self._line(f"{tmp} = {e.text};")
            parts = [self._conv(_E(f"{tmp}.f{i}"), have, want)
                     for i, (have, want) in enumerate(zip(vt.items, rt.items))]
            self._line(f"return {_call(_tuple_c(rt) + '_make', *parts).text};")
            return
        self._line(f"return {self._conv(self._expr(stmt.value), vt, rt).text};")

    def _raise(self, stmt: ast.Raise):
        """``raise E(c...)`` (hpu/_raises.py): error code 9 at the statement's site -- the
        host rebuilds Python's exception from the site's text -- and the function returns
        (a value of its type, which nobody reads: the host raises after the share)."""
        site = self._site(stmt)
        if site is None:
            raise self.fail(stmt, "a raise statement outside hpu's error channel",
                            "the exception is recorded in the checked mode's error buffer",
                            "Translate with checked= (hpu's levels always are).")
        self._line(f"{self._helper('hpu_raise')}(hpu_err, 9, {site.text}, 0L, 0L);")
        rt = self.t.return_type
        if rt is None:
            self._line("return;")
        elif isinstance(rt, TupleType):
            self._ctype(rt)
            zeros = [_E(f"({item.c})0") for item in rt.items]
            self._line(f"return {_call(_tuple_c(rt) + '_make', *zeros).text};")
        else:
            self._line(f"return ({self._ctype(rt)})0;")

    # ------------------------------------------------------------------ for
    def _for(self, stmt: ast.For):
        """``for v in range(...)``: the bounds are evaluated once, the iteration count
        is computed first exactly as Numba computes it, and ``v`` is assigned at the
        top of each iteration (so after the loop it holds the last value, or is
        unchanged if the loop never ran)."""
        info = self.t.ranges[id(stmt)]
        k = self.loop_count
        self.loop_count += 1
        var = info.var_type                       # INT32, INT64 or UINT64
        it = UINT64 if var == UINT64 else INT64   # the C type the loop counts in
        i, n = f"hpu_i{k}", f"hpu_n{k}"
        self.temps += [(it.c, i), ("long", n)]
        bounds = []
        for node, default in zip(info.args, (0, None, 1)):
            if node is None:
                bounds.append(self._literal(default, var))
            else:
                bounds.append(self._conv(self._expr(node), self.t.expr_types[id(node)], var))
        start, stop, step = bounds
        if var == INT32:
            count = _call(self._helper("hpu_range_len_i"), _E(f"(int){i}", UNARY), stop, step)
        elif var == UINT64:
            count = _call(self._helper("hpu_range_len_l"), _E(f"as_long({i})"),
                          _E(f"as_long({stop.text})"), _E(f"as_long({step.text})"))
        else:
            count = _call(self._helper("hpu_range_len_l"), _E(i), stop, step)
        step_it = self._conv(step, var, it)
        if var == UINT64:
            advance = f"{i} += {step_it.at(ASSIGN)}"
        else:
            advance = f"{i} = {_call(self._helper('hpu_add_l'), _E(i), step_it).text}"
        first = self._conv(start, var, it)
        self._line(f"for ({i} = {first.at(ASSIGN)}, {n} = {count.text}; {n} > 0L; "
                   f"{n}--, {advance}) {{")
        var_web = self.t.def_webs[id(stmt.target)]
        self.indent += 1
        self._line(f"{var_web.c_name} = {self._conv(_E(i), it, var_web.type).text};")
        self.indent -= 1
        self._body(stmt.body)
        self._line("}")

    # ---------------------------------------------------------- expressions
    def _expr(self, node) -> _E:
        t = self.t
        if id(node) in t.consts and not isinstance(node, ast.Call):
            value, ty = t.consts[id(node)]
            return self._literal(value, ty)
        if isinstance(node, ast.Name):
            web, use_ty = t.use_webs[id(node)]
            return self._conv(_E(web.c_name), web.type, use_ty)
        if isinstance(node, ast.Attribute):  # a.size
            web, _ = t.use_webs[id(node.value)]
            return self._length(web)
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute):  # a.shape[0]
                web, _ = t.use_webs[id(node.value.value)]
                return self._length(web)
            ref, _ = self._element(node)
            return _E(ref)
        if isinstance(node, ast.BinOp):
            op = BINOPS[type(node.op)]
            lt, rt = t.expr_types[id(node.left)], t.expr_types[id(node.right)]
            return self._arith(op, self._expr(node.left), lt, self._expr(node.right), rt,
                               node)[1]
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.IfExp):
            res = t.expr_types[id(node)]
            test = self._expr(node.test)
            a = self._conv(self._expr(node.body), t.expr_types[id(node.body)], res)
            b = self._conv(self._expr(node.orelse), t.expr_types[id(node.orelse)], res)
            return _E(f"{test.at(UNARY)} ? {a.at(ASSIGN)} : {b.at(COND)}", COND)
        if isinstance(node, ast.Call):
            return self._callexpr(node)
        raise AssertionError(f"unexpected expression {type(node).__name__}")  # pragma: no cover

    def _arith(self, op, a: _E, at, b: _E, bt, node=None) -> tuple[Scalar, _E]:
        res, lc, rc = arith_result(op, at, bt)
        a, b = self._conv(a, at, lc), self._conv(b, bt, rc)
        if op in ("//", "%", "/") and res != BOOL:
            site = self._site(node)
            if site is not None:  # checked mode: a zero divisor raises ZeroDivisionError
                check = ("tdivisor" if op == "/" else "divisor" if not res.is_float
                         else "fdivisor" if op == "//" else "mdivisor")
                b = _call(self._helper(f"hpu_{check}_{rc.code}"), b, site, _E("hpu_err"))
        if res == INT64 and op in ("*", "**", "<<"):
            site = self._site(node)
            if site is not None:  # checked mode: past int64, the plain function runs
                return res, _call(self._helper(f"hpu_{_GROWS[op]}_chk_l"), a,
                                  self._conv(b, rc, INT64), site, _E("hpu_err"))
        if res == INT64:
            named = {"+": "hpu_add_l", "-": "hpu_sub_l", "*": "hpu_mul_l",
                     "//": "hpu_floordiv_l", "%": "hpu_mod_l", "**": "hpu_pow_l",
                     "<<": "hpu_shl_l"}
            if op in named:
                return res, _call(self._helper(named[op]), a, self._conv(b, rc, INT64)
                                  if op == "<<" else b)
            if op == ">>":
                return res, _binary(a, ">>", _E(f"{b.at(BAND)} & {_mask(rc)}", BAND), SHIFT)
            if op == "/":  # pragma: no cover - int / int is float64
                raise AssertionError
            return res, _binary(a, op, b, _C_BINOP_PREC[op])
        if res == UINT64:
            named = {"//": "hpu_floordiv_ul", "%": "hpu_mod_ul", "**": "hpu_pow_ul"}
            if op in named:
                return res, _call(self._helper(named[op]), a, b)
            if op in ("<<", ">>"):
                return res, _binary(a, op, _E(f"{b.at(BAND)} & {_mask(rc)}", BAND), SHIFT)
            return res, _binary(a, op, b, _C_BINOP_PREC[op])
        if res == BOOL:  # & | ^ on bools
            return res, _binary(a, op, b, _C_BINOP_PREC[op])
        code = res.code
        if op == "//":
            return res, _call(self._helper(f"hpu_floordiv_{code}"), a, b)
        if op == "%":
            return res, _call(self._helper(f"hpu_mod_{code}"), a, b)
        if op == "**":
            exp = node.right if isinstance(node, ast.BinOp) else getattr(node, "value", None)
            if (rc == INT64 and res == FLOAT64 and isinstance(exp, ast.Constant)
                    and type(exp.value) is int and exp.value == 2):
                # a literal square: x * x, as the CPU's modules compute it (LLVM's) and
                # NumPy squares an array's elements (guide §9)
                return res, _call(self._helper("hpu_sq_d"), a)
            if rc == INT64 and res == FLOAT64:      # Python's pow(), as the CPU's modules
                return res, _call(self._helper("hpu_pown_d"), a, b)
            if rc == INT64:                         # float32: Numba's repeated squaring
                return res, _call(self._helper(f"hpu_powi_{code}"), a, b)
            return res, _call("pow", a, b)
        return res, _binary(a, op, b, _C_BINOP_PREC[op])

    def _unary(self, node: ast.UnaryOp) -> _E:
        ty = self.t.expr_types[id(node.operand)]
        e = self._expr(node.operand)
        if isinstance(node.op, ast.Not):
            return _E(f"!{e.at(UNARY)}", UNARY)
        res = self.t.expr_types[id(node)]
        if isinstance(node.op, ast.UAdd):
            return self._conv(e, ty, res)
        if isinstance(node.op, ast.USub):
            if ty.is_float:
                return _E(f"-{e.at(UNARY)}", UNARY)
            if ty == INT64:
                return _call(self._helper("hpu_neg_l"), e)
            if ty == UINT64:
                return _E(f"-{e.at(UNARY)}", UNARY)
            if ty == BOOL:
                return _E(f"-(long){e.at(UNARY)}", UNARY)
            # a narrow integer: Numba negates in its own width, then widens
            wide = "ulong" if ty.is_unsigned else "long"
            inner = _E(f"-({wide}){e.at(UNARY)}", UNARY)
            return _E(f"({res.c})({ty.c}){inner.at(UNARY)}", UNARY)
        # ~x
        if ty in (INT64, UINT64):
            return _E(f"~{e.at(UNARY)}", UNARY)
        if ty.is_unsigned:
            return _E(f"({res.c})({ty.c})~{e.at(UNARY)}", UNARY)
        return _E(f"~({res.c}){e.at(UNARY)}", UNARY)

    def _boolop(self, node: ast.BoolOp) -> _E:
        res = self.t.expr_types[id(node)]
        types = [self.t.expr_types[id(v)] for v in node.values]
        parts = [self._expr(v) for v in node.values]
        is_and = isinstance(node.op, ast.And)
        if all(t == BOOL for t in types):
            op, prec = ("&&", LAND) if is_and else ("||", LOR)
            # an integer's `x != x` (folded to 0 by _compare) adds nothing to an `or`
            kept = [p for p in parts if p.text != ("1" if is_and else "0")] or parts[-1:]
            if len(kept) == 1:
                return kept[0]
            parts = kept
            inner = prec + 1 if is_and else LAND + 1  # (a && b) || c, for the reader
            return _E(f" {op} ".join(p.at(inner) for p in parts), prec)
        # Python returns the deciding operand itself, converted to the unified type
        out = self._conv(parts[-1], types[-1], res)
        for p, ty in zip(reversed(parts[:-1]), reversed(types[:-1])):
            tmp = self._temp(self._ctype(ty))
            keep = self._conv(_E(tmp), ty, res)
            test = f"!({tmp} = {p.text})" if is_and else f"({tmp} = {p.text})"
            out = _E(f"{test} ? {keep.at(ASSIGN)} : {out.at(COND)}", COND)
        return out

    def _compare(self, node: ast.Compare) -> _E:
        operands = [node.left] + list(node.comparators)
        types = [self.t.expr_types[id(o)] for o in operands]
        if (len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq))
                and isinstance(node.left, ast.Name) and isinstance(operands[1], ast.Name)
                and node.left.id == operands[1].id and isinstance(types[0], Scalar)
                and not types[0].is_float):
            # `x != x` of an integer (np.max's NaN test, hpu/_reductions.py): what Python
            # gives, without the C compiler's warning that it always does
            return _E("1" if isinstance(node.ops[0], ast.Eq) else "0", ATOM)
        parts = []
        left = self._expr(operands[0])
        for k, op in enumerate(node.ops):
            cop = CMPOPS[type(op)]
            right_node = operands[k + 1]
            right = self._expr(right_node)
            if k + 1 < len(node.ops):  # a middle operand: evaluate once into a temporary
                tmp = self._temp(self._ctype(types[k + 1]))
                right_val = _E(f"{tmp} = {right.text}", ASSIGN)
                nxt = _E(tmp)
            else:
                right_val, nxt = right, None
            if types[k] == types[k + 1]:  # C compares equal types exactly
                a, b = left, right_val
            else:
                ct = compare_type(types[k], types[k + 1])
                a = self._conv(left, types[k], ct)
                b = self._conv(right_val, types[k + 1], ct)
            parts.append(_binary(a, cop, b, _CMP_PREC[cop]))
            left = nxt
        if len(parts) == 1:
            return parts[0]
        return _E(" && ".join(p.at(LAND + 1) for p in parts), LAND)

    def _callexpr(self, node: ast.Call) -> _E:
        info = self.t.calls[id(node)]
        res = self.t.expr_types.get(id(node))
        if info.kind == "helper" and info.callee.name == VIEW_INDEX and self._vsite is not None:
            # a view's index, checked against the view's length; out of range, it records
            # IndexError and gives an index that the base array's check (around it, same
            # site) finds out of range too: the store is skipped, a read reads element 0
            site, self._vsite = self._vsite, None   # not the indices inside it
            try:
                i, n = (self._conv(self._expr(a), ty, INT64)
                        for a, ty in zip(info.args, info.arg_types))
            finally:
                self._vsite = site
            return self._conv(_call(self._helper("hpu_vindex_chk"), i, n, site, _E("hpu_err")),
                              INT64, res)
        if info.kind == "intrinsic" and info.name == DIGITS:  # len(str(x)) of an integer
            ty = info.arg_types[0]
            wide = UINT64 if ty.is_unsigned else INT64
            return _call(self._helper(f"hpu_ndigits_{wide.code}"),
                         self._conv(self._expr(info.args[0]), ty, wide))
        if info.kind == "intrinsic" and info.name == REDUCE_FIRST:
            # min(a), np.max(a) (hpu/_reductions.py): 0, or the empty array's ValueError
            n, kind = (self._conv(self._expr(a), ty, INT64)
                       for a, ty in zip(info.args, info.arg_types))
            site = self._site(node)
            if site is None:  # unchecked: the first element's index all the same
                return _E("0L", ATOM)
            return _call(self._helper("hpu_reduce_first_chk"), n, kind, site, _E("hpu_err"))
        if info.kind == "intrinsic" and info.name == REDUCE_PAIR:
            # np.dot(a, b), np.sum(a - b) (hpu/_reductions.py): the elements, or ValueError
            n1, n2, kind = (self._conv(self._expr(a), ty, INT64)
                            for a, ty in zip(info.args, info.arg_types))
            site = self._site(node)
            if site is None:  # unchecked: a mismatch reduces nothing (never past a buffer)
                return _call(self._helper("hpu_reduce_pair"), n1, n2, kind)
            return _call(self._helper("hpu_reduce_pair_chk"), n1, n2, kind, site,
                         _E("hpu_err"))
        if info.kind == "intrinsic":  # SLICE_COPY: len(dst), or NumPy's ValueError
            nd, ns = (self._conv(self._expr(a), ty, INT64)
                      for a, ty in zip(info.args, info.arg_types))
            site = self._site(node)
            if site is None:  # unchecked: a mismatch copies nothing (never past a buffer)
                return _E(f"({ns.text}) == ({nd.text}) || ({ns.text}) == 1L ? ({nd.text}) : 0L",
                          COND)
            return _call(self._helper("hpu_slice_copy_chk"), nd, ns, site, _E("hpu_err"))
        if info.kind == "helper":
            args = []
            for a, ty in zip(info.args, info.arg_types):
                if isinstance(ty, Array):
                    web, _ = self.t.use_webs[id(a)]
                    args += [_E(web.c_name), self._length(web)]
                else:
                    args.append(self._expr(a))
            callee_name = self.prog.c_name_of(info.callee)
            if self.checked is not None:
                args.append(_E("hpu_err"))
            return _call(callee_name, *args)
        if info.kind == "builtin":
            return self._builtin(info, res, node)
        if info.kind == "cast":
            return self._conv(self._expr(info.args[0]), info.arg_types[0], info.target)
        a = self._expr(info.args[0])
        at = info.arg_types[0]
        if info.kind == "math":
            return _call(info.name, self._conv(a, at, info.target))
        if info.kind == "mathround":
            if at.is_float:
                site = self._site(node)
                if site is not None:  # checked mode: NaN, inf, out of range as int(x)
                    a = _call(self._helper(f"hpu_tointg_{at.code}"), a, site, _E("hpu_err"))
                return _E(f"({info.target.c}){_call(info.name, a).text}", UNARY)
            return self._conv(a, at, info.target)
        if info.kind == "mathpred":
            ft = at if at.is_float else FLOAT64
            return _call(info.name, self._conv(a, at, ft))
        if info.kind == "npext":  # np.maximum(a, b) and its kin, NumPy's (hpu._opencl._prelude)
            res = info.target
            b = self._expr(info.args[1])
            return _call(self._helper(f"hpu_{info.name}_{res.code}"), self._conv(a, at, res),
                         self._conv(b, info.arg_types[1], res))
        if info.kind == "math2":
            b = self._expr(info.args[1])
            bt = info.arg_types[1]
            if info.name == "pow":                  # Python's: both as float64, pow()
                return _call("pow", self._conv(a, at, FLOAT64), self._conv(b, bt, FLOAT64))
            return _call(info.name, self._conv(a, at, info.target),
                         self._conv(b, bt, info.target))
        raise AssertionError(info.kind)  # pragma: no cover

    def _builtin(self, info, res, node=None) -> _E:
        name = info.name
        if name in ("min", "max"):
            parts = [self._conv(self._expr(a), ty, res) for a, ty in zip(info.args, info.arg_types)]
            helper = self._helper(f"hpu_{name}_{res.code}")
            out = parts[0]
            for p in parts[1:]:
                out = _call(helper, out, p)
            return out
        if name == "len":
            web, _ = self.t.use_webs[id(info.args[0])]
            return self._length(web)
        a = self._expr(info.args[0])
        at = info.arg_types[0]
        if name == "abs":
            r = abs_result(at)
            if r.is_float:
                return _call("fabs", a)
            if r.is_unsigned:
                return a
            if r == INT64:
                return _call(self._helper("hpu_abs_l"), a)
            return _call(self._helper(f"hpu_abs_{r.code}"), self._conv(a, at, r))
        if name == "round":
            ft = round_input(at)
            x = self._conv(a, at, ft)
            site = self._site(node)
            if site is not None:  # checked mode: NaN, inf, out of range raise
                x = _call(self._helper(f"hpu_tointg_{ft.code}"), x, site, _E("hpu_err"))
            return _E(f"(long){_call('rint', x).text}", UNARY)
        if name == "int" and at.is_float:
            site = self._site(node)
            if site is not None:
                a = _call(self._helper(f"hpu_tointg_{at.code}"), a, site, _E("hpu_err"))
        return self._conv(a, at, res)  # int, float, bool


# ------------------------------------------------------------------------ program

def _collect(t: FunctionTyping, seen: dict[int, FunctionTyping], order: list):
    """Callees of ``t`` (depth first, callees before callers)."""
    if id(t) in seen:
        return
    seen[id(t)] = t
    for info in t.calls.values():
        if info.kind == "helper":
            _collect(info.callee, seen, order)
    order.append(t)


def _tuple_decl(tt: TupleType) -> str:
    name = _tuple_c(tt)
    fields = "\n".join(f"    {item.c} f{i};" for i, item in enumerate(tt.items))
    params = ", ".join(f"{item.c} f{i}" for i, item in enumerate(tt.items))
    assigns = "\n".join(f"    r.f{i} = f{i};" for i in range(len(tt.items)))
    return (f"/* The tuple ({', '.join(repr(i) for i in tt.items)}) a function returns. */\n"
            f"typedef struct {{\n{fields}\n}} {name};\n\n"
            f"{name} {name}_make({params})\n{{\n    {name} r;\n{assigns}\n    return r;\n}}\n")


def _kernel(prog: _Program, kname: str, t: FunctionTyping) -> tuple[str, tuple[KernelParam, ...]]:
    args = t.tree.args.args
    if not args or t.arg_types[0] != INT64:
        raise TranslationError(
            f"kernel {kname!r}: the first parameter of {t.name} must be the int64 task index, "
            f"got {t.arg_types[0]!r}" if args else
            f"kernel {kname!r}: {t.name} has no task index parameter",
            filename=t.source.filename, lineno=t.source.line_of(t.tree),
            construct="kernel entry", hint="Declare the task function as task(t, ...).")
    taken: set[str] = {"hpu_start", "hpu_stop", "hpu__err", "hpu__err_len"}
    index = _c_ident(args[0].arg, taken)
    decls, params, call = [], [], [index]
    for arg, ty in zip(args[1:], t.arg_types[1:]):
        cname = _c_ident(arg.arg, taken)
        if isinstance(ty, Array):
            if ty.space != "global":
                raise TranslationError(f"kernel {kname!r}: parameter {arg.arg} must be a global "
                                       "array", construct="kernel entry")
            length = _c_ident(f"{cname}_len", taken)
            elem = "uchar" if ty.elem == BOOL else ty.elem.c  # NumPy's bool: one byte, 0 or 1
            decls += [f"__global {elem} *{cname}", f"long {length}"]
            params += [KernelParam(arg.arg, "array", ty.dtype),
                       KernelParam(f"{arg.arg}_len", "length", np.dtype(np.int64), arg.arg)]
            call += [cname, length]
        elif ty == BOOL:
            decls.append(f"uchar {cname}")
            params.append(KernelParam(arg.arg, "scalar", np.dtype(np.uint8)))
            call.append(f"{cname} != 0")
        else:
            decls.append(f"{ty.c} {cname}")
            if ty == FLOAT64:
                prog.note_fp64(f"{os.path.basename(t.source.filename)}:"
                               f"{t.source.line_of(t.tree)}")
            params.append(KernelParam(arg.arg, "scalar", ty.dtype))
            call.append(cname)
    if prog.checked is not None:  # the error channel: 4 longs (code, site, value, extra)
        decls += ["__global long *hpu__err", "long hpu__err_len"]
        params += [KernelParam("hpu__err", "array", np.dtype(np.int64)),
                   KernelParam("hpu__err_len", "length", np.dtype(np.int64), "hpu__err")]
        call.append("hpu__err")
    decls += ["long hpu_start", "long hpu_stop"]
    params += [KernelParam("hpu_start", "start", np.dtype(np.int64)),
               KernelParam("hpu_stop", "stop", np.dtype(np.int64))]
    text = (f"/* Kernel {kname}: one work-item per task {args[0].arg} in [hpu_start, hpu_stop) "
            f"runs {t.name}. */\n"
            f"__kernel void {kname}({', '.join(decls)})\n{{\n"
            f"    long {index} = hpu_start + (long)get_global_id(0);\n"
            f"    if ({index} < hpu_stop) {{\n"
            f"        {prog.c_name_of(t)}({', '.join(call)});\n"
            f"    }}\n}}\n")
    return text, tuple(params)


_KERNEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def translate(entries, kernels: Mapping[str, str] | None = None,
              private_arrays: bool = False, checked=None,
              bounds: bool = False, unbound_checked: bool = False) -> TranslatedProgram:
    """Translate entry functions (and every helper they call) to one OpenCL C program.

    ``entries`` is a list of ``(function or FunctionSource, argument types)``;
    ``kernels`` maps kernel names to the Python name of an entry ``task(t, ...)``
    whose first parameter is the int64 task index; ``private_arrays`` allows
    ``x = np.empty(N, dtype)`` with a constant ``N`` (a private C array).
    Raises :class:`hpu.TranslationError` for anything outside the subset.
    ``unbound_checked``: the code came through hpu's frontend (:mod:`hpu._unbound` checks
    every read of a local Python may find unassigned), so a local assigned on some path
    only is not refused.

    ``checked`` (the error channel): a callable ``(typing, node) -> int | None``
    giving the site index of each ``//``, ``%``, ``int()``, ``round()``, float
    store into an int array (and, with ``bounds``, each ``a[i]``) to check, or
    None to leave it as it is; every function then takes a last parameter
    ``__global long *hpu_err`` and every kernel a last array ``hpu__err`` of 4
    longs, where the first failing check records (code, site, value, extra):
    codes 1 ``ZeroDivisionError``, 2 NaN -> int ``ValueError``, 3 inf or
    out-of-range float -> int ``OverflowError``, 4 ``IndexError`` (value: the
    index, extra: the length).
    """
    ctx = Context(private_arrays=private_arrays, unbound_checked=unbound_checked)
    typings: list[FunctionTyping] = []
    for entry in entries:
        try:
            fn, types = entry
        except (TypeError, ValueError):
            raise TranslationError(f"entry {entry!r}: expected (function, argument types)",
                                   construct="translate entries") from None
        typings.append(infer(ctx, fn, tuple(types)))

    prog = _Program(checked, bounds)
    seen: dict[int, FunctionTyping] = {}
    order: list[FunctionTyping] = []
    for t in typings:
        _collect(t, seen, order)
    # names first (stable: in emission order), then bodies
    for t in order:
        prog.c_name_of(t)
    emitters = [_FunctionEmitter(prog, t) for t in order]
    bodies = [e.emit() for e in emitters]

    functions = {}
    for t, e in zip(order, emitters):
        params = tuple((name, ctype.strip()) for ctype, name in e.param_decls)
        functions[(t.name, t.arg_types)] = FunctionInfo(
            t.name, t.arg_types, prog.c_name_of(t), params, t.return_type,
            t.source.filename, t.source.line_of(t.tree))

    kernel_texts, kernel_params = [], {}
    for kname, fname in (kernels or {}).items():
        if not _KERNEL_NAME.match(kname) or kname.startswith("hpu_"):
            raise TranslationError(f"kernel name {kname!r} is not a valid C identifier (or "
                                   "starts with hpu_)", construct="kernel name",
                                   hint="Use letters, digits and underscores.")
        matches = [t for t in typings if t.name == fname]
        if not matches:
            raise TranslationError(f"kernel {kname!r}: no entry function named {fname!r}; entries "
                                   f"are {sorted({t.name for t in typings})}",
                                   construct="kernel entry",
                                   hint="Add the task function to the entries.")
        text, params = _kernel(prog, kname, matches[0])
        kernel_texts.append(text)
        kernel_params[kname] = params

    names = ", ".join(dict.fromkeys(t.name for t in typings))
    header = [f"/* OpenCL C generated by hpu from {names}.",
              "   Python semantics (floor division, wrapping int64, NaN-aware min/max, ...) "
              "are kept",
              "   by the hpu_* helpers; see hpu/_opencl/_prelude.py. */",
              "#pragma OPENCL FP_CONTRACT OFF"]
    pieces = []
    helpers = prelude_source(sorted(prog.helpers))
    if helpers:
        pieces.append(helpers)
    for tt in prog.tuples:
        pieces.append(_tuple_decl(tt))
    pieces += bodies + kernel_texts
    if prog.fp64_at is not None:
        header.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable  "
                      f"/* float64 first used at {prog.fp64_at} */")
    source = "\n".join(header) + "\n\n" + "\n".join(pieces)
    return TranslatedProgram(source, functions, kernel_params, prog.fp64_at is not None,
                             prog.fp64_at)
