"""The on-disk cache of generated modules: a new process finds it and does not recompile."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from hpu import _cache

SCRIPT = textwrap.dedent('''
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    import hpu
    from hpu import _cache
    sys.path.insert(0, sys.argv[1])
    import cached_sort
    x = np.random.default_rng(0).integers(0, 10**6, 1000)
    a = x.copy()
    t1 = time.perf_counter()
    cached_sort.mergesort(a, np.empty_like(a), 0, len(a))
    t2 = time.perf_counter()
    assert (a == np.sort(x)).all()
    program = next(iter(cached_sort.mergesort._programs.values()))
    s = _cache.stats()
    print(json.dumps({"import_s": t1 - t0, "first_call_s": t2 - t1, "hits": s.hits,
                      "writes": s.writes, "numba_misses": sum(
                          program.function.stats.cache_misses.values())}))
''')

MODULE = textwrap.dedent('''
    import hpu

    def merge(a, tmp, lo, mid, hi):
        i = lo
        j = mid
        k = lo
        while i < mid and j < hi:
            if a[j] < a[i]:
                tmp[k] = a[j]
                j += 1
            else:
                tmp[k] = a[i]
                i += 1
            k += 1
        while i < mid:
            tmp[k] = a[i]
            i += 1
            k += 1
        for t in range(lo, k):
            a[t] = tmp[t]

    @hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
    def mergesort(a, tmp, lo, hi):
        if hi - lo <= 1:
            return
        mid = (lo + hi) // 2
        mergesort(a, tmp, lo, mid)
        mergesort(a, tmp, mid, hi)
        merge(a, tmp, lo, mid, hi)
''')


def _files(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def _child(src: Path, cache: Path) -> dict:
    env = {**os.environ, "HPU_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(src)], env=env, check=True,
                         capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_finds_the_cache_and_compiles_nothing(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "cached_sort.py").write_text(MODULE)
    cache = tmp_path / "cache"
    cold = _child(src, cache)
    assert cold["writes"] == 1 and cold["hits"] == 0 and cold["numba_misses"] >= 1
    files = _files(cache)
    assert any(name.endswith(".py") for name in files)
    assert any(name.endswith(".nbi") for name in files)  # Numba's index, next to the module
    warm = _child(src, cache)
    assert warm["writes"] == 0 and warm["hits"] == 1
    assert warm["numba_misses"] == 0
    assert _files(cache) == files  # nothing new written, nothing rewritten
    print(f"\nfirst call, n=1000 mergesort: cold cache {cold['first_call_s']:.2f} s, "
          f"warm cache {warm['first_call_s']:.2f} s (imports {warm['import_s']:.2f} s)")

    # a corrupt cached module is rewritten, never imported
    module = next(cache.glob("generated/*.py"))
    module.write_text("this is not python (\n")
    again = _child(src, cache)
    assert again["writes"] == 1 and again["hits"] == 0


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HPU_CACHE_DIR", str(tmp_path / "c"))
    assert _cache.cache_dir() == tmp_path / "c" / "generated"
    monkeypatch.delenv("HPU_CACHE_DIR")
    assert _cache.cache_dir().name == "generated" and "hpu" in str(_cache.cache_dir())


def test_load_module_writes_once_then_hits(monkeypatch, tmp_path):
    monkeypatch.setenv("HPU_CACHE_DIR", str(tmp_path))
    source = "X = 41\n\ndef f():\n    return X + 1\n"
    before = _cache.stats()
    mod = _cache.load_module(source, "unit test")
    assert mod.f() == 42
    path = _cache.module_path(source, "unit test")
    assert path.read_text() == source and path.parent == tmp_path / "generated"
    assert _cache.load_module(source, "unit test") is mod  # same process: same module
    mid = _cache.stats()
    assert (mid.writes, mid.imports) == (before.writes + 1, before.imports + 1)
    # a different source gets a different file
    other = _cache.load_module(source.replace("41", "1"), "unit test")
    assert other.f() == 2 and _cache.module_path(source.replace("41", "1"), "unit test") != path


def test_a_truncated_file_is_replaced(monkeypatch, tmp_path):
    monkeypatch.setenv("HPU_CACHE_DIR", str(tmp_path))
    source = "Y = 7\n" * 50
    path = _cache.module_path(source, "trunc")
    path.parent.mkdir(parents=True)
    path.write_text(source[:13])
    mod = _cache.load_module(source, "trunc")
    assert mod.Y == 7 and path.read_text() == source
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_results_do_not_depend_on_the_cache(monkeypatch, tmp_path):
    """The same function in a fresh cache folder computes the same thing."""
    import dc_examples as E
    import hpu

    monkeypatch.setenv("HPU_CACHE_DIR", str(tmp_path))
    f = hpu.divide_and_conquer(E.dsum.py_func)
    x = np.arange(1000)
    assert f(x, 0, 1000) == x.sum()
    assert list((tmp_path / "generated").glob("hpu_dsum_*.py"))
