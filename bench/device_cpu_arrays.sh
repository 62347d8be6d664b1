#!/bin/sh
# bench/device_cpu_arrays.sh BUILD_DIR: issue 38's CPU-array figures on the GPU machine's
# 16 cores (step cpu-arrays of bench/device_run.sh; logs under $OUT). cask against NumPy,
# dask.array and numexpr in the same run (bench/array_cpu.py), the GPU hidden
# (CUDA_VISIBLE_DEVICES=) and then visible (cask opens it; arrays still on CPUs), the
# BLAS thread split forced both ways, and bench-array-fusion --cpu (the issue's own
# figure). OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for these runs only.
#
# Carried (nothing can be fetched there), in .devdeps/ (git-ignored; name it in carry):
# Debian's OpenBLAS and SLEEF (libopenblas0 libopenblas0-pthread libopenblas-dev
# libopenblas-pthread-dev libgfortran5 libsleef3 libsleef-dev, `apt-get download`), and
# the peers the image lacks as wheels for its Python 3.12 (dask numexpr partd locket,
# `pip download --no-deps --only-binary=:all: --python-version 3.12 ...`); its numpy,
# threadpoolctl, toolz, cloudpickle, fsspec, pyyaml are the image's own.
set -u
B=${1:-build-gpu}
OUT=${OUT:-device-logs}
D=/opt/devdeps
if ! pkg-config --exists openblas sleef 2>/dev/null; then
  mkdir -p "$D"
  for f in .devdeps/libopenblas*.deb .devdeps/libsleef*.deb .devdeps/libgfortran5*.deb; do
    [ -f "$f" ] && dpkg -x "$f" "$D"
  done
  L=$D/usr/lib/x86_64-linux-gnu
  # Debian's .pc files name /usr (openblas.pc without a prefix line): the unpacked tree
  sed -i "s#=/usr#=$D/usr#" "$L"/openblas-pthread/pkgconfig/*.pc "$L"/pkgconfig/sleef.pc 2>/dev/null
  export PKG_CONFIG_PATH="$L/openblas-pthread/pkgconfig:$L/pkgconfig:${PKG_CONFIG_PATH:-}"
  export LD_LIBRARY_PATH="$L/openblas-pthread:$L:${LD_LIBRARY_PATH:-}"
  export C_INCLUDE_PATH="$D/usr/include:${C_INCLUDE_PATH:-}"
fi
pkg-config --modversion openblas sleef | tr '\n' ' '; echo "(openblas, sleef)"
ls .devdeps/*.whl >/dev/null 2>&1 &&
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .devdeps/*.whl > "$OUT/cpu_arrays_pip.log" 2>&1 &&
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
meson setup --reconfigure "$B" > "$OUT/cpu_arrays_setup.log" 2>&1
grep -E "BLAS|SLEEF" "$OUT/cpu_arrays_setup.log" | tail -2
ninja -C "$B" bench/bench-array-cpu bench/bench-array-fusion > "$OUT/cpu_arrays_build.log" 2>&1 ||
  { grep -E "error|FAILED" "$OUT/cpu_arrays_build.log" | head -20; exit 1; }
X="$B/bench/bench-array-cpu"
run() {   # name, then arguments of bench/array_cpu.py
  name=$1; shift
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE timeout 420 python3 bench/array_cpu.py --cask "$X" "$@" > "$OUT/cpu_arrays_$name.log" 2>&1
  echo "--- $name rc=$?"; sed -n '/^figure/,$p' "$OUT/cpu_arrays_$name.log"
  grep -E '"peers"|missing' "$OUT/cpu_arrays_$name.log" | cut -c1-400
}
# the sizes, GPU hidden: chain 1 GiB (64 MiB and 16 MiB chunks), sum/mean/std of
# 2^28, matmul 2048^2 .. 8192^2 in 2048^2 tiles, one 16384^2 stencil step
CUDA_VISIBLE_DEVICES= run hidden --chain-mb 1024 --chunk-mb 64 --mm 2048,4096,8192 --mm-chunk 2048 --stencil 16384 --stencil-rows 1024
CUDA_VISIBLE_DEVICES= run hidden16 --figs chain,light --chain-mb 1024 --chunk-mb 16
# the BLAS split: serial gemm per tile (auto at 16 tiles) against 16 threads per tile, and
# one tile holding the whole product (auto: threaded) against a serial one
for t in 1 16; do
  CUDA_VISIBLE_DEVICES= run "mm_t$t" --no-peers --figs matmul --mm 8192 --mm-chunk 2048 --cask-args="--blas-threads $t"
done
CUDA_VISIBLE_DEVICES= run mm_onetile --figs matmul --mm 4096 --mm-chunk 4096
CUDA_VISIBLE_DEVICES= run mm_onetile_t1 --no-peers --figs matmul --mm 4096 --mm-chunk 4096 --cask-args="--blas-threads 1"
# GPU visible: cask opens it (15 CPU workers), arrays on CPUs: host chunks stay pageable
run visible --no-peers --figs chain,light,sum,matmul --chain-mb 1024 --chunk-mb 64 --mm 8192 --mm-chunk 2048 --cask-args=--with-gpus
# the issue's own figure
for chain in math light; do
  CUDA_VISIBLE_DEVICES= env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE timeout 200 "$B/bench/bench-array-fusion" --cpu --chain $chain > "$OUT/cpu_arrays_fusion_$chain.log" 2>&1
  echo "--- fusion --cpu --chain $chain rc=$?"; grep -v '^{' "$OUT/cpu_arrays_fusion_$chain.log"
done
