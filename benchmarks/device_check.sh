#!/usr/bin/env bash
# pullback's array rule helpers on a GPU: torch (CUDA), CuPy and JAX arrays.
#
# Run from the repository root on the GPU machine; it installs nothing.
# PYTHONPATH must hold src and a directory with array-api-compat, e.g.
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   PYTHONPATH=/tmp/site:src bash benchmarks/device_check.sh
#
# It runs the tests marked `device` (tests asking for the torch_device fixture,
# the CUDA and JAX tests of tests/rules/test_prod.py, and the helper table of
# tests/test_device_arrays.py on CuPy and on torch) with --torch-device=cuda, so
# every pullback helper those tests call runs under the host-synchronisation
# guard of tests/device_guard.py.  No -x: every failure is listed; pytest's
# summary ends with one line per helper that synchronised or raised.
# With $OUT set, a junit file and the full log are written there.
# TORCH_DEVICE (default cuda) and PYTHON (default python3) may be overridden.
set -u
PY=${PYTHON:-python3}
DEV=${TORCH_DEVICE:-cuda}
# JAX would take 75% of the GPU's memory at start-up; torch and CuPy share it here.
export XLA_PYTHON_CLIENT_PREALLOCATE=false

"$PY" - <<'EOF'
import importlib, platform
print("python", platform.python_version())
for name in ("numpy", "array_api_compat", "torch", "cupy", "jax", "numba", "scipy", "hypothesis"):
    try:
        mod = importlib.import_module(name)
        print(f"{name:17s} {getattr(mod, '__version__', '?')}")
    except Exception as e:                     # report, do not stop: the tests skip what is absent
        print(f"{name:17s} MISSING ({type(e).__name__}: {e})")
try:
    import torch
    print("torch.cuda.is_available()", torch.cuda.is_available())
    if torch.cuda.is_available():
        print("device", torch.cuda.get_device_name(0), "| torch CUDA", torch.version.cuda)
except Exception as e:
    print("torch:", e)
try:
    import cupy, cupyx
    print("cupy devices", cupy.cuda.runtime.getDeviceCount(),
          "| cupyx.allow_synchronize:", hasattr(cupyx, "allow_synchronize"))
except Exception as e:
    print("cupy:", e)
try:
    import jax
    print("jax devices", jax.devices())
except Exception as e:
    print("jax:", e)
EOF

args=(-q -p no:cacheprovider -m device --torch-device="$DEV" -rfE --durations=10
      tests/rules tests/test_device_arrays.py)
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    args+=(--junitxml="$OUT/device_check.xml")
    start=$(date +%s)
    "$PY" -m pytest "${args[@]}" 2>&1 | tee "$OUT/device_check.log"
    rc=${PIPESTATUS[0]}
else
    start=$(date +%s)
    "$PY" -m pytest "${args[@]}"
    rc=$?
fi
echo "device check: pytest exit status $rc after $(( $(date +%s) - start )) s"
exit "$rc"
