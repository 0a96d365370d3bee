"""On-disk cache of generated modules, so that a new process does not compile again.

Why a file on disk
==================

Numba can cache machine code (``@njit(cache=True)``), but only for functions
that live in a real source file: it stores the code next to the file and
checks the file's timestamp.  So hpu writes every generated module
(:mod:`hpu._codegen`) to a file named by a hash of its source, the hpu version (and a
digest of hpu's own source files: :func:`_source_digest`)
and the Numba version, and imports it from there.  In a new process the same
function produces the same source, hence the same file name; the file is
already there, its ``__pycache__`` holds Numba's machine code, and the first
call costs an import and a cache load instead of a compilation.

Rules
-----

* Folder: ``$HPU_CACHE_DIR/generated`` when ``HPU_CACHE_DIR`` is set, else
  ``platformdirs.user_cache_dir("hpu")/generated``.  Read at each lookup, so a
  test can point it elsewhere.  If the folder cannot be written, or is not
  private (below), a private temporary folder is used instead (with a
  warning), so hpu still runs.
* Private folders only.  Everything in the folder runs inside the user's
  process: the module, its ``__pycache__`` bytecode (an "unchecked-hash" pyc
  is imported without looking at the source at all) and Numba's index and
  machine code (pickles).  So a folder is used only if it, its
  ``__pycache__`` and every folder above it are owned by the user (or root)
  and not writable by group or others (a parent with the sticky bit, like
  ``/tmp``, is fine: nobody else can rename what is in it).  Folders hpu
  creates are mode 0700.  The fallback is ``<tmp>/hpu-<uid>`` if that is a
  real folder owned by the user with mode 0700, else a fresh ``mkdtemp``
  folder: a ``/tmp/hpu-<uid>`` planted by another local user is never read.
* A corrupt Numba cache file beside a module (``.nbi`` index or ``.nbc``
  data that does not unpickle) would make every later call fail; it is
  detected before the import, removed with a warning, and Numba compiles
  and writes it again.
* A file is trusted only if its content is exactly the expected source; a
  missing, truncated or otherwise different file is rewritten (atomically:
  write to a temporary file in the same folder, then ``os.replace``), never
  imported.  Two processes writing the same file write the same bytes.
* Small facts that are recomputed per process and cost more than a file read
  (the OpenCL translation of a specialisation, whether a device compiles at
  all) are *records*: JSON files in the private folder ``records`` beside
  ``generated`` (:func:`load_record`, :func:`store_record`).  A record holds
  its full key next to its value and is used only when that key is equal to
  the one asked for; a file that does not parse, has another shape or another
  key is ignored (and rewritten by the next store).  JSON, not pickle: reading
  a record runs nothing.
* :func:`stats` counts lookups that found the file (``hits``), files written
  (``writes``) and modules imported, so that tests can check a second process
  found the cache without timing anything.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import pickle
import pickletools
import re
import stat
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

from hpu._errors import user_stacklevel
from hpu._startup import preload_cython_blas

# before Numba loads its registries (the first cached function): see hpu._startup
preload_cython_blas()

__all__ = ["cache_dir", "fallback_dir", "load_module", "module_path", "stats", "CacheStats",
           "ENV_CACHE_DIR", "load_record", "store_record", "records_dir"]

ENV_CACHE_DIR = "HPU_CACHE_DIR"

_lock = threading.Lock()
_counts = {"hits": 0, "writes": 0, "imports": 0, "record_hits": 0, "record_writes": 0}
_modules: dict[str, object] = {}


@dataclass(frozen=True)
class CacheStats:
    """Counters since the process started."""

    hits: int      #: lookups that found the file with the expected content
    writes: int    #: files written (missing or different)
    imports: int   #: modules imported from files
    record_hits: int = 0    #: records found with the expected key
    record_writes: int = 0  #: records written


def stats() -> CacheStats:
    with _lock:
        return CacheStats(**_counts)


def cache_dir() -> Path:
    """The folder of generated modules (created on demand)."""
    root = os.environ.get(ENV_CACHE_DIR)
    if root:
        return Path(root).expanduser() / "generated"
    import platformdirs

    return Path(platformdirs.user_cache_dir("hpu")) / "generated"


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def _why_not_private(folder: Path) -> str | None:
    """``None`` when ``folder`` (an existing directory) is safe to import from, else why not.

    Safe: the folder and its ``__pycache__`` are owned by this user and not
    writable by group or others; every folder above it is owned by this user
    or root and either not writable by group/others or sticky.
    """
    uid = _uid()
    if uid is None:  # no POSIX ownership to check (Windows): the user's profile folder
        return None
    real = Path(os.path.realpath(folder))
    for path in (real, real / "__pycache__"):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            return f"{path} is not a folder"
        if st.st_uid != uid:
            return f"{path} is owned by uid {st.st_uid}, not by this user (uid {uid})"
        if st.st_mode & 0o022:
            return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    for parent in real.parents:
        st = os.stat(parent)
        if st.st_uid not in (uid, 0):
            return f"{parent} (above the cache) is owned by uid {st.st_uid}"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return (f"{parent} (above the cache) is writable by others "
                    f"(mode {stat.S_IMODE(st.st_mode):04o}) without the sticky bit")
    return None


def _make_private(folder: Path) -> Path:
    """Create ``folder`` (mode 0700) if needed; raise ``OSError`` if it is not private."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    why = _why_not_private(folder)
    if why:
        raise PermissionError(f"not a private folder: {why}")
    return folder


