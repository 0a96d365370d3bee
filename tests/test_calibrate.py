"""hpu.calibrate: the measuring loop, the estimates, the figures, and a real run.

The measuring loop is tested against ``SyntheticBench``, a stand-in for the
OpenCL side whose timings follow known curves (a knee at G work-items, a
line λ + δ·bytes) and whose first run of every shape is slow, as a compiling
run is: the profile must recover G, λ and δ and contain none of the slow
runs.  The CPU side (a Numba merge) is always real.  A real device run with
tiny sizes checks the OpenCL kernels; it is skipped, with the reason, where
the OpenCL device cannot compile kernels.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpu
import hpu.calibrate as cal
from hpu import _affinity, _profile
from hpu._errors import DeviceUnavailableError, HpuError, KernelBuildError
from hpu.calibrate import CalibrationSettings, Profile, Sweeps

TINY = CalibrationSettings(sum_elements=1 << 12, merge_sizes=(256, 1024), transfer_bytes=(1024, 4096, 16384),
                           repeats=3, max_work_items=256, min_cpu_sample_s=1e-4)


@pytest.fixture(autouse=True)
def isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(_profile, "profiles_dir", lambda: tmp_path / "config" / "profiles")
    monkeypatch.delenv("HPU_PROFILE", raising=False)
    monkeypatch.delenv("HPU_NO_AUTOCALIBRATE", raising=False)


class SyntheticBench:
    """The OpenCL side with known answers: knee at G, γ_dev seconds/element, copies λ + δ·bytes.

    Every first run of a shape takes 50x longer (compilation); a correct
    measuring loop throws those runs away.
    """

    G = 32
    LAM = 2e-5
    DELTA = 1e-10
    DEV_S_PER_EL = 4e-8

    def __init__(self, device=None, *, wrong_sum=False, wrong_merge=False):
        self.name, self.platform, self.driver_version = "Synthetic Device", "Synthetic Platform", "1.0"
        self.kind, self.compute_units, self.simd_width = "GPU", 4, 8
        self.max_alloc = 1 << 30
        self.wrong_sum, self.wrong_merge = wrong_sum, wrong_merge
        self.seen: set = set()
        self.runs: list = []
        self.closed = False

    def _t(self, shape, seconds):
        slow = shape not in self.seen
        self.seen.add(shape)
        self.runs.append((shape, slow))
        return seconds * (50 if slow else 1)

    def sum_setup(self, n):
        self.n = n

    def sum_run(self, work_items):
        return self._t(("sum", work_items), 1e-3 * self.n / min(work_items, self.G) / self.n + 1e-6)

    def sum_check(self):
        if self.wrong_sum:
            raise DeviceUnavailableError("wrong sum")

    def merge_setup(self, pool):
        self.pool = pool
        self.out = np.zeros_like(pool.out)

    def merge_run(self, pair):
        p = self.pool
        n = p.na + p.nb
        self.out[pair * n:(pair + 1) * n] = np.sort(np.concatenate(
            [p.a[pair * p.na:(pair + 1) * p.na], p.b[pair * p.nb:(pair + 1) * p.nb]]))
        if self.wrong_merge:
            self.out[pair * n] += 1
        return self._t(("merge", n), self.DEV_S_PER_EL * n)

    def merge_result(self):
        return self.out.copy()

    def transfer_setup(self, max_bytes):
        self.max_bytes = max_bytes

    def h2d_run(self, nbytes):
        return self._t(("h2d", nbytes), self.LAM + self.DELTA * nbytes)

    def d2h_run(self, nbytes):
        return self._t(("d2h", nbytes), self.LAM + self.DELTA * nbytes)

    def close(self):
        self.closed = True


@pytest.fixture
def synthetic(monkeypatch):
    made = []

    def factory(device=None):
        bench = SyntheticBench(device)
        made.append(bench)
        return bench

    monkeypatch.setattr(cal, "_OpenCLBench", factory)
    return made


# ------------------------------------------------------------------- the loop

@pytest.mark.parametrize("knee, cores", [(SyntheticBench.G, 2), (1, 4)],
                         ids=["sum-scales-past-the-cores", "bus-saturates-early"])
def test_a_cpu_devices_g_is_its_compute_units(monkeypatch, knee, cores):
    """A CPU device's g is the cores a level of tasks uses, whatever the streaming sum's
    knee: past the cores the sum keeps improving (memory-level parallelism); below them
    the bus saturates early (the 2-core VM's whole PoCL device read g = 2, 1, 1 in three
    quick calibrations)."""
    class Bench(SyntheticBench):
        G = knee

    def factory(device=None):
        bench = Bench(device)
        bench.kind, bench.compute_units = "CPU", cores
        return bench

    monkeypatch.setattr(cal, "_OpenCLBench", factory)
    prof = cal.calibrate(settings=TINY, progress=False)
    assert knee != cores
    assert prof.g == cores and prof.device_shares_cpu
    assert prof.sweeps.g                      # the sweep itself is kept (Figure 5)


def test_calibrate_recovers_the_synthetic_parameters(synthetic):
    import numba

    prof = cal.calibrate(settings=TINY, progress=False)
    bench = synthetic[0]
    assert bench.closed
    assert prof.p == numba.get_num_threads()
    assert prof.g == SyntheticBench.G
    assert prof.latency_s == pytest.approx(SyntheticBench.LAM, rel=1e-6)
    assert prof.seconds_per_byte == pytest.approx(SyntheticBench.DELTA, rel=1e-6)
    assert (prof.device, prof.platform, prof.driver_version) == ("Synthetic Device", "Synthetic Platform", "1.0")
    assert prof.device_kind == "GPU" and not prof.device_shares_cpu
    assert prof.source == "measured" and prof.quick is False
    assert prof.hpu_version == hpu.__version__


def test_gamma_is_the_median_ratio_of_the_raw_merges(synthetic):
    prof = cal.calibrate(settings=TINY, progress=False)
    sizes = sorted(set(TINY.merge_sizes))
    ratios, per_el = [], []
    for n in sizes:
        cpu = np.median([t for x, t in prof.sweeps.merge_cpu if x == n])
        dev = np.median([t for x, t in prof.sweeps.merge_device if x == n])
        assert dev == pytest.approx(SyntheticBench.DEV_S_PER_EL * n)
        ratios.append(cpu / dev)
        per_el.append(cpu / n)
    assert prof.gamma == pytest.approx(float(np.median(ratios)))
    assert prof.cpu_seconds_per_element == pytest.approx(float(np.median(per_el)))
    assert 0 < prof.cpu_seconds_per_element < 1e-6          # a merge is nanoseconds per element


def test_first_runs_are_thrown_away_and_repeats_kept(synthetic):
    prof = cal.calibrate(settings=TINY, progress=False)
    bench = synthetic[0]
    counts = [1 << e for e in range(9)]                      # 1 .. max_work_items=256
    assert sorted({x for x, _ in prof.sweeps.g}) == counts
    for name, xs in (("g", counts), ("merge_device", TINY.merge_sizes),
                     ("h2d", TINY.transfer_bytes), ("d2h", TINY.transfer_bytes)):
        pairs = getattr(prof.sweeps, name)
        assert len(pairs) == len(xs) * TINY.repeats, name   # exact synthetic times: no more needed
    # the CPU merges are real timings: a noisy size may take more repeats, up to the cap
    for n in TINY.merge_sizes:
        taken = sum(1 for x, _ in prof.sweeps.merge_cpu if x == n)
        assert TINY.repeats <= taken <= TINY.repeat_cap
    # every slow (first) run happened, and none of them is in the profile
    slow = [shape for shape, was_slow in bench.runs if was_slow]
    assert len(slow) == len(counts) + len(TINY.merge_sizes) + 2 * len(TINY.transfer_bytes)
    g_times = dict(prof.sweeps.g)
    assert max(t for _, t in prof.sweeps.g) < 2e-3 and g_times[1] == pytest.approx(1e-3 + 1e-6)
    assert max(t for _, t in prof.sweeps.h2d) < 1.01 * (SyntheticBench.LAM + SyntheticBench.DELTA * 16384)


def test_progress_callback_sees_every_step(synthetic):
    seen = []
    cal.calibrate(settings=TINY, progress=lambda stage, done, total: seen.append((stage, done, total)))
    total = 9 + 2 * 2 + 2 * 3
    assert [d for _, d, _ in seen] == list(range(1, total + 1))
    assert {t for _, _, t in seen} == {total}
    stages = [s for s, _, _ in seen]
    assert stages[0].startswith("g") and any(s.startswith("γ") for s in stages) and stages[-1].startswith("λ")


def test_wrong_device_results_are_errors_not_profiles(monkeypatch):
    for flag in ("wrong_sum", "wrong_merge"):
        monkeypatch.setattr(cal, "_OpenCLBench", lambda device=None, f=flag: SyntheticBench(device, **{f: True}))
        with pytest.raises(DeviceUnavailableError):
            cal.calibrate(settings=TINY, progress=False)


def test_default_sweep_reaches_well_past_the_device_width():
    bench = SyntheticBench()
    full = CalibrationSettings.full()
    counts = cal._sweep_counts(full, bench)
    assert counts[0] == 1 and counts[-1] == 1 << 16
    assert all(b == 2 * a for a, b in zip(counts, counts[1:]))
    bench.compute_units, bench.simd_width = 128, 64          # a big GPU: 16 x 128 x 64 = 2^17
    assert cal._sweep_counts(full, bench)[-1] == 1 << 17
    small = CalibrationSettings(sum_elements=1000, merge_sizes=(4,), transfer_bytes=(1, 2), repeats=1)
    assert cal._sweep_counts(small, bench)[-1] == 512        # never past the array


@pytest.mark.parametrize("kwargs, match", [
    (dict(sum_elements=0), "sum_elements=0"),
    (dict(merge_sizes=()), "merge_sizes"),
    (dict(merge_sizes=(1,)), "merge_sizes"),
    (dict(transfer_bytes=(8, 8)), "transfer_bytes"),
    (dict(repeats=0), "repeats=0"),
    (dict(max_work_items=0), "max_work_items=0"),
    (dict(repeats=3, max_repeats=2), "max_repeats=2"),
    (dict(target_rel_error=0.0), "target_rel_error"),
    (dict(target_rel_error=1.5), "target_rel_error"),
])
def test_settings_refuse_bad_sizes(kwargs, match):
    base = dict(sum_elements=16, merge_sizes=(4,), transfer_bytes=(1, 2), repeats=1)
    with pytest.raises(ValueError, match=match):
        CalibrationSettings(**{**base, **kwargs})


class NoisyBench(SyntheticBench):
    """The synthetic device on a loaded machine: every run 0-30 % slower, a third of them 3x."""

    def __init__(self, device=None):
        super().__init__(device)
        self.rng = np.random.default_rng(7)

    def _t(self, shape, seconds):
        t = super()._t(shape, seconds) * (1 + 0.3 * self.rng.random())
        return t * 3 if self.rng.random() < 1 / 3 else t


def test_noisy_points_get_more_repeats_and_the_profile_says_how_sure_it_is(monkeypatch):
    monkeypatch.setattr(cal, "_OpenCLBench", NoisyBench)
    prof = cal.calibrate(settings=TINY, progress=False)
    per_point = [len([1 for x, _ in prof.sweeps.g if x == n]) for n in {x for x, _ in prof.sweeps.g}]
    assert max(per_point) > TINY.repeats and max(per_point) <= TINY.repeat_cap
    err = dict(prof.uncertainty)
    assert {"gamma", "cpu_seconds_per_element", "latency_s", "seconds_per_byte"} <= set(err)
    assert err["gamma"] > 0 and prof.time_rel_error >= err["gamma"]
    assert Profile.from_json(prof.to_json()) == prof
    assert json.loads(prof.to_json())["uncertainty"] == err


def test_a_quiet_machine_takes_only_the_minimum_repeats(synthetic):
    prof = cal.calibrate(settings=TINY, progress=False)
    assert len(prof.sweeps.g) == len({x for x, _ in prof.sweeps.g}) * TINY.repeats
    # the synthetic device is exact (the CPU merges are real, so gamma is not)
    assert prof.rel_error("latency_s") == 0.0 and prof.rel_error("nothing") == 0.0


@pytest.mark.parametrize("bad", [{"gamma": -0.1}, {"gamma": "x"}, [0.1], {"gamma": True}])
def test_a_profile_with_a_bad_uncertainty_is_corrupt(bad):
    data = json.loads(_profile_for_plots().to_json())
    data["uncertainty"] = bad
    with pytest.raises(_profile.ProfileError, match="uncertainty"):
        Profile.from_json(json.dumps(data))


def test_a_profile_without_uncertainty_still_reads():
    data = json.loads(_profile_for_plots().to_json())
    del data["uncertainty"]
    prof = Profile.from_json(json.dumps(data))
    assert prof.uncertainty == () and prof.time_rel_error == 0.0


def test_solver_gamma_is_paired_and_read_off_the_trend():
    """With a fake sorter whose device is 0.8x at 2^12 and 0.7x at 2^14 keys, under bursts."""
    rng = np.random.default_rng(5)

    class Run:
        def __init__(self, t):
            self.fallbacks = []
            self.levels = [type("L", (), {"phase": "leaf", "gpu_seconds": t})()]

    class Sorter:
        def sequential(self, a, tmp, lo, hi):
            a.sort()
            burst = 3.0 if rng.random() < 0.2 else 1.0
            self.last = hi * 1e-8 * burst       # reported by the fake clock below

        def run(self, a, tmp, lo, hi, **kw):
            a.sort()
            burst = 3.0 if rng.random() < 0.2 else 1.0
            gamma = 0.8 if hi <= 4096 else 0.7
            return Run(hi * 1e-8 / gamma * burst)

    sorter = Sorter()
    # the CPU side is timed with the host's clock: make it return the made-up time
    real = cal.time.perf_counter
    clock = {"t": 0.0, "calls": 0}

    def fake_clock():
        clock["calls"] += 1
        if clock["calls"] % 2 == 0:
            clock["t"] += getattr(sorter, "last", 0.0)
        return clock["t"]

    try:
        cal.time.perf_counter = fake_clock
        settings = CalibrationSettings(sum_elements=16, merge_sizes=(4096, 16384),
                                       transfer_bytes=(1, 2), repeats=7)
        gamma, unit = cal._solver_ratio(sorter, None, (4096, 16384), settings, rng)
    finally:
        cal.time.perf_counter = real
    assert gamma.value == pytest.approx(0.75, rel=0.03)   # the line read at 2^13
    assert unit.value > 0 and gamma.samples >= 14


def test_calibrate_refuses_bad_arguments():
    with pytest.raises(TypeError, match="CalibrationSettings"):
        cal.calibrate(settings={"repeats": 1})
    with pytest.raises(TypeError, match="progress="):
        cal.calibrate(settings=TINY, progress="yes")


def test_estimates_from_sweeps_are_the_stats_of_the_raw_pairs():
    g = tuple((x, 1.0 / min(x, 8)) for x in (1, 2, 4, 8, 16, 32) for _ in range(3))
    sw = Sweeps(g_elements=64, g=g, merge_cpu=((100, 1e-6), (200, 2e-6)), merge_device=((100, 4e-6), (200, 1e-5)),
                h2d=((1000, 1.1e-5), (2000, 1.2e-5), (4000, 1.4e-5)), d2h=((1000, 1.1e-5), (4000, 1.4e-5)))
    est = cal.estimates(sw)
    assert est.g == 8
    assert est.gamma.ratios == pytest.approx((0.25, 0.2)) and est.gamma.value == pytest.approx(0.225)
    assert est.cpu_seconds_per_element == pytest.approx(1e-8)
    assert est.transfer.intercept == pytest.approx(1e-5) and est.transfer.slope == pytest.approx(1e-9)
    with pytest.raises(ValueError, match="different sizes"):
        cal.estimates(Sweeps(g=g, merge_cpu=((100, 1e-6),), merge_device=((200, 1e-6),), h2d=sw.h2d, d2h=sw.d2h))


# ------------------------------------------------------------------ CPU merge

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 3000), seed=st.integers(0, 2**32 - 1))
def test_cpu_merge_of_a_pool_matches_numpy(n, seed, monkeypatch):
    monkeypatch.setattr(cal, "MERGE_POOL_ELEMENTS", 4096)
    pool = cal._MergePool.random(n, np.random.default_rng(seed))
    assert pool.pairs == max(1, 4096 // n) and pool.na + pool.nb == n
    assert pool.out.size == pool.pairs * n
    merge_pairs = cal._cpu_merge_kernel()
    first = seed % pool.pairs
    merge_pairs(pool.a, pool.b, pool.out, pool.na, pool.nb, pool.pairs, first, pool.pairs)
    for k in range(pool.pairs):
        a = pool.a[k * pool.na:(k + 1) * pool.na]
        b = pool.b[k * pool.nb:(k + 1) * pool.nb]
        assert np.array_equal(pool.merged(pool.out, k), np.sort(np.concatenate([a, b])))


def test_merge_pool_pairs_differ_so_no_timed_merge_repeats_its_inputs():
    pool = cal._MergePool.random(1 << 12, np.random.default_rng(0))
    assert pool.pairs * (1 << 12) >= cal.MERGE_POOL_ELEMENTS
    firsts = {tuple(pool.a[k * pool.na:k * pool.na + 16]) for k in range(pool.pairs)}
    assert len(firsts) == pool.pairs
    assert cal._cpu_merge_run(pool, 1e-4) > 0


# ----------------------------------------------------------------------- figures

def _png(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def test_plots_write_pngs(synthetic, tmp_path):
    prof = cal.calibrate(settings=TINY, progress=False)
    for fn, name in ((cal.plot_g_sweep, "g.png"), (cal.plot_gamma, "gamma.png"), (cal.plot_transfers, "t.png")):
        fig = fn(prof, tmp_path / name)
        _png(tmp_path / name)
        assert fig.axes and fig.axes[0].get_xscale() == "log"


def test_plot_of_a_builtin_profile_says_what_is_missing():
    import dataclasses
    prof = dataclasses.replace(_profile_for_plots(), sweeps=Sweeps(), source="builtin")
    with pytest.raises(HpuError, match="has no g sweep to plot; run `hpu calibrate`"):
        cal.plot_g_sweep(prof)


def test_plot_without_matplotlib_says_how_to_install(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(HpuError, match="pip install matplotlib"):
        cal.plot_g_sweep(_profile_for_plots())


def _profile_for_plots() -> Profile:
    return Profile(p=2, g=4, gamma=0.5, latency_s=1e-5, seconds_per_byte=1e-10, cpu_seconds_per_element=2e-9,
                   device="D", platform="P", driver_version="1", device_kind="CPU", compute_units=2,
                   device_shares_cpu=True, host="h", hpu_version=hpu.__version__,
                   created="2026-01-01T00:00:00+00:00", quick=True,
                   sweeps=Sweeps(g_elements=8, g=((1, 1.0), (2, 0.5), (4, 0.25), (8, 0.25))))


# ------------------------------------------- the kernels' logic, compiled as C

_C_PRELUDE = """
#include <stddef.h>
#define __kernel
#define __global
static size_t hpu_gid;
static size_t get_global_id(unsigned d) { (void)d; return hpu_gid; }
"""

_C_DRIVER = """
void run_vsum(const float *a, const float *b, float *c, long n, long seg, long items) {
    for (hpu_gid = 0; hpu_gid < (size_t)items; ++hpu_gid) hpu_calib_vsum(a, b, c, n, seg);
}
"""


@pytest.fixture(scope="module")
def kernels_as_c(tmp_path_factory):
    """The calibration kernels' OpenCL C built by the host C compiler (OpenCL C here is also C)."""
    import ctypes
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to check the kernels' logic")
    d = tmp_path_factory.mktemp("calib-c")
    (d / "k.c").write_text(_C_PRELUDE + cal._SOURCE + _C_DRIVER)
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-Wno-unknown-pragmas", "-o", str(d / "k.so"), str(d / "k.c")],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(d / "k.so"))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5000), items=st.integers(1, 300), seed=st.integers(0, 2**32 - 1))
def test_vsum_kernel_covers_every_element_once(kernels_as_c, n, items, seed):
    import ctypes
    rng = np.random.default_rng(seed)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    c = np.full(n, np.nan, dtype=np.float32)
    seg = -(-n // items)                                  # as _OpenCLBench.sum_run passes it
    p = ctypes.c_void_p
    kernels_as_c.run_vsum(p(a.ctypes.data), p(b.ctypes.data), p(c.ctypes.data), ctypes.c_long(n),
                          ctypes.c_long(seg), ctypes.c_long(items))
    assert np.array_equal(c, a + b)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 3000), seed=st.integers(0, 2**32 - 1))
