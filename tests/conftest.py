"""Shared test setup: a private code cache per test session.

Generated modules and Numba's machine code go to ``HPU_CACHE_DIR``; the tests
use a fresh temporary folder so that they never read code compiled by another
version of hpu and never fill the user's cache.  Set ``HPU_CACHE_DIR``
yourself to keep compiled code between sessions (faster reruns).
"""
from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

_made: list[str] = []

settings.register_profile(
    "hpu-compiles",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def pytest_configure(config):
    if not os.environ.get("HPU_CACHE_DIR"):
        path = tempfile.mkdtemp(prefix="hpu-test-cache-")
        os.environ["HPU_CACHE_DIR"] = path
        _made.append(path)


def pytest_unconfigure(config):
    for path in _made:
        os.environ.pop("HPU_CACHE_DIR", None)
        shutil.rmtree(path, ignore_errors=True)
