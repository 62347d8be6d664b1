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
#   CHOL_PART=ranks the 16 cores, GPU hidden: f64 16384 on 1 process x 16 workers
#                   against 2 ranks x 8 (file bootstrap, each rank on 8 cores of its
#                   own), the factors' digests compared; f32 16384 on 2 ranks against
#                   StarPU-MPI's mpi_cholesky_distributed (float) on 2 ranks x 8 (Open
#                   MPI's mpirun carried in .devdeps, relocated with OPAL_PREFIX)
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
elif [ "$part" = ranks ]; then
  # CHOL_ROUNDS rounds (2) of the f64 figure; CHOL_TRACE=1: a trace of each, under
  # $OUT/traces.tgz; CHOL_F64_ONLY=1: that figure alone
  # two ranks sharing the one GPU: the factor checked on rank 0, then the f64 figure
  [ "${CHOL_F64_ONLY:-0}" = 1 ] || for d in f64 f32; do
    sh tests/dist/launch-local.sh 2 $B/apps/cask-chol --n 16384 --tile 1024 --dtype $d --check \
      --rhs 2 --repeat 3 > "$OUT/ranks_gpu_$d.txt" 2>&1
    echo "2 ranks, one GPU, $d 16384 (rc $?): $(grep -E '^(cholesky|tiles|check)' "$OUT/ranks_gpu_$d.txt" | tr '\n' ' ')"
  done
  export CUDA_VISIBLE_DEVICES=
  T=${CHOL_TILE_CPU:-512}
  C="$B/apps/cask-chol --n 16384 --tile $T --cpu-only --repeat 5 --digest --json"
  for r in $(seq 1 ${CHOL_ROUNDS:-2}); do
    $C > "$OUT/ranks_one_$r.txt" 2>&1
    CASK_NCPU=8 sh tests/dist/launch-local.sh 2 $C > "$OUT/ranks_two_$r.txt" 2>&1
    for f in one two; do
      echo "round $r $f: $(grep -E '^cholesky' "$OUT/ranks_${f}_$r.txt")"
      grep -E '^\{' "$OUT/ranks_${f}_$r.txt"
    done
    d1=$(grep -o 'digest [0-9a-f]*' "$OUT/ranks_one_$r.txt"); d2=$(grep -o 'digest [0-9a-f]*' "$OUT/ranks_two_$r.txt")
    [ -n "$d1" ] && [ "$d1" = "$d2" ] && echo "  factors identical ($d1)" || echo "  FACTORS DIFFER ($d1 / $d2)"
  done
  if [ "${CHOL_TRACE:-0}" = 1 ]; then
    T=${TMPDIR:-/tmp}/chol_traces; mkdir -p $T
    CASK_TRACE=$T/one.json $B/apps/cask-chol --n 16384 --tile 512 --cpu-only | grep '^cholesky'
    CASK_NCPU=8 sh tests/dist/launch-local.sh 2 sh -c 'CASK_TRACE='$T'/two.$CASK_RANK.json exec "$@"' \
      x $B/apps/cask-chol --n 16384 --tile 512 --cpu-only | grep -E '^(cholesky|rank 0)'
    (cd $T && tar czf "$OUT/traces.tgz" *.json)
  fi
  [ "${CHOL_F64_ONLY:-0}" = 1 ] && exit 0
  CASK_NCPU=8 sh tests/dist/launch-local.sh 2 $B/apps/cask-chol --n 16384 --tile 512 --dtype f32 \
    --cpu-only --repeat 3 --json > "$OUT/ranks_two_f32.txt" 2>&1
  echo "f32 2 x 8: $(grep -E '^cholesky' "$OUT/ranks_two_f32.txt")"
  $B/apps/cask-chol --n 16384 --tile 512 --dtype f32 --cpu-only --repeat 3 --json \
    > "$OUT/ranks_one_f32.txt" 2>&1
  echo "f32 1 x 16: $(grep -E '^cholesky' "$OUT/ranks_one_f32.txt")"
  # StarPU-MPI (float), each rank on 8 cores of its own: 7 workers and its MPI thread
  SM=/opt/devdeps/usr/lib/x86_64-linux-gnu/starpu/mpi/mpi_cholesky_distributed
  if [ -x $SM ] && [ -x /opt/devdeps/usr/bin/orterun ]; then
    export OPAL_PREFIX=/opt/devdeps/usr PMIX_PREFIX=/opt/devdeps/usr/lib/x86_64-linux-gnu/pmix2
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
    export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1
    for sched in lws dmda; do
      for np in 2; do
        timeout 300 /opt/devdeps/usr/bin/orterun -n $np --oversubscribe --bind-to none \
          -x LD_LIBRARY_PATH -x OPENBLAS_CORETYPE -x OPENBLAS_NUM_THREADS -x STARPU_SILENT -x PMIX_MCA_pcompress_base_silence_warning=1 -x STARPU_SCHED=$sched \
          sh -c 'r=${OMPI_COMM_WORLD_RANK:-0}; n=$((16 / ${OMPI_COMM_WORLD_SIZE:-1}));
                 STARPU_NCPU=$((n - 1)) STARPU_NCUDA=0 STARPU_NOPENCL=0 \
                 STARPU_WORKERS_CPUID="$(seq -s " " $((r * n)) $((r * n + n - 1)))" exec "$0" "$@"' \
          $SM -size 16384 -nblocks 32 > "$OUT/starpu_mpi_${sched}_np$np.txt" 2>&1
        echo "StarPU-MPI $sched $np x $((16 / np)) f32 16384 tiles 512: $(grep -E 'Computation time|GFlops' "$OUT/starpu_mpi_${sched}_np$np.txt" | sort -u | tr '\n' ' ') (rc $?)"
      done
    done
  else
    echo "StarPU-MPI: not carried (.devdeps: starpu-examples, libstarpumpi, openmpi-bin)"
  fi
else
  export CUDA_VISIBLE_DEVICES=
  $P --n 16384 --tile ${CHOL_TILE_CPU:-512} --dtype f64 --cases cask-cpu,torch-cpu,scipy --reps 3 2>&1 | tee "$OUT/chol_cpu64.log"
  $P --n 16384 --tile 512 --dtype f32 --cases cask-cpu,starpu --reps 3 2>&1 | tee "$OUT/chol_cpu32.log"
  $P --n 8192 --tile 1024 --dtype f64 --cases cask-cpu,dask,numpy --reps 3 2>&1 | tee "$OUT/chol_cpu_dask.log"
fi
