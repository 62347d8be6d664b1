#!/bin/sh
# bench/python_device.sh: issue 52's figures from Python on the GPU machine (one H200, 16
# cores; PyTorch, CuPy, NumPy, SciPy there; nothing fetched), logs under $OUT (6 files),
# a summary table on stdout at the end:
#   (a) GPU hidden (CUDA_VISIBLE_DEVICES=), 16 CPU workers: the 8-op chain over 1 GiB
#       (64 MiB chunks) through cask.array vs the C API (bench-array-cpu) vs dask.array in
#       the same process; cask.knn 2^22 x 2^12 vs cask-knn --cpu-only's compute time
#   (b) the H200: the chain on a CuPy array in through DLPack and out on the GPU
#       (compute(device="gpu")) with the run's host<->GPU byte counters, vs CuPy's own
#       ufuncs; cask.knn on CuPy inputs vs cask-knn's compute, 2^22 x 2^12 and 2^24 x 2^14;
#       and with the results left on the GPU (device="gpu");
#       the GPU tests (pytest python/tests/test_gpu.py, test_knn_gpu.py,
#       test_knn_results.py + test_interrupt.py with CASK_NGPU unset, and the C test
#       test_array_device_gpu)
#   (c) GPU hidden: the Dask bridge vs Dask's threaded scheduler, 10^5 small tasks
# Dask comes from wheels carried in .devdeps/ or .whl/ (dask, partd, locket, toolz,
# cloudpickle, fsspec, ...: `pip download --no-deps --only-binary=:all:`), installed with
# --no-index into /tmp/site; without them the dask.array and bridge rows are missing.
# Build: $PYBUILD (default build-py; configured here if it has no build.ninja), only the
# targets these figures need. About 4-5 minutes with a fresh build, 3 with a built one.
#   OUT=/tmp/out sh bench/python_device.sh        (REPS=5 by default; SMOKE=1: tiny sizes,
#   a check of the script itself on any machine)
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-./device-logs}
# its own build without PMIx: Python's own library folder (an RPATH, searched before
# LD_LIBRARY_PATH) may hold an older libpmix than the one cask was built against
B=${PYBUILD:-build-py}
REPS=${REPS:-5}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
t0=$(date +%s)
say() { echo "[python_device $(( $(date +%s) - t0 ))s] $*"; }

# ---- build ----
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dbuildtype=release -Dgpu_arch=${GPU_ARCH:-sm_90} -Ducx=disabled \
    -Dnccl=disabled -Dpmix=disabled -Ddashboard=disabled > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
fi
ext=$(ninja -C "$B" -t targets all 2>/dev/null | grep -o '^python/_cask[^:]*\.so' | head -1)
mod=$(ninja -C "$B" -t targets all 2>/dev/null | grep -o '^python/cask_test_kernels[^:]*\.so' | head -1)
[ -n "$ext" ] || { echo "no Python extension target in $B (python3-dev missing?)"; exit 1; }
ninja -C "$B" "$ext" $mod apps/cask-knn bench/bench-array-cpu tests/test_array_device_gpu \
  >> "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
say "built $ext"

