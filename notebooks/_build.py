"""Write hpu's notebooks from the cell lists in this file.

Why a generator and not hand-edited ``.ipynb`` files
====================================================

A notebook file is JSON with outputs, execution counts and random cell ids
mixed into the code; a change to one line shows up in review as a wall of
noise.  Here every notebook is a plain Python list of Markdown and code cells,
so a review reads the code as code, and the ``.ipynb`` files are regenerated
from it *without outputs*, byte for byte the same each time (cell ids are
derived from the notebook's name and the cell's position, not drawn at
random).  ``tests/test_notebooks.py`` checks that the committed notebooks are
exactly what this script writes, and executes them.

Usage::

    python notebooks/_build.py            # rewrite notebooks/*.ipynb
    python notebooks/_build.py --out DIR  # write them to DIR instead (the test does this)

Each notebook runs top to bottom on small sizes in well under a minute on two
cores; ``HPU_NOTEBOOK_FULL=1`` switches to the paper's sizes.
"""
from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import nbformat

__all__ = ["NOTEBOOKS", "build", "write_all", "main"]

HERE = Path(__file__).resolve().parent


def md(text: str) -> tuple[str, str]:
    return ("markdown", textwrap.dedent(text).strip("\n"))


def code(text: str) -> tuple[str, str]:
    return ("code", textwrap.dedent(text).strip("\n"))


# The first code cell of every notebook: the size switch and the repository root
# (so that paths work whether Jupyter was started in the root or in notebooks/).
SETUP = """\
import os
from pathlib import Path

FULL = os.environ.get("HPU_NOTEBOOK_FULL") == "1"   # True: the paper's sizes (minutes, not seconds)


def repository_root(start=None):
    \"\"\"The folder holding hpu's pyproject.toml: the working folder or one of its parents.\"\"\"
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() and (folder / "hpu").is_dir():
            return folder
    return here


ROOT = repository_root()
print(f"FULL = {FULL}; repository root: {ROOT}")
"""


# =============================================================================
# 01: a tour
# =============================================================================

