"""The merge that calibration times on both sides: one Python source, two targets.

004 §6.4 estimates γ from a one-thread merge run on the CPU and on the device,
and its footnote 6 notes that the application's own combine function serves
best.  hpu's device code is what its translator makes of Python, with Python's
semantics kept exactly (index wrap-around, 64-bit arithmetic); a hand-written
OpenCL merge would time code hpu never runs and overstate the device (on PoCL
by about 2x).  So this one function is compiled by Numba for the CPU side and
translated to OpenCL C for the device side, as every level kernel is.
"""
from __future__ import annotations

__all__ = ["merge_one", "merge_task"]


def merge_one(a, b, out, na, nb, p):
    """Merge the ``p``-th pair ``a[p*na:(p+1)*na]``, ``b[p*nb:(p+1)*nb]`` into ``out``."""
    i = p * na
    j = p * nb
    k = p * (na + nb)
    ie = i + na
    je = j + nb
    while i < ie and j < je:
        x = a[i]
        y = b[j]
        if y < x:
            out[k] = y
            j += 1
        else:
            out[k] = x
            i += 1
        k += 1
    while i < ie:
        out[k] = a[i]
        i += 1
        k += 1
    while j < je:
        out[k] = b[j]
        j += 1
        k += 1


def merge_task(t, a, b, out, na, nb, pair):
    """The device kernel's task: work-item ``t`` (only ``t == 0`` is launched) merges ``pair``."""
    merge_one(a, b, out, na, nb, pair + t)
