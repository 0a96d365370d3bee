"""OpenCL C helper functions that give C operators Python's (Numba's) meaning.

Why: C and Python disagree exactly where programs are fragile.  C's ``/`` and
``%`` truncate where Python's ``//`` and ``%`` floor; signed overflow is
undefined in C (and in Numba, which marks int64 arithmetic "no signed wrap"),
so the helpers wrap it, deterministically; ``abs(long)`` is ``ulong`` in OpenCL; C's
``fmax`` ignores a NaN where Python's ``max`` keeps the first operand; integer
division by zero traps on some devices where Numba (``error_model="numpy"``)
returns 0.  Each helper here is a small C function that reproduces what
Numba's code generator does for one operation and one type, with a comment
naming the rule.  The translator calls :func:`prelude_source` with the names
it used; only those helpers (and their dependencies) are emitted, always in
the same order, so equal programs give byte-identical source.

Helper names are ``hpu_<op>_<type code>`` with the codes of
:mod:`hpu._opencl._scalars` (``l`` long, ``ul`` ulong, ``d`` double, ...).
"""
from __future__ import annotations

from hpu._opencl._scalars import SCALARS

__all__ = ["prelude_source", "helper_needs_fp64", "PreludeError"]


class PreludeError(KeyError):
    """An unknown helper name was requested (a translator bug)."""


_CTYPE = {s.code: s.c for s in SCALARS}

# name -> (C text, dependencies, needs fp64). Filled by _fixed() and _templated().
_FIXED: dict[str, tuple[str, tuple[str, ...], bool]] = {}


def _fixed(name: str, text: str, deps: tuple[str, ...] = (), fp64: bool = False) -> None:
    _FIXED[name] = (text.strip("\n") + "\n", deps, fp64)


# --- 64-bit signed arithmetic that wraps (C leaves overflow undefined) ---------------
_fixed("hpu_add_l", """
/* a + b on int64, wrapping on overflow (C leaves signed overflow undefined). */
long hpu_add_l(long a, long b)
{
    return as_long(as_ulong(a) + as_ulong(b));
}""")
_fixed("hpu_sub_l", """
/* a - b on int64, wrapping on overflow. */
long hpu_sub_l(long a, long b)
{
    return as_long(as_ulong(a) - as_ulong(b));
}""")
_fixed("hpu_mul_l", """
/* a * b on int64, wrapping on overflow. */
long hpu_mul_l(long a, long b)
{
    return as_long(as_ulong(a) * as_ulong(b));
}""")
_fixed("hpu_neg_l", """
/* -a on int64: -LONG_MIN is LONG_MIN, as in Numba. */
long hpu_neg_l(long a)
{
    return as_long(0UL - as_ulong(a));
}""")
_fixed("hpu_shl_l", """
/* a << n on int64: the count is taken modulo 64 (Numba on x86-64); bits shift out. */
long hpu_shl_l(long a, long n)
{
    return as_long(as_ulong(a) << (n & 63L));
}""")
_fixed("hpu_abs_l", """
/* abs(a) on int64 stays int64 (OpenCL's abs returns ulong); abs(LONG_MIN) is LONG_MIN. */
long hpu_abs_l(long a)
{
    return a < 0L ? hpu_neg_l(a) : a;
}""", ("hpu_neg_l",))

# --- len(str(x)) of an integer (hpu._guard.ndigits) ---------------------------------
_fixed("hpu_ndigits_l", """
/* len(str(x)) of an int64: its decimal digits, one more for a minus sign (C's division
   truncates, so LONG_MIN counts without being negated). */
long hpu_ndigits_l(long x)
{
    long n = x < 0L ? 2L : 1L;
    while (x >= 10L || x <= -10L) {
        x /= 10L;
        n++;
    }
    return n;
}""")
_fixed("hpu_ndigits_ul", """
/* len(str(x)) of a uint64: its decimal digits. */
long hpu_ndigits_ul(ulong x)
{
    long n = 1L;
    while (x >= 10UL) {
        x /= 10UL;
        n++;
    }
    return n;
}""")