# ---- Dask from the carried wheels ----
# into an empty folder: what an earlier run left there (other versions, other wheels)
# would shadow these and the device's own packages
rm -rf /tmp/site
for d in .devdeps .whl; do
  ls $d/*.whl > /dev/null 2>&1 &&
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site $d/*.whl >> "$OUT/build.log" 2>&1
done
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
$PY -c "import dask; print('dask', dask.__version__)" 2>&1 | tail -1
# dask.array imports more than dask (NumPy, and whatever of cupy, cupyx.scipy.sparse,
# sparse, scipy.sparse is installed: dask/array/chunk_types.py): its error, if any
$PY -c "import sys; sys.path.insert(0, 'bench'); import python_bench as b
try:
    import dask.array
    print('dask.array imports')
except ImportError as e:
    print('dask.array does not import:', b.no_dask_why(e))" 2>&1 | tail -1

# ---- (a) GPU hidden: chain 1 GiB, knn 2^22 x 2^12 on CPU workers ----
shift_bench() { t=$1; shift; timeout "$t" $PY bench/python_bench.py --build "$B" --reps "$REPS" ${SMOKE:+--smoke} "$@"; }
CUDA_VISIBLE_DEVICES= shift_bench 240 --figs chain,knnc --chain-mb 1024 --chunk-mb 64 \
  --knn 2^22,2^12 > "$OUT/py_cpu.log" 2>&1
say "(a) rc=$? $(grep -c '^{' "$OUT/py_cpu.log") rows"

# ---- (b) the H200 ----
shift_bench 180 --figs gpuchain,knncupy --chain-mb 1024 --chunk-mb 64 --knn 2^22,2^12 \
  > "$OUT/py_gpu.log" 2>&1
say "(b) chain, knn 2^22 rc=$?"
shift_bench 120 --figs knncupy --knn 2^24,2^14 >> "$OUT/py_gpu.log" 2>&1
say "(b) knn 2^24 rc=$?"
{
  echo "--- C: test_array_device_gpu"
  timeout 120 "$B/tests/test_array_device_gpu" 2>&1 | tail -5
  echo "--- pytest test_gpu.py test_knn_gpu.py test_knn_results.py test_interrupt.py (CASK_NGPU unset)"
  AB=$(cd "$B" && pwd)
  env -u CASK_NGPU CASK_KNN="$AB/apps/cask-knn" CASK_TEST_KERNELS="$AB/${mod:-none}" \
    timeout 300 $PY python/run_pytest.py "$B/python" python -q -rs \
    -k "test_gpu or test_knn_gpu or test_knn_results or test_interrupt or gpu_arrays" \
    2>&1 | tail -25
} > "$OUT/tests.log" 2>&1
say "(b) tests: $(grep -E 'passed|failed|Synthesis|SKIP' "$OUT/tests.log" | tr '\n' ' ')"

# ---- (c) the Dask bridge, 10^5 tasks, GPU hidden ----
CUDA_VISIBLE_DEVICES= shift_bench 240 --figs dask --dask-tasks 100000 > "$OUT/py_dask.log" 2>&1
say "(c) rc=$?"

# ---- summary ----
$PY - "$OUT" > "$OUT/summary.txt" 2>&1 <<'EOF'
import json, os, sys
out = sys.argv[1]
rows = []
for f in ("py_cpu.log", "py_gpu.log", "py_dask.log"):
    p = os.path.join(out, f)
    if os.path.exists(p):
        rows += [json.loads(l) for l in open(p) if l.startswith('{"bench"')]
def get(fig, impl, size=None):
    for r in rows:
        if r["fig"] == fig and r["impl"].startswith(impl) and (size is None or r["size"] == size):
            return r
print(f"{'figure':9} {'implementation':24} {'size':14} {'median s':>9}  extra")
for r in rows:
    extra = {k: v for k, v in r.items() if k not in ("bench", "fig", "impl", "size", "median_s",
             "min_s", "max_s") and v is not None}
    print(f"{r['fig']:9} {r['impl'][:24]:24} {r['size'][:14]:14} {r['median_s']:9.4f}  " +
          " ".join(f"{k}={v}" for k, v in extra.items()))
print("\nacceptance (issue 52)")
def ratio(a, b):
    return a["median_s"] / b["median_s"] if a and b and b["median_s"] else None
def line(what, v, ok):
    print(f"  {what:58} {'n/a' if v is None else f'{v:.3f}':>8}  "
          f"{'n/a' if v is None else ('PASS' if ok(v) else 'MISS')}")
py, c, dk = get("chain", "cask.array"), get("chain", "C API"), get("chain", "dask.array")
line("chain 1 GiB CPU: cask.array / C API (<= 1.1)", ratio(py, c), lambda v: v <= 1.1)
line("chain 1 GiB CPU: dask.array / cask.array (>= 3)", ratio(dk, py), lambda v: v >= 3)
line("knn 2^22x2^12 CPU: cask.knn / cask-knn compute (<= 1.05)",
     ratio(get("knnc", "cask.knn"), get("knnc", "cask-knn")), lambda v: v <= 1.05)
g = get("gpuchain", "cask")
line("chain on CuPy via DLPack: host<->GPU bytes (= 0)",
     None if not g else g.get("h2d_bytes", 0) + g.get("d2h_bytes", 0), lambda v: v == 0)
line("chain on CuPy: cask / CuPy ufuncs", ratio(g, get("gpuchain", "CuPy")), lambda v: True)
for s in ("4194304x4096", "16777216x16384"):
    line(f"knn {s} CuPy in: cask.knn / cask-knn compute (<= 1.1)",
         ratio(get("knncupy", "cask.knn", s), get("knncupy", "cask-knn", s)), lambda v: v <= 1.1)
    line(f"knn {s} CuPy in, GPU out: / cask-knn compute (<= 1.1)",
         ratio(get("knncupy", "cask.knn (CuPy in, GPU", s), get("knncupy", "cask-knn", s)),
         lambda v: v <= 1.1)
dc, dt = get("dask", "cask.dask.get"), get("dask", "dask threaded")
line("Dask bridge 10^5 tasks: threaded / cask overhead per task (>= 5)",
     dt["overhead_us_per_task"] / dc["overhead_us_per_task"] if dc and dt and
     dc.get("overhead_us_per_task", 0) > 0 else None, lambda v: v >= 5)
EOF
cat "$OUT/summary.txt"
say "done; logs: $(ls "$OUT" | tr '\n' ' ')"