def test_merge_task_merges_the_chosen_pair_only(n, seed):
    """The one merge source both sides run (Numba; translated to OpenCL C), as plain Python."""
    from hpu import _calib_merge

    pool = cal._MergePool.random(n, np.random.default_rng(seed))
    out = np.full(pool.out.size, -7, dtype=np.int32)
    pair = seed % pool.pairs
    _calib_merge.merge_task(0, pool.a, pool.b, out, pool.na, pool.nb, pair)
    assert np.array_equal(pool.merged(out, pair), pool.expected(pair))
    others = np.ones(out.size, dtype=bool)
    others[pair * n:(pair + 1) * n] = False
    assert np.all(out[others] == -7)


# ---------------------------------------------------------------- a real device

def _real_device_or_skip():
    from hpu._opencl._device import context_and_queue, devices

    try:
        if not devices():
            pytest.skip("no OpenCL device")
        import pyopencl as cl
        ctx, _ = context_and_queue()
        cl.Program(ctx, "__kernel void probe(__global int *a) { a[0] = 1; }").build()
    except (HpuError, Exception) as err:   # pyopencl raises its own errors for a broken compiler
        first = str(err).strip().splitlines()
        pytest.skip(f"the OpenCL device cannot compile kernels here: "
                    f"{next((ln for ln in first if 'error' in ln.lower()), first[0] if first else err)}")


