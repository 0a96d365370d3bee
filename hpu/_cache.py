"""On-disk cache of generated modules, so that a new process does not compile again.

Why a file on disk
==================

Numba can cache machine code (``@njit(cache=True)``), but only for functions
that live in a real source file: it stores the code next to the file and
checks the file's timestamp.  So hpu writes every generated module
(:mod:`hpu._codegen`) to a file named by a hash of its source, the hpu version
and the Numba version, and imports it from there.  In a new process the same
function produces the same source, hence the same file name; the file is
already there, its ``__pycache__`` holds Numba's machine code, and the first
call costs an import and a cache load instead of a compilation.

Rules
-----

* Folder: ``$HPU_CACHE_DIR/generated`` when ``HPU_CACHE_DIR`` is set, else
  ``platformdirs.user_cache_dir("hpu")/generated``.  Read at each lookup, so a
  test can point it elsewhere.  If the folder cannot be written, a temporary
  folder is used instead (with a warning), so hpu still runs.
* A file is trusted only if its content is exactly the expected source; a
  missing, truncated or otherwise different file is rewritten (atomically:
  write to a temporary file in the same folder, then ``os.replace``), never
  imported.  Two processes writing the same file write the same bytes.
* :func:`stats` counts lookups that found the file (``hits``), files written
  (``writes``) and modules imported, so that tests can check a second process
  found the cache without timing anything.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

__all__ = ["cache_dir", "load_module", "module_path", "stats", "CacheStats", "ENV_CACHE_DIR"]

ENV_CACHE_DIR = "HPU_CACHE_DIR"

_lock = threading.Lock()
_counts = {"hits": 0, "writes": 0, "imports": 0}
_modules: dict[str, object] = {}


@dataclass(frozen=True)
class CacheStats:
    """Counters since the process started."""

    hits: int      #: lookups that found the file with the expected content
    writes: int    #: files written (missing or different)
    imports: int   #: modules imported from files


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


def _versions() -> str:
    import numba

    from hpu import __version__
    return f"hpu {__version__}; numba {numba.__version__}; python {sys.version_info[:2]}"


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
        fallback = Path(tempfile.gettempdir()) / f"hpu-{os.getuid() if hasattr(os, 'getuid') else 'user'}" / "generated"
        if path.parent == fallback:
            raise
        warnings.warn(f"hpu cannot write its code cache in {path.parent} ({err}); using "
                      f"{fallback} for this process. Set {ENV_CACHE_DIR} to a writable folder "
                      "to keep compiled code between runs.", RuntimeWarning, stacklevel=3)
        return _ensure_file(fallback / path.name, source)
    with _lock:
        _counts["writes"] += 1
    return path


def load_module(source: str, stem: str):
    """Import the generated module for ``source``, writing its file first if needed."""
    name = module_name(source, stem)
    path = cache_dir() / f"{name}.py"
    key = f"{name}@{path.parent}"
    with _lock:
        mod = _modules.get(key)
    if mod is not None:
        return mod
    path = _ensure_file(path, source)
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
