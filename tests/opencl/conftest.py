"""Tests of the Python-to-OpenCL translator (hpu._opencl).

The header of a test run says which back ends execute the generated code here:
PoCL (the real OpenCL device) and/or the C emulation with UndefinedBehaviorSanitizer
(see ocl_support.py).  Tests that run code skip only if neither is available.
"""
from __future__ import annotations

from ocl_support import backends, pocl_status


def pytest_report_header(config):
    names = ", ".join(b.name for b in backends()) or "none (execution tests skip)"
    return [f"hpu OpenCL translator back ends: {names}; {pocl_status()}"]
