#!/bin/sh
# bench/chol_device.sh: the tiled Cholesky figures of bench/RESULTS.md on the GPU machine
# (step `chol` of bench/device_run.sh, which builds $B first), logs under $OUT.
#   CHOL_PART=gpu   one GPU: correctness (the linalg and perfmodel tests, cask-chol
#                   --check), then host to host and resident against cuSOLVER (PyTorch),
#                   f64 and f32, n = 32768 at tiles of CHOL_TILES, and the GPU alone
#                   against CPU workers and GPU together at 8192, 16384, 32768
#   CHOL_PART=cpu   the 16 cores, GPU hidden: f64 16384 against PyTorch's CPU Cholesky
#                   and SciPy, f32 16384 at tiles of 512 against StarPU's
#                   cholesky_implicit, f64 8192 against dask.array and NumPy
# Peers' wheels (dask, partd, locket) travel in .whl; Debian's OpenBLAS and StarPU in
# .devdeps (cpu_libs_env of device_run.sh unpacks them).
set -u
B=${B:-${BUILD:-build-gpu}}
OUT=${OUT:-device-logs}
P="python3 bench/chol_peers.py --build $B --perfmodel $OUT/perfmodel"
part=${CHOL_PART:-gpu}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
# StarPU's example and its libraries (carried .debs, unpacked beside the others)
if ls .devdeps/starpu-examples*.deb > /dev/null 2>&1; then
  for f in .devdeps/starpu-examples*.deb .devdeps/libstarpu*.deb .devdeps/ocl-icd*.deb \
           .devdeps/libglpk*.deb .devdeps/libcolamd*.deb .devdeps/libamd*.deb \
           .devdeps/libsuitesparse*.deb .devdeps/libltdl*.deb .devdeps/libgmp*.deb \
           .devdeps/libquadmath*.deb; do
    [ -f "$f" ] && dpkg -x "$f" /opt/devdeps
  done
  export LD_LIBRARY_PATH="/opt/devdeps/usr/lib/x86_64-linux-gnu/openblas-pthread:/opt/devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  export STARPU_CHOLESKY=/opt/devdeps/usr/lib/x86_64-linux-gnu/starpu/examples/cholesky_implicit
fi
if [ "$part" = gpu ]; then
  for t in linalg perfmodel; do "$B/tests/test_$t" > "$OUT/test_$t.log" 2>&1; echo "test_$t: $(tail -1 "$OUT/test_$t.log")"; done
  for d in f64 f32; do
    "$B/apps/cask-chol" --n 8192 --tile 1024 --dtype $d --check --rhs 4 2>&1 | tee -a "$OUT/check.log" | grep -E "check|tiles"
  done
  $P --n 32768 --tile ${CHOL_TILE:-2048} --dtype f64,f32 --cases cask-gpu,cask-resident,torch-gpu-host,torch-gpu-resident --reps 3 2>&1 | tee "$OUT/chol_gpu.log"
  $P --n 8192,16384,32768 --tile ${CHOL_TILE:-2048} --dtype f64 --cases cask-gpu,cask-mixed --reps 3 2>&1 | tee "$OUT/chol_mixed.log"
  for t in ${CHOL_TILES:-1024 4096}; do
    $P --n 32768 --tile $t --dtype f64 --cases cask-gpu,cask-resident --reps 3 2>&1 | grep -v '^{' | tail -2 | tee -a "$OUT/chol_tiles.log"
  done
else
  export CUDA_VISIBLE_DEVICES=
  $P --n 16384 --tile ${CHOL_TILE_CPU:-512} --dtype f64 --cases cask-cpu,torch-cpu,scipy --reps 3 2>&1 | tee "$OUT/chol_cpu64.log"
  $P --n 16384 --tile 512 --dtype f32 --cases cask-cpu,starpu --reps 3 2>&1 | tee "$OUT/chol_cpu32.log"
  $P --n 8192 --tile 1024 --dtype f64 --cases cask-cpu,dask,numpy --reps 3 2>&1 | tee "$OUT/chol_cpu_dask.log"
fi