@pytest.mark.opencl
def test_the_device_merge_is_the_translated_python_merge():
    _real_device_or_skip()
    bench = cal._OpenCLBench()
    pool = cal._MergePool.random(1000, np.random.default_rng(3))
    bench.merge_setup(pool)
    bench.merge_run(1)
    out = bench.merge_result()
    assert np.array_equal(pool.merged(out, 1), pool.expected(1))
    assert "merge_one" in cal._translated_merge().source  # translated, not hand-written


@pytest.mark.opencl
def test_real_device_calibration_with_tiny_sizes():
    _real_device_or_skip()
    prof = cal.calibrate(settings=dataclasses.replace(TINY, combine_sizes=(256, 1024)),
                         progress=False)     # kernels' and sorts' results are checked inside
    assert 1 <= prof.g <= 256
    assert [b for b, _ in prof.combine_rates] == [8 * 256, 8 * 1024]
    assert all(r > 0 for _, r in prof.combine_rates) and prof.combine_gamma > 0
    assert prof.gamma > 0 and prof.cpu_seconds_per_element > 0
    assert prof.latency_s >= 0 and prof.seconds_per_byte >= 0
    from hpu._opencl._device import select_device
    dev = select_device(None)
    assert prof.device == dev.name.strip()
    assert prof.device_shares_cpu == bool(dev.type & __import__("pyopencl").device_type.CPU)
    assert Profile.from_json(prof.to_json()) == prof