_fallback: list[Path] = []


def fallback_dir() -> Path:
    """The private folder used when the configured one cannot be used (one per process)."""
    with _lock:
        if _fallback:
            return _fallback[0]
        uid = _uid()
        base = Path(tempfile.gettempdir()) / f"hpu-{uid if uid is not None else 'user'}"
        try:
            os.mkdir(base, 0o700)
        except FileExistsError:
            pass
        except OSError:
            base = None
        if base is not None:
            st = os.lstat(base)
            ok = (stat.S_ISDIR(st.st_mode) and (uid is None or st.st_uid == uid)
                  and not st.st_mode & 0o077)
            if not ok or _why_not_private(base):
                base = None
        if base is None:  # someone else's, or too open: never read it, start fresh
            base = Path(tempfile.mkdtemp(prefix=f"hpu-{uid}-"))
        folder = base / "generated"
        try:
            _make_private(folder)
        except OSError:
            folder = Path(tempfile.mkdtemp(prefix=f"hpu-{uid}-")) / "generated"
            _make_private(folder)
        _fallback.append(folder)
        return folder


def _usable_dir() -> Path:
    """The configured folder if it is private (created if missing), else the fallback."""
    folder = cache_dir()
    try:
        return _make_private(folder)
    except OSError as err:
        fallback = fallback_dir()
        warnings.warn(f"hpu cannot use its code cache in {folder} ({err}); using "
                      f"{fallback} for this process. Set {ENV_CACHE_DIR} to a folder only you "
                      "can write to keep compiled code between runs.", RuntimeWarning,
                      stacklevel=user_stacklevel())
        return fallback


def _drop_corrupt_numba_cache(path: Path) -> None:
    """Remove Numba's ``.nbi``/``.nbc`` files of module ``path`` that do not unpickle.

    Numba raises on a corrupt index or data file at every call, forever; hpu
    checks them before the import (the index is unpickled -- the folder is
    private, so that is as safe as importing the module; a data file's opcodes
    are walked without running them, as its globals need the module) and lets
    Numba write them again.
    """
    pycache = path.parent / "__pycache__"
    try:
        names = [p for p in pycache.iterdir()
                 if p.name.startswith(path.stem + ".") and p.suffix in (".nbi", ".nbc")]
    except OSError:
        return
    bad = []
    for p in names:
        try:
            with open(p, "rb") as fh:
                if p.suffix == ".nbi":
                    pickle.load(fh)                        # numba's version
                    stamp, overloads = pickle.loads(fh.read())
                    if not isinstance(overloads, dict):
                        raise ValueError("the index is not a mapping")
                else:  # its globals need the module: walk the opcodes, run nothing
                    data = fh.read()
                    ops = list(pickletools.genops(data))
                    if not ops or ops[-1][0].name != "STOP" or ops[-1][2] + 1 != len(data):
                        raise ValueError("not one complete pickle")
        except FileNotFoundError:
            continue
        except Exception as err:  # noqa: BLE001 - any failure to read means corrupt
            bad.append((p, err))
    if not bad:
        return
    for p, _ in bad:
        try:
            p.unlink()
        except OSError:
            pass
    if any(p.suffix == ".nbc" for p, _ in bad):  # an index naming a deleted data file
        for p in names:
            if p.suffix == ".nbi":
                try:
                    p.unlink()
                except OSError:
                    pass
    listed = ", ".join(f"{p.name} ({type(e).__name__})" for p, e in bad)
    warnings.warn(f"hpu found corrupt Numba cache files beside {path.name}: {listed}; removed "
                  "them, the functions are compiled again and the cache rewritten.",
                  RuntimeWarning, stacklevel=user_stacklevel())


