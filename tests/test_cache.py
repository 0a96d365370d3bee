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
                          getattr(program.module, program.spec.name).stats.cache_misses.values())}))
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
    # one module: the signature's deep-recursion module is built only when a run needs it
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


def test_a_change_to_hpus_own_code_names_new_modules(monkeypatch, tmp_path):
    """Generated modules hold hpu's checks inlined in their cached machine code: hpu's code
    changed under the same version number (an install from main) must not load them."""
    monkeypatch.setenv("HPU_CACHE_DIR", str(tmp_path))
    source = "Z = 3\n"
    digest = _cache._source_digest()
    assert len(digest) == 16 and digest == _cache._source_digest()
    path = _cache.module_path(source, "unit test")
    monkeypatch.setattr(_cache, "_source_digest", lambda: "0" * 16)
    assert _cache.module_path(source, "unit test") != path


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


# --------------------------------------------------------------------------- private folders

PLANT = textwrap.dedent('''
    import importlib.util, json, os, py_compile, sys, warnings
    from pathlib import Path
    from hpu import _cache
    marker, hostile = Path(sys.argv[1]), Path(sys.argv[2])
    source = "VALUE = 42\\n"
    # plant, in the folder the victim would use, the expected module and an
    # unchecked-hash pyc of other code: Python would run that pyc without
    # looking at the source
    target = hostile / "generated" / (_cache.module_name(source, "victim") + ".py")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    evil = hostile / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('ran')\\nVALUE = 666\\n")
    py_compile.compile(str(evil), cfile=importlib.util.cache_from_source(str(target)),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    for p in [hostile, *hostile.rglob("*")]:
        os.chown(p, 12345, 12345)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = _cache.load_module(source, "victim")
    used = Path(mod.__file__).parent
    st = os.stat(used)
    print(json.dumps({"value": mod.VALUE, "ran": marker.exists(), "used": str(used),
                      "mode": st.st_mode & 0o777, "uid": st.st_uid,
                      "warnings": [str(w.message) for w in caught]}))
''')