def test_a_device_that_cannot_compile_gives_a_kernel_build_error(monkeypatch):
    """Where kernels compile, a syntax error stands in for a broken compiler."""
    from hpu._opencl._device import devices
    if not devices():
        pytest.skip("no OpenCL device")
    monkeypatch.setattr(cal, "_SOURCE", cal._SOURCE + "\n this is not OpenCL C;\n")
    with pytest.raises(KernelBuildError) as err:
        cal.calibrate(settings=TINY, progress=False)
    assert "could not compile hpu's calibration kernels" in str(err.value)
    assert "hpu devices" in str(err.value) and err.value.source


# ---------------------------------------------------- a tie is settled, not noise

def test_a_split_within_the_calibrations_uncertainty_is_a_tie_settled_for_the_cpu():
    """p = g = 1 and γ = 1.1 with contention 2: the model's split gains 1.1x, less than
    twice a 5 % error can tell apart; with no recorded error the split stands."""
    from hpu import model

    problem = model.Problem(a=2, b=2, cost="n", n=1 << 20)
    machine = model.Machine(p=1, g=1, gamma=1.1, seconds_per_unit=5e-9)
    split = model.plan(problem, machine, element_bytes=8, contention=2.0)
    assert split.uses_device and 1.0 < split.speedup < 1.14
    tie = model.plan(problem, machine, element_bytes=8, contention=2.0, rel_error=0.05)
    assert not tie.uses_device and tie.transfer_level is None
    assert "within the calibration's uncertainty" in tie.reason and "a tie" in tie.reason
    sure = model.plan(problem, machine, element_bytes=8, contention=2.0, rel_error=0.01)
    assert sure.uses_device and sure.transfer_level == split.transfer_level


def test_the_runtime_plans_with_the_profiles_uncertainty(tmp_path, monkeypatch):
    from dataclasses import replace

    from hpu import _plan

    seen = {}
    real = _plan.model_plan.__wrapped__

    def spy(*args):
        seen["args"] = args
        return real(*args)

    prof = replace(_profile_for_plots(), uncertainty=(("gamma", 0.03), ("cpu_seconds_per_element", 0.04)))
    monkeypatch.setattr(_profile, "active_profile", lambda device=None, **kw: prof)
    monkeypatch.setattr(_plan, "model_plan", spy)
    from algorithms.mergesort import mergesort

    a = np.zeros(1 << 12, np.int32)
    mergesort.options(device="hybrid").plan(a, np.empty_like(a), 0, a.size)
    # model_plan(problem, machine, strategy, element_bytes, contention, rel_error, chunks)
    assert seen["args"][5] == pytest.approx(0.05)


# ------------------------------------------------ contention as the model applies it (issue 14)

@given(exp=st.integers(12, 24), y=st.integers(1, 6), cpu_share=st.integers(1, 63),
       c=st.floats(1.0, 8.0), gamma=st.floats(0.3, 3.0))
