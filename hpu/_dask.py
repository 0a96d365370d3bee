"""A cluster is one more level: the top of the tree across Dask workers.

Why Dask, and why level by level
================================

When one machine is not enough, hpu runs on an existing distributed engine
rather than a home-made one: Dask's ``distributed`` (a Client, workers,
resilient scheduling, a dashboard).  Recursive code usually breaks on such
engines because a task waits for the tasks it spawned and holds a worker slot
while it waits.  hpu's breadth-first shape avoids that by construction:

1. The client expands the tree breadth-first (:func:`hpu._driver.execute`, the
   same count/fill machinery as a local run, on the client's CPU) down to a
   *distribution level* ``D``.  Children are laid out in parent order, so each
   worker's share is a contiguous range of level ``D``'s tasks.
2. Each range becomes ONE Dask task, submitted all at once; no task waits on
   another.  On the worker it runs hpu locally (``dc.run`` of the same decorated
   function on each task's parameters: the worker's own Numba threads and
   OpenCL device, hybrid as planned there), one task after another.
3. The client waits for the level, writes the results into the caller's arrays
   and into level ``D``'s result slots, then combines levels ``D-1 .. 0`` on its
   own CPU, as a local run does; or, when the plan says so, the combines run
   on the workers (next section) and the client combines only the root.

Combines on the workers
-----------------------

Combining on the client means every range's span travels to the client
before level ``D-1`` can start, and the client's ``p`` cores run every
combine above ``D``.  Where the data is large (or the workers many), the
combines of levels ``D-1 .. 1`` run as Dask tasks instead, where the data
already is: ONE task per parent, whose arguments are the futures of the tasks
that hold its children (range tasks, or the combine tasks of the level below)
and which of their tasks are its children.  No task waits on another: the
scheduler starts a combine when its inputs exist (on the worker holding most
of them), and the client submits the whole graph at once, then waits for
level 1's tasks only.  A combine task assembles its parent's span from its
inputs' spans (each input returns every array's span and a bit mask of what
its subtree changed; the client adds its original slice only where the
children's spans do not cover the parent's), runs the function's combine for
that one parent (the CPU module's ``combine_task``, through
:class:`hpu._cpu.CpuBackend`), and returns the parent's result and span;
level 1's tasks return only the changed elements, which the client applies
once every task has succeeded.  A lost combine task, or a lost output it
needs, is recomputed by Dask from its inputs (the range tasks carry the
client's original slices); a part that fails for good is evaluated again on
the client from the same description (:meth:`_DaskBackend._local`).  The plan
(:func:`plan_cluster`) compares the two: the client's combines of levels
``1 .. D-1`` on its cores against ``W`` workers each running one combine at a
time, plus a network message per level; ``Cluster(combine="client" |
"workers")`` forces either, ``Cluster(combine_bytes=N)`` replaces the
comparison by a byte threshold on the arrays the combines touch.

Options
-------

Everything that changes what the function computes travels with it and is
resolved on the client: the run options (``device``, ``K``, ``depth``, ...),
the decorator's ``b``/``cost``/``span`` and ``boundscheck`` (``None`` resolved
from the client's ``HPU_BOUNDSCHECK``), and ``HPU_MAX_DEPTH`` (compiled into
the code; set on the worker while its task runs).  A bounds error on a worker
is the same ``IndexError``, with the user's file and line, on the client.

Data
----

With ``span=("lo", "hi")`` a range's tasks touch ``[min lo, max hi)`` of every
array, and only that slice travels.  Indices stay *absolute*: the worker
places the slice into a zero-filled array of the full length (``np.zeros``
maps untouched pages lazily, so only the slice occupies memory) and runs the
task with its original ``lo``/``hi``.  Rebasing ``lo``/``hi`` to the slice would
be cheaper to describe but wrong for functions whose results are indices or
depend on them.  Without ``span`` whole arrays go to every range.  Either way
only the elements a range changed come back (its slice and a bit mask), which
is exact because sibling subtrees are independent, and nothing is written into
the caller's arrays until every range has succeeded.

The function reaches the workers by value: cloudpickle of the original
function with its module pickled by value (so functions defined in a test
module or a notebook work), the decorated object replaced by a small recipe
(``py_func`` and the decorator's options) that the worker re-decorates once per
process and keeps, with its compiled specialisations, for later tasks.

The model's cluster level
-------------------------

:func:`plan_cluster` prices the distribution before anything moves: each
worker's node (p, g, γ and the seconds of one unit of work, from the profile
``hpu calibrate`` stored on that worker, or hpu's built-in values) predicts the
time of one level-``D`` subtree with the HPU model; the workers' shares are
proportional to their speeds (001's power factors); the network costs
``λ + δ·bytes`` per range (000), with λ and δ measured on the cluster (a
round trip of an empty task, and of a few megabytes).  When the slowest
worker's share plus its data movement plus the client's combine is not faster
than the client's own local run, the plan *declines*: the run is local and the
report and a warning say why.  ``Cluster(target, level=D)`` distributes at
level ``D`` whatever the model says (as ``alpha=``/``y=`` force a hybrid split).

Faults
------

* A worker lost mid-run: Dask reschedules its task on another worker from the
  task's own inputs (the client's original slices travel inside the task, never
  as data held only by a worker); the result is exact and ``run.fallbacks``
  names the lost worker and the range it had.  A range that fails for good
  (every retry lost, or an error on the worker) is redone on the client from
  the caller's untouched arrays, with a warning and a line in ``run.fallbacks``;
  an error the function itself raises is raised, as a local run would.
* Any exception out of a distributed run (the function's own error on a worker
  or on the client, ``KeyboardInterrupt`` while the client waits) leaves the
  caller's arrays as they were, as a local run does: the run takes the call's
  snapshot (:mod:`hpu._snapshot`; none with ``keep_inputs=False``) before the
  client's divides write anything, and puts it back before re-raising.
* A scheduler address that cannot be reached raises
  :class:`ClusterUnavailableError` (a typo should not silently run locally); a
  cluster with no workers runs locally with a warning and a fallback line.
* ``HPU_INJECT_WORKER_FAULT=1`` (read on the client) kills the worker process
  that runs the first range, once; ``=always`` kills every attempt at it, until
  Dask gives the range up; ``=combine`` kills the worker that runs the first
  combine task, once (for tests of exactly these).
"""
from __future__ import annotations

import hashlib
import io
import math
import os
import statistics
import tempfile
import threading
import time
import warnings
from collections import ChainMap
from dataclasses import dataclass
from types import CodeType
from typing import Any

import numpy as np

from hpu._errors import HpuError, user_stacklevel
from hpu._run import Run

__all__ = ["Cluster", "ClusterPlan", "ClusterReport", "ClusterRun", "ClusterUnavailableError",
           "NodeProfile", "Network", "WorkerRecord", "run_on_cluster", "plan_cluster",
           "connect", "close_clients", "calibrate_cluster", "describe", "dumps_function", "loads_function", "measure_network", "node_profiles",
           "FAULT_ENV"]

FAULT_ENV = "HPU_INJECT_WORKER_FAULT"
#: level-D tasks per worker: the granularity of the power-factor shares
TASKS_PER_WORKER = 8
#: where the levels above the distribution level are combined (``Cluster(combine=)``)
COMBINE_CHOICES = ("auto", "client", "workers")
#: the highest level the workers combine: the client combines the root (its one task has
#: nothing to spread, and its result is what the client needs)
WORKER_COMBINE_TOP = 1
#: how long to wait for a scheduler, and for at least one worker, in seconds
CONNECT_TIMEOUT_S = 10.0


class ClusterUnavailableError(HpuError):
    """The cluster named by ``cluster=`` cannot be reached."""


# ------------------------------------------------------------------------ options