def _plant(tmp_path, env):
    marker = tmp_path / "marker"
    hostile = env.pop("_HOSTILE")
    out = subprocess.run([sys.executable, "-c", PLANT, str(marker), str(hostile)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _needs_root():
    import pytest
    if not hasattr(os, "getuid") or os.getuid() != 0:
        pytest.skip("planting a folder owned by another user needs root (chown)")


def test_a_cache_folder_owned_by_another_user_is_never_imported_from(tmp_path):
    _needs_root()
    hostile = tmp_path / "shared"
    env = {**os.environ, "HPU_CACHE_DIR": str(hostile), "TMPDIR": str(tmp_path / "tmp"),
           "_HOSTILE": str(hostile)}
    (tmp_path / "tmp").mkdir()
    got = _plant(tmp_path, env)
    assert got["value"] == 42 and not got["ran"]
    assert not got["used"].startswith(str(hostile))
    assert got["mode"] == 0o700 and got["uid"] == os.getuid()
    assert any("owned by uid 12345" in w for w in got["warnings"])


def test_a_planted_fallback_folder_is_never_imported_from(tmp_path):
    """The configured folder cannot be created; ``<tmp>/hpu-<uid>`` belongs to someone else."""
    _needs_root()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    hostile = tmp / f"hpu-{os.getuid()}"
    env = {**os.environ, "HPU_CACHE_DIR": str(blocker / "cache"), "TMPDIR": str(tmp),
           "_HOSTILE": str(hostile)}
    got = _plant(tmp_path, env)
    assert got["value"] == 42 and not got["ran"]
    assert not got["used"].startswith(str(hostile) + os.sep)
    assert got["used"].startswith(str(tmp)) and got["mode"] == 0o700
    assert got["uid"] == os.getuid()


def test_a_group_writable_cache_folder_is_refused(monkeypatch, tmp_path):
    folder = tmp_path / "c" / "generated"
    folder.mkdir(parents=True)
    folder.chmod(0o775)
    monkeypatch.setenv("HPU_CACHE_DIR", str(tmp_path / "c"))
    assert "writable by others" in _cache._why_not_private(folder)
    import pytest
    with pytest.warns(RuntimeWarning, match="writable by others"):
        mod = _cache.load_module("Z = 5\n", "groupw")
    assert mod.Z == 5 and Path(mod.__file__).parent != folder


def test_the_fallback_folder_is_private(monkeypatch, tmp_path):
    monkeypatch.setattr(_cache, "_fallback", [])
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    folder = _cache.fallback_dir()
    assert folder.is_relative_to(tmp_path)
    for p in (folder, folder.parent):
        assert p.stat().st_mode & 0o777 == 0o700 and p.stat().st_uid == os.getuid()
    assert _cache._why_not_private(folder) is None


def test_corrupt_numba_cache_files_are_rebuilt_with_a_warning(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "cached_sort.py").write_text(MODULE)
    cache = tmp_path / "cache"
    _child(src, cache)
    nbi = sorted(cache.glob("generated/__pycache__/*.nbi"))
    nbc = sorted(cache.glob("generated/__pycache__/*.nbc"))
    assert nbi and nbc
    nbi[0].write_bytes(b"\x80\x04garbage")
    nbc[-1].write_bytes(nbc[-1].read_bytes()[:20])
    env = {**os.environ, "HPU_CACHE_DIR": str(cache)}
    for _ in range(2):  # rebuilt the first time, clean the second
        out = subprocess.run([sys.executable, "-W", "always", "-c", SCRIPT, str(src)], env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        json.loads(out.stdout.strip().splitlines()[-1])
        if _ == 0:
            assert "corrupt Numba cache files" in out.stderr
        else:
            assert "corrupt Numba cache files" not in out.stderr


# --------------------------------------------------------------------------- records

def _records(monkeypatch, tmp_path):
    monkeypatch.setenv("HPU_CACHE_DIR", str(tmp_path / "c"))
    return tmp_path / "c" / "records"


def test_a_record_is_found_only_under_its_own_key(monkeypatch, tmp_path):
    folder = _records(monkeypatch, tmp_path)
    key = {"source": "abc", "depth": 64, "kinds": [["n", "int"]]}
    assert _cache.load_record("unit", key) is None
    before = _cache.stats()
    assert _cache.store_record("unit", key, {"answer": [1, 2.5, "x", None]})
    assert _cache.load_record("unit", key) == {"answer": [1, 2.5, "x", None]}
    assert _cache.load_record("unit", {**key, "depth": 32}) is None
    assert _cache.load_record("other", key) is None
    after = _cache.stats()
    assert (after.record_writes - before.record_writes, after.record_hits - before.record_hits) \
        == (1, 1)
    assert folder.stat().st_mode & 0o777 == 0o700 and folder.stat().st_uid == os.getuid()
    assert [p.suffix for p in folder.iterdir()] == [".json"]


def test_corrupt_or_foreign_record_files_are_ignored_then_rewritten(monkeypatch, tmp_path):
    _records(monkeypatch, tmp_path)
    key = {"k": 1}
    _cache.store_record("unit", key, "good")
    path = _cache._record_path("unit", key)
    bad_contents = [b"\x80\x04garbage", b'{"kind": "unit", "key": {"k": 1}, "val',
                    b"[1, 2, 3]", b'{"kind": "unit", "key": {"k": 2}, "value": "planted"}',
                    b'{"kind": "nope", "key": {"k": 1}, "value": "planted"}',
                    b'{"kind": "unit", "key": {"k": 1}}', "\udcff".encode("utf-8", "surrogatepass")]
    for content in bad_contents:
        path.write_bytes(content)
        assert _cache.load_record("unit", key) is None, content
    _cache.store_record("unit", key, "again")
    assert _cache.load_record("unit", key) == "again"
    path.unlink()
    path.mkdir()  # not even a file: still only a miss
    assert _cache.load_record("unit", key) is None
    assert _cache.store_record("unit", key, "x") is False


def test_a_group_writable_records_folder_is_never_read(monkeypatch, tmp_path):
    folder = _records(monkeypatch, tmp_path)
    monkeypatch.setattr(_cache, "_fallback", [])
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    key = {"k": "planted"}
    planted = folder / _cache._record_path("unit", key).name
    assert not planted.exists()  # the path asked for is in the fallback, not here
    planted.write_text(json.dumps({"kind": "unit", "key": key, "value": "planted"}))
    assert _cache.load_record("unit", key) is None
    assert _cache._record_path("unit", key).parent != folder


def _translation_inputs():
    from algorithms.mergesort import mergesort

    x = np.arange(64, dtype=np.int32)[::-1].copy()
    program, values = mergesort._program_for(x, np.empty_like(x), 0, x.size)
    shared = {n: values[n] for n in program.layout.shared}
    return program, shared


def test_the_translation_record_gives_what_the_translator_gives(monkeypatch, tmp_path):
    from hpu._opencl import _build, _levels

    _records(monkeypatch, tmp_path)
    program, shared = _translation_inputs()
    monkeypatch.setattr(_levels, "_cache", {})
    fresh = _levels.translate_levels(program, shared, 16)
    monkeypatch.setattr(_levels, "_cache", {})
    first = _build.translated_levels(program, shared, 16)    # translated, record written
    monkeypatch.setattr(_levels, "_cache", {})
    hits = _cache.stats().record_hits
    second = _build.translated_levels(program, shared, 16)   # read from the record
    assert _cache.stats().record_hits == hits + 1
    for got in (first, second):
        assert got.source == fresh.source and got.kernels == fresh.kernels
        assert (got.uses_fp64, got.fp64_first_use) == (fresh.uses_fp64, fresh.fp64_first_use)
        # the error channel's texts: a device error names the user's line after a record hit
        assert got.sites == fresh.sites and fresh.sites
    # another depth is another key
    monkeypatch.setattr(_levels, "_cache", {})
    assert _build.translated_levels(program, shared, 8).source != fresh.source


def test_a_translation_record_of_another_shape_is_translated_again(monkeypatch, tmp_path):
    from hpu._opencl import _build, _levels

    _records(monkeypatch, tmp_path)
    program, shared = _translation_inputs()
    key = _build._translation_key(program, shared, 16)
    monkeypatch.setattr(_levels, "_cache", {})
    fresh = _levels.translate_levels(program, shared, 16)
    for value in ({"source": "__kernel void x() {}"}, {"source": 3, "kernels": {},
                  "uses_fp64": False, "fp64_first_use": None},
                  {"source": "s", "kernels": {"k": [["a", "evil", "<i8", None]]},
                   "uses_fp64": False, "fp64_first_use": None},
                  {"source": "s", "kernels": {"k": [["a", "array", "not a dtype", None]]},
                   "uses_fp64": False, "fp64_first_use": None}, [1, 2], "text"):
        _cache.store_record(_build._TRANSLATION, key, value)
        monkeypatch.setattr(_levels, "_cache", {})
        got = _build.translated_levels(program, shared, 16)
        assert got.source == fresh.source and got.kernels == fresh.kernels, value
    # a translator whose files changed never reads the old record
    monkeypatch.setattr(_build, "_translator_digest", ["another translator"])
    assert _build._translation_key(program, shared, 16) != key


def test_the_probe_record_trusts_only_the_same_device_and_driver(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from hpu._opencl import _build

    _records(monkeypatch, tmp_path)
    plat = SimpleNamespace(name="Portable Computing Language", version="OpenCL 3.0 PoCL 6")
    dev = SimpleNamespace(platform=plat, name="cpu-x", version="OpenCL 3.0",
                          driver_version="6.0")
    assert not _build.known_to_build(dev)
    _build.remember_builds(dev)
    assert _build.known_to_build(dev)
    for change in ({"driver_version": "6.1"}, {"name": "cpu-y"}, {"version": "OpenCL 1.2"}):
        assert not _build.known_to_build(SimpleNamespace(**{**vars(dev), **change}))

    class Silent:
        platform = plat

        @property
        def name(self):
            raise RuntimeError("the driver cannot say")

    assert not _build.known_to_build(Silent())  # no key: probed, never trusted


ERRORS = textwrap.dedent('''
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import cached_checks
    f = cached_checks.dsum
    x = np.arange(1, 65)
    assert f.run(x, 0, 64, 3, device="cpu", K=3).value == sum(v // 3 + v % 3 + v // 4
                                                             for v in x)
    try:
        f.run(x, 0, 64, 0, device="cpu", K=3)
    except ZeroDivisionError as err:
        text = str(err)
    program = next(iter(f._programs.values()))
    print(json.dumps({"text": text, "floordiv": [str(s) for s in
                                                 program.module.hpu__floordiv.signatures],
                      "misses": sum(getattr(program.module, program.spec.name)
                                    .stats.cache_misses.values())}))
''')

CHECKS = textwrap.dedent('''
    import hpu

    @hpu.divide_and_conquer(b=2, cost="n", span=("lo", "hi"))
    def dsum(a, lo, hi, d):
        if hi - lo <= 1:
            return a[lo] // d + a[lo] % d + a[lo] // (d + 1)
        mid = (lo + hi) // 2
        return dsum(a, lo, mid, d) + dsum(a, mid, hi, d)
''')


def test_a_cached_modules_errors_name_their_sites_in_every_process(tmp_path):
    """The CPU module's checks carry site numbers in its machine code, which the disk cache
    keeps: a second process, compiling nothing, still names the user's line and expression.
    Each check compiles once per type signature, not once per site: two ``//`` of a variable
    here, of the same types (``// 2``, a divisor no run makes 0, is the operator itself)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "cached_checks.py").write_text(CHECKS)
    env = {**os.environ, "HPU_CACHE_DIR": str(tmp_path / "cache")}
    runs = [json.loads(subprocess.run(
        [sys.executable, "-c", ERRORS, str(src)], env=env, check=True, capture_output=True,
        text=True, timeout=300).stdout.strip().splitlines()[-1]) for _ in range(2)]
    where = f"{src / 'cached_checks.py'}:7: a[lo] // d: integer division or modulo by zero"
    assert [r["text"] for r in runs] == [where, where]
    assert runs[0]["misses"] >= 1 and runs[1]["misses"] == 0       # the second: from the cache
    assert sorted(runs[0]["floordiv"]) == ["(int64, int64, int64)"], runs[0]["floordiv"]


BITONIC = textwrap.dedent('''
    import hpu

    def bitonic_merge(a, lo, n, up):
        k = n // 2
        while k > 0:
            i = lo
            while i < lo + n:
                for j in range(i, i + k):
                    if (a[j] > a[j + k]) == up:
                        a[j], a[j + k] = a[j + k], a[j]
                i += 2 * k
            k //= 2

    @hpu.divide_and_conquer
    def bitonic_sort(a, lo, n, up, depth):
        if n > 1:
            k = n // 2
            bitonic_sort(a, lo, k, True, 0)
            bitonic_sort(a, lo + k, k, False, depth + 1)
            bitonic_merge(a, lo, n, up)
''')

BITONIC_RUN = textwrap.dedent('''
    import sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import bitonic
    for device in ("cpu", "gpu"):
        x = np.random.default_rng(1).integers(-99, 99, 1 << 12).astype(np.int32)
        bitonic.bitonic_sort.options(device=device)(x, 0, len(x), True, 0)
        assert (x == np.sort(x)).all(), device
        y = x[::-1].copy()
        bitonic.bitonic_sort.sequential(y, 0, len(y), True, 0)
        assert (y == np.sort(x)).all()
    print("sorted")
''')


def test_recursive_calls_passing_constants_load_from_a_warm_cache(tmp_path):
    """``f(a, lo, k, True, 0)``: the constants are passed as the parameters' kinds, one
    compiled signature.  (Numba compiled one for each literal, and a process that loaded
    that recursion from the cache aborted: "LLVM ERROR: Symbol not found".)"""
    src = tmp_path / "src"
    src.mkdir()
    (src / "bitonic.py").write_text(BITONIC)
    env = {**os.environ, "HPU_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):      # cold, then warm
        out = subprocess.run([sys.executable, "-c", BITONIC_RUN, str(src)], env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0 and out.stdout.strip() == "sorted", out.stderr[-2000:]