@settings(deadline=None)
def test_contention_from_times_recovers_the_models_factor(exp, y, cpu_share, c, gamma):
    """Times that follow the simulator's overlap rule give back its contention exactly."""
    from hpu import model

    problem = model.Problem(a=2, b=2, cost="n", n=2 ** exp)
    machine = model.Machine(p=1, g=1, gamma=gamma, seconds_per_unit=5e-9)
    m = 2 ** y
    alpha = min(cpu_share, m - 1) / m
    slow = model.simulate(problem, machine, alpha=alpha, y=y, contention=c)
    alone = model.simulate(problem, machine, alpha=alpha, y=y, contention=1.0)
    both = max(slow.cpu_share_time, slow.device_share_time)
    got = cal.contention_from_times(both, alone.cpu_share_time, alone.device_share_time)
    assert got == pytest.approx(c, rel=1e-9)


def test_contention_from_times_bounds():
    assert cal.contention_from_times(1.0, 1.0, 1.0) == 1.0          # no slowdown
    assert cal.contention_from_times(0.5, 1.0, 1.0) == 1.0          # faster together: 1
    assert cal.contention_from_times(100.0, 1.0, 1.0) == 16.0       # capped
    assert cal.contention_from_times(1.0, 0.0, 1.0) == 1.0          # an empty share
    # unequal shares: only the overlap is slowed, so the factor exceeds both / max
    assert cal.contention_from_times(2.5, 1.0, 2.0) == pytest.approx(1.5)


# ------------------------------------------------------- combine rates (issue 14)

def test_combine_rates_round_trip_and_become_the_models_factors():
    prof = dataclasses.replace(_profile_for_plots(), cpu_seconds_per_element=5e-9,
                               combine_rates=((1 << 22, 6e-9), (1 << 19, 5e-9)),
                               combine_gamma=0.7)
    back = Profile.from_json(prof.to_json())
    assert back.combine_rates == ((1 << 19, 5e-9), (1 << 22, 6e-9))   # sorted by bytes
    assert back.combine_gamma == 0.7
    m = back.machine()
    assert m.combine_factors == (((1 << 19), pytest.approx(1.0)), ((1 << 22), pytest.approx(1.2)))
    assert m.combine_gamma == 0.7 and m.device_combine_speed == 0.7


def test_a_profile_without_combine_rates_still_reads_and_prices_combines_as_before():
    data = json.loads(_profile_for_plots().to_json())
    del data["combine_rates"], data["combine_gamma"]
    prof = Profile.from_json(json.dumps(data))
    assert prof.combine_rates == () and prof.combine_gamma is None
    m = prof.machine()
    assert m.combine_factors == () and m.device_combine_speed == prof.gamma


@pytest.mark.parametrize("field, bad", [
    ("combine_rates", [[0, 5e-9]]), ("combine_rates", [[1024, 0.0]]),
    ("combine_rates", [[1024, 5e-9], [1024, 6e-9]]), ("combine_rates", {"a": 1}),
    ("combine_gamma", 0), ("combine_gamma", "fast"),
])
def test_a_profile_with_bad_combine_values_is_corrupt(field, bad):
    data = json.loads(_profile_for_plots().to_json())
    data[field] = bad
    with pytest.raises(_profile.ProfileError, match=field):
        Profile.from_json(json.dumps(data))


def test_combine_rates_are_the_top_merges_seconds_per_key_paired_with_the_device():
    """A fake sorter whose level-0 merge costs 5 ns/key below 2^20 keys and 6 above on the
    CPU, and 1/0.7 of that on the device, with bursts of load on a fifth of the runs."""
    rng = np.random.default_rng(3)

    class Level:
        def __init__(self, level, phase, cpu, gpu):
            self.level, self.phase, self.cpu_seconds, self.gpu_seconds = level, phase, cpu, gpu

    class Sorter:
        def run(self, a, tmp, lo, hi, *, device, K, cl_device):
            assert K == 1 and device in ("cpu", "gpu")
            a.sort()
            per = (5e-9 if hi < 1 << 20 else 6e-9) * (3.0 if rng.random() < 0.2 else 1.0)
            t = hi * per if device == "cpu" else hi * per / 0.7
            run = type("Run", (), {})()
            run.fallbacks = []
            run.levels = [Level(1, "leaf", 1.0, 1.0),
                          Level(0, "combine", t if device == "cpu" else 0.0,
                                t if device == "gpu" else 0.0)]
            return run

    settings = CalibrationSettings(sum_elements=16, merge_sizes=(64,), transfer_bytes=(1, 2),
                                   repeats=7, combine_sizes=(1 << 10, 1 << 12))
    rates, gamma = cal._combine_rates(Sorter(), None, (1 << 10, 1 << 12), settings, rng)
    assert [b for b, _ in rates] == [8 << 10, 8 << 12]      # int32 keys and scratch
    assert all(e.value == pytest.approx(5e-9) for _, e in rates)
    assert gamma.value == pytest.approx(0.7)


def test_combine_sizes_a_device_would_take_too_long_on_are_left_out():
    """Each combine run sorts two whole subtrees on one work-item each: on an H100 the
    quick calibration's 2^22 keys took 134 s.  A size whose device run is predicted (by
    n log n from the last size) to pass combine_run_limit is not run."""
    import math
    import time

    class Level:
        def __init__(self, level, phase, cpu, gpu):
            self.level, self.phase, self.cpu_seconds, self.gpu_seconds = level, phase, cpu, gpu

    sizes_run = []

    class Sorter:
        def run(self, a, tmp, lo, hi, *, device, K, cl_device):
            a.sort()
            sizes_run.append((device, hi))
            if device == "gpu":             # a slow work-item: 0.05 s at 2^10 keys
                time.sleep(hi * math.log2(hi) * 5e-6)
            run = type("Run", (), {})()
            run.fallbacks = []
            run.levels = [Level(0, "combine", hi * 5e-9, hi * 5e-8)]
            return run

    settings = CalibrationSettings(sum_elements=16, merge_sizes=(64,), transfer_bytes=(1, 2),
                                   repeats=2, combine_sizes=(1 << 10, 1 << 13))
    assert cal.combine_run_limit(settings) == 0.5
    rng = np.random.default_rng(4)
    rates, gamma = cal._combine_rates(Sorter(), None, (1 << 13, 1 << 10), settings, rng)
    assert [b for b, _ in rates] == [8 << 10]           # 2^13: ~0.53 s predicted, left out
    assert {n for _, n in sizes_run} == {1 << 10}
    assert gamma.value == pytest.approx(0.1)
    # a fast device keeps every size
    sizes_run.clear()
    fast = settings.__class__(**{**settings.__dict__, "gamma_seconds": 30.0})
    assert cal.combine_run_limit(fast) == 15.0
    rates, _ = cal._combine_rates(Sorter(), None, (1 << 10, 1 << 11), fast, rng)
    assert [b for b, _ in rates] == [8 << 10, 8 << 11]


