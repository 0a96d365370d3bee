"""The notebooks run top to bottom, and are exactly what ``notebooks/_build.py`` writes.

Each notebook checks its own results against independent references as it
goes (NumPy's sort and counts, the paper's printed numbers, the model's
closed forms): a cell that raises fails the test with that cell's error.
They run on small sizes (``HPU_NOTEBOOK_FULL`` is removed from the
environment) in a Jupyter kernel started from *this* interpreter, through a
kernelspec written to a temporary folder, so that the kernel sees the same
hpu, Numba and PyOpenCL as the tests whatever kernels the user has installed.
The kernel inherits the session's private cache and profile folders from
``conftest.py`` (hpu's built-in profile, never a calibration).

``03_experiments.ipynb`` is run twice: once without a results file (it
measures, and saves what it measured), then on the file it saved (it loads,
the way it loads ``bench/run.py``'s output).  The saved file is checked
against the format ``notebooks/README.md`` documents.
"""
from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
from nbclient.exceptions import CellExecutionError  # noqa: E402
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "hpu-notebooks"
CELL_TIMEOUT_S = 300
EXPERIMENTS = "03_experiments.ipynb"
NEEDS_OPENCL = {"01_tour.ipynb", EXPERIMENTS}
#: notebooks with a test of their own below; every other one runs in test_notebook_runs
DEDICATED = {EXPERIMENTS}


def _notebooks() -> list[str]:
    return sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory) -> Path:
    """A kernelspec folder whose kernel runs ``sys.executable`` (this venv)."""
    from ipykernel.kernelspec import install

    prefix = tmp_path_factory.mktemp("kernelspec")
    install(kernel_name=KERNEL, prefix=str(prefix))
    return prefix / "share" / "jupyter" / "kernels"


@pytest.fixture
def notebook_env(monkeypatch, tmp_path):
    """Small sizes, and a results file that does not exist (so 03 measures by itself)."""
    monkeypatch.delenv("HPU_NOTEBOOK_FULL", raising=False)
    monkeypatch.setenv("HPU_NOTEBOOK_RESULTS", str(tmp_path / "no-such-results.json"))
    monkeypatch.setenv("HPU_NOTEBOOK_FISSION", str(tmp_path / "no-such-fission-results.json"))
    monkeypatch.delenv("HPU_NOTEBOOK_SAVE", raising=False)
    return monkeypatch


def _skip_without_opencl(name: str) -> None:
    if name not in NEEDS_OPENCL:
        return
    from hpu._opencl._device import devices

    if not any(d.usable for d in devices()):
        pytest.skip(f"{name} runs code on an OpenCL device and none is usable here")


