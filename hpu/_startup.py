"""What a new process pays before its first call, and the one import hpu defers.

Why this module
===============

The first call of a decorated function in a new process loads the generated
module's machine code from Numba's disk cache.  Loading any cached function
makes Numba install its typing and lowering registries, and one of them
(``numba.np.arraymath``) checks at import whether a BLAS is available, by
``import scipy.linalg.cython_blas``.  That statement imports the whole
``scipy.linalg`` package first (its ``__init__`` pulls in SciPy's array-API
layer, the LAPACK wrappers, sparse-matrix helpers...): about 0.2 s of a warm
first call of a few hundred milliseconds, for a module hpu's generated code
never uses (it calls no ``np.dot``/``np.linalg``).

:func:`preload_cython_blas` loads the one extension module Numba's check
needs, ``scipy.linalg.cython_blas``, on its own (a few milliseconds), and
registers it under its full name: Numba's ``import`` then finds it and the
``scipy.linalg`` package is imported only when something really uses it (a
user's ``np.dot`` in compiled code, hpu's model calling ``scipy.optimize``).
Numba's BLAS support is unchanged: it reads the functions' addresses from
that same module.  When ``scipy.linalg`` is imported later, a one-shot import
hook (:class:`_AttachToPackage`) sets the package's ``cython_blas`` attribute
to that module, as a normal import would have.  Anything unexpected (no SciPy, another layout, an import
error) leaves everything as it was: Numba then imports the package as before.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import threading

__all__ = ["preload_cython_blas"]

_NAME = "scipy.linalg.cython_blas"
_lock = threading.Lock()
_done = False


def preload_cython_blas() -> bool:
    """Load ``scipy.linalg.cython_blas`` without ``scipy.linalg``'s ``__init__`` (once).

    Returns whether the module is now importable from ``sys.modules``.  Does
    nothing when ``scipy.linalg`` (or the module) is already imported, or when
    numba's array registries are already loaded (then it is too late to help).
    """
    global _done
    with _lock:
        if _done:
            return _NAME in sys.modules
        _done = True
        if _NAME in sys.modules or "scipy.linalg" in sys.modules \
                or "numba.np.arraymath" in sys.modules:
            return _NAME in sys.modules
        try:
            import scipy

            folder = os.path.join(os.path.dirname(scipy.__file__), "linalg")
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "cython_blas" + suffix)
                if os.path.isfile(path):
                    break
            else:
                return False
            spec = importlib.util.spec_from_file_location(_NAME, path)
            if spec is None or spec.loader is None:
                return False
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if not getattr(module, "__pyx_capi__", None):
                return False
        except Exception:  # noqa: BLE001 - any surprise: let Numba import it its own way
            return False
        sys.modules.setdefault(_NAME, module)
        sys.meta_path.insert(0, _AttachToPackage())
        return True


class _AttachToPackage:
    """Import hook, used once: when ``scipy.linalg`` is imported, set its ``cython_blas``.

    A submodule found in ``sys.modules`` is not bound as an attribute of its
    package when the package is imported afterwards; this does it.  The spec
    and loader are the normal ones (found by the path finder); only that
    loader's ``exec_module`` is wrapped.
    """

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "scipy.linalg":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        inner = spec.loader.exec_module

        def exec_module(module):
            blas = sys.modules.get(_NAME)
            if blas is not None:
                module.cython_blas = blas
            inner(module)

        spec.loader.exec_module = exec_module
        return spec

    def invalidate_caches(self):
        pass