def test_combine_sizes_are_checked():
    with pytest.raises(ValueError, match="combine_sizes"):
        CalibrationSettings(sum_elements=16, merge_sizes=(64,), transfer_bytes=(1, 2),
                            repeats=3, combine_sizes=(2,))


# ------------------------------------------------ contention under other processes' load (issue 14)

def _fair_share_round(cpu, dev, c, busy, *, cores=2):
    """One contention round on cores of the sides' own (cpu@1 beside one Numba thread) as
    the kernel shares ``cores`` among our threads and ``busy`` busy processes: each ready
    thread gets an equal share of the cores.

    Each side alone runs one thread, together two until the shorter share ends; ``c`` is
    the true (memory-system) contention, which keeps a thread on its core.  Each run
    records the others' share of the cores and the share of its ready time our threads ran.
    """
    lo, hi = min(cpu, dev), max(cpu, dev)

    def stretch(k):                 # wall per second on a core, for k of our threads
        return max(1.0, (k + busy) / cores)

    def others(k):                  # the busy processes' share of the cores meanwhile
        return min(busy, cores * busy / (k + busy)) / cores

    on_core = 2 * c * lo + (hi - lo)
    both = c * lo * stretch(2) + (hi - lo) * stretch(1)
    ready = 2 * c * lo * stretch(2) + (hi - lo) * stretch(1)
    return cal.ContentionRound(both=both, cpu=cpu * stretch(1), device=dev * stretch(1),
                               both_outside=others(2), cpu_outside=others(1),
                               device_outside=others(1), both_ran=on_core / ready,
                               cpu_ran=1 / stretch(1), device_ran=1 / stretch(1))


@given(cpu=st.floats(0.02, 0.2), ratio=st.floats(0.8, 1.25), c=st.floats(1.0, 1.5),
       busy=st.integers(1, 4))
@settings(deadline=None, max_examples=50)
def test_on_disjoint_cores_a_busy_machine_does_not_move_the_contention(cpu, ratio, c, busy):
    """Quiet, the wall factor is c; beside busy processes it says more (the kernel's share
    per thread: 1.33 for two busy processes on two cores, as measured), and the runs less
    their waits for a core still say c (exactly for equal shares; shares as unequal as the
    measurement's, within 10 %: the two sides' threads wait at different rates)."""
    quiet = [_fair_share_round(cpu, cpu * ratio, c, 0)] * 5
    loaded = [_fair_share_round(cpu, cpu * ratio, c, busy)] * 5
    equal = [_fair_share_round(cpu, cpu, c, busy)] * 5
    got_quiet = cal.contention_estimate(quiet, disjoint=True)
    got_loaded = cal.contention_estimate(loaded, disjoint=True)
    assert got_quiet.basis == "quiet rounds" and got_quiet.value == pytest.approx(c, rel=1e-9)
    if busy >= 2:
        assert loaded[0].factor() > c * 1.1              # what the old measurement reported
    assert got_loaded.basis == "waits removed" and got_loaded.value == pytest.approx(c, rel=0.1)
    assert got_loaded.outside_load == pytest.approx(loaded[0].outside)
    assert cal.contention_estimate(equal, disjoint=True).value == pytest.approx(c, rel=1e-9)
    # the same rounds where the sides share cores (or the waits are unknown): not this basis
    assert cal.contention_estimate(loaded, disjoint=False).basis == "loaded rounds"
    blind = [dataclasses.replace(r, both_ran=float("nan")) for r in loaded]
    assert cal.contention_estimate(blind, disjoint=True).basis == "loaded rounds"


def test_quiet_rounds_win_over_loaded_ones_whatever_their_order():
    quiet = _fair_share_round(0.1, 0.1, 1.05, 0)
    loaded = _fair_share_round(0.1, 0.1, 1.05, 2)
    rounds = [loaded, quiet, loaded, quiet, loaded, quiet, loaded]
    for disjoint in (False, True):
        got = cal.contention_estimate(rounds, disjoint=disjoint)
        assert got.basis == "quiet rounds" and got.samples == 3
        assert got.value == pytest.approx(1.05) and got.rel_error == 0.0
        assert got.outside_load == pytest.approx(loaded.outside)  # the median of all 7 rounds


def test_shared_cores_under_load_are_corrected_and_less_sure():
    """No fission: every run keeps every core busy (2 threads alone, 4 together, on 2 cores),
    so taking the others' share of the cores off each run recovers the quiet factor; the
    error says that this is a model of the kernel's sharing."""
    def shared(busy, c=1.9, t=0.1, cores=2):
        def run(k, seconds):        # k >= cores threads beside `busy`: each gets cores/(k+busy)
            return seconds * (k + busy) / k, busy / (k + busy)

        both, both_out = run(4, c * t)
        alone, alone_out = run(2, t)
        return cal.ContentionRound(both=both, cpu=alone, device=alone, both_outside=both_out,
                                   cpu_outside=alone_out, device_outside=alone_out)

    quiet = cal.contention_estimate([shared(0)] * 5, disjoint=False)
    assert quiet.basis == "quiet rounds" and quiet.value == pytest.approx(1.9)
    rounds = [shared(2)] * 5
    assert rounds[0].factor() < 1.9 * 0.9              # the raw factor under load: too low
    got = cal.contention_estimate(rounds, disjoint=False)
    assert got.basis == "loaded rounds" and got.value == pytest.approx(1.9)
    assert got.rel_error == pytest.approx(0.5 * abs(rounds[0].factor() - 1.9) / 1.9)


def test_contention_estimate_needs_rounds():
    with pytest.raises(ValueError, match="no contention rounds"):
        cal.contention_estimate([], disjoint=True)


@pytest.mark.parametrize("kind, units, threads, cores, want", [
    ("CPU", 1, 1, 2, True),         # cpu@1 beside one Numba thread on two cores
    ("CPU", 1, 2, 2, False),        # Numba's two threads: one shares the device's core
    ("CPU", None, 1, 2, False),     # a whole CPU device uses every core
    ("CPU", 2, 2, 4, True),
    ("GPU", None, 2, 2, False),     # not a CPU device: no cores to share (and no contention run)
])
def test_disjoint_cores_is_the_structural_prior(kind, units, threads, cores, want):
    assert cal.disjoint_cores(kind, units, threads, cores) is want


def test_a_busy_calibration_warns_and_says_so(synthetic, monkeypatch):
    from hpu import _load
    from hpu._commands.calibrate import format_summary
    from hpu._errors import HpuPerformanceWarning

    monkeypatch.setattr(_load, "outside_share", lambda a, b, cores=None: 0.62)
    with pytest.warns(HpuPerformanceWarning, match=r"other processes used 62 % .* quiet machine") as rec:
        prof = cal.calibrate(settings=TINY, progress=False)
    assert rec[0].filename == __file__                       # points at the caller's line
    assert prof.outside_load == pytest.approx(0.62)
    assert Profile.from_json(prof.to_json()) == prof
    assert "62 % of the cores while measuring (busy" in format_summary(prof, "p.json")
    sure = dataclasses.replace(prof, outside_load=0.05, measured_contention=1.02,
                               contention_basis="waits removed")
    assert cal.busy_message(sure) == ""
    text = format_summary(sure, "p.json")
    assert "contention  1.02" in text and "without the waits for a core" in text
    assert "(busy" not in text