# --- floor division and modulo -------------------------------------------------------
_fixed("hpu_floordiv_l", """
/* Python's a // b on int64 (floor), as Numba with error_model="numpy" computes it:
   a // 0 is 0 and LONG_MIN // -1 is 0. */
long hpu_floordiv_l(long a, long b)
{
    if (b == 0L || (a == LONG_MIN && b == -1L)) {
        return 0L;
    }
    long q = a / b;
    long r = a % b;
    if (r != 0L && (r ^ b) < 0L) {
        q -= 1L;
    }
    return q;
}""")
_fixed("hpu_mod_l", """
/* Python's a % b on int64 (the sign of b), as Numba with error_model="numpy":
   a % 0 is 0 and LONG_MIN % -1 is 0. */
long hpu_mod_l(long a, long b)
{
    if (b == 0L || (a == LONG_MIN && b == -1L)) {
        return 0L;
    }
    long r = a % b;
    if (r != 0L && (r ^ b) < 0L) {
        r += b;
    }
    return r;
}""")
_fixed("hpu_floordiv_ul", """
/* a // b on uint64; a // 0 is 0 (Numba, error_model="numpy"). */
ulong hpu_floordiv_ul(ulong a, ulong b)
{
    return b == 0UL ? 0UL : a / b;
}""")
_fixed("hpu_mod_ul", """
/* a % b on uint64; a % 0 is 0 (Numba, error_model="numpy"). */
ulong hpu_mod_ul(ulong a, ulong b)
{
    return b == 0UL ? 0UL : a % b;
}""")


def _float_divmod(code: str) -> None:
    t = _CTYPE[code]
    k = "f" if code == "f" else ""
    _fixed(f"hpu_floordiv_{code}", f"""
/* Python's x // y on {t}, step for step as CPython's float_divmod (and Numba):
   x // 0.0 is x / 0.0 (inf or nan) as with error_model="numpy". */
{t} hpu_floordiv_{code}({t} x, {t} y)
{{
    if (y == 0.0{k}) {{
        return x / y;
    }}
    {t} mod = fmod(x, y);
    {t} div = (x - mod) / y;
    if (mod != 0.0{k} && (y < 0.0{k}) != (mod < 0.0{k})) {{
        div -= 1.0{k};
    }}
    if (div < 0.0{k} || div > 0.0{k}) {{
        {t} floordiv = floor(div);
        if (div - floordiv > 0.5{k}) {{
            floordiv += 1.0{k};
        }}
        return floordiv;
    }}
    div = div * div;
    return div * x / y;
}}""", fp64=(code == "d"))
    _fixed(f"hpu_mod_{code}", f"""
/* Python's x % y on {t} (the sign of y), as CPython's float_divmod (and Numba):
   x % 0.0 is nan as with error_model="numpy". */
{t} hpu_mod_{code}({t} x, {t} y)
{{
    {t} mod = fmod(x, y);
    if (y == 0.0{k}) {{
        return mod;
    }}
    if (mod != 0.0{k}) {{
        if ((y < 0.0{k}) != (mod < 0.0{k})) {{
            mod += y;
        }}
        return mod;
    }}
    return (y < 0.0{k}) ? -0.0{k} : 0.0{k};
}}""", fp64=(code == "d"))


_float_divmod("d")
_float_divmod("f")

# --- powers ----------------------------------------------------------------------------
_fixed("hpu_pow_l", """
/* a ** b on int64 as Numba computes it: repeated squaring with wrapping products;
   for b < 0 the result is 0 unless a is 1 or -1, and 0 ** -n is LONG_MIN
   (error_model="numpy"); exponents above 65536 go through pow(). */
long hpu_pow_l(long a, long b)
{
    if (b < 0L) {
        if (b == LONG_MIN) {
            return (long)pow((double)a, (double)b);
        }
        if (a == 0L) {
            return LONG_MIN;
        }
        if (a != 1L && a != -1L) {
            return 0L;
        }
        return ((-b) & 1L) ? a : 1L;
    }
    if (b > 65536L) {
        return (long)pow((double)a, (double)b);
    }
    long r = 1L;
    while (b != 0L) {
        if (b & 1L) {
            r = hpu_mul_l(r, a);
        }
        b >>= 1;
        a = hpu_mul_l(a, a);
    }
    return r;
}""", ("hpu_mul_l",), fp64=True)
_fixed("hpu_pow_ul", """
/* a ** b on uint64 as Numba computes it (see hpu_pow_l); 0 ** -n is 2**63. */
ulong hpu_pow_ul(ulong a, long b)
{
    if (b < 0L) {
        if (b == LONG_MIN) {
            return (ulong)pow((double)a, (double)b);
        }
        if (a == 0UL) {
            return 0x8000000000000000UL;
        }
        return a == 1UL ? 1UL : 0UL;
    }
    if (b > 65536L) {
        return (ulong)pow((double)a, (double)b);
    }
    ulong r = 1UL;
    while (b != 0L) {
        if (b & 1L) {
            r *= a;
        }
        b >>= 1;
        a *= a;
    }
    return r;
}""", fp64=True)


