#!/bin/sh
# bench/steps/cpu.sh: CPU arrays and matmul against NumPy, dask.array and numexpr; ranks against threads
# Run by bench/device_run.sh (its table names the steps), or alone: sh THIS STEP.
. bench/steps/lib.sh

step_cpu_arrays() {   # CPU arrays against NumPy, dask.array and numexpr on this host's cores
  # Carried in .devdeps (nothing can be fetched there): Debian's OpenBLAS and SLEEF
  # (libopenblas0 libopenblas0-pthread libopenblas-dev libopenblas-pthread-dev libgfortran5
  # libsleef3 libsleef-dev, `apt-get download`) and the peers the image lacks as wheels for
  # its Python 3.12 (dask numexpr partd locket, `pip download --no-deps
  # --only-binary=:all: --python-version 3.12 ...`). The GPU hidden, then visible; the BLAS
  # thread split forced both ways; bench-array-fusion --cpu. OPENBLAS_CORETYPE and
  # OPENBLAS_L2_SIZE are unset for these runs only.
  D=/opt/devdeps
  pkg-config --modversion openblas sleef | tr '\n' ' '; echo "(openblas, sleef)"
  ls .devdeps/*.whl >/dev/null 2>&1 &&
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .devdeps/*.whl > "$OUT/cpu_arrays_pip.log" 2>&1 &&
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  meson setup --reconfigure "$B" > "$OUT/cpu_arrays_setup.log" 2>&1
  grep -E "BLAS|SLEEF" "$OUT/cpu_arrays_setup.log" | tail -2
  ninja -C "$B" bench/bench-array-cpu bench/bench-array-fusion > "$OUT/cpu_arrays_build.log" 2>&1 ||
    { grep -E "error|FAILED" "$OUT/cpu_arrays_build.log" | head -20; return 1; }
  X="$B/bench/bench-array-cpu"
  cpu_run() {   # name, then arguments of bench/array_cpu.py
    name=$1; shift
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE timeout 420 python3 bench/array_cpu.py --cask "$X" "$@" > "$OUT/cpu_arrays_$name.log" 2>&1
    echo "--- $name rc=$?"; sed -n '/^figure/,$p' "$OUT/cpu_arrays_$name.log"
    grep -E '"peers"|missing' "$OUT/cpu_arrays_$name.log" | cut -c1-400
  }
  if [ "${CPU_FIGS:-}" = mm ]; then   # step cpu-mm: the products only
    CUDA_VISIBLE_DEVICES= CASK_LOG=info cpu_run mm --figs matmul --mm 2048,8192 --mm-chunk 4096 --reps 9
    # GPU visible: cask opens the H200 (15 CPU workers), the products still on CPUs
    cpu_run mm_visible --no-peers --figs matmul --mm 2048,8192 --mm-chunk 4096 --reps 9 --cask-args=--with-gpus
    # cask's one-tile 2048^2 product with the OpenBLAS core named, and with workers unbound
    for v in "OPENBLAS_CORETYPE=SkylakeX" "OPENBLAS_CORETYPE=Cooperlake" "CASK_BIND=0" "CASK_LOG=info"; do
      env CUDA_VISIBLE_DEVICES= $v "$X" --only matmul --mm 2048 --mm-chunk 2048 --reps 5 2>&1 |
        grep -E "^matmul|OpenBLAS" | sed "s/^/cask $v: /"
    done
    return
  fi
  # the target sizes, GPU hidden: chain 1 GiB (64 MiB and 16 MiB chunks), sum/mean/std of
  # 2^28, matmul 2048^2 .. 8192^2 in 4096^2 tiles (the BLAS split per tile size: cpu-diag),
  # one 16384^2 stencil step; then matmul 8192^2 in 2048^2 tiles
  CUDA_VISIBLE_DEVICES= cpu_run hidden --chain-mb 1024 --chunk-mb 64 --mm 2048,4096,8192 --mm-chunk 4096 --stencil 16384 --stencil-rows 1024
  CUDA_VISIBLE_DEVICES= cpu_run hidden16 --figs chain,light --chain-mb 1024 --chunk-mb 16
  CUDA_VISIBLE_DEVICES= cpu_run mm2048 --figs matmul --mm 8192 --mm-chunk 2048
  # GPU visible: cask opens it (15 CPU workers), arrays on CPUs: host chunks stay pageable
  cpu_run visible --no-peers --figs chain,light,sum,matmul --chain-mb 1024 --chunk-mb 64 --mm 8192 --mm-chunk 4096 --cask-args=--with-gpus
  # bench-array-fusion --cpu, both chains
  for chain in math light; do
    CUDA_VISIBLE_DEVICES= env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE timeout 200 "$B/bench/bench-array-fusion" --cpu --chain $chain > "$OUT/cpu_arrays_fusion_$chain.log" 2>&1
    echo "--- fusion --cpu --chain $chain rc=$?"; grep -v '^{' "$OUT/cpu_arrays_fusion_$chain.log"
  done
}

step_knn_ranks() {   # 1 x 16 against 2 x 8, --cpu-only, file bootstrap, end to end
  T=${TMPDIR:-/tmp}
  K="$B/apps/cask-knn --generate 2^22 2^12 --seed 1 --cpu-only"
  for vis in visible hidden; do
    [ $vis = hidden ] && export CUDA_VISIBLE_DEVICES=
    for r in 1 2 3; do
      t1=$(date +%s.%N); $K --threads 16 --out $T/kr_one.npy > "$OUT/kr_one_${vis}_$r.txt" 2>&1
      echo "$vis round $r 1 x 16: end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s; $(grep -E 'time:' "$OUT/kr_one_${vis}_$r.txt")"
      t1=$(date +%s.%N)
      CASK_LOG=info $L 2 $K --threads 8 --out $T/kr_two.npy > "$OUT/kr_two_${vis}_$r.txt" 2>&1
      echo "$vis round $r 2 x 8: end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s; $(grep -E 'time:' "$OUT/kr_two_${vis}_$r.txt")"
      cmp -s $T/kr_one.npy $T/kr_two.npy && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
    done
    grep -h "local rank" "$OUT/kr_two_${vis}_1.txt" | head -2
  done
  unset CUDA_VISIBLE_DEVICES
  rm -f $T/kr_one.npy $T/kr_two.npy
}

case ${STEP:-${1:-}} in
  cpu-arrays)
    step_cpu_arrays ;;
  cpu-mm)
    CPU_FIGS=mm step_cpu_arrays ;;
  knn-ranks)
    export CASK_LAUNCHER=local; step_knn_ranks ;;
esac
