#!/bin/sh
# bench/device_run.sh: the measurements and checks that need the GPU machine, one step
# each, named by what it measures: builds once (meson, $BUILD, default build-gpu), runs
# the steps named on the command line in order, prints each step's table and keeps full
# logs under $OUT (default ./device-logs). `sh bench/device_run.sh --help` lists them.
#   sh bench/device_run.sh gpu gpubench knn
#   sh bench/device_run.sh ucx-wheel cma gather        (2 GPUs, the libucx-cu13 wheel)
# A step is one line of the table below (name, what it needs built, the script that runs
# it, what it measures) and a script: the script is sourced in a subshell with STEP set to
# the step's name, B, OUT and NG too (bench/steps/lib.sh gives the rest). A script may
# serve several steps (bench/steps/knn.sh: `case $STEP in`). Needs: main (the GPU build),
# wheel (main, with the libucx-cu13 wheel's UCX), own (the step builds what it needs),
# ucx (the wheel's UCX only). Steps retired with their findings written: bench/RESULTS.md, "Retired".
# The StarPU peer of bcd needs Debian's StarPU on that machine: in .devdeps, `apt-get
# download libstarpu-dev libstarpu-1.3-9 libglpk40 libamd2 libcolamd2
# libsuitesparseconfig5 libltdl7 ocl-icd-libopencl1` (3 MB); without it the table says
# StarPU was not built in. Nothing is fetched: the machine has no network.
set -u

STEPS='
one GPU:
unit         main   bench/steps/tests.sh     the unit suite
gpu          main   bench/steps/tests.sh     the gpu suite
dist         main   bench/steps/tests.sh     the dist suite
distgpu      main   bench/steps/tests.sh     tests/dist/device.sh: GPU tests, bench-xport and cask-knn in 2 processes
gpubench     main   bench/steps/gpu.sh       GPU task throughput and copy bandwidth against raw CUDA (bench-gpu)
sched        main   bench/steps/sched.sh     scheduler throughput of empty tasks on 1..16 workers against pthreads
schedtrace   main   bench/steps/sched.sh     what tracing costs: bench-sched with CASK_TRACE off and on
bcd          own    bench/steps/sched.sh     build + compute + destroy, 1 worker, then 16 with StarPU and OpenMP (CPU-only build; BCD_BASE, BCD_BASE_REF: before/after)
knn          main   bench/steps/knn.sh       exact 1-NN 2^24 x 2^14 against the hand-threaded baseline (bench-knn)
knnapp       main   bench/steps/knn.sh       cask-knn 2^24 x 2^14 brute force, timed by cask-knn itself
knn-methods  main   bench/steps/knn.sh       cask-knn brute force against pruned search, K = 1..64, outputs compared
knn-stream   main   bench/steps/knn.sh       cask-knn streamed from 8 GiB of .npy: 2^30 x 2^16 auto against brute, --k 16, against in memory
knn-floor    main   bench/steps/knn.sh       pruned 2^24 x 2^14 host to host against the transfer floor of its bytes (bench-xfer-floor), a trace
cpu-arrays   main   bench/steps/cpu.sh       CPU arrays against NumPy, dask.array and numexpr on the 16 cores, GPU hidden and visible
cpu-mm       main   bench/steps/cpu.sh       CPU matmul 2048^2 and 8192^2 (4096^2 tiles) against NumPy and dask.array, the OpenBLAS core chosen
knn-ranks    main   bench/steps/cpu.sh       cask-knn 2^22 x 2^12 --cpu-only, 1 process x 16 threads against 2 x 8 (file bootstrap), end to end
jacobi       main   bench/steps/gpu.sh       cask-jacobi 32768^2, 300 sweeps, on 1, 2 and 4 GPUs
fusion       main   bench/steps/gpu.sh       fused elementwise arrays against unfused (bench-array-fusion)
dashboard    main   bench/steps/gpu.sh       what the live dashboard costs: cask-knn with and without it, dash_overhead.sh
replay       main   bench/steps/gpu.sh       graph replays as CUDA graphs: self-check, gpu suite both ways, bench-gpu, cask-jacobi 4096^2 x 64 blocks
chol         main   bench/chol_device.sh     tiled Cholesky (CHOL_PART=gpu|cpu|ranks): cask-chol against cuSOLVER, PyTorch, SciPy, dask.array, StarPU(-MPI)
python       own    bench/python_device.sh   issue 52 from Python: chain, knn and the Dask bridge against the C API, cask-knn, dask.array; CuPy in and out
two GPUs of one host:
multigpu     wheel  bench/steps/multigpu.sh  bench-knn cases; jacobi and knn, 1 process x 2 GPUs against 2 x 1, every route
hog          main   bench/steps/multigpu.sh  bench-knn under a competing load on one GPU, with statistics and traces
gather       wheel  bench/steps/multigpu.sh  gathers of GPU-made results: GPU route against host route, then a timeline
gpux         wheel  bench/steps/tests.sh     the gpu suite and test_dist_gpux (a chunk by the GPU route and the host route)
recover-gpu  wheel  bench/steps/tests.sh     recover_app.sh knngpu: ranks killed, GPU-made chunks recovered
knn-k        wheel  bench/steps/tests.sh     tests/dist/device_knn_k.sh: K nearest, the same bytes on 1, 2 GPUs, 2 processes
cma          wheel  bench/steps/xport.sh     host data between processes by CMA reads against TCP (CASK_UCX_CMA=1/0)
seg          wheel  bench/steps/xport.sh     cask segments (rings; blocks alone), CMA, TCP, each beside ucx_perftest (SEG_ROUNDS); CPU a message; cask-knn 2 x 8
startup      wheel  bench/steps/e2e.sh       start-up plus shutdown of 2..32 ranks against one process (bench/startup.py), cask-knn 1 x 16 against 2 x 8
e2e          wheel  bench/steps/e2e.sh       issue 53, end to end as users time it: startup.py, test_ucx_reuse, cask-knn 1 and 2 processes, streamed, --out
setup:
ucx-wheel    ucx    -                        the UCX of the libucx-cu13 wheel from .devdeps (implied by the steps that need it)
'