def _powi(code: str) -> None:
    t = _CTYPE[code]
    k = "f" if code == "f" else ""
    _fixed(f"hpu_powi_{code}", f"""
/* x ** n for a {t} x and an integer n, as Numba computes it: repeated squaring
   in {t}, then 1.0 / r for n < 0 (not pow(), whose last bit can differ). */
{t} hpu_powi_{code}({t} x, long n)
{{
    if (n == LONG_MIN || n > 65536L || n < -65536L) {{
        return ({t})pow((double)x, (double)n);
    }}
    long e = n < 0L ? -n : n;
    {t} r = 1.0{k};
    while (e != 0L) {{
        if (e & 1L) {{
            r *= x;
        }}
        e >>= 1;
        x *= x;
    }}
    if (n < 0L) {{
        return ({t})(1.0 / (double)r);
    }}
    return r;
}}""", fp64=True)


_powi("d")
_powi("f")
_fixed("hpu_sq_d", """
/* x ** 2 for a double x, written as a literal square: x * x, as the CPU's modules (LLVM
   turns Numba's power into the product) and NumPy's square of an array give it. */
double hpu_sq_d(double x)
{
    return x * x;
}""", fp64=True)
_fixed("hpu_pown_d", """
/* x ** n for a double x and an integer n, as Python computes it: the C library's pow(),
   within 0.52 ulp of the exact power (glibc's), so most often its correctly rounded value.
   OpenCL's pow() may be a few ulp off (PoCL's differed from glibc's for 8 % of random
   x ** k), so the power is computed here by repeated squaring in double-double (Dekker's
   products, exact by fma), each part's exponent kept apart (a binary exponent beside a
   double-double in [1, 2)) so that no step leaves the range of doubles: relative error below
   2**-96, rounded once at the end, which gives the correctly rounded x ** n (glibc's in
   all but about 1 in 1400 random cases, where glibc's is the one off).  A result that is
   subnormal or past the doubles, x 0, inf or NaN, or |n| above 2**40 take pow(). */
double hpu_pown_d(double x, long n)
{
    if (n == 1L) {
        return x;
    }
    if (n == 0L) {
        return 1.0;
    }
    if (n == LONG_MIN || n > 0x10000000000L || n < -0x10000000000L || x == 0.0
            || isinf(x) || isnan(x)) {
        return pow(x, (double)n);
    }
    ulong e = (ulong)(n < 0L ? -n : n);
    int k = ilogb(x);
    double ah = ldexp(x, -k), al = 0.0;     /* x ** (2 ** j) = (ah + al) * 2 ** ea */
    long ea = (long)k;
    double rh = 1.0, rl = 0.0;              /* the product so far = (rh + rl) * 2 ** er */
    long er = 0L;
    for (;;) {
        if (e & 1UL) {
            double p = rh * ah;
            double q = fma(rh, ah, -p) + (rh * al + rl * ah);
            rh = p + q;
            rl = q - (rh - p);
            er += ea;
            k = ilogb(rh);
            rh = ldexp(rh, -k);
            rl = ldexp(rl, -k);
            er += (long)k;
        }
        e >>= 1;
        if (e == 0UL) {
            break;
        }
        double p = ah * ah;
        double q = fma(ah, ah, -p) + 2.0 * ah * al;
        ah = p + q;
        al = q - (ah - p);
        k = ilogb(ah);
        ah = ldexp(ah, -k);
        al = ldexp(al, -k);
        ea = 2L * ea + (long)k;
    }
    double v = rh + rl;
    if (n < 0L) {
        /* 1 / (rh + rl) = q0 * (1 + E + E**2 + ...), E = 1 - (rh + rl) * q0 the residual of
           a first quotient q0 (1 - rh * q0 exact by fma): v = q0 + q0 * E, rounded once;
           where that sum is a tie (v exactly half an ulp from q0 + q1), the sign of what it
           left out -- q0 * E's rounding, E's own, q0 * E**2 -- says which side the quotient
           lies on (1 / 0.49999999999999994 is 2.0000000000000004, not the tie's 2.0). */
        double q0 = 1.0 / rh;
        double e = fma(-rh, q0, 1.0);
        double rq = rl * q0;
        double e2 = e - rq;
        double bb = e2 - e;
        double d1 = (e - (e2 - bb)) + (-rq - bb);   /* e - rq - e2, exactly */
        double d2 = fma(rl, q0, -rq);                /* rl * q0 - rq, exactly */
        double q1 = e2 * q0;
        v = q0 + q1;
        double err = (q0 - v) + q1;                  /* q0 + q1 - v, exactly */
        if (err != 0.0) {
            double nb = nextafter(v, err > 0.0 ? (double)INFINITY : -(double)INFINITY);
            if (2.0 * err == nb - v) {
                double tail = fma(e2, q0, -q1) + q0 * (d1 - d2) + q0 * e2 * e2;
                if ((tail > 0.0) == (err > 0.0) && tail != 0.0) {
                    v = nb;
                }
            }
        }
        er = -er;
    }
    long top = er + (long)ilogb(v);
    if (top < -1022L || top > 1023L) {
        return pow(x, (double)n);           /* subnormal or past the doubles */
    }
    return ldexp(v, (int)er);
}""", fp64=True)

