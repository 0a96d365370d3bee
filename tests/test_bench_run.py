"""bench/run.py: a tiny real run writes results the experiments notebook accepts, and PNGs.

The run is real (mergesort on the CPU, on OpenCL and split between them, with
a tiny real calibration for Figures 5 and 6), only small: n = 1024 and 4096,
a 3 x 2 grid, one repeat.  Its results are checked against

* the notebook's own ``validate_results``, taken from
  ``notebooks/03_experiments.ipynb`` itself (the reader the file is for), and
  ``bench/_schema.py``;
* the records themselves: the grid is exactly the asked one, every speed-up
  is the ratio of the medians, the best point is the fastest record;
* the model, recomputed here from the profile file with ``hpu.model.plan``
  (and, for the active profile, equal to ``mergesort.plan``, which is what
  the runtime plans with).

Verification is tested with a mergesort whose hybrid runs swap two keys: the
run must stop, name the method, and write nothing.  No test asserts a time.
"""
from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1024, 4096)
ALPHAS = (0.0, 0.5, 1.0)
YS = (1, 2)
FIGURES = ("fig5_g_sweep", "fig6_gamma", "fig7_alpha_y", "fig8_speedup_vs_n", "fig10_best_vs_model",
           "fig11_projection")

pytestmark = pytest.mark.opencl


if str(ROOT) not in sys.path:       # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import run as bench_run  # noqa: E402


def _skip_without_opencl():
    from hpu._opencl._device import devices

    if not any(d.usable for d in devices()):
        pytest.skip("bench/run.py runs mergesort on an OpenCL device and none is usable here")


def _notebook_validator():
    """``validate_results`` as defined in notebooks/03_experiments.ipynb (exec'd from its cell)."""
    nb = json.loads((ROOT / "notebooks" / "03_experiments.ipynb").read_text())
    source = next("".join(c["source"]) for c in nb["cells"]
                  if c["cell_type"] == "code" and "def validate_results" in "".join(c["source"]))
    namespace: dict = {}
    exec(compile(source, "03_experiments.ipynb", "exec"), namespace)
    return namespace["validate_results"]