@dataclass(frozen=True)
class Cluster:
    """Where and how to distribute: ``cluster=`` of ``.run`` takes one of these or its target.

    ``target``: a ``dask.distributed.Client``, a scheduler address
    (``"tcp://host:8786"``) or ``"local:N"`` (a ``LocalCluster`` of ``N`` worker
    processes, started once per process and kept).  ``level``: distribute at
    this level whatever the model says (``None``: the model decides, and may
    decline).  ``combine``: where the levels above the distribution level are
    combined: ``"auto"`` (the plan decides), ``"client"`` or ``"workers"`` (as
    Dask tasks, up to level 1; the client combines the root).
    ``combine_bytes``: with ``"auto"``, combine on the workers exactly when
    the arrays the combines touch hold at least this many bytes, instead of
    the model's comparison (a clear threshold; ``None``: the model).
    """

    target: Any
    level: int | None = None
    combine: str = "auto"
    combine_bytes: int | None = None

    def __post_init__(self):
        if self.combine not in COMBINE_CHOICES:
            raise ValueError(f"Cluster(combine={self.combine!r}): expected one of "
                             f"{', '.join(map(repr, COMBINE_CHOICES))}: where the levels above "
                             "the distribution level are combined; pass e.g. combine='workers'")
        cb = self.combine_bytes
        if cb is not None and (isinstance(cb, bool) or not isinstance(cb, (int, np.integer))
                               or cb < 0):
            raise ValueError(f"Cluster(combine_bytes={cb!r}): expected None (the model "
                             "decides) or an int >= 0, the bytes from which the combines run "
                             "on the workers; pass e.g. combine_bytes=1 << 30")
        lv = self.level
        if lv is not None and (isinstance(lv, bool) or not isinstance(lv, (int, np.integer))
                               or lv < 0):
            raise ValueError(f"Cluster(level={lv!r}): expected None (the model chooses) or an "
                             "int >= 0, the level whose tasks become Dask tasks; pass e.g. "
                             "level=3")


def as_cluster(cluster) -> Cluster:
    return cluster if isinstance(cluster, Cluster) else Cluster(cluster)


_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def close_clients() -> None:
    """Close the clients (and ``local:N`` clusters) hpu opened in this process."""
    import contextlib

    with _clients_lock:
        for client in _clients.values():
            cluster = getattr(client, "cluster", None)
            with contextlib.suppress(Exception):
                client.close()
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close()
        _clients.clear()


def connect(target):
    """A ``Client`` for ``target`` (see :class:`Cluster`); clients hpu opens are kept per process."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - the extra is not installed
        raise ClusterUnavailableError(
            f"cluster={target!r} needs Dask's distributed, which is not installed; "
            "install it with: pip install 'hpu[dask]'") from None
    if isinstance(target, Client):
        return target
    if not isinstance(target, str):
        raise TypeError(f"cluster={target!r}: expected a dask.distributed.Client, a scheduler "
                        "address such as 'tcp://host:8786', 'local:N' or hpu.Cluster(...)")
    with _clients_lock:
        client = _clients.get(target)
        if client is not None and client.status == "running":
            return client
        if target.startswith("local:"):
            text = target[len("local:"):]
            if not text.isdigit() or int(text) < 1:
                raise ValueError(f"cluster={target!r}: expected 'local:N' with N >= 1 worker "
                                 "processes; pass e.g. 'local:2'")
            cluster = LocalCluster(n_workers=int(text), threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            client = Client(cluster)
        else:
            from distributed.comm import parse_address
            from distributed.comm.addressing import parse_host_port

            try:        # distributed's own reading of the address, before any connection
                scheme, location = parse_address(target)
                if scheme in ("tcp", "tls"):
                    parse_host_port(location)
            except ValueError as err:
                raise ValueError(f"cluster={target!r} is not a scheduler address ({err}): "
                                 "expected 'tcp://host:8786', 'local:N' (N worker processes "
                                 "on this machine), a dask.distributed.Client or "
                                 "hpu.Cluster(...); pass e.g. cluster='local:2'") from None
            try:
                client = Client(target, timeout=CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as err:
                raise ClusterUnavailableError(
                    f"cluster={target!r}: no Dask scheduler answered within "
                    f"{CONNECT_TIMEOUT_S:g} s ({err}); start one (dask scheduler; dask worker "
                    "ADDRESS) or pass 'local:N' for worker processes on this machine") from None
        if not _clients:
            import atexit

            atexit.register(close_clients)
        _clients[target] = client
        return client


def _workers(client) -> dict:
    """Every worker the scheduler knows (newer ``distributed`` lists only some by default)."""
    try:
        return client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:  # distributed before n_workers=
        return client.scheduler_info()["workers"]


# --------------------------------------------------------------------- shipping

def _blank_dc():
    from hpu._decorator import DivideAndConquer

    return DivideAndConquer.__new__(DivideAndConquer)


def _restore_dc(obj, state):
    py_func, options = state
    obj.__init__(py_func, **options)
    return obj


_pickle_lock = threading.Lock()


def dumps_function(dc) -> bytes:
    """``dc`` (a decorated function) as bytes a worker can load without importing its module.

    The original function goes by value (cloudpickle, its module registered by
    value for the duration), and every decorated object it refers to, itself
    included, as the recipe ``(py_func, options)`` re-decorated on loading; the
    pickle memo keeps the recursion through the module global one object.  The
    function's source file travels alongside, for workers on machines without it
    (the decorator parses the source).
    """
    import pickle
    import sys

    import cloudpickle

    from hpu._decorator import DivideAndConquer

    class Pickler(cloudpickle.Pickler):
        # cloudpickle >= 3.1 names every code object it ships "<dynamic-code>"; the
        # worker's decorator reads the source by the file name, so it travels too
        dispatch_table = ChainMap({CodeType: _code_reduce_keeping_filename},
                                  cloudpickle.Pickler.dispatch_table)

        def reducer_override(self, obj):
            if isinstance(obj, DivideAndConquer):
                return (_blank_dc, (), (obj.py_func, recipe_options(obj)), None, None,
                        _restore_dc)
            return super().reducer_override(obj)

    module = sys.modules.get(dc.py_func.__module__)
    with _pickle_lock:
        registered = False
        if module is not None and module.__name__ != "__main__":
            try:
                cloudpickle.register_pickle_by_value(module)
                registered = True
            except ValueError:  # already registered by the caller
                pass
        try:
            buf = io.BytesIO()
            Pickler(buf, protocol=5).dump(dc)
        finally:
            if registered:
                cloudpickle.unregister_pickle_by_value(module)
    return pickle.dumps((_source_of(dc), buf.getvalue()), protocol=5)


def _code_reduce_keeping_filename(code):
    """cloudpickle's reduction of a code object, with its ``co_filename`` kept."""
    from cloudpickle import cloudpickle as cp

    rebuild, args = cp._code_reduce(code)
    return _code_with_filename, (rebuild, args, code.co_filename)


def _code_with_filename(rebuild, args, filename):
    code = rebuild(*args)
    return code if code.co_filename == filename else code.replace(co_filename=filename)


def recipe_options(dc) -> dict:
    """The decorator's options that change what ``dc`` computes, resolved on the client.

    ``b``, ``cost`` and ``span`` as given, and ``boundscheck`` with ``None``
    resolved here (``HPU_BOUNDSCHECK`` of the client's environment): a worker
    must check bounds exactly when the client would, whatever its own
    environment says.
    """
    from hpu._guard import boundscheck_default

    bc = dc._boundscheck
    return {**dc._options, "boundscheck": boundscheck_default() if bc is None else bool(bc)}


def semantic_env() -> dict[str, str]:
    """The environment settings, read on the client, that change what a worker's compiled
    code does: ``HPU_MAX_DEPTH`` (the depth at which compiled recursion raises
    ``RecursionError``, baked into the code when it is compiled)."""
    from hpu._guard import ENV_MAX_DEPTH, max_depth

    return {ENV_MAX_DEPTH: str(max_depth())}


class _env_set:
    """Set environment variables for the duration (a worker's task holds ``_worker_lock``)."""

    def __init__(self, env):
        self.env, self.old = dict(env or {}), {}

    def __enter__(self):
        for k, v in self.env.items():
            self.old[k] = os.environ.get(k)
            os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _source_of(dc) -> tuple[str, str] | None:
    """The function's file name and text."""
    filename = dc.py_func.__code__.co_filename
    try:
        with open(filename, encoding="utf-8") as fh:
            return filename, fh.read()
    except OSError:
        import linecache

        lines = linecache.getlines(filename)
        return (filename, "".join(lines)) if lines else None