TOUR = [
    md("""
    # A tour of hpu

    hpu runs an ordinary recursive divide-and-conquer function on the CPU's cores and an OpenCL
    device together.  This notebook walks through what a user does:

    1. write a recursive function and decorate it with `@hpu.divide_and_conquer`;
    2. ask the HPU model what it would do (`.plan`);
    3. run it on the CPU, on the device and on both (`.run`), and read the `hpu.Run` report;
    4. use a ready algorithm (`algorithms.mergesort`);
    5. look at the OpenCL C that hpu generated from the same Python source;
    6. see what hpu refuses, and what it says when it does.

    Every result is checked against NumPy.  Sizes are small so that the notebook runs in
    seconds; set `HPU_NOTEBOOK_FULL=1` in the environment for the paper's n = 2^24.
    On a machine without a GPU, the OpenCL device is PoCL on the CPU's own cores: everything
    works, but "gpu" then means "an OpenCL runtime on the same cores", so do not expect speed-ups
    from it.
    """),
    code(SETUP),
    code("""
    import warnings

    import numpy as np

    import hpu

    N = 1 << 24 if FULL else 1 << 14        # elements
    ALPHA, Y = 0.5, (4 if FULL else 2)      # the hybrid split used below: CPU share and transfer level
    rng = np.random.default_rng(2014)
    print(f"hpu {hpu.__version__}; n = {N}; OpenCL devices:")
    for d in hpu.devices():
        print(f"  {d.index}  {d.name} ({d.kind}, {d.compute_units} compute units)"
              + ("  <- default" if d.default else "") + ("" if d.usable else f"  unusable: {d.problem}"))
    """),
    md("""
    ## 1. Write a divide-and-conquer function

    The shape hpu accepts (DESIGN §2): an optional base-case guard (`if ...: ...; return`), scalar
    statements that compute the children's parameters, two or more recursive calls, and a combine.
    Helpers are plain functions in a numeric subset (loops, arithmetic, indexing; no lists, no
    allocation).  The decorator's options feed the model: `b` (each call gets 1/b of the input),
    `cost` (the divide-and-combine cost f(n) in T(n) = a·T(n/b) + f(n); `a` is read from the code)
    and `span` (the parameters bounding the slice of the array a call touches).

    Here: how many elements of a float array are negative.
    """),
    code("""
    def count_negatives_in(a, lo, hi):
        \"\"\"A helper: a plain loop over a[lo:hi].\"\"\"
        c = 0
        for i in range(lo, hi):
            if a[i] < 0.0:
                c += 1
        return c


    @hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))
    def count_negatives(a, lo, hi):
        \"\"\"The number of negative elements of a[lo:hi].\"\"\"
        if hi - lo <= 32:
            return count_negatives_in(a, lo, hi)
        mid = (lo + hi) // 2
        left = count_negatives(a, lo, mid)
        right = count_negatives(a, mid, hi)
        return left + right


    x = rng.standard_normal(N)
    expected = int(np.count_nonzero(x < 0))     # the independent reference
    print(count_negatives)
    print("a =", count_negatives.spec.a, " b =", count_negatives.spec.b,
          " cost =", count_negatives.spec.cost, " span =", count_negatives.spec.span)
    """),
    md("""
    The decorated object still behaves like the function: `.py_func` is the original (plain
    Python, recursive), `.sequential` is the original compiled by Numba on one core (the baseline
    the paper quotes speed-ups against), and calling the object runs it hybrid, with α and y
    chosen by the model from this machine's calibration profile.  (Without a profile, that first
    call calibrates once, ~20 s, and stores one; `HPU_NO_AUTOCALIBRATE=1` uses built-in values.)
    """),
    code("""
    small = x[:1000]
    assert count_negatives.py_func(small, 0, small.size) == np.count_nonzero(small < 0)
    assert count_negatives.sequential(x, 0, N) == expected

    with warnings.catch_warnings(record=True) as caught:   # the model may keep everything on the CPU
        warnings.simplefilter("always")
        value = count_negatives(x, 0, N)                    # default: device="hybrid", alpha/y from the model
    for w in caught:
        print("hpu says:", w.message)
    assert value == expected
    print(f"{value} of {N} elements are negative (NumPy: {expected})")
    """),
    md("""
    ## 2. Ask the model: `.plan`

    `.plan(*args)` says what the HPU model of the paper would do for these arguments: the share α
    of a level's tasks kept on the CPU, the level y where the device's share is handed over, the
    device's share of the work, and the integer split the runtime would use.  By default it reads
    this machine's calibration profile (`hpu calibrate`; without one, hpu's conservative built-in
    values).  `machine=` asks about another machine, here the paper's HPU1 (p = 4 cores,
    g = 4096 device threads, γ = 1/160).
    """),
    code("""
    from hpu.model import Machine

    here = count_negatives.plan(x, 0, N)
    print("this machine:", f"p={here.p:g} g={here.g:g} gamma={here.gamma:.3g}")
    print("   ", here.reason)
    print(f"    alpha* = {here.alpha:.3f}, y = {here.y:.2f}, device work = {100 * here.gpu_work_fraction:.1f} %,"
          f" integer split: level {here.transfer_level}, alpha = {here.split_alpha:.3f}")

    HPU1 = Machine(p=4, g=4096, gamma=1 / 160)
    paper = count_negatives.plan(x, 0, N, machine=HPU1)
    print("004's HPU1:  ", paper.reason)
    print(f"    alpha* = {paper.alpha:.3f}, y = {paper.y:.2f}, device work = {100 * paper.gpu_work_fraction:.1f} %,"
          f" predicted speed-up over 4 cores = {paper.speedup:.2f}x")
    """),
    md("""
    ## 3. Run it on each device and read the `Run` report

    `.run(*args, device=...)` does the same computation and returns an `hpu.Run`: the `value`, where
    it ran (`device`, `alpha`, `y`, the cut-off level `K` whose tasks solve whole subtrees,
    `cpu_tasks`/`gpu_tasks` at that level), `fallbacks` (device failures redone on the CPU),
    `transfers`, `seconds`, and one `LevelRecord(level, phase, cpu_tasks, gpu_tasks, cpu_seconds,
    gpu_seconds)` per phase of each level.

    * `device="cpu"`: Numba threads only;
    * `device="gpu"`: every leaf and combine on the OpenCL device (α = 0, y = 0);
    * `device="hybrid"`: at level `y` the first ⌈α·m⌉ of the level's m tasks stay on the CPU and
      the rest go to the device; both work at the same time; the CPU finishes levels y−1..0.

    The first call of each device compiles (Numba and the OpenCL build), so each is run twice and
    the second is reported.
    """),
    code("""
    OPTIONS = {"cpu": {}, "gpu": {}, "hybrid": {"alpha": ALPHA, "y": Y}}
    runs = {}
    for device, options in OPTIONS.items():
        count_negatives.run(x, 0, N, device=device, **options)          # warm-up: compiles
        runs[device] = count_negatives.run(x, 0, N, device=device, **options)

    for device, run in runs.items():
        assert run.value == expected, (device, run.value, expected)
        assert not run.fallbacks, run.fallbacks
        print(f"{device:>6}: value {run.value}, alpha={run.alpha}, y={run.y}, K={run.K}, "
              f"tasks at K: cpu {run.cpu_tasks} / device {run.gpu_tasks}, {1e3 * run.seconds:.2f} ms")
    """),
    md("""
    A level's phases: `count` and `fill` expand the tree on the CPU (which tasks are base cases, the
    children's parameters), `leaf` solves the subtrees at the cut-off level K, `combine` runs the
    combine of every task of a level.  The table shows the working phases of the hybrid run: who
    ran how many tasks of each level, and for how long (device times are OpenCL event times).
    """),
    code("""
    def level_table(run):
        \"\"\"The leaf and combine phases of a Run, one line each, plus the expansion's total.\"\"\"
        print(f"{run.device}: alpha={run.alpha}, y={run.y}, K={run.K}")
        print(f"  {'level':>5} {'phase':<8} {'cpu tasks':>9} {'dev tasks':>9} {'cpu ms':>9} {'dev ms':>9}")
        for r in run.levels:
            if r.phase in ("leaf", "combine"):
                print(f"  {r.level:>5} {r.phase:<8} {r.cpu_tasks:>9} {r.gpu_tasks:>9} "
                      f"{1e3 * r.cpu_seconds:>9.3f} {1e3 * r.gpu_seconds:>9.3f}")
        expand = sum(r.cpu_seconds for r in run.levels if r.phase in ("count", "fill"))
        print(f"  expansion (count + fill, levels 0..K-1, CPU): {1e3 * expand:.3f} ms")
        for t in run.transfers:
            print(f"  transfer {t.direction}: {t.bytes} bytes in {1e3 * t.seconds:.3f} ms")


    level_table(runs["hybrid"])
    """),
    md("Where each level's work ran, for the three devices side by side:"),
    code("""
    def where(run, level):
        rows = [r for r in run.levels if r.level == level and r.phase in ("leaf", "combine")]
        if not rows:
            return "-"
        cpu = sum(r.cpu_tasks for r in rows)
        gpu = sum(r.gpu_tasks for r in rows)
        return " + ".join(part for part in (f"cpu {cpu}" if cpu else "", f"dev {gpu}" if gpu else "") if part)


    deepest = max(r.level for run in runs.values() for r in run.levels)
    print(f"{'level':>5}  " + "".join(f"{d:<20}" for d in runs))
    for level in range(deepest + 1):
        print(f"{level:>5}  " + "".join(f"{where(run, level):<20}" for run in runs.values()))
    """),
    md("""
    ## 4. A ready algorithm: mergesort

    `algorithms/` holds functions written only against hpu's public API.  `algorithms.mergesort`
    is the paper's running example: the textbook recursive mergesort (insertion sort below 17
    keys), a = b = 2, f(n) = n.  It sorts `a[lo:hi]` in place using `tmp` as scratch;
    `algorithms.mergesort.sort(x)` is the convenience wrapper (a sorted copy).
    """),
    code("""
    from algorithms.mergesort import mergesort, sort

    keys = rng.integers(0, 2 * N, N).astype(np.int32)      # as in 004: uniform in [0, 2n)
    reference = np.sort(keys, kind="stable")

    sorted_runs = {}
    for device, options in OPTIONS.items():
        a, tmp = keys.copy(), np.empty_like(keys)
        mergesort.run(a, tmp, 0, N, device=device, **options)          # warm-up: compiles
        a[:] = keys
        sorted_runs[device] = mergesort.run(a, tmp, 0, N, device=device, **options)
        assert np.array_equal(a, reference), device
        print(f"{device:>6}: sorted correctly in {1e3 * sorted_runs[device].seconds:.2f} ms")

    assert np.array_equal(sort(keys, device="cpu"), reference)     # the wrapper; keys unchanged
    level_table(sorted_runs["hybrid"])
    """),
    md("""
    ## 5. The OpenCL C that hpu generated

    `.opencl_source(*args)` returns the OpenCL C for these arguments' types: helpers that keep
    Python's semantics (floor division, wrapping 64-bit integers, ...), the subtree solver (the
    recursion turned into a loop over an explicit stack: OpenCL has no recursion) and one kernel
    per phase, with one work-item per task.  The first 60 lines:
    """),
    code("""
    source = count_negatives.opencl_source(x, 0, N)
    lines = source.splitlines()
    print("\\n".join(lines[:60]))
    print(f"... {len(lines)} lines in all.  The kernels:")
    for line in lines:
        if line.startswith("__kernel"):
            print("   ", line)
    assert any(line.startswith("__kernel") for line in lines)
    """),
    md("""
    ## 6. What hpu refuses

    A function outside the accepted shape or subset is refused when it is decorated, with an
    `hpu.TranslationError` that names the file, the line, the construct and what to write
    instead.  Binary search, for instance, returns its one recursive call directly:
    """),
    code("""
    def binary_search(a, x, lo, hi):
        if hi - lo <= 1:
            return lo
        mid = (lo + hi) // 2
        if a[mid] <= x:
            return binary_search(a, x, mid, hi)
        return binary_search(a, x, lo, mid)


    try:
        hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))(binary_search)
    except hpu.TranslationError as err:
        print(err)
        print("\\nconstruct:", err.construct, "| line:", err.lineno)
        print("hint:", err.hint)
    else:
        raise AssertionError("binary_search should have been refused")
    """),
    md("A `try` in the combine is refused too: a task, and a kernel, cannot catch an exception:"),
    code("""
    def max_with_try(a, lo, hi):
        if hi - lo <= 1:
            return a[lo]
        mid = (lo + hi) // 2
        left = max_with_try(a, lo, mid)
        right = max_with_try(a, mid, hi)
        try:
            return max(left, right)
        except TypeError:
            return left


    try:
        hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))(max_with_try)
    except hpu.TranslationError as err:
        print(err)
    else:
        raise AssertionError("max_with_try should have been refused")
    """),
    md("""
    A list, on the other hand, is not refused: a function that builds lists or allocates arrays
    is *functional* (guide §10), compiled by Numba as written and run on the CPU; `run.reason`
    says so (asked for the device, `run.fallbacks` and a warning would too):
    """),
    code("""
    def max_with_list(a, lo, hi):
        if hi - lo <= 1:
            return a[lo]
        mid = (lo + hi) // 2
        parts = [max_with_list(a, lo, mid), max_with_list(a, mid, hi)]
        return max(parts)


    listed = hpu.divide_and_conquer(b=2, cost="1", span=("lo", "hi"))(max_with_list)
    y = rng.normal(size=1000)
    run = listed.run(y, 0, len(y), device="cpu")
    print(run.value, "|", run.reason)
    assert run.value == y.max()
    """),
    md("""
    Next: `02_model.ipynb` (the HPU model: the paper's Figure 3 and how α\\* and y move with the
    machine) and `03_experiments.ipynb` (the paper's experiments on this machine).
    """),
]


