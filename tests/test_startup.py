"""hpu._startup: Numba's BLAS check gets scipy.linalg.cython_blas without all of scipy.linalg."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent('''
    import json, sys
    import hpu._cache  # preloads before Numba's registries exist
    out = {"linalg_before": "scipy.linalg" in sys.modules,
           "blas_before": "scipy.linalg.cython_blas" in sys.modules}
    import numba, numpy as np

    @numba.njit
    def dot(a, b):
        return np.dot(a, b)          # Numba's BLAS support, through the preloaded module

    x = np.arange(1.0, 4.0)
    out["dot"] = float(dot(x, x))
    out["linalg_after_compile"] = "scipy.linalg" in sys.modules
    import scipy.linalg
    out["attribute_is_module"] = scipy.linalg.cython_blas is sys.modules["scipy.linalg.cython_blas"]
    out["solve"] = scipy.linalg.solve(np.eye(2) * 2.0, np.ones(2)).tolist()
    print(json.dumps(out))
''')


def test_numba_gets_blas_without_importing_scipy_linalg():
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == {"linalg_before": False, "blas_before": True, "dot": 14.0,
                   "linalg_after_compile": False, "attribute_is_module": True,
                   "solve": [0.5, 0.5]}


def test_preloading_is_skipped_once_scipy_linalg_is_imported():
    code = ("import sys\n"
            "import scipy.linalg.cython_blas as b\n"
            "from hpu._startup import preload_cython_blas\n"
            "assert preload_cython_blas() is True\n"
            "assert not any(type(f).__name__ == '_AttachToPackage' for f in sys.meta_path)\n"
            "assert sys.modules['scipy.linalg.cython_blas'] is b\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