def _tiny_args(out, *extra):
    return ["--sizes", *map(str, SIZES), "--alphas", *map(str, ALPHAS), "--ys", *map(str, YS),
            "--repeat", "1", "--out", str(out), "--quiet", *extra]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One tiny real run with a tiny real calibration: (out folder, results, profile, stdout)."""
    _skip_without_opencl()
    import contextlib
    import io

    from hpu.calibrate import CalibrationSettings, calibrate, save_profile

    out = tmp_path_factory.mktemp("bench-out")
    tiny = CalibrationSettings(sum_elements=1 << 12, merge_sizes=(256, 1024),
                               transfer_bytes=(1024, 4096, 16384), repeats=3, max_work_items=256,
                               min_cpu_sample_s=1e-4)
    profile = calibrate(settings=tiny, progress=False)
    profile_file = save_profile(profile, out / "tiny-profile.json")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        rc = bench_run.main(_tiny_args(out, "--profile", str(profile_file)))
    assert rc == 0
    results = json.loads((out / "results.json").read_text())
    return out, results, profile, stdout.getvalue()


def test_results_pass_the_notebooks_own_check_and_the_schema(tiny_run):
    from bench._schema import validate_results

    out, results, _, _ = tiny_run
    _notebook_validator()(results, where="results.json")
    validate_results(results)
    assert results["writer"] == "bench/run.py" and results["quick"] is False
    assert results["algorithm"] == "mergesort" and results["dtype"] == "int32"
    machine = results["machine"]
    for key in ("cpu", "cores", "opencl_device", "opencl_platform", "opencl_driver", "python"):
        assert machine[key], key
    for name in ("hpu", "numpy", "numba", "pyopencl"):
        assert machine["packages"][name], name


def test_every_configuration_is_measured_once_with_its_repeats(tiny_run):
    _, results, _, _ = tiny_run
    ms = results["measurements"]
    assert sorted({m["n"] for m in ms}) == list(SIZES)
    for n in SIZES:
        methods = [m["method"] for m in ms if m["n"] == n]
        for method in ("sequential", "cpu", "gpu", "np.sort", "np.sort stable"):
            assert methods.count(method) == 1, (n, method)
        grid = sorted((m["alpha"], m["y"]) for m in ms if m["n"] == n and m["method"] == "hybrid")
        assert grid == sorted((a, y) for a in ALPHAS for y in YS)
    for m in ms:
        assert len(m["seconds"]) == results["repeats"] == 1
        assert m["median_s"] == statistics.median(m["seconds"]) > 0
        has_shares = m["method"] in ("gpu", "hybrid")
        assert (m["cpu_share_s"] is not None) == has_shares
        assert (m["device_share_s"] is not None) == has_shares
        if m["method"] == "hybrid":
            assert m["fallbacks"] == []
            # the device solved tasks exactly when the split left it some
            assert (m["gpu_tasks"] > 0) == (m["alpha"] < 1), m
        if m["method"] == "gpu":
            assert m["cpu_tasks"] == 0 and m["gpu_tasks"] > 0


def test_anchors_are_ratios_of_the_recorded_medians(tiny_run):
    _, results, _, stdout = tiny_run
    ms = results["measurements"]
    for block in results["anchors"]:
        n = block["n"]
        rows = block["rows"]
        seq = next(m["median_s"] for m in ms if m["n"] == n and m["method"] == "sequential")
        hybrid = [m for m in ms if m["n"] == n and m["method"] == "hybrid"]
        fastest = min(m["median_s"] for m in hybrid)
        assert rows["best"]["median_s"] == fastest
        assert (rows["best"]["alpha"], rows["best"]["y"]) in {(m["alpha"], m["y"]) for m in hybrid
                                                              if m["median_s"] == fastest}
        for key in ("sequential", "np.sort", "np.sort stable", "cpu", "gpu"):
            median = next(m["median_s"] for m in ms if m["n"] == n and m["method"] == key)
            assert rows[key]["median_s"] == median
            assert math.isclose(rows[key]["speedup"], seq / median)
        choice = next(c for c in results["model_choice"] if c["n"] == n)
        assert math.isclose(rows["model"]["speedup"], seq / choice["median_s"])
        assert f"n = 2^{n.bit_length() - 1} " in stdout
    for label in ("one core (mergesort.sequential)", "np.sort (default)", "np.sort (stable)",
                  "hpu, CPU only", "hpu, GPU only", "hpu hybrid, model's choice",
                  "hpu hybrid, best grid point"):
        assert stdout.count(label) == len(SIZES), label


def _profile_file_rel_error(stored) -> float:
    """A predicted time's relative error from a profile file's ``uncertainty`` (Profile.time_rel_error)."""
    err = stored.get("uncertainty", {})
    return math.sqrt(sum(err.get(k, 0.0) ** 2 for k in ("gamma", "cpu_seconds_per_element", "contention",
                                                        "combine_gamma", "combine_rates")))


def test_the_model_is_the_profiles_plan(tiny_run):
    from hpu import _overheads, _plan, model

    out, results, profile, _ = tiny_run
    stored = json.loads((out / "profile.json").read_text())
    for key in ("p", "g", "gamma", "latency_s", "seconds_per_byte", "cpu_seconds_per_element",
                "device_shares_cpu", "source"):
        assert results["profile"][key] == stored[key] == getattr(profile, key), key
    machine = model.Machine(p=stored["p"], g=stored["g"], gamma=stored["gamma"],
                            latency_s=stored["latency_s"], seconds_per_byte=stored["seconds_per_byte"],
                            seconds_per_unit=stored["cpu_seconds_per_element"])
    contention = stored.get("measured_contention") or (2.0 if stored["device_shares_cpu"] else 1.0)
    for entry in results["model"]:
        n = entry["n"]
        # a and tmp: 2 x int32; a tie within the profile's uncertainty is settled (issue 14)
        plan = model.plan(model.Problem(a=2, b=2, cost="n", n=n), machine,
                          element_bytes=8, contention=contention,
                          rel_error=_profile_file_rel_error(stored))
        # then its fixed costs weighed as a run weighs them (a small problem runs as one task)
        plan = _plan._finish(plan, _overheads.overheads_of(profile), small=True)
        assert entry["alpha"] == plan.alpha and entry["y"] == plan.y
        assert entry["transfer_level"] == plan.transfer_level
        assert math.isclose(entry["predicted_speedup"], plan.sequential_time / plan.predicted_time)
        # the profile read with --profile is not the active one: the choice is passed explicitly
        choice = next(c for c in results["model_choice"] if c["n"] == n)
        assert choice["via"] == "explicit"
        want = (plan.split_alpha, plan.transfer_level) if plan.uses_device else (1.0, 0)
        assert (choice["alpha"], choice["y"]) == pytest.approx(want)
        assert len(entry["grid"]) == len(ALPHAS) * len(YS)
    assert results["calibration"]["sweeps"]["g"] == [list(p) for p in profile.sweeps.g]


def test_model_predictions_match_what_the_runtime_plans():
    """For the active profile (built-in in the tests), the bench's plan is ``mergesort.plan``'s."""
    from algorithms.mergesort import mergesort
    from hpu._profile import active_profile

    profile = active_profile(autocalibrate=False)
    for n in (1000, 1 << 16):
        a = np.zeros(n, np.int32)
        plan = mergesort.plan(a, np.empty_like(a), 0, n)
        mine = bench_run.model_predictions(profile, n)
        assert (mine["alpha"], mine["y"], mine["transfer_level"], mine["split_alpha"]) == (
            plan.alpha, plan.y, plan.transfer_level, plan.split_alpha)
        assert mine["predicted_s"] == plan.predicted_time


def test_figures_are_pngs_and_plot_only_redraws_them(tiny_run):
    out, results, _, _ = tiny_run
    assert sorted(results["figures"]) == sorted(FIGURES)
    for name in FIGURES:
        path = Path(results["figures"][name])
        assert path == out / f"{name}.png"
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
        path.unlink()
    assert bench_run.main(["--plot-only", "--out", str(out), "--quiet"]) == 0
    for name in FIGURES:
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_calibration_figures_without_sweeps_are_a_notice(tmp_path):
    from bench import _figures
    from hpu._profile import Profile

    builtin = Profile.builtin()
    for draw in (_figures.g_sweep, _figures.gamma):
        path = Path(draw(builtin, tmp_path / f"{draw.__name__}.png"))
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class _SwapsKeys:
    """algorithms.mergesort's function, except that hybrid runs swap the first two keys after sorting."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def run(self, a, tmp, lo, hi, **options):
        report = self._inner.run(a, tmp, lo, hi, **options)
        if options.get("device") == "hybrid" and options.get("alpha") is not None:
            a[0], a[-1] = a[-1], a[0]
        return report