# =============================================================================
# 02: the model
# =============================================================================

MODEL = [
    md("""
    # The HPU model

    The paper's *Hybrid Processing Unit* is a CPU with **p** cores of speed 1 and a device with
    **g** cores of speed **γ** each (one device core does γ units of work in the time a CPU core
    does one).  A divide-and-conquer recursion T(n) = a·T(n/b) + f(n) unrolls into a tree whose
    level i holds a^i tasks of size n/b^i.

    * **Basic division** (004 §5.1): whole levels go to the faster unit; the device takes every
      level from log_a(p/γ) down.
    * **Advanced division** (004 §5.2): below a level y, a share **α** of the tasks stays on the
      CPU and the rest runs on the device *at the same time*; y(α) is where the device has got to
      when the CPU's share is down to p tasks, and α\\* maximises the device's work.

    `hpu.model` holds these as pure functions (no devices involved: this notebook runs anywhere).
    """),
    code(SETUP),
    code("""
    %matplotlib inline
    import matplotlib.pyplot as plt
    import numpy as np
    from IPython.display import display

    import hpu.figures
    from hpu import model
    from hpu.model import Machine, Problem

    POINTS = 33 if FULL else 13            # points per sweep
    HPU1 = Machine(p=4, g=4096, gamma=1 / 160)   # 004's two machines (§6.4)
    HPU2 = Machine(p=4, g=1200, gamma=1 / 65)
    MERGESORT = dict(a=2, b=2, cost="n")   # mergesort's recurrence
    """),
    md("""
    ## Figure 3: the worked example of 004 §5.2.2

    Mergesort (a = b = 2, f(n) = n) with n = 2^24 on p = 4, g = 2^12, 1/γ = 160.  Left: the level
    y(α) the device reaches while the CPU keeps its cores busy; right: the device's share of the
    total work.  The paper finds α\\* ≈ 0.16, y ≈ 9.4 ("approximately 10") and about 52 % of the
    work on the device.
    """),
    code("""
    problem = Problem(n=2**24, **MERGESORT)
    fig = hpu.figures.plot_division(problem, HPU1)
    display(fig)

    best = model.advanced_division(problem, HPU1)
    print(best.reason)
    print(f"alpha* = {best.alpha:.4f}, y = {best.y:.3f}, device work = {100 * best.gpu_work_fraction:.1f} %,"
          f" case {best.case}")
    # the paper's numbers, as printed in 004 §5.2.2
    assert abs(best.alpha - 0.16) < 0.005 and abs(best.y - 9.4) < 0.05
    assert abs(best.gpu_work_fraction - 0.52) < 0.01
    """),
    md("""
    The paper's closed forms (§5.2.2, with `a` for the misprinted `α`) give the same times as the
    general level sums hpu uses, at α\\* and y: the CPU's time T_c and the device's T_g are equal
    there (that is how y is defined).
    """),
    code("""
    closed = model.paper_closed_forms(problem, HPU1, best.alpha, best.y)
    print(f"T_c:  general {best.t_cpu:.6g}   closed form {closed.t_cpu:.6g}")
    print(f"T_g:  general {best.t_gpu:.6g}   closed form (case iii) {closed.t_gpu_mixed:.6g}")
    assert np.isclose(best.t_cpu, closed.t_cpu, rtol=1e-9)
    assert np.isclose(best.t_gpu, closed.t_gpu_mixed, rtol=1e-9)
    assert np.isclose(best.t_cpu, best.t_gpu, rtol=1e-9)
    """),
    md("""
    ## How α\\* and y move with p, g, γ and n

    One parameter at a time, the others at HPU1's values and n = 2^24.
    """),
    code("""
    def division(n=2**24, p=4, g=4096, gamma=1 / 160):
        return model.advanced_division(Problem(n=int(n), **MERGESORT), Machine(p=p, g=g, gamma=gamma))


    SWEEPS = {
        "p (CPU cores)": ("p", np.unique(np.round(np.geomspace(1, 64, POINTS)))),
        "g (device cores)": ("g", np.unique(np.round(np.geomspace(256, 65536, POINTS)))),
        "1/γ (device core slowness)": ("gamma", 1 / np.geomspace(10, 1000, POINTS)),
        "n (input size)": ("n", np.unique(np.round(np.geomspace(2**14, 2**30, POINTS)))),
    }
    results = {}
    for label, (name, values) in SWEEPS.items():
        divs = [division(**{name: v}) for v in values]
        shown = 1 / values if name == "gamma" else values
        results[label] = (shown, divs)

    fig, axes = plt.subplots(3, 4, figsize=(15, 8.5), sharex="col", layout="constrained")
    for col, (label, (shown, divs)) in enumerate(results.items()):
        axes[0, col].plot(shown, [d.alpha for d in divs], "o-", color="C0")
        axes[1, col].plot(shown, [d.y for d in divs], "o-", color="C1")
        axes[2, col].plot(shown, [100 * d.gpu_work_fraction for d in divs], "o-", color="C2")
        axes[2, col].set_xlabel(label)
        for row in range(3):
            axes[row, col].set_xscale("log", base=2)
            axes[row, col].grid(alpha=0.3)
    axes[0, 0].set_ylabel("α* (CPU share)")
    axes[1, 0].set_ylabel("y (transfer level)")
    axes[2, 0].set_ylabel("device work (%)")
    fig.suptitle("Advanced division for mergesort: one parameter varied, the others at HPU1, n = 2^24")
    plt.show()
    """),
    md("""
    What the sweeps show (and the checks below confirm):

    * **more CPU cores** → the CPU keeps a larger share (α\\* grows), the hand-over level y moves
      down the tree (a larger y is a level nearer the leaves) and the device's work falls; once p ≥ γ·g (the device is no faster than the
      CPU in total) everything stays on the CPU (α\\* = 1, y = L);
    * **more device cores** → α\\* falls and the device takes more of the work; y hardly moves;
    * **slower device cores** (larger 1/γ) → α\\* grows, y moves down the tree and the device's
      share falls;
    * **larger n** → the tree is deeper: the device's share grows, α\\* falls slowly, and y moves
      down the tree by well under a level per doubling of n.
    """),
    code("""
    def column(label, field):
        return np.array([getattr(d, field) for d in results[label][1]])

    alpha_p = column("p (CPU cores)", "alpha")
    assert np.all(np.diff(alpha_p) >= -1e-9), "alpha* should not fall as cores are added"
    work_g = column("g (device cores)", "gpu_work_fraction")
    assert np.all(np.diff(work_g) >= -1e-9), "the device's share should not fall as it gets cores"
    work_gamma = column("1/γ (device core slowness)", "gpu_work_fraction")
    assert np.all(np.diff(work_gamma) <= 1e-9), "the device's share should not grow as it gets slower"
    y_n = column("n (input size)", "y")
    assert np.all(np.diff(y_n) >= -1e-9), "y should move down the tree as it gets deeper"
    work_n = column("n (input size)", "gpu_work_fraction")
    assert np.all(np.diff(work_n) >= -1e-9), "the device's share should grow with n"
    print("the trends above hold at every sweep point")
    """),
    md("""
    ## Basic against advanced division

    The basic division gives the device every level from log_a(p/γ) down and leaves the CPU idle
    meanwhile; the advanced one keeps the CPU busy on its share α.  Below: the device's share of
    the work and the predicted speed-up over one core (the simulator's time of the integer split
    each would run), for both of the paper's machines.  004 reports 4.54x and 4.35x measured
    against 5.47x and 5.7x predicted at n = 2^24; hpu's simulator predicts somewhat more (the
    table below).
    """),
    code("""
    sizes = [2**k for k in range(14, 31, 1 if FULL else 2)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
    for name, machine, color in (("HPU1", HPU1, "C0"), ("HPU2", HPU2, "C3")):
        for strategy, style in (("advanced", "o-"), ("basic", "s--")):
            plans = [model.plan(Problem(n=n, **MERGESORT), machine, strategy) for n in sizes]
            left.plot(sizes, [100 * q.gpu_work_fraction for q in plans], style, color=color,
                      label=f"{name}, {strategy}")
            right.plot(sizes, [q.sequential_time / q.predicted_time for q in plans], style,
                       color=color, label=f"{name}, {strategy}")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n")
        ax.grid(alpha=0.3)
        ax.legend()
    left.set_ylabel("device work (%)")
    right.set_ylabel("predicted speed-up over one core")
    plt.show()

    print(f"{'n = 2^24':<10} {'strategy':<9} {'alpha':>6} {'y':>6} {'device %':>9} {'speed-up':>9}")
    for name, machine in (("HPU1", HPU1), ("HPU2", HPU2)):
        for strategy in ("basic", "advanced"):
            q = model.plan(Problem(n=2**24, **MERGESORT), machine, strategy)
            print(f"{name:<10} {strategy:<9} {q.alpha:>6.3f} {q.y:>6.2f} {100 * q.gpu_work_fraction:>9.1f}"
                  f" {q.sequential_time / q.predicted_time:>8.2f}x")
            if strategy == "basic":
                basic_time = q.predicted_time
            else:
                assert q.predicted_time <= basic_time * (1 + 1e-9), "advanced should not be slower"
    """),
    md("""
    ## The simulator's best integer split

    The continuous α\\* and y are what the paper reports, but a run splits a whole number of tasks
    at a whole level, cuts the tree off at a level K whose tasks solve whole subtrees, and pays
    for transfers.  `model.simulate` predicts the time of one such split and `model.best_split`
    searches them; this is what hpu's runtime uses.  Every point below is a split the search
    evaluated, coloured by its predicted time relative to the best.
    """),
    code("""
    search = model.best_split(problem, HPU1)
    chosen = search.best
    print(f"best integer split: level y = {chosen.y}, {chosen.cpu_tasks} of {2**chosen.y} tasks on the CPU "
          f"(alpha = {chosen.alpha:.4f}), cut-off K = {chosen.K}")
    print(f"continuous optimum: alpha* = {best.alpha:.4f}, y = {best.y:.3f}")

    ys = np.array([c.y for c in search.candidates])
    alphas = np.array([c.alpha for c in search.candidates])
    rel = np.array([c.total_time for c in search.candidates]) / chosen.total_time
    # an independent check of the search: no split it evaluated beats the one it chose
    assert rel.min() >= 1 - 1e-12
    # and a few hand-picked splits near the paper's optimum are no better either
    for y in (8, 9, 10, 11):
        for alpha in (0.125, 0.15625, 0.1875, 0.25):
            assert model.simulate(problem, HPU1, alpha=alpha, y=y).total_time >= chosen.total_time * (1 - 1e-12)

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.2), layout="constrained")
    keep = rel < 2
    sc = left.scatter(alphas[keep], ys[keep], c=rel[keep], cmap="viridis_r", s=12)
    fig.colorbar(sc, ax=left, label="predicted time / best")
    left.plot([chosen.alpha], [chosen.y], "r*", ms=14, label="best integer split")
    left.plot([best.alpha], [best.y], "kx", ms=10, mew=2, label="continuous α*, y")
    left.set_xlabel("α (CPU share)")
    left.set_ylabel("y (transfer level)")
    left.legend(loc="upper center")

    colors = {"cpu": "C0", "device": "C3", "link": "0.5"}
    rows = {"cpu": 0, "link": 1, "device": 2}
    for ph in model.simulate(problem, HPU1, alpha=chosen.alpha, y=chosen.y).phases:
        if ph.end <= ph.start:
            continue                      # no transfer cost in model units: the link phases are empty
        right.barh(rows[ph.unit], ph.end - ph.start, left=ph.start, color=colors[ph.unit])
        right.text(ph.start, rows[ph.unit] + 0.42, ph.name, fontsize=8)
    right.set_yticks(list(rows.values()), list(rows))
    right.set_xlabel(f"time ({chosen.time_unit}s of f-work on one CPU core)")
    right.set_title("the phases of the best split")
    plt.show()
    """),
    md("""
    ## This machine

    The same questions for the machine this notebook runs on, from its calibration profile
    (`hpu calibrate` measures one; without one, hpu's conservative built-in values are used and
    nothing is measured here).  When the OpenCL device is PoCL on the CPU's own cores, the device
    and the CPU compete for the same cores: hpu's runtime then plans with the profile's contention
    factor (measured by `hpu calibrate`: how much both sides slow while both compute), as done here.
    """),
    code("""
    from hpu.calibrate import active_profile

    profile = active_profile(autocalibrate=False)
    here, contention = profile.machine(), profile.contention   # what hpu's runtime plans with
    print(f"profile ({profile.source}): {profile.device}; p = {profile.p}, g = {profile.g}, "
          f"gamma = {profile.gamma:.3g}, contention = {contention:g}")
    for n in (2**16, 2**20, 2**24):
        q = model.plan(Problem(n=n, **MERGESORT), here, element_bytes=8, contention=contention)
        split = (f"split at level {q.transfer_level}, alpha = {q.split_alpha:.3f}" if q.uses_device
                 else "everything on the CPU")
        print(f"n = 2^{n.bit_length() - 1}: {split}; predicted {1e3 * q.predicted_time:.2f} ms "
              f"(CPU alone {1e3 * q.cpu_only_time:.2f} ms)")
    print(q.reason)
    """),
]


