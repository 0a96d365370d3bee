"""hpu.figures: 004's Figure 3 drawn with Matplotlib's Agg backend.

The plotted data must be the model's own curves: y(α) on the left, the
device's percentage of the work on the right, with α* marked.
"""
from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from hpu import figures  # noqa: E402
from hpu import model as M  # noqa: E402

PROBLEM = M.Problem(2, 2, "n", 2**24)
MACHINE = M.Machine(4, 2**12, 1 / 160)


def test_plot_division_draws_two_panels_with_the_model_curves():
    alphas = np.linspace(0.01, 1.0, 40)
    fig = figures.plot_division(PROBLEM, MACHINE, alphas=alphas)
    FigureCanvasAgg(fig).draw()  # renders without a display
    left, right = fig.axes
    x, y = left.lines[0].get_data()
    assert np.allclose(x, alphas)
    assert np.allclose(y, [M.gpu_level(PROBLEM, MACHINE, a) for a in alphas])
    x, share = right.lines[0].get_data()
    total = M.total_work(PROBLEM)
    assert np.allclose(share, [100 * M.gpu_work(PROBLEM, MACHINE, a) / total for a in alphas])
    # alpha* is marked on both panels, at the model's maximum (about 0.16 and 52 %)
    best = M.advanced_division(PROBLEM, MACHINE)
    marker = right.lines[-1].get_data()
    assert marker[0][0] == pytest.approx(best.alpha) and marker[1][0] == pytest.approx(52, abs=3)
    assert left.lines[-1].get_data()[1][0] == pytest.approx(best.y)
    assert max(share) <= 100 * best.gpu_work_fraction + 1e-9


def test_plot_division_draws_into_given_axes():
    from matplotlib.figure import Figure

    fig = Figure()
    axes = fig.subplots(1, 2)
    assert figures.plot_division(PROBLEM, MACHINE, ax=axes) is fig
    assert all(len(ax.lines) >= 1 for ax in axes)


def test_plot_division_with_no_device_has_curves_but_no_marker():
    fig = figures.plot_division(M.Problem(2, 2, "n", 2**10), M.Machine(64, 16, 1 / 160))
    FigureCanvasAgg(fig).draw()
    assert [len(ax.lines) for ax in fig.axes] == [1, 1]


def test_plot_division_rejects_bad_arguments():
    with pytest.raises(ValueError, match="pair of axes"):
        figures.plot_division(PROBLEM, MACHINE, ax=object())
    with pytest.raises(ValueError, match="alphas"):
        figures.plot_division(PROBLEM, MACHINE, alphas=[])
