"""Shared test setup: private caches and profiles per test session.

Generated modules and Numba's machine code go to ``HPU_CACHE_DIR``; the tests
use a fresh temporary folder so that they never read code compiled by another
version of hpu and never fill the user's cache.  Set ``HPU_CACHE_DIR``
yourself to keep compiled code between sessions (faster reruns).

Calibration profiles: the tests never read or write the user's own.  The
config folder is a temporary one and ``HPU_NO_AUTOCALIBRATE=1`` makes a run
without a profile use hpu's built-in values; the tests of calibration set
their own environment.

``HPU_REQUIRE_OPENCL=1`` (CI sets it) turns "no usable OpenCL device" into a
failed session instead of skipped OpenCL tests.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, Phase, settings

_made: list[str] = []

# Hypothesis's "explain" phase traces every line run while it re-runs a failing example:
# through Numba's compiler that turns a failure found in seconds into tens of minutes.
# Without it a failure is still found, shrunk and reported, only not annotated.
settings.register_profile(
    "hpu-default", phases=[p for p in Phase if p is not Phase.explain])
settings.load_profile("hpu-default")

settings.register_profile(
    "hpu-compiles",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def pytest_configure(config):
    # pytest-xdist's workers inherit the environment the controller set here: each makes a
    # cache of its own (tests count their own compilations), unless the user chose one
    if not os.environ.get("HPU_CACHE_DIR") or os.environ.get("HPU_TEST_CACHE_MADE"):
        path = tempfile.mkdtemp(prefix="hpu-test-cache-")
        os.environ["HPU_CACHE_DIR"] = path
        os.environ["HPU_TEST_CACHE_MADE"] = "1"
        _made.append(path)
    config_home = tempfile.mkdtemp(prefix="hpu-test-config-")
    _made.append(config_home)
    os.environ["XDG_CONFIG_HOME"] = config_home
    history = tempfile.mkdtemp(prefix="hpu-test-history-")  # strategy="adaptive"'s rates
    _made.append(history)
    os.environ["HPU_HISTORY_DIR"] = history
    os.environ.pop("HPU_PROFILE", None)
    os.environ.setdefault("HPU_NO_AUTOCALIBRATE", "1")
    # plans must not depend on what earlier tests ran (hpu._overheads.observe); the tests of
    # the observation turn it on
    os.environ["HPU_OBSERVE_OVERHEADS"] = "0"
    # `hpu run` compiles in a child process first (hpu._commands.run._compile_in_child): a
    # second process per CLI test; tests/test_cli_run.py turns it on where it is the subject
    os.environ["HPU_RUN_COMPILE_IN_CHILD"] = "0"
    if os.environ.get("HPU_REQUIRE_OPENCL", "") not in ("", "0"):
        from hpu._opencl._device import devices

        usable = [d for d in devices() if d.usable]
        if not usable:
            import pytest

            found = "; ".join(f"{d.name}: {d.problem}" for d in devices()) or "none found"
            pytest.exit(f"HPU_REQUIRE_OPENCL is set but no OpenCL device is usable ({found})",
                        returncode=3)


def pytest_unconfigure(config):
    for path in _made:
        os.environ.pop("HPU_CACHE_DIR", None)
        os.environ.pop("HPU_TEST_CACHE_MADE", None)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def discrete(monkeypatch):
    """The OpenCL backend as on a discrete GPU: its own buffers, explicit copies (PoCL shares
    the host's memory, so the copy path is tested by turning ``unified`` off), and a GPU's
    launches (work-groups of several tasks, the global size padded past the last task:
    :func:`hpu._opencl._backend.launch_shape`).  Returns the backends built while the
    fixture is active."""
    from hpu._opencl._backend import OpenCLBackend

    built = []
    original = OpenCLBackend.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.unified = False
        self._cpu_device = False
        built.append(self)

    monkeypatch.setattr(OpenCLBackend, "__init__", init)
    # the planner asks the same question (hpu._plan.copy_chunks): plan and run agree
    monkeypatch.setattr(OpenCLBackend, "unified_memory", classmethod(lambda cls, device: False))
    return built


@pytest.fixture(autouse=True)
def _outside_load_unknown(request, monkeypatch):
    """Other processes' load (:mod:`hpu._load`) reads as unknown in tests: a calibration
    under test neither warns, nor drops rounds, nor rescales its times because the machine
    running the tests is busy.  ``tests/test_load.py`` reads the real ``/proc/stat``; tests that want a load
    patch ``hpu._load.outside_share`` themselves."""
    module = getattr(request, "module", None)
    if module is not None and module.__name__.rpartition(".")[2] == "test_load":
        return
    import math

    from hpu import _load

    monkeypatch.setattr(_load, "_machine_busy", lambda path=None: math.nan)
    monkeypatch.setattr(_load, "thread_times", lambda task_dir=None: {})


# ---- the default run's share of the largest cross-products
#
# Each case of these tests compiles a function of its own (a CPU module, a device program, the
# hybrid's parallel drivers: seconds each on two cores), and the full products took most of the
# suite's time.  The default run keeps a case when it brings a value not kept yet (every value
# of every parameter at least once) or, for the parameters named, a pair of values not kept
# yet (every algorithm on every device path); the others are marked slow (`pytest -m slow`
# runs them).  Decided from the
# collection order alone, so every pytest-xdist worker decides the same.
CROSS_PRODUCTS = {
    "tests/test_contract.py::test_every_device_path_gives_the_reference_result": ("case", "config"),
    "tests/test_backend_contract.py::"
    "test_every_backend_gives_the_reference_result_and_an_honest_report":
        ("case", "config", "backend"),
    "tests/test_raises.py::test_a_call_python_skips_raises_nothing": ("name", "config"),
    "tests/test_forms.py::test_each_form_matches_plain_python_on_every_device": "each",
    "tests/test_reductions.py::test_other_dtypes": "each",
    "tests/test_normalise.py::test_the_normalised_function_computes_what_python_computes": "each",
    "tests/test_reductions.py::test_an_empty_arrays_min_or_max_raises_valueerror_at_its_line":
        "each",
    "tests/test_reductions.py::test_two_arrays_of_lengths_numpy_refuses_raise_its_valueerror":
        "each",
    "tests/test_scratch_form.py::test_lists_of_zeros_are_buffers_of_the_arrays_dtype": "each",
    "tests/test_functional.py::"
    "test_pieces_of_a_list_joined_by_plus_are_concatenated_as_python_does": "each",
    "tests/test_safety_arith.py::test_nan_and_out_of_range_floats_to_int_raise": "each",
    "tests/test_safety_arith.py::test_a_bad_float_stored_into_an_int_array_raises": "each",
    "tests/test_safety_arith.py::test_math_floor_of_a_float_without_an_int64_is_python_s": "each",
    "tests/test_safety_arith.py::test_the_error_raised_is_the_one_python_meets_first": "each",
    "tests/test_safety_restore.py::test_a_zero_division_leaves_the_arrays_as_they_were": "each",
    "tests/test_slices.py::test_an_augmented_assignment_to_a_slice_updates_each_element": "each",
}


def _value_key(v) -> str:
    """A parameter's value as the same text in every process (no addresses)."""
    name = getattr(v, "__qualname__", None) or getattr(v, "name", None)
    return name if isinstance(name, str) else repr(v)


def _brings(keys: list, seen: set, mode) -> set:
    """The values (and, of the parameters ``mode`` names, the pairs) ``keys`` brings."""
    paired = [k for k in keys if k[0] in mode] if mode != "each" else []
    return ({*keys, *((a, b) for i, a in enumerate(paired) for b in paired[i + 1:])}
            - seen)


@pytest.hookimpl(tryfirst=True)     # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    seen: dict[str, set] = {}
    for item in items:
        base = item.nodeid.split("[", 1)[0]
        mode = CROSS_PRODUCTS.get(base)
        if mode is None or item.get_closest_marker("slow") or not hasattr(item, "callspec"):
            continue
        keys = sorted((k, _value_key(v)) for k, v in item.callspec.params.items())
        new = _brings(keys, seen.setdefault(base, set()), mode)
        if new:
            seen[base] |= new
        else:
            item.add_marker(pytest.mark.slow)