# --- indexing and loops ----------------------------------------------------------------
_fixed("hpu_index", """
/* Python's a[i] for a negative i: counts from the end (wraps once, like Numba). */
long hpu_index(long i, long n)
{
    return i < 0L ? i + n : i;
}""")
# --- the error channel (hpu/_opencl/_translate.py, checked mode) ----------------------------
# A kernel cannot raise: a failing check records (code, site, value, extra) in the program's
# hpu_err buffer -- the first error of the run wins (a 32-bit compare-and-swap on the code
# word) -- and the work-item goes on with a harmless value; the host reads the buffer once
# after the device's share and raises Python's exception (hpu/_opencl/_backend.py).
_fixed("hpu_raise", """
/* Record an error (code 1: // or % by zero, 2: NaN to int, 3: inf or out-of-range float
   to int, 4: index out of bounds, 5: a slice assignment's lengths, 6: an empty array's
   min/max, 7/8: two arrays' lengths in a reduction, 9: the user's raise statement at the
   site, 10: an integer result past int64); only the first of the run is kept. */
void hpu_raise(__global long *err, int code, long site, long value, long extra)
{
    if (atomic_cmpxchg((volatile __global int *)err, 0, code) == 0) {
        err[1] = site;
        err[2] = value;
        err[3] = extra;
    }
}""")
_fixed("hpu_mul_chk_l", """
/* a * b on int64, recording code 10 (the result leaves int64: Python's int would grow,
   so the call runs again as the plain function) where the product does not fit. */
long hpu_mul_chk_l(long a, long b, long site, __global long *err)
{
    long lo = hpu_mul_l(a, b);
    if (mul_hi(a, b) != (lo >> 63)) {
        hpu_raise(err, 10, site, 0L, 0L);
    }
    return lo;
}""", ("hpu_mul_l", "hpu_raise"))
_fixed("hpu_pow_chk_l", """
/* a ** b on int64, recording code 10 where Python's answer differs: b < 0 (a float in
   Python) or a product of the repeated squaring that leaves int64. */
long hpu_pow_chk_l(long a, long b, long site, __global long *err)
{
    if (b < 0L) {
        hpu_raise(err, 10, site, 0L, 0L);
        return 0L;
    }
    long r = 1L;
    while (b != 0L) {
        if (b & 1L) {
            if (mul_hi(r, a) != (hpu_mul_l(r, a) >> 63)) {
                hpu_raise(err, 10, site, 0L, 0L);
                return 0L;
            }
            r = hpu_mul_l(r, a);
        }
        b >>= 1;
        if (b != 0L) {
            if (mul_hi(a, a) != (hpu_mul_l(a, a) >> 63)) {
                hpu_raise(err, 10, site, 0L, 0L);
                return 0L;
            }
            a = hpu_mul_l(a, a);
        }
    }
    return r;
}""", ("hpu_mul_l", "hpu_raise"))
_fixed("hpu_shl_chk_l", """
/* a << n on int64, recording code 10 where Python's answer differs: n < 0 (ValueError),
   or bits (or the sign) shifted out. */
long hpu_shl_chk_l(long a, long n, long site, __global long *err)
{
    if (n < 0L || (a != 0L && (n >= 63L || (as_long(as_ulong(a) << n) >> n) != a))) {
        hpu_raise(err, 10, site, 0L, 0L);
        return 0L;
    }
    return as_long(as_ulong(a) << n);
}""", ("hpu_raise",))
_fixed("hpu_slice_copy_chk", """
/* dst[...] = src[...] (hpu/_views.py): the number of elements to copy, nd, when the
   lengths are equal or src has one element (NumPy broadcasts it); else records NumPy's
   ValueError (code 5) and gives 0: nothing is copied. */
long hpu_slice_copy_chk(long nd, long ns, long site, __global long *err)
{
    if (ns != nd && ns != 1L) {
        hpu_raise(err, 5, site, ns, nd);
        return 0L;
    }
    return nd;
}""", ("hpu_raise",))
_fixed("hpu_reduce_first_chk", """
/* min(a), np.max(a)... (hpu/_reductions.py): 0, the index of the first element; an empty
   array records Python's or NumPy's ValueError (code 6, the kind as the value). */
long hpu_reduce_first_chk(long n, long kind, long site, __global long *err)
{
    if (n == 0L)
        hpu_raise(err, 6, site, kind, 0L);
    return 0L;
}""", ("hpu_raise",))
_fixed("hpu_reduce_pair", """
/* np.dot(a, b), np.sum(a - b)... (hpu/_reductions.py): the elements two arrays of lengths
   n1, n2 give -- equal, or (kind 0, NumPy's broadcasting) one of them 1 -- else 0. */
long hpu_reduce_pair(long n1, long n2, long kind)
{
    if (n1 == n2)
        return n1;
    if (kind == 0L && n1 == 1L)
        return n2;
    if (kind == 0L && n2 == 1L)
        return n1;
    return 0L;
}""")
_fixed("hpu_reduce_pair_chk", """
/* The same, checked: a mismatch records NumPy's ValueError (code 7 + kind: 7 broadcasting,
   8 np.dot's alignment; the two lengths as value and extra) and gives 0. */
long hpu_reduce_pair_chk(long n1, long n2, long kind, long site, __global long *err)
{
    if (n1 != n2 && !(kind == 0L && (n1 == 1L || n2 == 1L)))
        hpu_raise(err, 7 + (int)kind, site, n1, n2);
    return hpu_reduce_pair(n1, n2, kind);
}""", ("hpu_raise", "hpu_reduce_pair"))
_fixed("hpu_index_chk", """
/* Checked a[i] (bounds-checked mode): i, or i + n for a negative i; out of range
   records IndexError and gives 0 (a read of element 0, never outside the buffer). */
long hpu_index_chk(long i, long n, long site, __global long *err)
{
    if (i < -n || i >= n) {
        hpu_raise(err, 4, site, i, n);
        return 0L;
    }
    return i < 0L ? i + n : i;
}""", ("hpu_raise",))
_fixed("hpu_index_chk_st", """
/* Checked a[i] = v: as hpu_index_chk, but -1 when out of range: the store is skipped. */
long hpu_index_chk_st(long i, long n, long site, __global long *err)
{
    if (i < -n || i >= n) {
        hpu_raise(err, 4, site, i, n);
        return -1L;
    }
    return i < 0L ? i + n : i;
}""", ("hpu_raise",))
_fixed("hpu_vindex_chk", """
/* Checked index of a view (bounds-checked mode): i against the view's length n, wrapped
   when negative; out of range it records IndexError and gives -2**62, which the base
   array's check around it finds out of range too (no access outside the buffer). */
long hpu_vindex_chk(long i, long n, long site, __global long *err)
{
    if (i < -n || i >= n) {
        hpu_raise(err, 4, site, i, n);
        return -(1L << 62);
    }
    return i < 0L ? i + n : i;
}""", ("hpu_raise",))
_fixed("hpu_uindex_chk", """
/* Checked a[i] for an unsigned i (0 when out of range, after recording it). */
long hpu_uindex_chk(ulong i, long n, long site, __global long *err)
{
    if (i >= (ulong)n) {
        hpu_raise(err, 4, site, (long)i, n);
        return 0L;
    }
    return (long)i;
}""", ("hpu_raise",))
_fixed("hpu_uindex_chk_st", """
/* Checked a[i] = v for an unsigned i (-1 when out of range: the store is skipped). */
long hpu_uindex_chk_st(ulong i, long n, long site, __global long *err)
{
    if (i >= (ulong)n) {
        hpu_raise(err, 4, site, (long)i, n);
        return -1L;
    }
    return (long)i;
}""", ("hpu_raise",))
_fixed("hpu_range_len_l", """
/* Number of iterations of range(start, stop, step), counted as Numba counts them:
   from stop - start in wrapping int64 (a range longer than 2**63 - 1 runs as in Numba,
   not as in Python); 0 for step 0 (Python and Numba raise ValueError). */
long hpu_range_len_l(long start, long stop, long step)
{
    long diff = as_long(as_ulong(stop) - as_ulong(start));
    if (step == 0L || (diff > 0L) != (step > 0L) || (diff == LONG_MIN && step == -1L)) {
        return 0L;
    }
    long rem = diff % step;
    if (diff <= 0L) {
        rem = -rem;
    }
    return diff / step + (rem > 0L ? 1L : 0L);
}""")
_fixed("hpu_range_len_i", """
/* Number of iterations of range(start, stop, step) over int32 values, counted in
   wrapping int32 as Numba counts them; 0 for step 0. */
long hpu_range_len_i(int start, int stop, int step)
{
    int diff = as_int(as_uint(stop) - as_uint(start));
    if (step == 0 || (diff > 0) != (step > 0) || (diff == INT_MIN && step == -1)) {
        return 0L;
    }
    int rem = diff % step;
    if (diff <= 0) {
        rem = -rem;
    }
    return (long)(diff / step + (rem > 0 ? 1 : 0));
}""")