def _execute(name: str, kernel_dir: Path):
    """Run notebooks/NAME in a fresh kernel with cwd = the repository root; return it."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    km = KernelManager(kernel_name=KERNEL,
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)]))
    client = nbclient.NotebookClient(nb, km=km, timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(ROOT)}})
    failure = None
    try:
        client.execute()
    except CellExecutionError as err:
        failure = re.sub(r"\x1b\[[0-9;]*m", "", str(err))    # without the kernel's colours
    if failure is not None:   # outside the except: one traceback, not two chained
        pytest.fail(f"{name}: a cell raised\n{failure}", pytrace=False)
    return nb


def _stdout(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []) if o.get("output_type") == "stream")


def _images(nb) -> int:
    return sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []))


# --------------------------------------------------------------------------- generation

def test_committed_notebooks_are_what_the_generator_writes(tmp_path):
    done = subprocess.run([sys.executable, str(NOTEBOOKS / "_build.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in tmp_path.glob("*.ipynb"))
    assert written == _notebooks(), "notebooks/ holds notebooks the generator does not write"
    for name in written:
        assert (tmp_path / name).read_bytes() == (NOTEBOOKS / name).read_bytes(), (
            f"notebooks/{name} differs from what notebooks/_build.py writes; "
            "edit _build.py and run `python notebooks/_build.py`")


def test_committed_notebooks_have_no_outputs():
    for name in _notebooks():
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, (name, cell.id)


# --------------------------------------------------------------------------- execution

@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.opencl] if n in NEEDS_OPENCL else [])
    for n in _notebooks() if n not in DEDICATED])
def test_notebook_runs(name, kernel_dir, notebook_env):
    _skip_without_opencl(name)
    nb = _execute(name, kernel_dir)
    assert "FULL = False" in _stdout(nb)


@pytest.mark.opencl
def test_experiments_notebook_measures_then_reads_its_measurement(kernel_dir, notebook_env,
                                                                  tmp_path):
    _skip_without_opencl(EXPERIMENTS)
    saved = tmp_path / "measured.json"
    notebook_env.setenv("HPU_NOTEBOOK_SAVE", str(saved))
    nb = _execute(EXPERIMENTS, kernel_dir)
    out = _stdout(nb)
    assert "measuring a small version here" in out and f"saved to {saved}" in out
    assert _images(nb) >= 3                       # Figures 7, 8 and 10

    # the saved file follows the documented format, checked here independently
    results = json.loads(saved.read_text())
    assert results["schema"] == 1 and results["algorithm"] == "mergesort"
    assert results["dtype"] == "int32" and results["quick"] is True
    for key in ("p", "g", "gamma", "latency_s", "seconds_per_byte", "cpu_seconds_per_element",
                "device_shares_cpu"):
        assert key in results["profile"]
    ms = results["measurements"]
    sizes = sorted({m["n"] for m in ms})
    assert sizes == [2**14, 2**16, 2**18]
    for n in sizes:
        methods = [m["method"] for m in ms if m["n"] == n]
        for method in ("sequential", "cpu", "gpu", "np.sort", "np.sort stable"):
            assert methods.count(method) == 1, (n, method)
        grid = {(m["alpha"], m["y"]) for m in ms if m["n"] == n and m["method"] == "hybrid"}
        assert grid == {(a, y) for a in (0.25, 0.5, 0.75) for y in (1, 2, 3)}
    for m in ms:
        assert len(m["seconds"]) == results["repeats"] == 3
        assert all(s > 0 for s in m["seconds"])
        assert m["median_s"] == statistics.median(m["seconds"])
        has_shares = m["method"] in ("gpu", "hybrid")
        assert (m["cpu_share_s"] is not None) == has_shares
        assert (m["device_share_s"] is not None) == has_shares

    # the same notebook reads a results file instead of measuring
    notebook_env.setenv("HPU_NOTEBOOK_RESULTS", str(saved))
    notebook_env.delenv("HPU_NOTEBOOK_SAVE")
    again = _stdout(_execute(EXPERIMENTS, kernel_dir))
    assert f"loaded {saved}" in again and "measuring" not in again
    assert "does not exist: run `python bench/run.py --quick --fission 1`" in again

    # both configurations side by side when the heterogeneous one's results exist (here the
    # same file stands in for it): each is dated, with its machine, and gets its Figure 7
    notebook_env.setenv("HPU_NOTEBOOK_FISSION", str(saved))
    both = _execute(EXPERIMENTS, kernel_dir)
    out = _stdout(both)
    assert out.count(f"measured {results['created']} on ") == 2
    assert "the model's choice" not in out or out.count("the model's choice") == 2
    assert _images(both) >= 4

    # without a heterogeneous measurement of one's own (no bench/out/fission-1, no variable),
    # the committed one the README shows stands in, dated and with its machine
    committed = ROOT / "docs" / "results" / "fission-1" / "results.json"
    if not (ROOT / "bench" / "out" / "fission-1" / "results.json").is_file():
        notebook_env.delenv("HPU_NOTEBOOK_FISSION")
        shown = _stdout(_execute(EXPERIMENTS, kernel_dir))
        created = json.loads(committed.read_text())["created"]
        assert f"showing the README's measurement, {committed}" in shown
        assert f"measured {created} on " in shown
