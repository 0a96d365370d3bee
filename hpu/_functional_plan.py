"""The plan of a functional function's run: where it runs, how it fans out, its peak memory.

Why its own plan
================

:class:`hpu.model.Plan` prices a breadth-first run: levels of tasks whose results are
scalars in level arrays, split between the CPU and a device.  A *functional* function
(:mod:`hpu._functional`: it allocates arrays or builds lists, and returns them) does not
run breadth-first: it is one call of the function compiled by Numba, or its top ``K``
levels as Python with the subtrees below compiled on every core
(:class:`hpu._functional.FanOut`).  Its plan says which, on which device and why, and what
memory the call will need -- issue 17's "memory bounded as the plan predicts".
``f.plan(x)`` returns it, and ``run.plan`` is the plan the run executed (the same ``K``).

How the peak is predicted
=========================

The bytes a functional function allocates are its own arithmetic on its data (a
quicksort's partitions depend on the keys, a merge's output on its inputs' lengths), so
the plan measures instead of reading the code: it runs the call's own shape (one compiled
call, or the fan-out with the same ``K``) on copies of the first ``n/16`` and ``n/4``
elements of every array and list argument (rounded up: an ``n`` just over a power of two
stays so), under :mod:`tracemalloc` -- what ``memory=True`` measures
(:func:`hpu._run.traced_peak`) -- and extends the straight line through the two peaks to
``n``.  A call on at most :data:`EXACT_BELOW` elements is measured whole, on a copy.  The
probes cost about a third of the call, so only ``f.plan(...)`` and ``run(...,
memory=True)`` make them; a run's ``plan`` otherwise leaves the peak unpredicted.

Measured here (``tests/test_functional_plan.py``, 2-core VM): one compiled call within
1-4 % (mergesort, inversion count, prefix sums, list mergesort); a list quicksort within
20 % (its partitions of the first ``n/16`` keys are not those of all ``n``: 48-57 bytes per
key between sizes); the fan-out within 15 % from 2·10**5 keys, its peak depending on which
subtrees finish first.  Each measurement starts with a ``gc.collect()``: the fan-out's
proxies form reference cycles, and a collection inside the window frees the last call's
arrays there, counting them against this one (fan-out predictions ranged 0.7-1.0 of the
peak without it).  Smaller probes (``n/256``, ``n/32``) were dominated by the
fan-out's own ~140 KB of Python objects and predicted half the peak.  A probe that raises
(a function told its arrays' length in a scalar) leaves the peak unpredicted, and
``memory_basis`` says why.  A peak that depends on the data's history is a defect of the
run, not noise to average: on a discrete GPU (NVIDIA H200) the device form's plan said 1.37x
the run's peak because one probe's download copied every changed element
(``arr[changed] = got[changed]``) and the other's buffer, reusing freed memory, had few
changes; the download now writes in place (``np.copyto(..., where=changed)``), and the
probes agree to 0.3 % on forced copies.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FunctionalPlan", "predict_peak", "EXACT_BELOW"]

#: a call on at most this many elements is measured whole (probes would be smaller than noise)
EXACT_BELOW = 1 << 16
#: the probes: the first n >> SHIFTS[i] elements
SHIFTS = (4, 2)


@dataclass(frozen=True)
class FunctionalPlan:
    """What a run of a functional function does (see the module docstring).

    ``device``: where it runs (``"cpu"``: the function compiled by Numba; ``"python"``:
    the plain function, where Numba cannot take the arguments or the code);
    ``requested``: the device the caller asked for, and ``device_reason`` why it is not
    used (None when it is).  ``n``: elements of the longest array or list argument;
    ``a``: recursive calls per call (None: a loop decides); ``K``: levels run as Python
    above the compiled subtrees (0: one compiled call); ``threads``: the pool's threads;
    ``reason``: why this ``K``.  ``peak_memory``: predicted bytes allocated at the peak
    (None: not predicted), ``memory_basis`` how, ``probes`` the ``(elements, bytes)``
    measured.
    """

    name: str
    device: str
    requested: str
    n: int
    a: int | None
    K: int
    threads: int
    reason: str
    device_reason: str | None = None
    peak_memory: int | None = None
    memory_basis: str = "not predicted (f.plan(...) and run(..., memory=True) predict it)"
    probes: tuple[tuple[int, int], ...] = ()

    @property
    def subtrees(self) -> int:
        """Compiled calls of a balanced tree: ``a**K`` (1 for one call)."""
        return 1 if self.K == 0 or not self.a else self.a ** self.K

    def describe(self) -> str:
        lines = [f"{self.name}: n = {self.n:,}; {self.reason}"]
        if self.device_reason:
            lines.append(f"device: {self.device} instead of {self.requested!r}: "
                         f"{self.device_reason}")
        if self.peak_memory is not None:
            lines.append(f"peak memory: {self.peak_memory / 2**20:,.1f} MiB predicted "
                         f"({self.memory_basis})")
        else:
            lines.append(f"peak memory: {self.memory_basis}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


def _prefix(v, k: int, n: int):
    """The first ``ceil(len(v) * k / n)`` elements of an array or list argument, copied;
    anything else unchanged."""
    if isinstance(v, np.ndarray) and v.ndim >= 1:
        return v[: -(-len(v) * k // n)].copy()
    if isinstance(v, list):
        return v[: -(-len(v) * k // n)]
    return v


def _traced(call, args, kwargs) -> int:
    import gc

    from hpu._run import traced_peak

    gc.collect()    # the last call's cycles (the fan-out's proxies), freed now, not inside
    with traced_peak() as peak:
        call(*args, **kwargs)
    return peak()


def predict_peak(call, args, kwargs, n: int, passthrough=(),
                 warm_each: bool = False) -> tuple[int | None, str, tuple]:
    """``(bytes, basis, probes)``: the peak ``call(*args, **kwargs)`` will allocate, from
    probes on prefixes of its array and list arguments (module docstring).  ``call`` runs
    the same shape as the run (compiled call or fan-out); it is warmed (compiled) first,
    at every probe's size with ``warm_each`` (a breadth-first run may compile other code
    at another size: the compiler's objects are not the run's).
    Exceptions of the types ``passthrough`` (the compiler's own) are raised, not recorded."""
    def on(k):
        return ([_prefix(v, k, n) for v in args], {key: _prefix(v, k, n) for key, v in kwargs.items()})

    ints = [v for v in (*args, *kwargs.values()) if isinstance(v, (int, np.integer))
            and not isinstance(v, (bool, np.bool_))]
    if ints and n > EXACT_BELOW:
        # an int beside the arrays may be an index into them (CLRS's merge_sort(A, p, r)):
        # on a prefix it would point past the copy, and the compiled code, unchecked, would
        # read and write beyond it (a probe of CLRS's sort killed the process)
        return None, ("not predicted: the function takes int arguments beside its arrays "
                      f"({', '.join(map(str, ints[:3]))}), which may index them, so it "
                      "cannot be probed on a prefix of them"), ()
    try:
        if n <= EXACT_BELOW:
            a, kw = on(n)
            call(*a, **kw)                       # compiles: the compiler's objects are not the call's
            peak = _traced(call, *on(n))
            return peak, f"measured on a copy of the whole input ({n:,} elements)", ((n, peak),)
        sizes = [-(-n >> s) for s in SHIFTS]      # ceil: n just over a power of two, too
        a, kw = on(sizes[0])
        call(*a, **kw)
        probes = []
        for k, m in enumerate(sizes):
            if warm_each and k:
                a, kw = on(m)
                call(*a, **kw)
            probes.append((m, _traced(call, *on(m))))
    except passthrough:
        raise
    except Exception as err:  # noqa: BLE001 - a probe is the user's code on other data
        return None, (f"not predicted: a probe on a prefix of the arguments raised "
                      f"{type(err).__name__}: {err}"), ()
    (m1, p1), (m2, p2) = probes
    slope = max(0.0, (p2 - p1) / (m2 - m1))
    peak = int(max(p1, p2, p2 + slope * (n - m2)))
    return peak, (f"probes on the first {m1:,} and {m2:,} of {n:,} elements, extended "
                  "linearly"), tuple(probes)
