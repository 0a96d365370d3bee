#!/usr/bin/env bash
# One prepared check of hpu on a machine with a real GPU (a session's device time is short:
# run it once, read $OUT). Run from the repository root; see bench/README.md, "A real GPU".
#
#   wheels the GPU machine lacks (Python 3.12 there), downloaded here first:
#     python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#       --platform manylinux2014_x86_64 -d .whl pyopencl pytools siphash24 platformdirs \
#       pytest-xdist execnet
#   then, on the GPU machine:  bash bench/gpu_check.sh   (carrying .whl)
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/hpu-gpu-check}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/hpu-gpu-cache} XDG_CONFIG_HOME=${XDG_CONFIG_HOME:-/tmp/hpu-gpu-config}
mkdir -p "$XDG_CACHE_HOME" "$XDG_CONFIG_HOME"
{
  python3 -c "import sys, numpy, numba, pyopencl; print(sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'pyopencl', pyopencl.VERSION_TEXT)"
  nvidia-smi -L 2>/dev/null; nproc
  ls /etc/OpenCL/vendors 2>&1
} 2>&1 | tee "$OUT/env.txt"
# hpu registers an installed but unregistered vendor driver itself (hpu devices says so)
timeout 30 python3 -m hpu devices 2>&1 | tee "$OUT/devices.txt"
# each step bounded so that the whole fits one 10-minute call (worst case ~570 s): a quick
# calibration first (32 s on an H200 before the occupancy sweep), then the runs reuse it
timeout 120 python3 -m hpu calibrate --quick 2>&1 | tee "$OUT/calibrate.txt"
timeout 110 python3 -m hpu run mergesort --n 16777216 --explain --trace "$OUT/trace.json" 2>&1 | tee "$OUT/run.txt"
timeout 60 python3 -m hpu run mergesort --n 16777216 --device hybrid --strategy minmax 2>&1 | tee "$OUT/minmax.txt"
timeout 60 python3 -m hpu run mergesort --n 16777216 --device gpu --explain --repeat 1 2>&1 | tee "$OUT/gpu.txt"
timeout 60 python3 bench/bench_explain.py --n 16777216 --repeat 3 2>&1 | tee "$OUT/explain.txt"
# --dist load, -v: one file's tests spread over the workers (loadfile left test_functional.py
# on one worker past the limit, 2026-11-27), and each result is named as it comes
timeout 120 python3 -m pytest -v -rfE --tb=short -p no:cacheprovider -o addopts="" -n 15 \
  --dist load tests/opencl tests/test_calibrate.py tests/test_reductions.py tests/test_iteration.py \
  tests/test_hybrid.py tests/test_overlap.py tests/test_functional_dps.py > "$OUT/tests.txt" 2>&1
grep -E "FAILED|ERROR|passed|failed" "$OUT/tests.txt" | tail -25