def test_a_quiet_calibration_does_not_warn(synthetic, monkeypatch, recwarn):
    from hpu import _load

    monkeypatch.setattr(_load, "outside_share", lambda a, b, cores=None: 0.1)
    prof = cal.calibrate(settings=TINY, progress=False)
    assert prof.outside_load == pytest.approx(0.1)
    assert not [w for w in recwarn if "calibrated" in str(w.message)]


@pytest.mark.parametrize("field, bad", [("outside_load", 1.5), ("outside_load", "x"),
                                        ("contention_basis", "guess")])
def test_a_profile_with_a_bad_load_record_is_corrupt(field, bad):
    data = json.loads(_profile_for_plots().to_json())
    data[field] = bad
    with pytest.raises(_profile.ProfileError, match=field):
        Profile.from_json(json.dumps(data))


def _runs(cpu_main, dev_main, dev_worker, both_main, both_worker, walls, outside=0.8):
    """Three runs as :class:`hpu._load.Meter` records them: thread 1 is the caller (the
    CPU share's thread), thread 2 the device's; each thread ``(seconds on a core, waiting)``."""
    return {"both": (walls[0], outside, {1: both_main, 2: both_worker, 3: (0.0, 0.0)}),
            "cpu": (walls[1], outside, {1: cpu_main}),
            "device": (walls[2], outside, {1: dev_main, 2: dev_worker})}


def test_the_run_with_both_is_scaled_by_the_side_that_ended_it():
    """Quiet: CPU share 0.04 s, device share 0.05 s, no contention.  Loaded, the caller's
    thread shares a core with a busy process (1/3 of it) while the device's thread has one
    to itself: the CPU side ends last (0.12 s), and only its own share scales the run back
    to its time (0.04 s, below the 0.05 s it takes quiet: the factor's clip at 1 keeps
    it); the share of both threads together (0.53) would have read 1.34x."""
    r = cal.round_from_runs(_runs(cpu_main=(0.04, 0.02), dev_main=(0.0, 0.0),
                                  dev_worker=(0.05, 0.025), both_main=(0.04, 0.08),
                                  both_worker=(0.05, 0.0), walls=(0.12, 0.06, 0.075)))
    assert (r.cpu_ran, r.device_ran, r.both_ran) == pytest.approx((2 / 3, 2 / 3, 1 / 3))
    assert r.without_waits() == pytest.approx((0.04, 0.04, 0.05))
    assert cal.contention_estimate([r] * 3, disjoint=True).value == 1.0
    together = dataclasses.replace(r, both_ran=0.09 / 0.17)
    assert together.waits_factor() == pytest.approx(1.34, abs=0.01)
    # the device side ends last when it is the one short of a core
    r2 = cal.round_from_runs(_runs(cpu_main=(0.04, 0.0), dev_main=(0.0, 0.0),
                                   dev_worker=(0.05, 0.05), both_main=(0.04, 0.0),
                                   both_worker=(0.05, 0.1), walls=(0.15, 0.04, 0.1)))
    assert r2.both_ran == pytest.approx(1 / 3) and r2.waits_factor() == pytest.approx(1.0)


def test_a_round_without_thread_times_leaves_the_waits_unknown():
    r = cal.round_from_runs({k: (0.1, 0.5, {}) for k in ("both", "cpu", "device")})
    assert not r.waits_known and r.outside == pytest.approx(0.5)
    assert cal.contention_estimate([r] * 3, disjoint=True).basis == "loaded rounds"


def test_the_cpu_code_is_compiled_in_a_child_before_measuring(monkeypatch):
    """Code Numba compiled in the measuring process ran 20-30 % slower there than the same
    code loaded from the cache (γ 1.24-1.31 against 1.02-1.10): the calibration compiles
    it in a child first, and only for a bench that times hpu's own solver."""
    order = []

    class Timed(SyntheticBench):
        def solver_ratio(self, sizes, settings, rng):  # pragma: no cover - not reached
            raise AssertionError

    for bench_cls, primed in ((Timed, True), (SyntheticBench, False)):
        order.clear()
        monkeypatch.setattr(cal, "_OpenCLBench", lambda device=None, c=bench_cls: c(device))
        monkeypatch.setattr(cal, "_prime_cpu_code", lambda: order.append("prime"))
        monkeypatch.setattr(cal, "_measure", lambda *a, **k: order.append("measure") or "P")
        monkeypatch.setattr(cal, "busy_message", lambda profile: "")
        assert cal.calibrate(settings=TINY, progress=False) == "P"
        assert order == (["prime", "measure"] if primed else ["measure"])


