"""``hpu calibrate``, ``hpu info`` and ``hpu devices`` as a user runs them.

The commands run in-process through :func:`hpu.cli.main` with the OpenCL side
of calibration replaced by a synthetic bench with known answers (the CPU merge
stays real); one real ``hpu calibrate --quick --json`` runs as a subprocess
where the OpenCL device can compile kernels.  Every profile goes to tmp_path.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hpu
import hpu.calibrate as cal
from hpu import _profile
from hpu._errors import DeviceUnavailableError, KernelBuildError
from hpu.cli import main

REQUIRED = {"p", "g", "gamma", "latency_s", "seconds_per_byte", "device", "profile_path"}


@pytest.fixture(autouse=True)
def isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(_profile, "profiles_dir", lambda: tmp_path / "config" / "profiles")
    monkeypatch.delenv("HPU_PROFILE", raising=False)
    monkeypatch.delenv("HPU_NO_AUTOCALIBRATE", raising=False)
    monkeypatch.delenv("HPU_DEVICE", raising=False)


class Bench:
    """Synthetic OpenCL side: knee at 16 work-items, copies 1e-5 s + 2e-10 s/byte."""

    def __init__(self, device=None):
        self.name, self.platform, self.driver_version = "Synthetic Device", "Synthetic Platform", "2.0"
        self.kind, self.compute_units, self.simd_width, self.max_alloc = "CPU", 2, 4, 1 << 30

    def sum_setup(self, n): pass
    def sum_run(self, k): return 1e-3 / min(k, 16)
    def sum_check(self): pass
    def merge_setup(self, pool):
        self.pool = pool
        self.out = np.concatenate([pool.expected(k) for k in range(pool.pairs)])

    def merge_run(self, pair): return 5e-9 * (self.pool.na + self.pool.nb)
    def merge_result(self): return self.out
    def transfer_setup(self, n): pass
    def h2d_run(self, n): return 1e-5 + 2e-10 * n
    def d2h_run(self, n): return 1e-5 + 2e-10 * n
    def close(self): pass


@pytest.fixture
def synthetic(monkeypatch):
    monkeypatch.setattr(cal, "_OpenCLBench", Bench)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------- hpu calibrate

def test_calibrate_json_contract(synthetic, capsys):
    import numba

    code, out, err = run_cli(capsys, "calibrate", "--quick", "--json")
    assert code == 0, err
    data = json.loads(out)                       # exactly one JSON object on stdout
    assert isinstance(data, dict) and REQUIRED <= set(data)
    assert data["p"] == numba.get_num_threads()
    assert data["g"] == 2  # the sweep's knee is 16, but a CPU device has only 2 cores
    assert data["latency_s"] == pytest.approx(1e-5, rel=1e-6)
    assert data["seconds_per_byte"] == pytest.approx(2e-10, rel=1e-6)
    assert data["device"] == "Synthetic Device" and data["device_shares_cpu"] is True
    assert data["quick"] is True and data["inv_gamma"] == pytest.approx(1 / data["gamma"])
    path = Path(data["profile_path"])
    assert path.parent == _profile.profiles_dir() and path.exists()
    stored = _profile.read_profile(path)
    for k in ("p", "g", "gamma", "latency_s", "seconds_per_byte", "cpu_seconds_per_element", "device"):
        assert getattr(stored, k) == data[k]
    assert len(stored.sweeps.g) == len({x for x, _ in stored.sweeps.g}) * cal.CalibrationSettings.quick().repeats


def test_calibrate_honours_hpu_profile(synthetic, capsys, tmp_path, monkeypatch):
    target = tmp_path / "here.json"
    monkeypatch.setenv("HPU_PROFILE", str(target))
    code, out, _ = run_cli(capsys, "calibrate", "--quick", "--json")
    assert code == 0 and json.loads(out)["profile_path"] == str(target) and target.exists()


def test_calibrate_summary_for_people(synthetic, capsys):
    code, out, _ = run_cli(capsys, "calibrate", "--quick")
    assert code == 0
    prof = next(iter(_profile.profiles_dir().glob("*.json")))
    stored = _profile.read_profile(prof)
    assert "device      Synthetic Device (Synthetic Platform, driver 2.0, 2 compute units)" in out
    assert "shares CPU  yes" in out and "same cores" in out
    assert f"p           {stored.p}" in out and "g           2" in out
    assert f"1/gamma = {stored.inv_gamma:.4g}" in out
    assert "lambda      10 µs" in out and "delta       2e-10 s/byte  (5 GB/s)" in out
    assert f"profile     {prof}" in out and "took" in out


def test_calibrate_plot_writes_the_figures(synthetic, capsys, tmp_path):
    code, out, _ = run_cli(capsys, "calibrate", "--quick", "--json", "--plot", str(tmp_path / "figs"))
    assert code == 0
    plots = json.loads(out)["plots"]
    assert [Path(p).name for p in plots] == ["g_sweep.png", "gamma.png", "transfers.png"]
    for p in plots:
        assert Path(p).read_bytes()[:4] == b"\x89PNG"


def test_calibrate_failure_is_one_line_and_exit_3(monkeypatch, capsys):
    def broken(device=None):
        raise KernelBuildError("the OpenCL device 'X' could not compile hpu's calibration kernels: boom")

    monkeypatch.setattr(cal, "_OpenCLBench", broken)
    code, out, err = run_cli(capsys, "calibrate", "--quick", "--json")
    assert code == 3 and out == ""
    assert err.startswith("hpu calibrate: error: the OpenCL device 'X' could not compile")
    assert len(err.strip().splitlines()) == 1
    assert not _profile.profiles_dir().exists()                 # nothing saved


def _can_compile() -> str | None:
    try:
        import pyopencl as cl

        from hpu._opencl._device import context_and_queue, devices
        if not devices():
            return "no OpenCL device"
        ctx, _ = context_and_queue()
        cl.Program(ctx, "__kernel void probe(__global int *a) { a[0] = 1; }").build()
    except Exception as err:
        lines = str(err).strip().splitlines()
        return "the OpenCL device cannot compile kernels here: " + next(
            (ln for ln in lines if "error" in ln.lower()), lines[0] if lines else repr(err))
    return None


@pytest.mark.opencl
def test_real_quick_calibration_json(tmp_path):
    reason = _can_compile()
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, HPU_PROFILE=str(tmp_path / "real.json"))
    proc = subprocess.run([sys.executable, "-m", "hpu", "calibrate", "--quick", "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert REQUIRED <= set(data) and data["profile_path"] == str(tmp_path / "real.json")
    assert data["p"] >= 1 and data["g"] >= 1 and data["gamma"] > 0
    assert data["latency_s"] >= 0 and data["seconds_per_byte"] >= 0
    stored = _profile.read_profile(tmp_path / "real.json")
    assert stored.g == data["g"] and stored.quick


# ---------------------------------------------------------------------- hpu info

def _current_key():
    from hpu._opencl._device import devices
    if not devices():
        pytest.skip("no OpenCL device")
    return _profile.current_key(None)


def _stored(key, **changes):
    prof = _profile.Profile(
        p=2, g=64, gamma=0.8, latency_s=3e-6, seconds_per_byte=1e-10, cpu_seconds_per_element=2.5e-9,
        device=key.device, platform="Plat", driver_version=key.driver_version, device_kind="CPU", compute_units=2,
        device_shares_cpu=True, host=key.host, hpu_version=key.hpu_version, created="2026-03-04T05:06:07+00:00",
        quick=False)
    return dataclasses.replace(prof, **changes)


def test_info_shows_versions_and_a_missing_profile(capsys):
    import numba
    import pyopencl

    key = _current_key()
    code, out, _ = run_cli(capsys, "info")
    assert code == 0
    assert f"hpu         {hpu.__version__}" in out
    assert f"numba {numba.__version__}" in out and f"pyopencl {pyopencl.VERSION_TEXT}" in out
    assert f"threads     {numba.get_num_threads()} (Numba)" in out
    assert key.device in out
    path = _profile.profiles_dir() / key.filename
    assert "profile     missing" in out and f"no profile at {path}" in out
    assert "calibrates quickly once" in out and "`hpu calibrate`" in out


def test_info_shows_the_active_profile(capsys):
    key = _current_key()
    path = _profile.save_profile(_stored(key))
    code, out, _ = run_cli(capsys, "info")
    assert code == 0 and "profile     ok" in out
    assert f"profile     {path}" in out
    assert "g           64" in out and "1/gamma = 1.25" in out and "lambda      3 µs" in out
    assert "2026-03-04T05:06:07+00:00" in out
    data = json.loads(run_cli(capsys, "info", "--json")[1])
    assert data["profile"]["status"] == "ok" and data["profile"]["g"] == 64
    assert data["profile"]["path"] == str(path)
    assert data["profile"]["key"] == dataclasses.asdict(key)


@pytest.mark.parametrize("kind", ["corrupt", "stale"])
def test_info_explains_an_unusable_profile(capsys, kind):
    key = _current_key()
    path = _profile.profiles_dir() / key.filename
    if kind == "corrupt":
        path.parent.mkdir(parents=True)
        path.write_text('{"g": -1}')
    else:
        _profile.save_profile(_stored(dataclasses.replace(key, driver_version="0.0-old")), path)
    code, out, _ = run_cli(capsys, "info")
    assert code == 0
    assert "profile     unusable" in out
    assert f"profile {path} is {kind}" in out and "hpu calibrate" in out


def test_info_without_a_device(monkeypatch, capsys):
    from hpu._opencl import _device

    def none(spec=None):
        raise DeviceUnavailableError("no OpenCL device found. Install PoCL")

    monkeypatch.setattr(_device, "select_device", none)
    code, out, _ = run_cli(capsys, "info")
    assert code == 0 and "device      none: no OpenCL device found" in out


# ------------------------------------------------------------------- hpu devices

def test_devices_table_lists_every_device(capsys):
    from hpu._opencl._device import devices

    devs = devices()
    if not devs:
        pytest.skip("no OpenCL device")
    code, out, _ = run_cli(capsys, "devices")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["index", "kind", "name", "platform", "driver", "CUs", "memory", "fp64", "unified",
                                "partitions"]
    for d in devs:
        row = next(ln for ln in lines[1:] if f" {d.index} " in f" {ln} ")
        assert d.name in row and d.platform in row and d.driver_version in row and d.kind in row
        assert row.startswith("*") == d.default
    assert sum(ln.startswith("*  ") for ln in lines) == 1


def test_devices_json_matches_the_library(capsys):
    from hpu._opencl._device import devices

    code, out, _ = run_cli(capsys, "devices", "--json")
    assert code == 0
    assert json.loads(out) == [dataclasses.asdict(d) for d in devices()]


def test_no_device_is_a_clear_message_and_exit_3(monkeypatch, capsys):
    from hpu._opencl import _device

    monkeypatch.setattr(_device, "devices", lambda: [])
    code, out, err = run_cli(capsys, "devices")
    assert code == 3 and out == ""
    assert "no OpenCL device found" in err and "pip install pocl-binary-distribution" in err


def test_format_table_with_fake_devices():
    from hpu._commands.devices import format_table
    from hpu._opencl._device import DeviceInfo

    devs = [DeviceInfo("0:0", "Big GPU", "Vendor", "GPU", "550.1", 80, 24 << 30, True, False, True),
            DeviceInfo("1:0", "pthread-cpu", "PoCL", "CPU", "3.0", 2, 3 << 30, True, True, False)]
    lines = format_table(devs).splitlines()
    assert lines[1].split() == ["*", "0:0", "GPU", "Big", "GPU", "Vendor", "550.1", "80", "24.0", "GiB", "yes", "no",
                                "-"]
    assert lines[2].split() == ["1:0", "CPU", "pthread-cpu", "PoCL", "3.0", "2", "3.0", "GiB", "yes", "yes", "-"]


def test_summary_shows_each_numbers_error_and_the_confidence(tmp_path):
    from dataclasses import replace

    from hpu._commands.calibrate import format_summary
    from hpu.calibrate import Profile

    base = Profile(p=1, g=1, gamma=0.8, latency_s=1e-5, seconds_per_byte=1e-10,
                   cpu_seconds_per_element=5e-9, device="D @1", platform="P", driver_version="1",
                   device_kind="CPU", compute_units=1, device_shares_cpu=True, host="h",
                   hpu_version="0", created="2026-01-01T00:00:00+00:00", quick=True,
                   measured_contention=1.1)
    plain = format_summary(base, tmp_path / "p.json")
    assert "±" not in plain and "confidence" not in plain and "contention  1.1" in plain
    sure = replace(base, uncertainty=(("contention", 0.04), ("cpu_seconds_per_element", 0.03),
                                      ("gamma", 0.012)))
    out = format_summary(sure, tmp_path / "p.json")
    assert "gamma       0.8  ± 1.2 %" in out and "± 3 %" in out and "± 4 %" in out
    assert "confidence  predicted times ± 5.1 %" in out and "a tie" in out


def test_summary_says_where_a_gpus_g_comes_from(tmp_path):
    from dataclasses import replace

    from hpu._commands.calibrate import format_summary
    from hpu.calibrate import Profile

    base = Profile(p=16, g=3700, gamma=0.08, latency_s=2e-5, seconds_per_byte=8e-11,
                   cpu_seconds_per_element=6e-9, device="G", platform="P", driver_version="1",
                   device_kind="GPU", compute_units=132, device_shares_cpu=False, host="h",
                   hpu_version="0", created="2026-01-01T00:00:00+00:00", quick=True)
    assert "g           3700  work-items that saturate the device" in \
        format_summary(base, tmp_path / "p.json")
    occ = replace(base, device_occupancy=((1, 1.0), (256, 1.03), (16384, 4.43)))
    out = format_summary(occ, tmp_path / "p.json")
    assert ("g           3700  tasks at the speed of one alone, at best (hpu's solver, "
            "1..16384 tasks at once: 256: 1.03x, 16384: 4.43x one task's time)") in out


@pytest.mark.parametrize("units,p,cores,disjoint", [(1, 1, 2, True), (1, 2, 2, False),
                                                    (2, 2, 4, True), (None, 1, 2, False)])
def test_summary_says_whether_a_sub_device_has_cores_of_its_own(monkeypatch, units, p, cores,
                                                                disjoint):
    from hpu._commands import calibrate as cmd
    from hpu._opencl import _device

    monkeypatch.setattr(_device, "host_cores", lambda: cores)
    name = "cpu-x86-64" + ("" if units is None else f" @{units}")
    key = _profile.ProfileKey(host="h", device=name, driver_version="1", hpu_version="0")
    prof = dataclasses.replace(_stored(key), device=name, p=p, device_kind="CPU",
                               device_shares_cpu=True)
    line = next(l for l in cmd.format_summary(prof, "here.json").splitlines()
                if l.startswith("shares CPU"))
    assert line.startswith("shares CPU  yes")
    assert ("cores of its own" in line) is disjoint
    assert ("same cores as Numba's" in line) is (not disjoint)


@pytest.mark.parametrize("label,units", [("cpu-x86-64 @1", 1), ("a @b @12", 12),
                                         ("cpu-x86-64", None), ("@3", None), ("x @", None),
                                         ("", None)])
def test_a_sub_devices_label_gives_back_its_units(label, units):
    from hpu._opencl._device import label_sub_units

    assert label_sub_units(label) == units