def loads_function(blob: bytes):
    """The decorated function from :func:`dumps_function`'s bytes (re-decorated here)."""
    import pickle

    import cloudpickle  # noqa: F401 - what cloudpickle's pickles need on loading

    source, inner = pickle.loads(blob)
    if source is not None:
        filename, text = source
        if not os.path.exists(filename):  # another machine: let inspect.getsource find it
            import linecache

            linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True),
                                         filename)
    return pickle.loads(inner)


_worker_functions: dict[str, Any] = {}
_worker_lock = threading.RLock()


def _worker_function(key: str, blob: bytes):
    """The decorated function on this worker, loaded once per process (its compiled
    specialisations are kept with it for later tasks)."""
    with _worker_lock:
        dc = _worker_functions.get(key)
        if dc is None:
            dc = _worker_functions[key] = loads_function(blob)
        return dc


# ------------------------------------------------------------------ worker side

def _run_range(key, blob, params, shared_scalars, arrays, written, tasks, options,
               kill_marker=None, env=None, keep=False, task_id=None):
    """One Dask task: solve the subtrees of ``tasks`` (parameter dicts) on this worker.

    ``arrays[name] = (size, dtype, lo, values)``: the slice ``[lo, lo+len)`` of
    each array.  Returns the results per task, and per written array the slice
    and a packed mask of the elements that changed.  With ``keep`` (the
    combines above run on the workers) it returns every array's span instead
    (``state``: slice and mask of the changes, or None), for the combine tasks
    that take this task's output as their input.
    """
    if kill_marker == "always" or (kill_marker is not None and not os.path.exists(kill_marker)):
        if kill_marker != "always":
            with open(kill_marker, "w") as fh:
                fh.write(str(os.getpid()))
        os._exit(1)  # a worker lost mid-run (HPU_INJECT_WORKER_FAULT)
    t0 = time.perf_counter()
    dc = _worker_function(key, blob)
    try:
        from distributed import get_worker

        where = get_worker().address
    except Exception:  # noqa: BLE001 - run on the client (a redo)
        where = "client"
    full = {}
    for name, (size, dtype, lo, vals) in arrays.items():
        arr = np.zeros(size, dtype)
        arr[lo:lo + len(vals)] = vals
        full[name] = arr
    values, fallbacks = [], []
    cpu_tasks = gpu_tasks = 0
    # one hpu run at a time per process (Numba's thread pool); the client's semantic
    # environment while it runs (compiled code bakes HPU_MAX_DEPTH in)
    with _worker_lock, _env_set(env):
        for task in tasks:
            call = {**shared_scalars, **full, **task}
            run = dc._run_checked(options, {p: call[p] for p in params})
            values.append(run.value)
            fallbacks.extend(run.fallbacks)
            cpu_tasks += run.cpu_tasks
            gpu_tasks += run.gpu_tasks
    writes, state = {}, {}
    for name in written:
        size, dtype, lo, orig = arrays[name]
        got = full[name][lo:lo + len(orig)]
        changed = _changed(got, orig)
        if keep:
            state[name] = (lo, got.copy(), np.packbits(changed) if changed.any() else None)
        elif changed.any():
            writes[name] = (lo, got.copy(), np.packbits(changed))
    if keep:  # the combine tasks above read every array's span from here
        for name, (size, dtype, lo, orig) in arrays.items():
            state.setdefault(name, (lo, orig, None))
    seconds = time.perf_counter() - t0
    out = {"worker": where, "values": values, "writes": writes, "fallbacks": fallbacks,
           "seconds": seconds, "cpu_tasks": cpu_tasks, "gpu_tasks": gpu_tasks}
    if keep:
        out["state"] = state
        out["log"] = {task_id: {"worker": where, "kind": "range", "tasks": len(tasks),
                                "seconds": seconds, "moved_in": 0, "cpu_tasks": cpu_tasks,
                                "gpu_tasks": gpu_tasks, "fallbacks": fallbacks}}
    return out


def _changed(got, orig):
    """Bit for bit: -0.0 and 0.0 differ, a NaN equals the same NaN."""
    return got.view(f"u{got.itemsize}") != orig.view(f"u{orig.itemsize}")


def _state_bytes(res) -> int:
    return sum(v.nbytes + (0 if m is None else m.nbytes) for _, v, m in res["state"].values())


def _combine_parent(key, blob, env, meta, parent, pieces, originals, final, task_id,
                    kill_marker=None):
    """One Dask task: the function's combine for ONE parent, on the worker holding its children.

    ``pieces``: ``[(result, first, count), ...]``, the outputs of the tasks
    below (range tasks or combine tasks, passed as Dask futures: the scheduler
    starts this task when they exist, and recomputes them from their own inputs
    if a worker holding them is lost) and which of their tasks are this
    parent's children, in order.  ``parent``: its level index, parameters,
    carried values and span ``(lo, hi)`` (None: whole arrays).  The arrays'
    span is assembled from the pieces' states (``originals``: the client's
    slice of the span, sent only where the children's spans do not cover the
    parent's).  Returns its result and, when ``final``, only the changed
    elements of the written arrays (what the client applies), else every
    array's span and the mask of its changes (what the next combine up reads).
    """
    if kill_marker is not None and not os.path.exists(kill_marker):
        with open(kill_marker, "w") as fh:
            fh.write(str(os.getpid()))
        os._exit(1)  # a worker lost in the combine phase (HPU_INJECT_WORKER_FAULT=combine)
    t0 = time.perf_counter()
    from hpu._cpu import CpuBackend
    from hpu._driver import Level

    dc = _worker_function(key, blob)
    try:
        from distributed import get_worker

        where = get_worker().address
    except Exception:  # noqa: BLE001 - run on the client (a redo)
        where = "client"
    log, moved_in = {}, 0
    for res, _, _ in pieces:
        log.update(res["log"])
        if res["worker"] != where:
            moved_in += _state_bytes(res)
    # the span of every array: the client's originals where sent, then each piece's span
    # where nothing is yet, then each piece's changes (siblings write disjoint elements)
    full, before, masks, spans = {}, {}, {}, {}
    for name, (size, dtype) in meta["arrays"].items():
        lo, hi = (0, size) if parent["span"] is None else \
            (min(parent["span"][0], size), min(parent["span"][1], size))
        buf = np.zeros(hi - lo, dtype)
        filled = np.zeros(hi - lo, bool)
        mask = np.zeros(hi - lo, bool)
        if originals is not None:
            o_lo, o_vals = originals[name]
            buf[o_lo - lo:o_lo - lo + len(o_vals)] = o_vals
            filled[o_lo - lo:o_lo - lo + len(o_vals)] = True
        for res, _, _ in pieces:
            p_lo, vals, packed = res["state"][name]
            a, b = max(lo, p_lo), min(hi, p_lo + len(vals))
            if b <= a:
                continue
            src, dst = slice(a - p_lo, b - p_lo), slice(a - lo, b - lo)
            take = ~filled[dst]
            buf[dst][take] = vals[src][take]
            filled[dst] = True
            if packed is not None:
                m = np.unpackbits(packed, count=len(vals)).astype(bool)[src]
                buf[dst][m] = vals[src][m]
                mask[dst] |= m
        if not filled.all():  # pragma: no cover - the client sends originals for gaps
            raise RuntimeError(f"combine task {task_id}: {name}[{lo}:{hi}] is not covered by "
                               "its children's spans")
        arr = np.zeros(size, dtype)
        arr[lo:hi] = buf
        full[name], before[name], masks[name], spans[name] = arr, buf.copy(), mask, lo
    with _worker_lock, _env_set(env):
        call = {**meta["scalars"], **full, **parent["params"]}
        program = dc._program({p: call[p] for p in meta["params"]})
        lay, types = program.layout, program.types
        kids = [(res, first, count) for res, first, count in pieces]
        nc = sum(c for _, _, c in kids)
        lv = Level(parent["level"], 1,
                   {v: np.array([parent["params"][v]], dt)
                    for v, dt in zip(lay.varying, types.varying)},
                   offsets=np.array([0, nc], np.int64),
                   carried={c: np.array([parent["carried"][c]], dt)
                            for c, dt in zip(lay.carried, types.carried)},
                   results=[np.empty(1, dt) for dt in types.results])
        child = Level(parent["level"] + 1, nc, {v: np.zeros(nc, dt)
                                                 for v, dt in zip(lay.varying, types.varying)},
                      results=[np.empty(nc, dt) for dt in types.results])
        j = 0
        for res, first, count in kids:
            for value in res["values"][first:first + count]:
                _store(child, j, value, lay.result_arity)
                j += 1
        CpuBackend(program).combine(lv, child, 0, 1, {p: call[p] for p in lay.shared})
    if lay.result_arity == 0:
        value = None
    elif lay.result_arity == 1:
        value = lv.results[0][0].item()
    else:
        value = tuple(r[0].item() for r in lv.results)
    writes, state = {}, {}
    for name in meta["arrays"]:
        lo, buf = spans[name], before[name]
        got = full[name][lo:lo + len(buf)]
        if name in meta["written"]:
            mask = masks[name] | _changed(got, buf)
            if final:
                if mask.any():
                    writes[name] = (lo, got.copy(), np.packbits(mask))
            else:
                state[name] = (lo, got.copy(), np.packbits(mask) if mask.any() else None)
        elif not final:
            state[name] = (lo, buf, None)
    seconds = time.perf_counter() - t0
    log[task_id] = {"worker": where, "kind": "combine", "tasks": 0, "seconds": seconds,
                    "moved_in": moved_in, "cpu_tasks": 0, "gpu_tasks": 0, "fallbacks": []}
    out = {"worker": where, "values": [value], "writes": writes, "fallbacks": [],
           "seconds": seconds, "log": log}
    if not final:
        out["state"] = state
    return out