def test_the_priming_child_fills_the_caches(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), HPU_CACHE_DIR=str(tmp_path / "hpu"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    r = subprocess.run([sys.executable, "-c", cal._PRIME], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert list(tmp_path.rglob("*.nbi")), "no Numba cache index written"


def test_a_failing_priming_child_does_not_stop_the_calibration(monkeypatch):
    def boom(*a, **k):
        raise OSError("no such interpreter")

    monkeypatch.setattr(subprocess, "run", boom)
    cal._prime_cpu_code()          # returns: the measurement goes on without the caches


@pytest.mark.skipif(not _affinity.available() or len(_affinity.allowed_cores()) < 2,
                    reason="pinning needs Linux and at least two allowed cores (CI has two)")
def test_gamma_pairs_of_a_cpu_device_run_both_sides_on_one_core_each_round():
    """Both sides of every γ pair meet the same core, and the rounds visit every core
    (a CPU device's cores change speed independently; hpu._affinity says why)."""
    seen = []

    class Run:
        fallbacks = []

        def __init__(self):
            self.levels = [type("L", (), {"phase": "leaf", "gpu_seconds": 1e-4})()]

    class Sorter:
        def sequential(self, a, tmp, lo, hi):
            a.sort()
            seen.append(("cpu", frozenset(os.sched_getaffinity(0))))

        def run(self, a, tmp, lo, hi, **kw):
            a.sort()
            seen.append(("gpu", frozenset(os.sched_getaffinity(0))))
            return Run()

    settings = CalibrationSettings(sum_elements=16, merge_sizes=(64,), transfer_bytes=(1, 2),
                                   repeats=4)
    cal._solver_ratio(Sorter(), None, (64,), settings, np.random.default_rng(0),
                      around=_affinity.rotating())
    timed = seen[2:]                        # after one warm-up per side
    assert all(len(mask) == 1 for _, mask in timed)
    pairs = [timed[i:i + 2] for i in range(0, len(timed), 2)]
    assert all(x[1] == y[1] for x, y in pairs)
    assert {next(iter(x[1])) for x, _ in pairs} == set(_affinity.allowed_cores())
    assert set(os.sched_getaffinity(0)) == set(_affinity.allowed_cores())


def test_only_a_cpu_device_pins_its_gamma_pairs():
    bench = object.__new__(cal._OpenCLBench)
    bench.kind = "GPU"
    assert bench._same_core() is None
    bench.kind = "CPU"
    assert callable(bench._same_core())


@pytest.mark.parametrize("seconds, settles", [(0.0, True), (0.4, True), (0.0, False)])
def test_contention_rounds_spread_over_gamma_seconds(seconds, settles, monkeypatch):
    """The contention's rounds last at least ``gamma_seconds`` (as γ's pairs do), bounded by
    16 × repeats: rounds of half a second caught one state of the VM's cores."""
    import time

    class Level:
        def __init__(self, level, phase):
            self.level, self.phase, self.cpu_seconds, self.gpu_seconds = level, phase, 0.0, 0.0

    calls = []

    class Sorter:
        def run(self, a, tmp, lo, hi, *, device, cl_device, **options):
            calls.append(device)
            a.sort()
            time.sleep(0.004 if device == "hybrid" else 0.003)
            run = type("Run", (), {})()
            run.fallbacks = []
            run.levels = [Level(0, "combine")]
            return run

    settings = CalibrationSettings(sum_elements=16, merge_sizes=(64,), transfer_bytes=(1, 2),
                                   repeats=3, gamma_seconds=seconds)
    if not settles:     # rounds that never agree: batches of half the rounds stop at the cap
        estimate = cal.contention_estimate
        monkeypatch.setattr(cal, "contention_estimate", lambda rounds, **kw: dataclasses.replace(
            estimate(rounds, **kw), rel_error=1.0))
    start = time.monotonic()
    cal._measure_contention(Sorter(), None, 1 << 10, settings, np.random.default_rng(0),
                            disjoint=False)
    took = time.monotonic() - start
    rounds = calls.count("hybrid") - 1                      # less the warm-up
    assert rounds <= max(settings.repeat_cap, 16 * settings.repeats)
    if seconds:
        assert took >= seconds or rounds == 16 * settings.repeats
    else:
        assert rounds <= settings.repeat_cap
    if not settles:
        assert rounds == settings.repeat_cap


# ------------------------------------------------- a GPU's width for hpu's own tasks

class OccupancyBench(SyntheticBench):
    """A GPU whose level of ``t`` subtree sorts takes ``max(1, t / WIDTH)`` times one
    alone, whatever the element-wise sum's knee says."""

    WIDTH = 48
    T1 = 2e-4

    def solver_occupancy(self, settings, rng):
        counts = cal.occupancy_counts(settings, self.max_alloc)
        return tuple((t, self.T1 * max(1.0, t / self.WIDTH)) for t in counts
                     for _ in range(settings.repeats))


def test_a_gpus_g_and_level_times_come_from_its_occupancy_sweep_not_the_sum(monkeypatch):
    monkeypatch.setattr(cal, "_OpenCLBench", lambda device=None: OccupancyBench(device))
    settings = dataclasses.replace(TINY, occupancy_tasks=1024, occupancy_step=1)
    prof = cal.calibrate(settings=settings, progress=False)
    assert SyntheticBench.G != OccupancyBench.WIDTH
    assert prof.g == OccupancyBench.WIDTH         # the best throughput, in tasks alone
    assert [t for t, _ in prof.device_occupancy] == [1 << e for e in range(11)]
    assert dict(prof.device_occupancy)[1024] == pytest.approx(1024 / 48)
    assert prof.sweeps.occupancy and prof.sweeps.g    # both sweeps kept
    machine = prof.machine()
    assert machine.device_rounds(32) == pytest.approx(1.0)
    assert machine.device_rounds(4096) == pytest.approx(4096 / 48)
    assert Profile.from_json(prof.to_json()) == prof


def test_the_occupancy_sweep_fits_the_devices_largest_buffer():
    s = dataclasses.replace(TINY, occupancy_tasks=1 << 14, occupancy_step=2)
    assert cal.occupancy_counts(s, 1 << 40) == (1, 4, 16, 64, 256, 1024, 4096, 16384)
    assert cal.occupancy_counts(s, 4 * cal.OCCUPANCY_KEYS * 100) == (1, 4, 16, 64)
    assert cal.occupancy_counts(s, 1) == (1,)
    with pytest.raises(ValueError, match="occupancy_step"):
        dataclasses.replace(TINY, occupancy_step=0)
    with pytest.raises(ValueError, match="occupancy_tasks"):
        dataclasses.replace(TINY, occupancy_tasks=0)


def test_the_occupancy_table_is_each_counts_median_over_one_tasks():
    pairs = ((1, 2.0), (1, 2.2), (1, 1.8), (8, 2.0), (8, 6.0), (8, 4.0), (64, 16.0))
    table = cal.occupancy_table(pairs)
    assert table == ((1, 1.0), (8, 2.0), (64, 8.0))
    assert cal.occupancy_g(table) == 8
    assert cal.occupancy_table(((4, 1.0),)) == ()          # no one-task time: no table


@pytest.mark.opencl
def test_the_occupancy_sweep_runs_hpus_solver_on_the_real_device():
    """On the real device (PoCL here, a GPU where there is one): each count's level of
    subtree sorts runs as the device's only work of a hybrid run, checked against NumPy."""
    _real_device_or_skip()
    from hpu._calib_merge import _make_sorter
    from hpu._opencl._device import select_device

    from hpu._opencl._backend import OpenCLBackend

    rng = np.random.default_rng(3)
    sorter = _make_sorter()
    pieces = []

    class Spy:
        def run(self, *args, **kwargs):
            pieces.append(OpenCLBackend.transfer_chunks)
            return sorter.run(*args, **kwargs)

    saved = OpenCLBackend.transfer_chunks
    pairs = cal._solver_occupancy(Spy(), select_device(None), (1, 4, 16), TINY, rng)
    # each level in one launch while measuring (not a pipelined copy's pieces), then as before
    assert pieces and set(pieces) == {1} and OpenCLBackend.transfer_chunks == saved
    assert sorted({t for t, _ in pairs}) == [1, 4, 16]
    assert len(pairs) >= 3 * TINY.repeats and all(sec > 0 for _, sec in pairs)
    table = cal.occupancy_table(pairs)
    assert table[0] == (1, 1.0) and cal.occupancy_g(table) >= 1