# --- per-type helpers generated on demand ---------------------------------------------------


def _templated(name: str):
    """Text, deps and fp64 flag of a per-type helper such as ``hpu_max_d``."""
    base, _, code = name[len("hpu_"):].partition("_")
    if code not in _CTYPE:
        raise PreludeError(name)
    t = _CTYPE[code]
    if base == "max":
        return (f"/* Python's max(a, b): b if b > a else a (a NaN first stays, a NaN second is "
                f"skipped). */\n{t} {name}({t} a, {t} b)\n{{\n    return (b > a) ? b : a;\n}}\n",
                (), code == "d")
    if base == "min":
        return (f"/* Python's min(a, b): b if b < a else a. */\n{t} {name}({t} a, {t} b)\n{{\n"
                f"    return (b < a) ? b : a;\n}}\n", (), code == "d")
    if base in ("npmax", "npmin", "fmax", "fmin"):
        # NumPy's loops (numpy/_core/src/umath/loops*.src): maximum keeps a NaN, either
        # side's, and otherwise b unless a is larger (np.maximum(-0.0, 0.0) is 0.0); fmax
        # skips a NaN and otherwise keeps a unless b is larger (np.fmax(-0.0, 0.0) is -0.0)
        cmp = ">" if base in ("npmax", "fmax") else "<"
        floats = code in ("f", "d")
        if base.startswith("np"):
            test = f"(a {cmp} b{' || isnan(a)' if floats else ''})"
            what = f"np.{'maximum' if cmp == '>' else 'minimum'}(a, b): a NaN wins"
        else:
            test = f"(a {cmp}= b{' || isnan(b)' if floats else ''})"
            what = f"np.{base}(a, b): a NaN loses"
        return (f"/* {what}, as NumPy's loop. */\n{t} {name}({t} a, {t} b)\n{{\n"
                f"    return {test} ? a : b;\n}}\n", (), code == "d")
    if base == "abs" and code in ("c", "s", "i"):
        return (f"/* abs(a) on {t} stays {t}, as in Numba (abs of the minimum wraps). */\n"
                f"{t} {name}({t} a)\n{{\n    return ({t})(a < 0 ? -(long)a : (long)a);\n}}\n",
                (), False)
    # the divisor of: divisor an int `//` or `%`, tdivisor `/` ("division by zero"),
    # fdivisor a float `//`, mdivisor a float `%` (hpu._checked_ops._ZERO: Python's texts)
    if base in ("divisor", "tdivisor", "fdivisor", "mdivisor"):
        op, v = {"divisor": ("// or %", 0), "tdivisor": ("/", 1), "fdivisor": ("//", 2),
                 "mdivisor": ("%", 3)}[base]
        return (f"/* The divisor of a checked {op}: b, or 1 after recording ZeroDivisionError "
                f"for b == 0. */\n{t} {name}({t} b, long site, __global long *err)\n{{\n"
                f"    if (b == 0) {{\n        hpu_raise(err, 1, site, {v}L, 0L);\n"
                f"        return 1;\n    }}\n    return b;\n}}\n", ("hpu_raise",), code == "d")
    if base in ("toint", "tointg") and code in ("f", "d"):
        # toint: a store into an int array (NumPy: ValueError for NaN, OverflowError for
        # inf -- value 1 -- and past +-2**63 -- value 0); tointg: int(), round(),
        # math.floor/ceil/trunc, where a finite float past int64 is an int Python has:
        # code 10, the call runs again as the plain function (hpu._checked_ops)
        bound = "9.223372036854775808e18" + ("f" if code == "f" else "")
        past = "10, site, 0L" if base == "tointg" else "3, site, 0L"
        return (f"/* A float about to become an int64 ({'int(), round(), math.floor' if base == 'tointg' else 'a store into an int array'}): "
                f"x, or 0 after recording\n   ValueError (NaN) or OverflowError (inf, beyond "
                f"+-2**63). */\n{t} {name}({t} x, long site, __global long *err)\n{{\n"
                f"    if (!(x >= -{bound} && x < {bound})) {{\n"
                f"        if (x != x) hpu_raise(err, 2, site, 0L, 0L);\n"
                f"        else if (isinf(x)) hpu_raise(err, 3, site, 1L, 0L);\n"
                f"        else hpu_raise(err, {past}, 0L);\n        return 0;\n"
                f"    }}\n    return x;\n}}\n", ("hpu_raise",), code == "d")
    raise PreludeError(name)


def _lookup(name: str):
    if name in _FIXED:
        return _FIXED[name]
    return _templated(name)


def helper_needs_fp64(name: str) -> bool:
    """Whether the helper uses ``double`` (so the program needs ``cl_khr_fp64``)."""
    return _lookup(name)[2]


def _order_key(name: str):
    fixed = list(_FIXED)
    return (0, fixed.index(name), "") if name in _FIXED else (1, 0, name)


def prelude_source(names) -> str:
    """The C text of the named helpers and their dependencies, dependencies first,
    in a fixed order (so the same set always gives the same text)."""
    needed: set[str] = set()

    def visit(n: str) -> None:
        if n in needed:
            return
        needed.add(n)
        for d in _lookup(n)[1]:
            visit(d)

    for n in names:
        visit(n)
    # dependencies first: a helper's deps all come before it in _FIXED order by construction
    ordered = sorted(needed, key=_order_key)
    return "\n".join(_lookup(n)[0] for n in ordered)