usage() {
  echo "usage: sh bench/device_run.sh STEP...   (logs under \$OUT, build in \$BUILD)"
  echo "$STEPS" | awk 'NF == 0 { next } /:$/ { print; next } { d = $4; for (i = 5; i <= NF; i++) d = d " " $i; printf "  %-12s %s\n", $1, d }'
  cat <<'EOF'
Settings: BCD_BASE=dir or BCD_BASE_REF=ref (bcd before/after), BCD_ROUNDS, KNN_REPS,
KNN_CHECK, REPS (multigpu's jacobi rounds, 3), SEG_ROUNDS (seg's bench-xport rounds, 3),
KNN_DIR (knn-stream's files), CHOL_PART, E2E_F64, E2E_KNN, E2E_STREAM_ONLY, GPU_ARCH, BUILDTYPE
(meson's, for a new $BUILD; default debugoptimized: the multigpu, hog, cma and gather
figures in bench/RESULTS.md were taken with BUILDTYPE=release).
EOF
}
case "${1:-}" in -h|--help|"") usage; exit 0 ;; esac

# step_field NAME N: field N of NAME's line of the table (empty: no such step)
step_field() { echo "$STEPS" | awk -v s="$1" -v n="$2" '$1 == s && !/:$/ { print $n; exit }'; }

need_main=0 need_wheel=0
for step in "$@"; do   # a typo fails before the build, not after it
  case $(step_field "$step" 2) in
    main) need_main=1 ;;
    wheel) need_main=1 need_wheel=1 ;;
    ucx) need_wheel=1 ;;
    own) ;;
    *) echo "unknown step $step (sh bench/device_run.sh --help)"; exit 2 ;;
  esac
done

OUT=${OUT:-device-logs}
mkdir -p "$OUT"
B=${BUILD:-build-gpu}
export NCCL_NVLS_ENABLE=0   # NVLink multicast off, as .devdeps/setup.sh sets it

# Debian's OpenBLAS and SLEEF carried in .devdeps (step cpu-arrays): unpacked under
# /opt/devdeps and named to pkg-config, the compiler and the loader before the build, so
# that the main build has them too. Nothing to do when the machine has its own.
cpu_libs_env() {
  ls .devdeps/libopenblas*.deb .devdeps/libsleef*.deb > /dev/null 2>&1 || return 0
  D=/opt/devdeps
  mkdir -p "$D"
  for f in .devdeps/libopenblas*.deb .devdeps/libsleef*.deb .devdeps/libgfortran5*.deb; do
    [ -f "$f" ] && dpkg -x "$f" "$D"
  done
  LIBD=$D/usr/lib/x86_64-linux-gnu
  # Debian's .pc files name /usr (openblas.pc without a prefix line): the unpacked tree
  sed -i "s#=/usr#=$D/usr#" "$LIBD"/openblas-pthread/pkgconfig/*.pc "$LIBD"/pkgconfig/sleef.pc 2>/dev/null
  export PKG_CONFIG_PATH="$LIBD/openblas-pthread/pkgconfig:$LIBD/pkgconfig:${PKG_CONFIG_PATH:-}"
  export LD_LIBRARY_PATH="$LIBD/openblas-pthread:$LIBD:${LD_LIBRARY_PATH:-}"
  # sleef.h is in the multiarch folder, which the compiler searches only under /usr
  export C_INCLUDE_PATH="$D/usr/include/x86_64-linux-gnu:$D/usr/include:${C_INCLUDE_PATH:-}"
}

# The carried packages (.devdeps/setup.sh) with the wheel's UCX in place of Debian's
# 1.13, which setup.sh puts first on LD_LIBRARY_PATH. Without .devdeps (a machine with
# its own packages) nothing to do.
ucx_wheel() {
  [ -f .devdeps/setup.sh ] || return 0
  . .devdeps/setup.sh
  unset UCX_MODULE_DIR   # the wheel's UCX loads its own transport modules
  rm -f /opt/devdeps/usr/lib/x86_64-linux-gnu/libuc[pmst]*   # not Debian's UCX 1.13
  for w in .devdeps/libucx_cu13-*.whl; do
    [ -f "$w" ] && python3 -m pip install --no-deps --no-index -q "$w" 2>&1 | tail -1
  done
  return 0
}

cpu_libs_env
[ $need_wheel = 1 ] && ucx_wheel
if [ $need_main = 1 ]; then
  if [ ! -f "$B/build.ninja" ]; then
    meson setup "$B" -Dgpu_arch=${GPU_ARCH:-sm_90} ${BUILDTYPE:+-Dbuildtype=$BUILDTYPE} \
      > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
  fi
  grep -E "^ *(UCX|CUDA|NCCL)" "$OUT/setup.log" 2>/dev/null | head -4
  ninja -C "$B" > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
fi
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
t0=$(date +%s)

for step in "$@"; do
  echo "=== $step ($(( $(date +%s) - t0 )) s)"
  script=$(step_field "$step" 3)
  case $step in
    ucx-wheel) echo "the wheel's UCX: $("$B/apps/cask-knn" --version 2>/dev/null | grep -i ucx | head -1)" ;;
    *) ( STEP=$step; . "./$script" ) ;;
  esac
done
echo "done ($(( $(date +%s) - t0 )) s)"