def _node_profile() -> dict:
    """This worker's node for the model (its stored profile, or hpu's built-in values)."""
    import numba

    try:
        from hpu._profile import active_profile

        prof = active_profile(autocalibrate=False)  # planning never waits for a calibration
        m = prof.machine()
        return {"p": m.p, "g": m.g, "gamma": m.gamma, "latency_s": m.latency_s,
                "seconds_per_byte": m.seconds_per_byte,
                "seconds_per_unit": m.seconds_per_unit or 2e-9,
                "contention": prof.contention, "device": prof.device}
    except Exception as err:  # noqa: BLE001 - no OpenCL device there: its CPU alone
        return {"p": numba.get_num_threads(), "g": 1, "gamma": 1e-6, "latency_s": 0.0,
                "seconds_per_byte": 0.0, "seconds_per_unit": 2e-9, "contention": 1.0,
                "device": f"none ({err})"}


def _noop(x=None):
    return 0 if x is None else int(getattr(x, "nbytes", 0))


# ------------------------------------------------------------------------ model

@dataclass(frozen=True)
class NodeProfile:
    """One worker as the model sees it."""

    address: str
    p: float
    g: float
    gamma: float
    seconds_per_unit: float
    latency_s: float = 0.0
    seconds_per_byte: float = 0.0
    contention: float = 1.0
    device: str = ""

    def machine(self):
        from hpu import model

        return model.Machine(p=self.p, g=self.g, gamma=self.gamma, latency_s=self.latency_s,
                             seconds_per_byte=self.seconds_per_byte,
                             seconds_per_unit=self.seconds_per_unit)


@dataclass(frozen=True)
class Network:
    """The client↔worker link (000): one message costs ``latency_s + seconds_per_byte·bytes``."""

    latency_s: float
    seconds_per_byte: float

    def cost(self, nbytes: float) -> float:
        return self.latency_s + self.seconds_per_byte * nbytes


_networks: dict[str, Network] = {}