def test_a_wrong_sort_stops_the_run_and_writes_nothing(tmp_path, monkeypatch, capsys):
    _skip_without_opencl()
    from algorithms.mergesort import mergesort

    monkeypatch.setattr(bench_run, "_mergesort", lambda: _SwapsKeys(mergesort))
    rc = bench_run.main(["--sizes", "1024", "--alphas", "0.5", "--ys", "1", "--repeat", "1",
                         "--calibration", "builtin", "--out", str(tmp_path), "--quiet"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "hybrid alpha=0.5 y=1 at n = 1,024 sorted wrongly" in err and "Nothing was written" in err
    assert not (tmp_path / "results.json").exists()
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize("args, message", [
    (["--alphas", "1.5"], "alpha '1.5' is not a fraction"),
    (["--ys", "0"], "y '0' is not a transfer level"),
    (["--sizes", "10"], "size 10 is too small"),
    (["--sizes", "lots"], "'lots' is not a size"),
    (["--repeat", "0"], "--repeat 0: expected an integer >= 1"),
])
def test_bad_arguments_are_refused_with_the_value_and_what_is_expected(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench_run.main(args + ["--quiet"])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_size_arguments_accept_powers_of_two():
    assert bench_run._size("2^20") == bench_run._size("2**20") == bench_run._size("1048576") == 1 << 20


# ------------------------------------------------ issue 14: configurations and projection

def test_fission_asks_for_a_sub_device_of_the_chosen_device():
    env = {}
    assert bench_run.use_fission(1, env) == "cpu@1" and env["HPU_DEVICE"] == "cpu@1"
    env = {"HPU_DEVICE": "0:0"}
    assert bench_run.use_fission(2, env) == "0:0@2"
    with pytest.raises(ValueError, match="already asks for a sub-device"):
        bench_run.use_fission(1, {"HPU_DEVICE": "cpu@1"})
    with pytest.raises(ValueError, match="compute units >= 1"):
        bench_run.use_fission(0, {})


def test_fission_zero_is_refused_on_the_command_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench_run.main(["--fission", "0", "--quiet", "--sizes", "1024"])
    assert exit_.value.code == 2 and "--fission 0" in capsys.readouterr().err


def test_projection_uses_the_published_parameters_and_prices_transfers():
    from hpu import model

    proj = bench_run.projection(5e-9, sizes=(1 << 16, 1 << 24))
    assert "PROJECTION" in proj["label"] and "PCIe 3.0 x16" in proj["transfer"]["what"]
    assert proj["transfer"]["seconds_per_byte"] == pytest.approx(1 / 12e9)
    hpu1 = proj["machines"]["HPU1"]
    assert (hpu1["p"], hpu1["g"], hpu1["inv_gamma"]) == (4, 4096, 160)
    assert (proj["machines"]["HPU2"]["g"], proj["machines"]["HPU2"]["inv_gamma"]) == (1200, 65)
    for m in proj["machines"].values():
        for row in m["rows"]:
            w, wo = row["with_transfer"], row["without_transfer"]
            assert 1.0 < w["predicted_speedup"] <= wo["predicted_speedup"] + 1e-12
    # 004 §5.2.2's worked example: alpha* ~ 0.16, y ~ 9.4 at n = 2^24 on HPU1
    row = hpu1["rows"][1]
    assert row["n"] == 1 << 24
    assert row["without_transfer"]["alpha"] == pytest.approx(0.16, abs=0.01)
    want = model.plan(model.Problem(a=2, b=2, cost="n", n=1 << 24),
                      model.Machine(p=4, g=4096, gamma=1 / 160, seconds_per_unit=5e-9),
                      element_bytes=bench_run.ELEMENT_BYTES)
    assert row["without_transfer"]["y"] == want.y
    with pytest.raises(ValueError, match="cpu_seconds_per_unit"):
        bench_run.projection(0.0)


def test_the_projection_figure_says_it_is_a_projection(tmp_path):
    from bench import _figures

    path = _figures.projection({"projection": bench_run.projection(5e-9, sizes=(1 << 16, 1 << 18))},
                               tmp_path / "p.png")
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    old = _figures.projection({}, tmp_path / "old.png")        # results from before the projection
    assert Path(old).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_default_run_names_its_configuration(tiny_run):
    _, results, _, stdout = tiny_run
    config = results["configuration"]
    assert config["kind"] == "default" and config["device_units"] is None
    assert config["label"] in stdout
    assert results["projection"]["machines"]["HPU1"]["rows"]


def test_a_heterogeneous_run_uses_a_sub_device_and_says_so(tmp_path, monkeypatch):
    """--fission 1: the profile, the runs and the figures are the sub-device's."""
    import contextlib
    import io

    import numba

    from hpu._opencl._device import devices
    from hpu.calibrate import CalibrationSettings, calibrate, save_profile

    if not any(d.usable and d.max_sub_units >= 1 for d in devices()):
        pytest.skip("no OpenCL device supports device fission here")
    monkeypatch.setenv("HPU_DEVICE", "cpu")    # --fission makes it cpu@1; restored afterwards
    before = numba.get_num_threads()
    try:
        tiny = CalibrationSettings(sum_elements=1 << 12, merge_sizes=(256, 1024),
                                   transfer_bytes=(1024, 4096, 16384), repeats=3,
                                   max_work_items=64, min_cpu_sample_s=1e-4,
                                   contention_keys=1 << 12)
        profile = calibrate("cpu@1", settings=tiny, progress=False)
        assert profile.device.endswith(" @1")
        profile_file = save_profile(profile, tmp_path / "sub-profile.json")
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            rc = bench_run.main(["--sizes", "1024", "--alphas", "0", "0.5", "--ys", "1",
                                 "--repeat", "1", "--out", str(tmp_path / "out"), "--quiet",
                                 "--fission", "1", "--profile", str(profile_file)])
        assert rc == 0
        results = json.loads((tmp_path / "out" / "results.json").read_text())
        config = results["configuration"]
        assert config["kind"] == "heterogeneous" and config["device_units"] == 1
        assert config["device_spec"] == "cpu@1" and "device fission" in config["label"]
        assert results["machine"]["opencl_device"].endswith(" @1")
        assert results["profile"]["device"] == profile.device
        assert sorted(results["figures"]) == sorted(FIGURES)
    finally:
        numba.set_num_threads(before)


def test_summary_markdown_shows_each_configuration_and_the_labelled_projection(tiny_run):
    """The README's section: both configurations, dated, with the machine, and the projection."""
    import copy

    _, results, _, _ = tiny_run
    hetero = copy.deepcopy(results)
    hetero["configuration"] = {"kind": "heterogeneous", "device_units": 1, "numba_threads": 1,
                               "device_spec": "cpu@1",
                               "label": "heterogeneous configuration (device fission): the "
                                        "device on 1 compute unit(s), Numba on 1 thread(s)"}
    md = bench_run.summary_markdown([results, hetero])
    assert f"## Results on this machine ({results['created'][:10]})" in md
    assert results["machine"]["cpu"] in md and results["machine"]["opencl_device"] in md
    assert "### Default configuration" in md and "### Heterogeneous configuration" in md
    n = max(SIZES)
    assert md.count(f"| n = 2^{n.bit_length() - 1} int32 |") == 2
    block = results["anchors"][-1]["rows"]
    model, best = block["model"]["median_s"], block["best"]["median_s"]
    assert f"The model's pick ran {model / best:.3f}x the best grid point's time" in md
    assert "docs/results/default/fig7_alpha_y.png" in md
    assert "docs/results/fission-1/fig7_alpha_y.png" in md
    assert "### Projection for a discrete GPU (not a measurement)" in md
    assert bench_run.PCIE3_X16["what"] in md
    for name, m in bench_run.PUBLISHED.items():
        assert f"- {name}: p = {m['p']}, g = {m['g']}, 1/γ = {m['inv_gamma']}: {m['what']}" in md
    with pytest.raises(ValueError, match="no results"):
        bench_run.summary_markdown([])


def test_fission_also_measures_the_default_configuration_in_a_child(tmp_path, monkeypatch):
    """The child gets the same options, the whole device (HPU_DEVICE as it was) and every core."""
    import subprocess

    seen = {}

    def fake_run(argv, env):
        seen.update(argv=argv, env=env)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    monkeypatch.setenv("HPU_DEVICE", "cpu@1")
    args = bench_run._parser().parse_args(["--quick", "--fission", "1", "--repeat", "2",
                                           "--sizes", "2^16"])
    got = bench_run._default_configuration(args, tmp_path / "d", "cpu", lambda msg: None)
    assert got == tmp_path / "d"
    argv = seen["argv"]
    assert "--fission" not in argv and "--quick" in argv
    assert argv[argv.index("--out") + 1] == str(tmp_path / "d")
    assert argv[argv.index("--repeat") + 1] == "2" and "65536" in argv
    assert seen["env"]["HPU_DEVICE"] == "cpu" and "NUMBA_NUM_THREADS" not in seen["env"]
    bench_run._default_configuration(args, tmp_path / "d", None, lambda msg: None)
    assert "HPU_DEVICE" not in seen["env"]