# =============================================================================
# 03: the experiments
# =============================================================================

EXPERIMENTS = [
    md("""
    # The paper's experiments on this machine

    004 measured its hybrid mergesort on two machines (HPU1: a 4-core Core 2 with a Radeon
    HD 5970; HPU2: an AMD A6 APU) and reports:

    * the best speed-ups over the one-core recursive mergesort at n = 2^24: **4.54x** (HPU1) and
      **4.35x** (HPU2), against **5.47x** and **5.7x** predicted by its model;
    * **Figure 7**: speed-up against α, one curve per transfer level y (HPU1, n = 2^24); best near
      the model's α ≈ 0.16, y ≈ 10;
    * **Figure 8**: speed-up against n for the best (α, y), with the model's prediction and the
      ratio of device time to CPU time;
    * **Figure 10**: the best measured α and y against the model's, per n.

    This notebook draws the same figures for *this* machine, beside the paper's.  It reads the
    raw data from `RESULTS` (written by `bench/run.py`; the format is in `notebooks/README.md`
    and below).  When that file does not exist it measures a small version itself with hpu's
    public API (mergesort on int32 keys, n up to 2^18; `HPU_NOTEBOOK_FULL=1` for up to 2^24).
    """),
    code(SETUP),
    code("""
    %matplotlib inline
    import json
    import math
    import platform
    import statistics
    import time
    from datetime import datetime, timezone

    import matplotlib.pyplot as plt
    import numpy as np

    import hpu
    from hpu import model
    from hpu.model import Machine, Problem

    # where to read bench results from; HPU_NOTEBOOK_RESULTS overrides (the tests use it)
    RESULTS = Path(os.environ.get("HPU_NOTEBOOK_RESULTS") or ROOT / "bench" / "out" / "results.json")
    # where to save this notebook's own measurement, if anywhere
    SAVE = os.environ.get("HPU_NOTEBOOK_SAVE") or None

    # what the notebook measures when RESULTS does not exist
    SIZES = [2**k for k in (range(16, 25, 2) if FULL else (14, 16, 18))]
    ALPHAS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9] if FULL else [0.25, 0.5, 0.75]
    LEVELS = [1, 2, 3, 4, 5, 6] if FULL else [1, 2, 3]
    REPEATS = 3

    # 004's numbers (§6.4-6.5)
    PAPER = {
        "HPU1": {"machine": Machine(p=4, g=4096, gamma=1 / 160), "best_speedup": 4.54, "model_speedup": 5.47},
        "HPU2": {"machine": Machine(p=4, g=1200, gamma=1 / 65), "best_speedup": 4.35, "model_speedup": 5.7},
    }
    PAPER_N = 2**24
    MERGESORT = dict(a=2, b=2, cost="n")
    """),
    md("""
    ## The results format

    A plain JSON dict, the same whether `bench/run.py` or this notebook wrote it
    (`notebooks/README.md` has the same description):

    ```
    {
      "schema": 1,
      "created": "2026-01-31T12:00:00+00:00",      # UTC, ISO 8601
      "writer": "bench/run.py" | "notebooks/03_experiments.ipynb",
      "quick": true,                                # small sizes
      "machine": {"cpu": str, "cores": int, "opencl_device": str, "opencl_platform": str,
                  "opencl_driver": str, "python": str, "packages": {name: version}},
      "profile": {"p": int, "g": int, "gamma": float, "latency_s": float,
                  "seconds_per_byte": float, "cpu_seconds_per_element": float,
                  "device_shares_cpu": bool, "source": "measured" | "builtin"},
      "algorithm": "mergesort", "dtype": "int32", "repeats": 3,
      "measurements": [
        {"n": int,
         "method": "sequential" | "cpu" | "gpu" | "hybrid" | "np.sort" | "np.sort stable",
         "alpha": float | null, "y": int | null,   # the requested split (hybrid only)
         "seconds": [float, ...],                  # each timed repeat, after one warm-up
         "median_s": float,
         "cpu_share_s": float | null,              # gpu/hybrid: median over repeats of the CPU's
         "device_share_s": float | null}           #   and the device's seconds in levels >= y
      ]
    }
    ```

    Every n needs a `"sequential"` record (the one-core baseline: `.sequential`, the recursive
    function compiled by Numba) and at least one `"hybrid"` record; the others are drawn when
    present.  The model's predictions are computed here from `"profile"`.  Extra keys are
    ignored.
    """),
    code("""
    METHODS = ("sequential", "cpu", "gpu", "hybrid", "np.sort", "np.sort stable")


    def validate_results(results, where="results"):
        \"\"\"Raise ValueError naming the first thing in ``results`` that does not match the format.\"\"\"
        def need(cond, what):
            if not cond:
                raise ValueError(f"{where}: {what}; see notebooks/README.md for the format")

        need(isinstance(results, dict), f"expected a JSON object, got {type(results).__name__}")
        need(results.get("schema") == 1, f"schema is {results.get('schema')!r}, expected 1")
        for key in ("machine", "profile", "measurements"):
            need(key in results, f"the key {key!r} is missing")
        for key in ("p", "g", "gamma", "latency_s", "seconds_per_byte", "cpu_seconds_per_element",
                    "device_shares_cpu"):
            need(key in results["profile"], f"profile.{key} is missing")
        ms = results["measurements"]
        need(isinstance(ms, list) and ms, "measurements is empty")
        for i, m in enumerate(ms):
            for key in ("n", "method", "alpha", "y", "seconds", "median_s"):
                need(key in m, f"measurements[{i}] has no {key!r}")
            need(m["method"] in METHODS, f"measurements[{i}].method is {m['method']!r}, expected one of {METHODS}")
            need(isinstance(m["median_s"], (int, float)) and m["median_s"] > 0 and m["seconds"],
                 f"measurements[{i}] has no positive time (median_s = {m['median_s']!r})")
            if m["method"] == "hybrid":
                need(m["alpha"] is not None and m["y"] is not None, f"measurements[{i}] is hybrid without alpha/y")
        for n in sorted({m["n"] for m in ms}):
            methods = {m["method"] for m in ms if m["n"] == n}
            need("sequential" in methods, f"n = {n} has no 'sequential' record (the baseline)")
            need("hybrid" in methods, f"n = {n} has no 'hybrid' record")
        return results
    """),
    md("""
    The measurement, when there is no results file: for each n, random int32 keys uniform in
    [0, 2n) as in 004; each method and each (α, y) of the grid runs once untimed (compilation,
    PoCL's per-shape kernel specialisation) and then `REPEATS` times; every run's output is
    checked against `np.sort`.
    """),
    code("""
    def share_seconds(run):
        \"\"\"The CPU's and the device's seconds in the levels both work on (y and below).\"\"\"
        y = run.y or 0
        rows = [r for r in run.levels if r.level >= y and r.phase in ("leaf", "combine")]
        return sum(r.cpu_seconds for r in rows), sum(r.gpu_seconds for r in rows)


    def machine_facts():
        import numba
        import pyopencl
        import scipy

        device = next((d for d in hpu.devices() if d.default), None)
        cpu = platform.processor() or platform.machine()
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        return {
            "cpu": cpu, "cores": os.cpu_count(),
            "opencl_device": device.name if device else None,
            "opencl_platform": device.platform if device else None,
            "opencl_driver": device.driver_version if device else None,
            "python": platform.python_version(),
            "packages": {"hpu": hpu.__version__, "numpy": np.__version__, "numba": numba.__version__,
                         "pyopencl": pyopencl.VERSION_TEXT, "scipy": scipy.__version__},
        }


    def measure(sizes, alphas, levels, repeats=3, seed=0):
        \"\"\"Time mergesort with hpu's public API; return the results dict described above.\"\"\"
        from algorithms.mergesort import mergesort
        from hpu.calibrate import active_profile

        rng = np.random.default_rng(seed)
        records = []
        for n in sizes:
            keys = rng.integers(0, 2 * n, n).astype(np.int32)
            expected = np.sort(keys, kind="stable")
            a, tmp = np.empty_like(keys), np.empty_like(keys)
            configs = [("sequential", None, None), ("cpu", None, None), ("gpu", None, None),
                       ("np.sort", None, None), ("np.sort stable", None, None)]
            configs += [("hybrid", al, y) for y in levels for al in alphas]
            for method, alpha, y in configs:
                seconds, shares = [], []
                for rep in range(repeats + 1):            # the first is the warm-up
                    np.copyto(a, keys)
                    out, run = a, None                     # what to check; the Run, if any
                    t0 = time.perf_counter()
                    if method == "sequential":
                        mergesort.sequential(a, tmp, 0, n)
                    elif method == "np.sort":
                        out = np.sort(keys)
                    elif method == "np.sort stable":
                        out = np.sort(keys, kind="stable")
                    elif method == "hybrid":
                        run = mergesort.run(a, tmp, 0, n, device="hybrid", alpha=alpha, y=y)
                    else:
                        run = mergesort.run(a, tmp, 0, n, device=method)
                    elapsed = time.perf_counter() - t0
                    if not np.array_equal(out, expected):
                        raise AssertionError(f"{method} (alpha={alpha}, y={y}) sorted n = {n} wrongly")
                    if run is not None and run.fallbacks:
                        raise AssertionError(f"{method} fell back to the CPU: {run.fallbacks}")
                    if rep:
                        seconds.append(elapsed)
                        if run is not None:
                            shares.append(share_seconds(run))
                record = {"n": n, "method": method, "alpha": alpha, "y": y, "seconds": seconds,
                          "median_s": statistics.median(seconds), "cpu_share_s": None, "device_share_s": None}
                if method in ("gpu", "hybrid"):
                    record["cpu_share_s"] = statistics.median(s[0] for s in shares)
                    record["device_share_s"] = statistics.median(s[1] for s in shares)
                records.append(record)
            print(f"n = 2^{n.bit_length() - 1}: {len(configs)} configurations measured")
        profile = active_profile(autocalibrate=False)
        return {
            "schema": 1,
            "created": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
            "writer": "notebooks/03_experiments.ipynb",
            "quick": not FULL,
            "machine": machine_facts(),
            "profile": {k: getattr(profile, k) for k in
                        ("p", "g", "gamma", "latency_s", "seconds_per_byte", "cpu_seconds_per_element",
                         "device_shares_cpu", "source", "contention")},
            "algorithm": "mergesort", "dtype": "int32", "repeats": repeats,
            "measurements": records,
        }
    """),
    code("""
    if RESULTS.is_file():
        results = validate_results(json.loads(RESULTS.read_text()), where=str(RESULTS))
        print(f"loaded {RESULTS} ({results.get('writer', '?')}, {results.get('created', '?')})")
    else:
        print(f"{RESULTS} does not exist: measuring a small version here")
        t0 = time.perf_counter()
        results = validate_results(measure(SIZES, ALPHAS, LEVELS, REPEATS))
        print(f"measured in {time.perf_counter() - t0:.1f} s")
        if SAVE:
            Path(SAVE).write_text(json.dumps(results, indent=1) + "\\n")
            print(f"saved to {SAVE}")
    facts = results["machine"]
    print(f"machine: {facts.get('cpu')}, {facts.get('cores')} cores; OpenCL: {facts.get('opencl_device')} "
          f"({facts.get('opencl_driver')}); profile: {results['profile'].get('source', '?')}")
    """),
    md("""
    ## The model's predictions for this machine

    From the profile stored with the results: the continuous α\\*, y (004 §5.2) and the integer
    split hpu's runtime would choose, with its predicted time.  As hpu's runtime does, a device
    that shares the CPU's cores (PoCL) is planned with the profile's contention factor, and a
    task moves 8 bytes per element (`a` and `tmp`).
    """),
    code("""
    prof = results["profile"]


    def machine_of(prof):
        # the model's machine from a results file's profile (combine rates where measured)
        unit = prof["cpu_seconds_per_element"]
        return Machine(p=prof["p"], g=prof["g"], gamma=prof["gamma"], latency_s=prof["latency_s"],
                       seconds_per_byte=prof["seconds_per_byte"], seconds_per_unit=unit,
                       combine_factors=tuple((b, r / unit) for b, r in prof.get("combine_rates") or ()),
                       combine_gamma=prof.get("combine_gamma"))


    HERE = machine_of(prof)
    CONTENTION = prof.get("contention", 2.0 if prof["device_shares_cpu"] else 1.0)

    ms = results["measurements"]
    sizes = sorted({m["n"] for m in ms})


    def records(n, method):
        return [m for m in ms if m["n"] == n and m["method"] == method]


    def median(n, method):
        rs = records(n, method)
        return rs[0]["median_s"] if rs else math.nan


    plans = {n: model.plan(Problem(n=n, **MERGESORT), HERE, element_bytes=8, contention=CONTENTION)
             for n in sizes}
    best = {n: min(records(n, "hybrid"), key=lambda m: m["median_s"]) for n in sizes}

    print(f"{'n':>8} {'one core':>10} {'np.sort':>9} {'hpu cpu':>9} {'hpu gpu':>9} {'best hybrid':>12}"
          f" {'(alpha, y)':>12} {'speed-up':>9} {'model':>7}")
    for n in sizes:
        seq = median(n, "sequential")
        b = best[n]
        print(f"{'2^%d' % (n.bit_length() - 1):>8} {1e3 * seq:>8.2f}ms {1e3 * median(n, 'np.sort'):>7.2f}ms"
              f" {1e3 * median(n, 'cpu'):>7.2f}ms {1e3 * median(n, 'gpu'):>7.2f}ms {1e3 * b['median_s']:>10.2f}ms"
              f" {'(%.2f, %d)' % (b['alpha'], b['y']):>12} {seq / b['median_s']:>8.2f}x"
              f" {plans[n].sequential_time / plans[n].predicted_time:>6.2f}x")
    print(f"\\n004 at n = 2^24: best {PAPER['HPU1']['best_speedup']}x (HPU1) and {PAPER['HPU2']['best_speedup']}x (HPU2)"
          f" over one core; its model predicted {PAPER['HPU1']['model_speedup']}x and {PAPER['HPU2']['model_speedup']}x")
    """),
    md("""
    ## Figure 7: speed-up against α, one curve per transfer level y

    Left, the paper's machine HPU1 at n = 2^24 as hpu's model predicts it (the simulator's time
    of each integer split).  004's measured curves differ little between levels, rise from y = 7,
    fall again at y = 11, and are slightly better near the model's α ≈ 0.16.  Right, this machine at the largest measured n: measured (solid) and predicted by
    the model from this machine's profile (dashed).
    """),
    code("""
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.3), layout="constrained")
    paper_problem = Problem(n=PAPER_N, **MERGESORT)
    hpu1 = PAPER["HPU1"]["machine"]
    grid = np.linspace(0.02, 0.6, 59)
    seq_units = model.total_work(paper_problem)
    for k, y in enumerate(range(7, 12)):
        speed = [seq_units / model.simulate(paper_problem, hpu1, alpha=a, y=y).total_time for a in grid]
        left.plot(grid, speed, color=f"C{k}", label=f"y = {y}")
    left.axvline(model.advanced_division(paper_problem, hpu1).alpha, color="0.5", ls=":", label="model α*")
    left.set_title("004's HPU1, n = 2^24 (model)")

    n = sizes[-1]
    seq = median(n, "sequential")
    problem = Problem(n=n, **MERGESORT)
    for k, y in enumerate(sorted({m["y"] for m in records(n, "hybrid")})):
        rs = sorted((m for m in records(n, "hybrid") if m["y"] == y), key=lambda m: m["alpha"])
        xs = [m["alpha"] for m in rs]
        right.plot(xs, [seq / m["median_s"] for m in rs], "o-", color=f"C{k}", label=f"y = {y}")
        predicted = [plans[n].sequential_time
                     / model.simulate(problem, HERE, alpha=a, y=y, element_bytes=8, contention=CONTENTION).total_time
                     for a in xs]
        right.plot(xs, predicted, "--", color=f"C{k}", alpha=0.6)
    if records(n, "cpu"):
        right.axhline(seq / median(n, "cpu"), color="k", lw=0.8, label="hpu, CPU only")
    right.set_title(f"this machine, n = 2^{n.bit_length() - 1} (solid: measured, dashed: model)")
    for ax in (left, right):
        ax.set_xlabel("α (CPU share of the transfer level's tasks)")
        ax.set_ylabel("speed-up over one core")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    plt.show()
    """),
    md("""
    ## Figure 8: speed-up against n

    The best measured (α, y) at each n (red), the model's predicted speed-up (green), and the
    ratio of the device's time to the CPU's time in the levels both work on (blue, right axis:
    close to 1 when the split is balanced; 004 found its best points where it is closest to 1).
    The other anchors: hpu on the CPU alone and on the device alone.  004's best speed-ups at
    n = 2^24 are marked for reference.
    """),
    code("""
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    seqs = np.array([median(n, "sequential") for n in sizes])
    ax.plot(sizes, seqs / np.array([best[n]["median_s"] for n in sizes]), "o-", color="C3",
            label="hybrid, best (α, y) measured")
    ax.plot(sizes, [plans[n].sequential_time / plans[n].predicted_time for n in sizes], "s--", color="C2",
            label="model (this machine's profile)")
    for method, style in (("cpu", "^:"), ("gpu", "v:")):
        if all(records(n, method) for n in sizes):
            ax.plot(sizes, seqs / np.array([median(n, method) for n in sizes]), style, color="0.4",
                    label=f"hpu {method} only", alpha=0.8)
    for name, colour in (("HPU1", "C0"), ("HPU2", "C1")):
        ax.plot([PAPER_N], [PAPER[name]["best_speedup"]], "*", ms=12, color=colour,
                label=f"004 {name}: {PAPER[name]['best_speedup']}x")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n")
    ax.set_ylabel("speed-up over one core")
    ax.grid(alpha=0.3)
    ratio = [best[n]["device_share_s"] / best[n]["cpu_share_s"]
             if best[n].get("cpu_share_s") and best[n].get("device_share_s") is not None else math.nan
             for n in sizes]
    twin = ax.twinx()
    twin.plot(sizes, ratio, "d-", color="C0", alpha=0.7, label="device time / CPU time")
    twin.set_ylabel("device time / CPU time (best split)", color="C0")
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="upper left")
    plt.show()
    """),
    md("""
    ## Figure 10: the best measured α and y against the model's

    Left pair: this machine, per measured n: the (α, y) of the fastest measured run, the model's
    continuous α\\*, y, and the integer split hpu's runtime would choose (the measured values can
    only be points of the measured grid).  Right pair: 004's HPU1 as hpu's model predicts it
    (004's green points), for the paper's range of n.
    """),
    code("""
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), layout="constrained")
    axes[0].plot(sizes, [best[n]["alpha"] for n in sizes], "o", color="C3", ms=8, label="best measured")
    axes[0].plot(sizes, [plans[n].alpha for n in sizes], "s", color="C2", label="model α*")
    axes[0].plot(sizes, [plans[n].split_alpha for n in sizes], "x", color="k", label="runtime's split")
    axes[1].plot(sizes, [best[n]["y"] for n in sizes], "o", color="C3", ms=8, label="best measured")
    axes[1].plot(sizes, [plans[n].y if plans[n].alpha < 1 else math.nan for n in sizes], "s", color="C2",
                 label="model y")
    axes[1].plot(sizes, [plans[n].transfer_level if plans[n].transfer_level is not None else math.nan
                         for n in sizes], "x", color="k", label="runtime's level")
    axes[0].set_title("this machine: α")
    axes[1].set_title("this machine: y")
    if all(plans[n].alpha >= 1 for n in sizes):
        axes[1].text(0.03, 0.5, "model: everything on the CPU\\n(α* = 1, no transfer level)",
                     transform=axes[1].transAxes, fontsize=9, va="center")

    paper_sizes = [2**k for k in range(16, 27, 1 if FULL else 2)]
    paper_plans = [model.plan(Problem(n=n, **MERGESORT), hpu1) for n in paper_sizes]
    axes[2].plot(paper_sizes, [q.alpha for q in paper_plans], "s", color="C2", label="model α*")
    axes[2].plot(paper_sizes, [q.split_alpha for q in paper_plans], "x", color="k", label="integer split")
    axes[3].plot(paper_sizes, [q.y for q in paper_plans], "s", color="C2", label="model y")
    axes[3].plot(paper_sizes, [q.transfer_level for q in paper_plans], "x", color="k", label="integer level")
    axes[2].set_title("004's HPU1 (model): α")
    axes[3].set_title("004's HPU1 (model): y")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    plt.show()
    for n in sizes:
        print(f"n = 2^{n.bit_length() - 1}: {plans[n].reason}")
    """),
    md("""
    ## Both configurations side by side

    On a machine whose only OpenCL device is PoCL on the CPU's own cores, the default
    configuration (every core for Numba beside the whole device) adds no capacity, and the
    model keeps everything on the CPU.  The heterogeneous configuration (issue 14) gives the
    device a sub-device of its own cores by OpenCL device fission and Numba the rest:
    `python bench/run.py --quick --fission 1` measures both, the default one into
    `bench/out/results.json` and the sub-device's into `bench/out/fission-1/results.json`
    (`HPU_NOTEBOOK_FISSION` names another file).  Without a measurement of your own, the one
    the README shows (`docs/results/fission-1/results.json`, committed with the project) stands
    in for it.  For each, dated and with its machine: the anchors at the largest n and Figure 7
    there, measured (solid) against the model (dashed).
    """),
    code("""
    FISSION = Path(os.environ.get("HPU_NOTEBOOK_FISSION")
                   or ROOT / "bench" / "out" / "fission-1" / "results.json")
    COMMITTED = ROOT / "docs" / "results" / "fission-1" / "results.json"
    if not os.environ.get("HPU_NOTEBOOK_FISSION") and not FISSION.is_file() and COMMITTED.is_file():
        print(f"{FISSION} does not exist: showing the README's measurement, {COMMITTED}")
        FISSION = COMMITTED
    configs = [("default", results)]
    if FISSION.is_file():
        configs.append(("heterogeneous", validate_results(json.loads(FISSION.read_text()), where=str(FISSION))))
    else:
        print(f"{FISSION} does not exist: run `python bench/run.py --quick --fission 1` for the "
              "heterogeneous configuration")

    fig, axes = plt.subplots(1, len(configs), figsize=(6.5 * len(configs), 4.3), layout="constrained",
                             squeeze=False)
    for ax, (kind, res) in zip(axes[0], configs):
        label = res.get("configuration", {}).get("label", f"{kind} configuration")
        mach, cont = machine_of(res["profile"]), res["profile"].get("contention", 1.0)
        m = res["machine"]
        rs_all = res["measurements"]
        n = max(r["n"] for r in rs_all)
        med = {r["method"]: r["median_s"] for r in rs_all if r["n"] == n and r["method"] != "hybrid"}
        hyb = [r for r in rs_all if r["n"] == n and r["method"] == "hybrid"]
        best_r = min(hyb, key=lambda r: r["median_s"])
        seq = med["sequential"]
        print(f"{label}\\n  measured {res['created']} on {m.get('cpu')} ({m.get('cores')} cores), "
              f"OpenCL {m.get('opencl_device')}; n = 2^{n.bit_length() - 1}")
        for method in ("cpu", "gpu"):
            if method in med:
                print(f"  hpu {method} only: {med[method]:.4f} s ({seq / med[method]:.2f}x over one core)")
        print(f"  best grid point (alpha = {best_r['alpha']:.3g}, y = {best_r['y']}): "
              f"{best_r['median_s']:.4f} s ({seq / best_r['median_s']:.2f}x)")
        choice = [c for c in res.get("model_choice", []) if c["n"] == n]
        if choice:
            c = choice[0]
            print(f"  the model's choice (alpha = {c['alpha']:.3g}, y = {c['y']}): {c['median_s']:.4f} s "
                  f"({seq / c['median_s']:.2f}x; {c['median_s'] / best_r['median_s']:.3f}x the best point's time)")
        problem = Problem(n=n, **MERGESORT)
        seq_model = model.total_work(problem) * mach.unit_scale
        for k, y in enumerate(sorted({r["y"] for r in hyb})):
            rs = sorted((r for r in hyb if r["y"] == y), key=lambda r: r["alpha"])
            xs = [r["alpha"] for r in rs]
            ax.plot(xs, [seq / r["median_s"] for r in rs], "o-", color=f"C{k}", label=f"y = {y}")
            ax.plot(xs, [seq_model / model.simulate(problem, mach, alpha=a, y=y, element_bytes=8,
                                                    contention=cont).total_time for a in xs],
                    "--", color=f"C{k}", alpha=0.6)
        ax.set_title(f"{kind}, n = 2^{n.bit_length() - 1}, {res['created'][:10]}", fontsize=10)
        ax.set_xlabel("α (CPU share of the transfer level's tasks)")
        ax.set_ylabel("speed-up over one core")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    plt.show()
    """),
    md("""
    ## Figures 5 and 6: the calibration behind the model

    g is the knee of an element-wise sum's time against the number of work-items (Figure 5) and
    γ the ratio of one CPU core's to one device work-item's merge time (Figure 6).  They come from
    this machine's calibration profile (`hpu calibrate`), not from the results file.
    """),
    code("""
    from IPython.display import display

    from hpu import calibrate

    profile = calibrate.active_profile(autocalibrate=False)
    if profile.source == "measured" and profile.sweeps.g and profile.sweeps.merge_cpu:
        display(calibrate.plot_g_sweep(profile))
        display(calibrate.plot_gamma(profile))
    else:
        print(f"no measured profile for {profile.device} ({profile.source} values: p = {profile.p}, "
              f"g = {profile.g}, gamma = {profile.gamma:.3g}); run `hpu calibrate` to measure one")
    """),
]


NOTEBOOKS: dict[str, list[tuple[str, str]]] = {
    "01_tour.ipynb": TOUR,
    "02_model.ipynb": MODEL,
    "03_experiments.ipynb": EXPERIMENTS,
}


def build(name: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """The notebook for ``cells``, without outputs, with ids derived from ``name``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    stem = name.split("_", 1)[-1].removesuffix(".ipynb")
    for i, (kind, source) in enumerate(cells):
        if kind == "code":   # a syntax error shows here, not in a kernel (IPython magics aside)
            compile("\n".join("" if ln.startswith("%") else ln for ln in source.splitlines()),
                    f"{name}, cell {i}", "exec")
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = make(source)
        cell.id = f"{stem}-{i:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def write_all(out_dir=HERE) -> list[Path]:
    """Write every notebook to ``out_dir``; return the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, cells in NOTEBOOKS.items():
        path = out / name
        path.write_text(nbformat.writes(build(name, cells)) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Write hpu's notebooks (without outputs).")
    parser.add_argument("--out", type=Path, default=HERE,
                        help="folder to write the .ipynb files to (default: notebooks/)")
    args = parser.parse_args(argv)
    for path in write_all(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
