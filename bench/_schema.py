"""The ``results.json`` format shared by ``bench/run.py`` and ``notebooks/03_experiments.ipynb``.

Why a module of its own: the writer (``bench/run.py``), the reader (the
experiments notebook) and the tests must agree on one format, and a format
that is checked in only one of them drifts.  ``notebooks/README.md`` documents
it; :func:`validate_results` enforces what that page promises, so a file that
passes here loads in the notebook.

It checks everything the notebook's own ``validate_results`` checks (schema 1;
``machine``, ``profile`` and a non-empty ``measurements``; each record's keys,
a known method and a positive time; ``alpha``/``y`` on hybrid records; a
``sequential`` and a ``hybrid`` record at every n) and, in addition, what the
README states about the values: the machine's and the profile's fields, that
``median_s`` is the median of ``seconds``, that α lies in [0, 1] and y is a
level, and that shares are null on methods that have none.  Extra keys
anywhere are allowed: readers ignore what they do not know.
"""
from __future__ import annotations

import math
import statistics
from datetime import datetime

__all__ = ["SCHEMA", "METHODS", "MACHINE_KEYS", "PROFILE_KEYS", "RECORD_KEYS",
           "SHARE_METHODS", "validate_results"]

SCHEMA = 1
METHODS = ("sequential", "cpu", "gpu", "hybrid", "np.sort", "np.sort stable")
#: methods whose records carry the CPU's and the device's seconds in the levels >= y
SHARE_METHODS = ("gpu", "hybrid")
MACHINE_KEYS = ("cpu", "cores", "opencl_device", "opencl_platform", "opencl_driver", "python",
                "packages")
PROFILE_KEYS = ("p", "g", "gamma", "latency_s", "seconds_per_byte", "cpu_seconds_per_element",
                "device_shares_cpu")
RECORD_KEYS = ("n", "method", "alpha", "y", "seconds", "median_s", "cpu_share_s", "device_share_s")

_FIX = "see notebooks/README.md for the format"


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def validate_results(results, where: str = "results"):
    """Return ``results`` if it follows the format; else raise ValueError naming the first problem."""
    def need(cond, what):
        if not cond:
            raise ValueError(f"{where}: {what}; {_FIX}")

    need(isinstance(results, dict), f"expected a JSON object, got {type(results).__name__}")
    need(results.get("schema") == SCHEMA, f"schema is {results.get('schema')!r}, expected {SCHEMA}")
    for key in ("created", "writer", "quick", "machine", "profile", "algorithm", "dtype", "repeats",
                "measurements"):
        need(key in results, f"the key {key!r} is missing")
    try:
        created = datetime.fromisoformat(str(results["created"]))
    except ValueError:
        created = None
    need(created is not None and created.tzinfo is not None,
         f"created is {results['created']!r}, expected an ISO 8601 time with a UTC offset")
    need(isinstance(results["quick"], bool), f"quick is {results['quick']!r}, expected true or false")

    machine = results["machine"]
    need(isinstance(machine, dict), f"machine is {type(machine).__name__}, expected an object")
    for key in MACHINE_KEYS:
        need(key in machine, f"machine.{key} is missing")
    need(isinstance(machine["cores"], int) and machine["cores"] >= 1,
         f"machine.cores is {machine['cores']!r}, expected an integer >= 1")
    need(isinstance(machine["packages"], dict), "machine.packages is not an object")

    profile = results["profile"]
    need(isinstance(profile, dict), f"profile is {type(profile).__name__}, expected an object")
    for key in PROFILE_KEYS:
        need(key in profile, f"profile.{key} is missing")
    for key in ("p", "g"):
        need(isinstance(profile[key], int) and profile[key] >= 1,
             f"profile.{key} is {profile[key]!r}, expected an integer >= 1")
    for key in ("gamma", "cpu_seconds_per_element"):
        need(_number(profile[key]) and profile[key] > 0, f"profile.{key} is {profile[key]!r}, expected > 0")
    for key in ("latency_s", "seconds_per_byte"):
        need(_number(profile[key]) and profile[key] >= 0, f"profile.{key} is {profile[key]!r}, expected >= 0")
    need(isinstance(profile["device_shares_cpu"], bool), "profile.device_shares_cpu is not true/false")
    if "source" in profile:
        need(profile["source"] in ("measured", "builtin"),
             f"profile.source is {profile['source']!r}, expected 'measured' or 'builtin'")

    ms = results["measurements"]
    need(isinstance(ms, list) and ms, "measurements is empty")
    for i, m in enumerate(ms):
        need(isinstance(m, dict), f"measurements[{i}] is not an object")
        for key in RECORD_KEYS:
            need(key in m, f"measurements[{i}] has no {key!r}")
        method = m["method"]
        need(method in METHODS, f"measurements[{i}].method is {method!r}, expected one of {METHODS}")
        need(isinstance(m["n"], int) and not isinstance(m["n"], bool) and m["n"] >= 1,
             f"measurements[{i}].n is {m['n']!r}, expected an integer >= 1")
        secs = m["seconds"]
        need(isinstance(secs, list) and secs and all(_number(s) and s > 0 for s in secs),
             f"measurements[{i}].seconds is {secs!r}, expected a non-empty list of positive times")
        need(_number(m["median_s"]) and m["median_s"] > 0,
             f"measurements[{i}] has no positive time (median_s = {m['median_s']!r})")
        need(math.isclose(m["median_s"], statistics.median(secs), rel_tol=1e-9),
             f"measurements[{i}].median_s is {m['median_s']!r}, not the median of its seconds "
             f"({statistics.median(secs)!r})")
        if method == "hybrid":
            need(m["alpha"] is not None and m["y"] is not None,
                 f"measurements[{i}] is hybrid without alpha/y")
            need(_number(m["alpha"]) and 0 <= m["alpha"] <= 1,
                 f"measurements[{i}].alpha is {m['alpha']!r}, expected a number in [0, 1]")
            need(isinstance(m["y"], int) and not isinstance(m["y"], bool) and m["y"] >= 0,
                 f"measurements[{i}].y is {m['y']!r}, expected an integer level >= 0")
        else:
            need(m["alpha"] is None and m["y"] is None,
                 f"measurements[{i}] ({method}) has alpha/y; only hybrid records have them")
        for key in ("cpu_share_s", "device_share_s"):
            v = m[key]
            if method in SHARE_METHODS:
                need(v is None or (_number(v) and v >= 0),
                     f"measurements[{i}].{key} is {v!r}, expected null or seconds >= 0")
            else:
                need(v is None, f"measurements[{i}].{key} is {v!r}; {method} records have null shares")
    for n in sorted({m["n"] for m in ms}):
        methods = {m["method"] for m in ms if m["n"] == n}
        need("sequential" in methods, f"n = {n} has no 'sequential' record (the baseline)")
        need("hybrid" in methods, f"n = {n} has no 'hybrid' record")
    return results