def measure_network(client, *, nbytes: int = 4 << 20, repeat: int = 5) -> Network:
    """λ from the round trip of an empty task, δ from one carrying ``nbytes`` (medians)."""
    key = client.scheduler.address
    if key in _networks:
        return _networks[key]
    payload = np.ones(nbytes // 8, np.float64)
    client.submit(_noop, pure=False).result()  # warm-up
    empty, full = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        client.submit(_noop, pure=False).result()
        empty.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        client.submit(_noop, payload, pure=False).result()
        full.append(time.perf_counter() - t0)
    lat = statistics.median(empty)
    net = Network(latency_s=lat,
                  seconds_per_byte=max(statistics.median(full) - lat, 1e-12) / payload.nbytes)
    _networks[key] = net
    return net


_nodes: dict = {}


def node_profiles(client) -> list[NodeProfile]:
    """Every worker's node, from its own profile (``client.run`` on each; kept per
    scheduler and set of workers)."""
    key = (client.scheduler.address, frozenset(_workers(client)))
    if key not in _nodes:
        _nodes[key] = _node_profiles(client)
    return _nodes[key]


def _node_profiles(client) -> list[NodeProfile]:
    got = client.run(_node_profile)
    return [NodeProfile(address=a, p=float(d["p"]), g=float(d["g"]), gamma=float(d["gamma"]),
                        seconds_per_unit=float(d["seconds_per_unit"]),
                        latency_s=float(d["latency_s"]),
                        seconds_per_byte=float(d["seconds_per_byte"]),
                        contention=float(d["contention"]), device=str(d["device"]))
            for a, d in sorted(got.items())]


@dataclass(frozen=True)
class ClusterPlan:
    """What the model chose for the cluster, and why.

    ``level``: the distribution level ``D`` (its ``a**D`` tasks become
    ``len(workers)`` Dask tasks); ``shares``: each worker's fraction of them
    (proportional to its predicted speed); times in seconds: ``predicted_time``
    (the slowest worker's data movement and subtrees, plus the client's
    combine of the levels above D), ``local_time`` (the client's own run),
    ``bytes_moved`` both ways.  ``distribute`` False means the plan declined;
    ``reason`` says why either way.

    ``combine_on``: where levels ``combine_level .. level-1`` are combined,
    ``"client"`` (``combine_level == level``: every level above ``D`` on the
    client) or ``"workers"`` (one Dask task per parent; the client combines
    levels ``0 .. combine_level-1``).  ``client_combine_time`` and
    ``worker_combine_time``: the model's seconds for those levels each way;
    ``combine_reason`` says why (also the end of ``reason``).
    """

    level: int
    workers: tuple[str, ...]
    shares: tuple[float, ...]
    predicted_time: float
    local_time: float
    worker_times: tuple[float, ...]
    combine_time: float
    bytes_moved: int
    network: Network
    nodes: tuple[NodeProfile, ...]
    distribute: bool
    forced: bool
    reason: str
    combine_on: str = "client"
    combine_level: int = 0
    client_combine_time: float = 0.0
    worker_combine_time: float = 0.0
    combine_reason: str = ""


def _shares(speeds: list[float]) -> list[float]:
    total = sum(speeds)
    return [s / total for s in speeds]


def _node_time(problem_at, node: NodeProfile, n_sub: int, device: str, strategy: str,
               element_bytes: int) -> float:
    """Predicted seconds of one subtree of size ``n_sub`` on ``node`` (the HPU model)."""

    from hpu._plan import model_plan

    pl = model_plan(problem_at(max(int(n_sub), 1)), node.machine(), strategy,
                      element_bytes, max(node.contention, 1.0))
    if device == "cpu":
        return pl.cpu_only_time
    if device == "gpu":
        return pl.device_only_time
    return pl.predicted_time


def plan_cluster(*, a: int, b: float, cost: str, n: int, element_bytes: int, in_bytes: int,
                 out_bytes: int, spanned: bool, nodes: list[NodeProfile], network: Network,
                 local, level: int | None = None, device: str = "hybrid",
                 strategy: str = "advanced", local_contention: float = 1.0,
                 combine: str = "auto", combine_bytes: int | None = None) -> ClusterPlan:
    """The cluster level of the model (pure: no I/O).

    ``in_bytes``/``out_bytes``: the bytes of all arrays / of the written ones
    (over the whole problem); with ``spanned`` each worker moves its share of
    them, else every worker receives whole arrays.  ``local``: the client's
    ``hpu.model.Machine``.  ``level``: force this distribution level.

    Where the levels above ``D`` are combined (``combine``, ``combine_bytes``:
    see :class:`Cluster`): on the client, level ``i`` runs its ``a**i``
    combines on the client's ``p`` cores; as Dask tasks, on the ``W`` workers
    (one combine task at a time each, at the slowest worker's speed), plus one
    network message per level (000's ``λ + δ·bytes``, the bytes of one child's
    span: the scheduler's hop, and a parent whose children lie on two workers).
    Both move the same bytes to the client (the written spans, once), so the
    comparison is the combines' time; the client always combines the root.
    """
    from hpu import model

    if not nodes:
        raise ValueError("plan_cluster(nodes=[]): expected at least one worker's NodeProfile")

    def problem_at(m):
        return model.Problem(a=a, b=b, cost=cost, n=m)

    forced = level is not None
    W = len(nodes)
    if level is None:
        level = max(1, math.ceil(math.log(TASKS_PER_WORKER * W, a) - 1e-9))
    tasks = a ** level
    n_sub = n / b ** level
    per_task = [_node_time(problem_at, nd, n_sub, device, strategy, element_bytes)
                for nd in nodes]
    shares = _shares([1.0 / max(t, 1e-12) for t in per_task])  # 001's power factors
    spu = local.seconds_per_unit or 2e-9
    f = model.parse_cost(cost)

    def on_client(first, stop):
        # the client combines level i on its p cores: level i has a**i tasks, so the top
        # levels use fewer cores than p (the root's combine runs on one)
        return sum(math.ceil(a ** i / max(local.p, 1.0)) * f(max(n / b ** i, 1.0))
                   for i in range(first, stop)) * spu

    top = min(WORKER_COMBINE_TOP, level)
    w_spu = max(nd.seconds_per_unit or 2e-9 for nd in nodes)
    client_part = on_client(top, level)
    worker_part = sum(network.cost(element_bytes * n / b ** (i + 1))
                      + math.ceil(a ** i / W) * f(max(n / b ** i, 1.0)) * w_spu
                      for i in range(top, level))
    span_text = _levels_text(top, level)
    model_text = (f"{worker_part:.3g} s as Dask tasks against {client_part:.3g} s on the "
                  "client")
    if level <= top:
        on_workers, why = False, "only the root is above the distribution level"
    elif combine == "workers":
        on_workers, why = True, f"Cluster(combine='workers'); the model predicts {model_text}"
    elif combine == "client":
        on_workers, why = False, f"Cluster(combine='client'); the model predicts {model_text}"
    elif combine_bytes is not None:
        on_workers = in_bytes >= combine_bytes
        why = (f"the arrays the combines touch hold {_bytes_text(in_bytes)}, "
               f"{'at least' if on_workers else 'below'} Cluster(combine_bytes="
               f"{combine_bytes})")
    else:
        on_workers = worker_part < client_part
        why = f"the model predicts {model_text}"
    if on_workers:
        combine_reason = (f"{span_text} combined as Dask tasks on the workers, the root on the "
                          f"client: {why}")
    else:
        combine_reason = f"the levels above {level} combined on the client: {why}"
    combine_s = on_client(0, top) + (worker_part if on_workers else client_part)
    worker_times, net_times, moved = [], [], 0.0
    for nd, share, t in zip(nodes, shares, per_task):
        # out: the changed elements' slice and a 1-bit mask; without span whole arrays go out
        data = (in_bytes if not spanned else in_bytes * share) + out_bytes * 1.125 * share
        moved += data
        net_times.append(network.cost(data))
        worker_times.append(net_times[-1] + share * tasks * t)
    predicted = max(worker_times) + combine_s
    from hpu._plan import model_plan

    lp = model_plan(problem_at(max(n, 1)), local, strategy, element_bytes,
                      max(local_contention, 1.0))
    local_time = {"cpu": lp.cpu_only_time, "gpu": lp.device_only_time}.get(device,
                                                                          lp.predicted_time)
    distribute = forced or predicted < local_time
    moved_text = _bytes_text(moved)
    workers = f"{W} worker{'s' if W != 1 else ''}"
    if forced:
        reason = (f"distribution forced at level {level} (Cluster(level={level})); the model "
                  f"predicts {predicted:.3g} s on {workers} against {local_time:.3g} s locally")
    elif distribute:
        reason = (f"{workers} at level {level} ({tasks} subtrees of ~{n_sub:.3g} elements): "
                  f"{predicted:.3g} s predicted (moving {moved_text} at λ={network.latency_s:.3g} s, "
                  f"δ={network.seconds_per_byte:.3g} s/B) against {local_time:.3g} s locally")
    else:
        reason = (f"the cluster is not worth it: {workers} at level {level} would take "
                  f"{predicted:.3g} s (moving {moved_text} costs up to {max(net_times):.3g} s "
                  f"per worker at λ={network.latency_s:.3g} s, δ={network.seconds_per_byte:.3g} "
                  "s/B) "
                  f"against {local_time:.3g} s locally; ran locally")
    if distribute:
        reason += f"; {combine_reason}"
    return ClusterPlan(level=level, workers=tuple(nd.address for nd in nodes),
                       shares=tuple(shares), predicted_time=predicted, local_time=local_time,
                       worker_times=tuple(worker_times), combine_time=combine_s,
                       bytes_moved=int(moved), network=network, nodes=tuple(nodes),
                       distribute=distribute, forced=forced, reason=reason,
                       combine_on="workers" if on_workers else "client",
                       combine_level=top if on_workers else level,
                       client_combine_time=client_part, worker_combine_time=worker_part,
                       combine_reason=combine_reason)


def _levels_text(first: int, stop: int) -> str:
    return f"level {first}" if stop - first == 1 else f"levels {first}..{stop - 1}"


def _bytes_text(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


# ------------------------------------------------------------------------ report

@dataclass(frozen=True)
class WorkerRecord:
    """One worker's part of a run: its level-D tasks, Dask tasks, seconds and bytes.

    ``cpu_tasks``/``gpu_tasks``: the leaf tasks of the worker's own local runs
    on each side (its hybrid split), summed over its subtrees.  ``combines``:
    the combine tasks it ran (when the levels above ``D`` are combined on the
    workers); ``bytes_between``: the bytes of their inputs that came from other
    workers; ``bytes_sent``/``bytes_received``: to and from the client.
    """

    address: str
    tasks: int
    ranges: int
    seconds: float
    bytes_sent: int
    bytes_received: int
    cpu_tasks: int = 0
    gpu_tasks: int = 0
    combines: int = 0
    bytes_between: int = 0


@dataclass(frozen=True)
class ClusterReport:
    """The cluster side of a :class:`ClusterRun`."""

    scheduler: str
    plan: ClusterPlan | None
    distributed: bool
    reason: str
    level: int | None = None
    workers: tuple[WorkerRecord, ...] = ()
    seconds: float = 0.0
    #: where the levels above ``level`` were combined: "client", or "workers" for the
    #: levels ``combine_level .. level-1`` (the client combined the ones above)
    combine_on: str = "client"
    combine_level: int | None = None

    @property
    def bytes_moved(self) -> int:
        return sum(w.bytes_sent + w.bytes_received + w.bytes_between for w in self.workers)


@dataclass(frozen=True)
class ClusterRun(Run):
    """A :class:`~hpu.Run` with ``cluster``: where the distribution level's tasks ran.

    On a cluster ``K`` is the distribution level, ``alpha`` is 1.0 and ``y``
    None, and the leaf phase of the distribution level is booked in the
    ``cpu`` columns: the client's view (its CPU expanded and combined, its
    OpenCL device did nothing); ``cluster.workers`` has the per-worker detail,
    each worker's own split included.  When the workers combine levels
    ``cluster.combine_level .. K-1``, those levels' records are the client's
    too: submitting their tasks, and at ``combine_level`` waiting for every
    task below.
    """

    cluster: ClusterReport | None = None

    def summary(self) -> str:
        lines = [super().summary()]
        c = self.cluster
        if c is not None:
            lines.append(f"  cluster {c.scheduler}: {c.reason}")
            if c.distributed and c.combine_on == "workers":
                lines.append(f"    {_levels_text(c.combine_level, c.level)} combined as Dask "
                             f"tasks on the workers, {_levels_text(0, c.combine_level)} on the "
                             "client")
            elif c.distributed:
                lines.append(f"    {_levels_text(0, c.level)} combined on the client")
            for w in c.workers:
                combines = f" and {w.combines} combines" if w.combines else ""
                between = f", {w.bytes_between} B from other workers" if w.bytes_between else ""
                lines.append(f"    {w.address}: {w.tasks} tasks in {w.ranges} ranges"
                             f"{combines}, {w.seconds:.6f} s, sent {w.bytes_sent} B, "
                             f"received {w.bytes_received} B{between}")
        return "\n".join(lines)


# ------------------------------------------------------------------------ client side

class _DaskBackend:
    """Runs the distribution level's leaf phase as one Dask task per worker range, and the
    combines of the levels the plan puts on the workers as one Dask task per parent."""

    kind = "cpu"

    def __init__(self, dc, program, values, client, plan: ClusterPlan, options, fallbacks):
        self.dc, self.program, self.values = dc, program, values
        self.client, self.plan, self.options = client, plan, options
        self.fallbacks = fallbacks
        self.records: list[WorkerRecord] = []
        self.blob = dumps_function(dc)
        self.env = semantic_env()
        # one decorated object per function, options and environment on each worker
        self.key = hashlib.sha256(self.blob + repr(sorted(self.env.items())).encode()).hexdigest()
        # the combines of levels top .. K-1 run as Dask tasks (None: all on the client)
        self.top = plan.combine_level if plan.combine_on == "workers" else None
        self.leaf_level: int | None = None
        self.below: list = []       # (task, first, stop, lo, hi) of the level below
        self.sent: dict[str, int] = {}
        self.before: set = set()
        self.combine_marker = None
        self.range_workers: dict[str, tuple] = {}  # task id -> (planned worker, s, e, level)

    def on_workers(self, level: int) -> bool:
        """Whether the combines of ``level`` run as Dask tasks."""
        return (self.top is not None and self.leaf_level is not None
                and self.top <= level < self.leaf_level)

    def _ranges(self, m: int) -> list[tuple[str, int, int]]:
        counts = [int(s * m) for s in self.plan.shares]
        rest = sorted(range(len(counts)), key=lambda i: -(self.plan.shares[i] * m - counts[i]))
        for i in rest[:m - sum(counts)]:
            counts[i] += 1
        out, start = [], 0
        for addr, c in zip(self.plan.workers, counts):
            if c:
                out.append((addr, start, start + c))
            start += c
        return out

    def leaf(self, level, start, stop, shared) -> None:
        layout = self.program.layout
        spec = self.program.spec
        params = list(spec.params)
        written = sorted(n for n in layout.arrays if n in self.program.closure.written)
        scalars = {n: v for n, v in shared.items() if n not in layout.arrays}
        ranges = [(w, start + s, start + e) for w, s, e in self._ranges(stop - start)]
        marker = None
        fault = os.environ.get(FAULT_ENV, "")
        self.leaf_level = level.index
        keep = self.on_workers(level.index - 1)
        if fault == "always":  # every attempt dies: the range fails for good
            marker = "always"
        elif fault == "combine":  # the first combine task's worker dies, once
            self.combine_marker = os.path.join(tempfile.mkdtemp(prefix="hpu-worker-fault-"),
                                               "killed")
        elif fault not in ("", "0"):  # the first attempt dies, once
            marker = os.path.join(tempfile.mkdtemp(prefix="hpu-worker-fault-"), "killed")
        self.before = set(_workers(self.client))
        jobs = []
        for i, (worker, s, e) in enumerate(ranges):
            tasks = [{v: level.params[v][t].item() for v in layout.varying} for t in range(s, e)]
            lo, hi = self._span(level, s, e)
            arrays = {}
            for name in layout.arrays:
                arr = shared[name]
                a_lo, a_hi = (0, arr.size) if lo is None else (min(lo, arr.size),
                                                               min(hi, arr.size))
                arrays[name] = (arr.size, arr.dtype, a_lo, arr[a_lo:a_hi].copy())
            sent = sum(v[3].nbytes for v in arrays.values())
            args = (self.key, self.blob, params, scalars, arrays, written, tasks,
                    self.options)
            name = f"hpu-{spec.name}-{self.key[:8]}-{time.time_ns()}-{i}"
            if keep:  # the combines above read this task's output where it is
                task = _Task(name, _run_range, args,
                             {"env": self.env, "keep": True, "task_id": name})
                self._submit(task, kill_marker=marker if i == 0 else None, workers=[worker],
                             allow_other_workers=True)
                self.sent[name] = sent
                self.range_workers[name] = (worker, s, e, level.index)
                self.below.append((task, s, e, lo, hi))
                continue
            fut = self.client.submit(_run_range, *args, kill_marker=marker if i == 0 else None,
                                     env=self.env,
                                     workers=[worker], allow_other_workers=True, pure=False,
                                     key=name)
            jobs.append((worker, s, e, args, fut, sent))
        if keep:  # nothing waits: the combine tasks take these futures as their inputs
            return
        from distributed import wait

        wait([j[4] for j in jobs])
        alive = set(_workers(self.client))
        results = []
        for worker, s, e, args, fut, sent in jobs:
            if fut.status == "finished":
                res = fut.result()
                if res["worker"] != worker and worker not in alive:
                    self.fallbacks.append(
                        f"worker {worker} was lost mid-run; its tasks [{s}, {e}) of level "
                        f"{level.index} were recomputed on {res['worker']} from the client's "
                        "original spans")
            else:
                err = fut.exception()
                if not _is_cluster_failure(err):
                    raise err  # the function's own error, as a local run raises it
                reason = (f"tasks [{s}, {e}) of level {level.index} failed on the cluster "
                          f"({type(err).__name__}: {err}); redone on this machine from the "
                          "caller's original arrays")
                warnings.warn(f"hpu: {reason}", _perf_warning(), stacklevel=user_stacklevel())
                self.fallbacks.append(reason)
                res = _run_range(*args, env=self.env)
                res["worker"] = "client"
            results.append((worker, s, e, res, sent))
        # every range is in: only now touch the caller's arrays
        per_worker: dict[str, list] = {}
        for worker, s, e, res, sent in results:
            got = 0
            for name, (lo, vals, packed) in res["writes"].items():
                mask = np.unpackbits(packed, count=len(vals)).astype(bool)
                shared[name][lo:lo + len(vals)][mask] = vals[mask]
                got += vals.nbytes + packed.nbytes
            for k, t in enumerate(range(s, e)):
                _store(level, t, res["values"][k], layout.result_arity)
            self.fallbacks.extend(f"on {res['worker']}: {f}" for f in res["fallbacks"])
            rec = per_worker.setdefault(res["worker"], [0, 0, 0.0, 0, 0, 0, 0])
            rec[0] += e - s
            rec[1] += 1
            rec[2] += res["seconds"]
            rec[3] += sent
            rec[4] += got
            rec[5] += res["cpu_tasks"]
            rec[6] += res["gpu_tasks"]
        self.records = [WorkerRecord(a, *v) for a, v in sorted(per_worker.items())]
        if any("was lost" in f for f in self.fallbacks):
            warnings.warn("hpu: " + "; ".join(f for f in self.fallbacks if "was lost" in f),
                          _perf_warning(), stacklevel=user_stacklevel())

    # --------------------------------------------------- combines as Dask tasks
    def _submit(self, task, **dask_options) -> None:
        task.fut = self.client.submit(task.fn, *_subst(task.args, lambda t: t.fut),
                                      **task.kwargs, **dask_options, pure=False, key=task.id)

    def combine(self, level, child, start, stop, shared) -> None:
        """Submit one combine task per parent of ``[start, stop)``; at the top level of the
        workers' combines, wait for them and bring the results into the caller's arrays."""
        layout, spec = self.program.layout, self.program.spec
        written = sorted(n for n in layout.arrays if n in self.program.closure.written)
        meta = {"params": list(spec.params), "written": written,
                "scalars": {n: v for n, v in shared.items() if n not in layout.arrays},
                "arrays": {n: (shared[n].size, shared[n].dtype) for n in layout.arrays}}
        final = level.index == self.top
        below, produced = self.below, []
        firsts = [b[1] for b in below]
        import bisect

        for p in range(start, stop):
            c0, c1 = int(level.offsets[p]), int(level.offsets[p + 1])
            pieces, cover = [], []
            i = max(bisect.bisect_right(firsts, c0) - 1, 0)
            while i < len(below) and below[i][1] < c1:
                task, s, e, lo, hi = below[i]
                a, b = max(s, c0), min(e, c1)
                if b > a:
                    pieces.append((task, a - s, b - a))
                    cover.append((lo, hi))
                i += 1
            plo, phi = self._span(level, p, p + 1)
            originals, sent = None, 0
            if plo is not None and not _covers(cover, plo, phi):
                originals = {}
                for name in layout.arrays:
                    arr = shared[name]
                    a_lo, a_hi = min(plo, arr.size), min(phi, arr.size)
                    originals[name] = (a_lo, arr[a_lo:a_hi].copy())
                    sent += originals[name][1].nbytes
            parent = {"level": level.index,
                      "params": {v: level.params[v][p].item() for v in layout.varying},
                      "carried": {c: level.carried[c][p].item() for c in layout.carried},
                      "span": None if plo is None else (plo, phi)}
            tid = f"hpu-{spec.name}-{self.key[:8]}-{time.time_ns()}-c{level.index}.{p}"
            task = _Task(tid, _combine_parent,
                         (self.key, self.blob, self.env, meta, parent, pieces, originals, final,
                          tid), {})
            marker, self.combine_marker = self.combine_marker, None
            self._submit(task, kill_marker=marker)
            self.sent[tid] = sent
            produced.append((task, p, p + 1, plo, phi))
        for task, *_ in below:  # the scheduler keeps what its dependents need, no longer
            task.fut = None
        self.below = produced
        if final:
            self._collect(level, produced)

    def _local(self, task, memo):
        """``task`` evaluated on this machine (a redo): its inputs too, from the caller's
        untouched arrays."""
        if task.id not in memo:
            args = _subst(task.args, lambda t: self._local(t, memo))
            memo[task.id] = task.fn(*args, **task.kwargs)
        return memo[task.id]

    def _collect(self, level, finals) -> None:
        from distributed import wait

        wait([t.fut for t, *_ in finals])
        results, memo = [], {}
        for task, p, _, _, _ in finals:
            fut = task.fut
            if fut.status == "finished":
                res = fut.result()
            else:
                err = fut.exception()
                if not _is_cluster_failure(err):
                    raise err  # the function's own error, as a local run raises it
                reason = (f"the combine of task {p} of level {level.index} failed on the "
                          f"cluster ({type(err).__name__}: {err}); its subtree was redone on "
                          "this machine from the caller's original arrays")
                warnings.warn(f"hpu: {reason}", _perf_warning(), stacklevel=user_stacklevel())
                self.fallbacks.append(reason)
                res = self._local(task, memo)
            results.append((p, res))
        # every task is in: only now touch the caller's arrays
        shared = self.values
        per_worker: dict[str, list] = {}
        log: dict = {}
        for p, res in results:
            got = 0
            for name, (lo, vals, packed) in res["writes"].items():
                mask = np.unpackbits(packed, count=len(vals)).astype(bool)
                shared[name][lo:lo + len(vals)][mask] = vals[mask]
                got += vals.nbytes + packed.nbytes
            _store(level, p, res["values"][0], self.program.layout.result_arity)
            log.update(res["log"])
            rec = per_worker.setdefault(res["worker"], [0] * 10)
            rec[5] += got
        alive = set(_workers(self.client))
        for tid, entry in sorted(log.items()):
            rec = per_worker.setdefault(entry["worker"], [0] * 10)
            if entry["kind"] == "range":
                rec[0] += entry["tasks"]
                rec[1] += 1
                self.fallbacks.extend(f"on {entry['worker']}: {f}" for f in entry["fallbacks"])
            else:
                rec[2] += 1
            rec[3] += entry["seconds"]
            rec[4] += self.sent.get(tid, 0)
            rec[6] += entry["cpu_tasks"]
            rec[7] += entry["gpu_tasks"]
            rec[8] += entry["moved_in"]
        for w in sorted(self.before - alive):
            moved = [(s, e, lv, log[t]["worker"]) for t, (pw, s, e, lv) in
                     sorted(self.range_workers.items()) if pw == w and t in log
                     and log[t]["worker"] != w]
            what = "; ".join(f"its tasks [{s}, {e}) of level {lv} were recomputed on {on} "
                             "from the client's original spans" for s, e, lv, on in moved)
            self.fallbacks.append(
                f"worker {w} was lost mid-run; " + (what + "; " if what else "")
                + "the combine tasks and outputs it held were recomputed by Dask from their "
                  "inputs")
        self.records = [WorkerRecord(a, tasks=v[0], ranges=v[1], seconds=v[3], bytes_sent=v[4],
                                     bytes_received=v[5], cpu_tasks=v[6], gpu_tasks=v[7],
                                     combines=v[2], bytes_between=v[8])
                        for a, v in sorted(per_worker.items())]
        lost = [f for f in self.fallbacks if "was lost" in f]
        if lost:
            warnings.warn("hpu: " + "; ".join(lost), _perf_warning(), stacklevel=user_stacklevel())

    def _span(self, level, s, e):
        span = self.program.spec.span
        if span is None:
            return None, None
        lo_name, hi_name = span
        lo_v, hi_v = level.params.get(lo_name), level.params.get(hi_name)
        lo = int(lo_v[s:e].min()) if lo_v is not None else int(self.values[lo_name])
        hi = int(hi_v[s:e].max()) if hi_v is not None else int(self.values[hi_name])
        lo = max(lo, 0)
        return lo, max(hi, lo)

    def count(self, *a, **k):  # pragma: no cover - the client expands the tree itself
        raise NotImplementedError("the tree is expanded on the client")

    fill = count


@dataclass(eq=False)
class _Task:
    """A Dask task of the combine-on-workers graph, kept so that a part that failed for
    good can be evaluated again here (:meth:`_DaskBackend._local`)."""

    id: str
    fn: Any
    args: tuple         #: a _Task stands for its output (a future on the cluster)
    kwargs: dict
    fut: Any = None


def _subst(obj, f):
    """``obj`` with every :class:`_Task` inside (lists, tuples, dicts) replaced by ``f(task)``."""
    if isinstance(obj, _Task):
        return f(obj)
    if isinstance(obj, tuple):
        return tuple(_subst(o, f) for o in obj)
    if isinstance(obj, list):
        return [_subst(o, f) for o in obj]
    if isinstance(obj, dict):
        return {k: _subst(v, f) for k, v in obj.items()}
    return obj


def _covers(spans, lo: int, hi: int) -> bool:
    """Whether the union of ``spans`` (``(lo, hi)``; a None lo: whole arrays) covers
    ``[lo, hi)``."""
    at = lo
    for s, e in sorted(spans, key=lambda se: -1 if se[0] is None else se[0]):
        if s is None:
            return True
        if s > at:
            return False
        at = max(at, e)
        if at >= hi:
            return True
    return at >= hi


def _store(level, t, value, arity) -> None:
    if arity == 0:
        return
    parts = (value,) if arity == 1 else tuple(value)
    for k, v in enumerate(parts):
        level.results[k][t] = v


def _is_cluster_failure(err) -> bool:
    try:
        from distributed.scheduler import KilledWorker
    except ImportError:  # pragma: no cover
        KilledWorker = ()
    import asyncio

    return isinstance(err, (KilledWorker, OSError, asyncio.CancelledError, TimeoutError)) or \
        type(err).__name__ in ("CommClosedError", "FutureCancelledError", "CancelledError")


def _perf_warning():
    from hpu._errors import HpuPerformanceWarning

    return HpuPerformanceWarning


_told_local: set[str] = set()


def run_on_cluster(dc, program, values, *, options) -> ClusterRun:
    """``dc.run(..., cluster=cluster)``: distribute as :func:`plan_cluster` says, or run locally."""
    from hpu._driver import execute

    t_start = time.perf_counter()
    cluster = options["cluster"]
    opts = as_cluster(cluster)
    client = connect(opts.target)
    scheduler = client.scheduler.address
    device, strategy, cl_device = options["device"], options["strategy"], options["cl_device"]
    local_opts = {**options, "cluster": None}  # checked run options; each worker runs locally
    fallbacks: list[str] = []

    def local(reason, plan=None, fallback=False):
        if fallback:
            fallbacks.append(reason)
            warnings.warn(f"hpu: {reason}", _perf_warning(), stacklevel=user_stacklevel())
        elif dc.__name__ not in _told_local:  # a decision, not a fault: once per function
            _told_local.add(dc.__name__)
            warnings.warn(f"hpu: {dc.__name__}: {reason}", _perf_warning(),
                          stacklevel=user_stacklevel())
        run = dc._run_checked(local_opts, values, program)
        return _as_cluster_run(run, fallbacks=run.fallbacks + fallbacks,
                               seconds=time.perf_counter() - t_start,
                               cluster=ClusterReport(scheduler, plan, False, reason))

    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
    except (TimeoutError, OSError):
        pass
    nodes = node_profiles(client) if _workers(client) else []
    if not nodes:
        return local(f"the cluster at {scheduler} has no workers; ran on this machine",
                     fallback=True)
    plan = _plan_for(dc, program, values, nodes, measure_network(client), opts, device,
                     strategy, cl_device)
    if not plan.distribute:
        return local(plan.reason, plan)
    from hpu._cpu import CpuBackend
    from hpu._snapshot import Snapshot

    # the caller's arrays as they were, put back on any exception, as a local run does
    # (hpu._snapshot; the local runs above take their own): the client's divides and
    # combines write them, and the workers' changes are applied before the root combine
    snapshot = Snapshot.take(program, values, keep=options["keep_inputs"])
    backend = _DaskBackend(dc, program, values, client, plan, local_opts, fallbacks)
    cpu = CpuBackend(program)
    D = plan.level

    def assign(level, phase, m):
        if phase == "leaf" or (phase == "combine" and backend.on_workers(level)):
            return [(backend, 0, m)]
        return [(cpu, 0, m)]

    user_error = None
    try:
        ex = execute(program.layout, program.types, values, cpu, K=D, assign=assign)
    except BaseException as err:
        snapshot.restore()
        # a task's error that its rerun alone did not repeat: the one Python would raise
        user_error = snapshot.rerun(program, values) if getattr(err, "not_reproduced",
                                                                False) else None
        if user_error is None:
            raise
    if user_error is not None:
        raise user_error
    on_workers = backend.on_workers(ex.K - 1)  # False when the tree ended above its top
    # the leaf phase (and the workers' combines) booked on the client: submitting, then
    # waiting at the last of them for every task below
    report = ClusterReport(scheduler, plan, True, plan.reason, level=ex.K,
                           workers=tuple(backend.records),
                           seconds=sum(r.cpu_seconds for r in ex.levels
                                       if r.phase == "leaf" or (r.phase == "combine"
                                                                and backend.on_workers(r.level))),
                           combine_on="workers" if on_workers else "client",
                           combine_level=backend.top if on_workers else ex.K)
    # the client's own view: its CPU expanded and combined, its device did nothing; the
    # workers' splits are in cluster.workers
    return ClusterRun(value=ex.value, device=device, alpha=1.0, y=None, K=ex.K,
                      cpu_tasks=ex.leaf_tasks.get("cpu", 0), gpu_tasks=0,
                      fallbacks=backend.fallbacks, levels=ex.levels, transfers=(),
                      seconds=time.perf_counter() - t_start, cluster=report)


def _as_cluster_run(run: Run, *, fallbacks, seconds, cluster) -> ClusterRun:
    return ClusterRun(value=run.value, device=run.device, alpha=run.alpha, y=run.y, K=run.K,
                      cpu_tasks=run.cpu_tasks, gpu_tasks=run.gpu_tasks, fallbacks=fallbacks,
                      levels=run.levels, transfers=run.transfers, seconds=seconds,
                      cluster=cluster)


def _plan_for(dc, program, values, nodes, network, opts, device, strategy, cl_device):
    spec = dc.spec
    arrays = {n: values[n] for n in program.layout.arrays}
    written = program.closure.written
    if spec.span is not None:
        n = int(values[spec.span[1]]) - int(values[spec.span[0]])
        in_b = sum(a.itemsize for a in arrays.values()) * max(n, 0)
        out_b = sum(a.itemsize for k, a in arrays.items() if k in written) * max(n, 0)
    else:
        n = max((a.size for a in arrays.values()), default=1)
        in_b = sum(a.nbytes for a in arrays.values())
        out_b = sum(a.nbytes for k, a in arrays.items() if k in written)
    element_bytes = sum(a.itemsize for a in arrays.values()) or 8
    try:
        from hpu._profile import active_profile

        prof = active_profile(cl_device)
        machine, contention = prof.machine(), prof.contention
    except Exception:  # noqa: BLE001 - no OpenCL here: the client's CPU alone
        import numba

        from hpu import model

        machine = model.Machine(p=numba.get_num_threads(), g=1, gamma=1e-6,
                                seconds_per_unit=2e-9)
        contention = 1.0
    return plan_cluster(a=spec.a, b=spec.b, cost=spec.cost, n=max(n, 1),
                        element_bytes=element_bytes, in_bytes=in_b, out_bytes=out_b,
                        spanned=spec.span is not None, nodes=nodes, network=network,
                        local=machine, level=opts.level, device=device, strategy=strategy,
                        local_contention=contention, combine=opts.combine,
                        combine_bytes=opts.combine_bytes)


def _calibrate_here(device, quick) -> dict:
    from hpu import calibrate as cal

    profile = cal.calibrate(device, quick=quick)
    path = cal.save_profile(profile)
    return {"path": str(path), **profile.summary()}


def calibrate_cluster(target, *, device=None, quick=False) -> dict:
    """``hpu calibrate --cluster``: calibrate every worker (one after another, so that
    workers sharing a machine do not disturb each other's timings), store each profile
    where that worker's runs read it, and measure the network's λ and δ."""
    client = connect(target)
    workers = sorted(_workers(client))
    if not workers:
        raise ClusterUnavailableError(f"cluster={target!r} has no workers to calibrate; start "
                                      "some (dask worker ADDRESS) and run it again")
    out = {}
    for w in workers:
        out.update(client.run(_calibrate_here, device, quick, workers=[w]))
    _networks.pop(client.scheduler.address, None)
    for k in [k for k in _nodes if k[0] == client.scheduler.address]:
        del _nodes[k]  # the new profiles replace what the plan had read
    net = measure_network(client)
    return {"scheduler": client.scheduler.address, "workers": out,
            "network": {"latency_s": net.latency_s, "seconds_per_byte": net.seconds_per_byte}}


def describe(target) -> dict:
    """The cluster for ``hpu info``: scheduler, workers and their nodes."""
    client = connect(target)
    workers = _workers(client)
    return {"scheduler": client.scheduler.address,
            "workers": {a: {"threads": w.get("nthreads"), "memory": w.get("memory_limit")}
                        for a, w in sorted(workers.items())},
            "nodes": [vars(nd) for nd in node_profiles(client)] if workers else []}
