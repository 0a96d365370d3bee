"""Which OpenCL drivers the loader reads (hpu._opencl._device.vendors_folder): the
system's ICD files, plus a GPU vendor's driver that is installed but not registered (an
NVIDIA H200 container had /usr/lib/libnvidia-opencl.so.1 and only pocl.icd)."""
from __future__ import annotations

import os

import pytest

from hpu._opencl import _device


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A fake /etc/OpenCL/vendors with PoCL registered, fake library folders, and a private
    cache for the generated folder."""
    system = tmp_path / "vendors"
    system.mkdir()
    (system / "pocl.icd").write_text("libpocl.so.2\n")
    libs = tmp_path / "lib"
    libs.mkdir()
    monkeypatch.setattr(_device, "_SYSTEM_VENDORS", str(system))
    monkeypatch.setattr(_device, "VENDOR_LIBRARIES", (
        ("nvidia.icd", "libnvidia-opencl.so.1", (str(tmp_path / "nowhere"), str(libs))),
        ("amdocl64.icd", "libamdocl64.so", (str(libs),)),
    ))
    monkeypatch.setenv("HPU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_device, "ADDED_DRIVERS", [])     # not left for later tests
    return system, libs


def test_nothing_unregistered_keeps_the_system_folder(machine):
    system, _ = machine
    assert _device.vendors_folder() == str(system)


def test_an_installed_but_unregistered_driver_is_registered_privately(machine):
    system, libs = machine
    (libs / "libnvidia-opencl.so.1").write_bytes(b"")
    folder = _device.vendors_folder()
    assert folder != str(system) and oct(os.stat(folder).st_mode & 0o777) == "0o700"
    icds = {p: open(os.path.join(folder, p)).read() for p in os.listdir(folder)}
    assert icds == {"pocl.icd": "libpocl.so.2\n",                     # the system's, kept
                    "nvidia.icd": str(libs / "libnvidia-opencl.so.1") + "\n"}
    assert _device.vendors_folder() == folder                         # the same, again
    # registered in the system folder after all: back to it, nothing generated is read
    (system / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    assert _device.vendors_folder() == str(system)


def test_a_driver_gone_is_dropped_from_the_private_folder(machine):
    _, libs = machine
    (libs / "libnvidia-opencl.so.1").write_bytes(b"")
    (libs / "libamdocl64.so").write_bytes(b"")
    folder = _device.vendors_folder()
    assert sorted(os.listdir(folder)) == ["amdocl64.icd", "nvidia.icd", "pocl.icd"]
    (libs / "libamdocl64.so").unlink()
    assert sorted(os.listdir(_device.vendors_folder())) == ["nvidia.icd", "pocl.icd"]


def test_no_system_folder_and_no_driver_leaves_the_loader_alone(machine, monkeypatch, tmp_path):
    monkeypatch.setattr(_device, "_SYSTEM_VENDORS", str(tmp_path / "absent"))
    assert _device.vendors_folder() is None


def test_hpu_devices_says_which_drivers_hpu_registered(machine, monkeypatch, capsys):
    import types

    from hpu._commands import devices as cmd

    _, libs = machine
    (libs / "libnvidia-opencl.so.1").write_bytes(b"")
    _device.vendors_folder()
    monkeypatch.setattr(_device, "devices", lambda: [types.SimpleNamespace(
        default=True, usable=True, index="0:0", kind="GPU", name="G", platform="P",
        driver_version="1", compute_units=1, global_mem_bytes=1 << 30, fp64=True,
        unified_memory=False, max_sub_units=0, problem="")])
    assert cmd.main(types.SimpleNamespace(json=False)) == 0
    out = capsys.readouterr().out
    assert f"registered by hpu: {libs / 'libnvidia-opencl.so.1'}" in out