@functools.cache
def _source_digest() -> str:
    """A digest of hpu's own source files, read once per process.  A generated module calls
    hpu's compiled checks (:mod:`hpu._module_checks`, :mod:`hpu._checked_ops`,
    :mod:`hpu._guard`) and Numba's cached machine code holds them inlined; a module named by
    its text and the version number alone would keep running the old checks after hpu
    changed under the same version number (an install from the repository's main).  The
    digest names hpu's exact code instead."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _versions() -> str:
    import numba

    from hpu import __version__
    return (f"hpu {__version__} ({_source_digest()}); numba {numba.__version__}; "
            f"python {sys.version_info[:2]}")


def module_name(source: str, stem: str) -> str:
    digest = hashlib.sha256((_versions() + "\n" + source).encode()).hexdigest()[:24]
    stem = re.sub(r"\W", "_", stem)[:40] or "module"
    return f"hpu_{stem}_{digest}"


def module_path(source: str, stem: str) -> Path:
    """Where the module for ``source`` lives (whether or not it exists yet)."""
    return cache_dir() / f"{module_name(source, stem)}.py"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _ensure_file(path: Path, source: str) -> Path:
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    if current == source:
        with _lock:
            _counts["hits"] += 1
        return path
    try:
        _write_atomic(path, source)
    except OSError as err:
        fallback = fallback_dir()
        if path.parent == fallback:
            raise
        warnings.warn(f"hpu cannot write its code cache in {path.parent} ({err}); using "
                      f"{fallback} for this process. Set {ENV_CACHE_DIR} to a writable folder "
                      "to keep compiled code between runs.", RuntimeWarning,
                      stacklevel=user_stacklevel())
        return _ensure_file(fallback / path.name, source)
    with _lock:
        _counts["writes"] += 1
    return path


def load_module(source: str, stem: str):
    """Import the generated module for ``source``, writing its file first if needed."""
    name = module_name(source, stem)
    key = f"{name}@{cache_dir()}"
    with _lock:
        mod = _modules.get(key)
    if mod is not None:
        return mod
    path = _ensure_file(_usable_dir() / f"{name}.py", source)
    _drop_corrupt_numba_cache(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    with _lock:
        _counts["imports"] += 1
        _modules[key] = module
    return module


# ------------------------------------------------------------------ records

def records_dir() -> Path:
    """The private folder of records (beside ``generated``; created on demand), or the
    fallback's when the configured one is not private."""
    folder = cache_dir().parent / "records"
    try:
        return _make_private(folder)
    except OSError:
        return _make_private(fallback_dir().parent / "records")


def _record_path(kind: str, key) -> Path:
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(f"{kind}\n{text}".encode()).hexdigest()[:32]
    return records_dir() / f"{re.sub(r'[^A-Za-z0-9_]', '_', kind)[:40]}-{digest}.json"


def load_record(kind: str, key):
    """The value stored for ``(kind, key)`` (a JSON value), or ``None``.

    ``key`` is any JSON-serialisable value; the record is used only if the key
    stored in it equals ``key`` (after a JSON round trip).  Missing, unreadable,
    corrupt or foreign files give ``None``.
    """
    try:
        path = _record_path(kind, key)
        with open(path, encoding="utf-8") as fh:
            rec = json.load(fh)
        want = json.loads(json.dumps(key, sort_keys=True))
    except (OSError, ValueError, TypeError):
        return None
    if not isinstance(rec, dict) or rec.get("kind") != kind or rec.get("key") != want \
            or "value" not in rec:
        return None
    with _lock:
        _counts["record_hits"] += 1
    return rec["value"]


def store_record(kind: str, key, value) -> bool:
    """Store ``value`` (JSON) for ``(kind, key)``, atomically; ``False`` if it cannot be
    written (a cache is an optimisation: the caller goes on without it)."""
    try:
        path = _record_path(kind, key)
        text = json.dumps({"kind": kind, "key": key, "value": value}, sort_keys=True)
        _write_atomic(path, text)
    except (OSError, ValueError, TypeError):
        return False
    with _lock:
        _counts["record_writes"] += 1
    return True
