#!/bin/sh
# bench/device_run.sh: the measurements and checks that need the GPU machine, one step
# each, named by what it measures: builds once (meson, $BUILD, default build-gpu), runs
# the steps named on the command line in order, prints each step's table and keeps full
# logs under $OUT (default ./device-logs). `sh bench/device_run.sh --help` lists them.
#   sh bench/device_run.sh gpu gpubench knn
#   sh bench/device_run.sh ucx-wheel cma gather        (2 GPUs, the libucx-cu13 wheel)
# The StarPU peer of bcd needs Debian's StarPU on that machine: in .devdeps, `apt-get
# download libstarpu-dev libstarpu-1.3-9 libglpk40 libamd2 libcolamd2
# libsuitesparseconfig5 libltdl7 ocl-icd-libopencl1` (3 MB); without it the table says
# StarPU was not built in. Nothing is fetched: the machine has no network.
set -u

usage() {
  cat <<'EOF'
usage: sh bench/device_run.sh STEP...   (logs under $OUT, build in $BUILD; each step, one line)
one GPU:
  unit          the unit suite
  gpu           the gpu suite
  gpubench      GPU task throughput and copy bandwidth against raw CUDA (bench-gpu)
  sched         scheduler throughput of empty tasks on 1..16 workers against pthreads (bench-sched)
  schedtrace    what tracing costs: bench-sched with CASK_TRACE off and on
  bcd           build + compute + destroy, 1 worker, then 16 with StarPU and OpenMP (CPU-only build)
  knn           exact 1-NN 2^24 x 2^14 against the hand-threaded baseline (bench-knn)
  knnapp        cask-knn 2^24 x 2^14 brute force, the application's own timing
  knn-methods   cask-knn brute force against pruned search, K = 1..64, outputs compared
  knn-stream    cask-knn streamed from 8 GiB of .npy: 2^30 x 2^16 auto against brute
                force (compute, peak RSS, check; first 2^24 rows against in memory),
                2^30 x 2^14 --k 16, --k 16 streamed against in memory on 2^22 rows
  knn-floor     pruned 2^24 x 2^14 host to host against the transfer floor of its bytes
                (bench-xfer-floor), with a trace
  cpu-arrays    CPU arrays against NumPy, dask.array and numexpr on the 16 cores, GPU hidden
                and visible (carry OpenBLAS/SLEEF .debs and the dask/numexpr wheels)
  cpu-mm        CPU matmul 2048^2 (one tile) and 8192^2 (4096^2 tiles) against NumPy and
                dask.array, with the OpenBLAS core cask chose
  mm-diag       where cask's one-tile 2048^2 product loses time against one cblas_sgemm:
                the floor, cask with workers bound/unbound, 1 or 16 workers, the direct
                call in the same process, the task's own time from a trace
  knn-ranks     cask-knn 2^22 x 2^12 --cpu-only, 1 process x 16 threads against 2 x 8 (file
                bootstrap), end to end, with each rank's core share named; GPU visible and hidden
  cpu-diag      where CPU arrays spend their time here: the CPU, the loop widths (bit
                checks), the chain per chunk size with per-worker statistics, the matmul
                tile size against BLAS threads per tile
  trace         a traced cask-knn run: how much copying overlaps compute
  jacobi        cask-jacobi 32768^2, 300 sweeps, on 1, 2 and 4 GPUs
  fusion        fused elementwise arrays against unfused (bench-array-fusion)
  dashboard     what the live dashboard costs: cask-knn with and without it, dash_overhead.sh
  dist          the dist suite
  distgpu       tests/dist/device.sh: GPU tests, bench-xport and cask-knn in 2 processes
  xport-1gpu    GPU to GPU between 2 processes sharing ONE GPU (bench-xport --gpu-only)
  perftest      ucx_perftest with CUDA memory, the baseline of xport-1gpu
  jacobi-1gpu   cask-jacobi 16384^2 on one GPU: 1 process against 2, and time-sharing
  knn-1gpu      cask-knn 2^24 x 2^14 on one GPU: 1 process against 2, and time-sharing
  mps           xport-1gpu, jacobi-1gpu and knn-1gpu with CUDA MPS, then without
  replay        graph replays as CUDA graphs: the self-check (bench-replay-check), the gpu
                suite with CASK_GRAPH_REPLAY=1 and 0, bench-gpu (chained and independent
                tasks with and without replay, raw CUDA-graph ceiling), cask-jacobi
                --n 4096 --blocks 64 --iters 1000 with and without replay (time, residual,
                final grid compared byte for byte), a traced replayed run
two GPUs of one host:
  multigpu      bench-knn cases; jacobi and knn, 1 process x 2 GPUs against 2 x 1, every route
  hog           bench-knn under a competing load on one GPU, with statistics and traces
  inflight      bench-knn for builds of the in-flight rule (INFLIGHT_VARIANTS, INFLIGHT_ROUNDS)
  cma           host data between processes by CMA reads against TCP (CASK_UCX_CMA=1/0)
  seg           host data between 2 processes of the 16-core host: cask's shared-memory
                segments with their rings (the default), the segments' blocks alone
                (CASK_UCX_RING=0), CMA reads and TCP, each bench-xport run with
                ucx_perftest (UCX's own shared memory) beside it, SEG_ROUNDS (3) rounds
                alternated (TCP in the first only), and the CPU time a message
                (bench-xport --cpu, rings and blocks); then
                cask-knn 2^22 x 2^12 --cpu-only, 2 ranks x 8 threads against 1 process
                x 16, segments on and off (one GPU is enough)
  startup       start-up plus shutdown of a job of 2..32 ranks against one process
                (bench/startup.py: file bootstrap, 5 rounds; --cpu-only, then with the GPUs
                opened, UCX's CUDA hooks by bistro or relocation or no memory events;
                mpirun too where there is one); cask-knn 2^22 x 2^12 --cpu-only,
                1 x 16 against 2 x 8, end to end with every rank's phases (CASK_STATS=1)
  gather        gathers of GPU-made results: GPU route against host route, then a timeline
  gpux          the gpu suite and test_dist_gpux (a chunk by the GPU route and the host route)
  recover-gpu   recover_app.sh knngpu: ranks killed, GPU-made chunks recovered
  knn-k         tests/dist/device_knn_k.sh: K nearest, the same bytes on 1, 2 GPUs, 2 processes
  write         --out written in place by each rank against gathered to rank 0
                (--write-mode), 3 rounds alternated, outputs compared with 1 process:
                cask-knn 2^22 x 2^12 --cpu-only 2 ranks x 8 threads (.npy and CSV); with
                2 GPUs, cask-knn 2^24 x 2^14 and cask-jacobi 16384^2 x 400 sweeps, one
                process per GPU
  chol          tiled Cholesky (bench/chol_device.sh, CHOL_PART=gpu|cpu): cask-chol against
                cuSOLVER (PyTorch), PyTorch CPU, SciPy, NumPy, dask.array, StarPU
  e2e           issue 53, end to end as users time it, one call (~5 min after the build):
                bench/startup.py --np 1,2,4 with the GPUs opened, UCX's memory events off
                (now) against on (CASK_UCX_MEM_EVENTS=1, before), alternated; test_ucx_reuse
                (buffers freed and reused between transfers, GPU by cuda_ipc and host) both
                ways, test_dist_gpux (GPU to GPU); cask-knn --generate 2^24 2^14 on 1 and 2
                processes end to end, without and with --out; streamed 2^30 x 2^16 from the
                page cache (no --out, and --out-format compact) with dd's read and
                fdatasync'ed write of the same bytes in the same call (E2E_F64=1: also the
                16 GiB f64 output; smaller: E2E_KNN="2^22 2^12" E2E_OBS_LOG2=28
                E2E_REF_LOG2=16)
setup:
  ucx-wheel     the libucx-cu13 wheel's UCX from .devdeps (implied by the steps that need it)
Settings: BCD_BASE=dir or BCD_BASE_REF=ref (bcd before/after), BCD_ROUNDS, KNN_REPS,
KNN_CHECK, REPS (multigpu's jacobi rounds, 3), SEG_ROUNDS (seg's bench-xport rounds, 3),
INFLIGHT_VARIANTS ("def= m2=-DMIN_INFLIGHT=2"), INFLIGHT_ROUNDS (1), GPU_ARCH (sm_90),
BUILDTYPE (meson's, for a new $BUILD; default debugoptimized: the multigpu, hog, cma,
gather and one-GPU-sharing figures in bench/RESULTS.md were taken with BUILDTYPE=release).
EOF
}
case "${1:-}" in -h|--help|"") usage; exit 0 ;; esac

OUT=${OUT:-device-logs}
mkdir -p "$OUT"
B=${BUILD:-build-gpu}
L=tests/dist/launch-local.sh
# each rank its own trace and transfer log: run as  eval $L 2 $TR PREFIX prog args
TR="sh -c 'CASK_TRACE=\$0.\$CASK_RANK.json CASK_DIST_XFER_LOG=\$0 exec \"\$@\"'"
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
  LIBD=$D/usr/lib/x86_64-linux-gnu   # (not L: that is the launcher)
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

# Every step of the dispatch at the end (and of --help): a new step goes in all three.
STEPS=" unit gpu gpubench sched schedtrace bcd knn knnapp knn-methods trace jacobi fusion dashboard"
STEPS="$STEPS dist distgpu xport-1gpu perftest jacobi-1gpu knn-1gpu mps multigpu hog inflight cma seg"
STEPS="$STEPS gather gpux recover-gpu knn-k knn-stream knn-floor cpu-arrays cpu-diag cpu-mm replay ucx-wheel"
STEPS="$STEPS mm-diag knn-ranks startup write chol e2e "
for step in "$@"; do   # a typo fails before the build, not after it
  case $STEPS in
    *" $step "*) ;;
    *) echo "unknown step $step (sh bench/device_run.sh --help)"; exit 2 ;;
  esac
done
need_main=0 need_wheel=0
for step in "$@"; do
  case $step in
    bcd|inflight) ;;
    ucx-wheel) need_wheel=1 ;;
    multigpu|cma|seg|gather|gpux|recover-gpu|knn-k|xport-1gpu|perftest|jacobi-1gpu|knn-1gpu|mps|startup|write|e2e)
      need_wheel=1 need_main=1 ;;
    *) need_main=1 ;;
  esac
done
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
two_gpus() { [ "$NG" -ge 2 ] || { echo "$1: $NG GPU(s): this step needs 2"; return 1; }; }
t0=$(date +%s)

# ---- one GPU ----

step_bcd() {   # CPU-only builds of this tree and, for a before/after, of the code before it
  base=${BCD_BASE:-}
  if [ -n "$base" ] && [ ! -x "$base/bench/bench-sched" ] && [ -f "$base/meson.build" ]; then
    # a source tree (e.g. carried): build it CPU-only beside its sources
    { [ -f "$base/build-bcd/build.ninja" ] || meson setup "$base/build-bcd" "$base" -Dcuda=disabled; } > "$OUT/bcd_base_setup.log" 2>&1
    ninja -C "$base/build-bcd" bench/bench-sched > "$OUT/bcd_base_build.log" 2>&1 && base=$base/build-bcd || base=
  fi
  if [ -z "$base" ] && [ -n "${BCD_BASE_REF:-}" ]; then
    src=${TMPDIR:-/tmp}/cask-bcd-base; rm -rf "$src"; mkdir -p "$src"
    if git archive "$BCD_BASE_REF" | tar -x -C "$src" &&
       meson setup "$src/build" "$src" -Dcuda=disabled > "$OUT/bcd_base_setup.log" 2>&1 &&
       ninja -C "$src/build" bench/bench-sched > "$OUT/bcd_base_build.log" 2>&1; then
      base=$src/build
    else
      echo "(no base: could not build $BCD_BASE_REF)"
    fi
  fi
  [ -f build-bcd/build.ninja ] || meson setup build-bcd -Dcuda=disabled > "$OUT/bcd_setup.log" 2>&1
  ninja -C build-bcd bench/bench-sched > "$OUT/bcd_build.log" 2>&1 || { echo "build-bcd failed"; return; }
  r=1
  while [ $r -le "${BCD_ROUNDS:-1}" ]; do
    for b in ${base:+"$base"} build-bcd; do
      log="$OUT/bcd_$(basename "$(dirname "$b")")_$(basename "$b")_r$r.log"
      echo "--- $b, round $r"
      timeout 300 "$b/bench/bench-sched" --mode bcd --workers 1 --tasks 1000000 --reps 7 > "$log" 2>&1
      echo "rc=$?"; grep -v '^{' "$log" | tail -16
    done
    r=$((r + 1))
  done
  STARPU_SILENT=1 timeout 300 build-bcd/bench/bench-sched --mode bcd --workers 16 --tasks 50000 --reps 3 --peers starpu,openmp > "$OUT/bcd_peers.log" 2>&1
  echo "rc=$?"; grep -v '^{' "$OUT/bcd_peers.log" | tail -16
}

step_knn_methods() {   # brute force against pruned; every pair of outputs compared
  T=${TMPDIR:-/tmp}/knn-methods; mkdir -p "$T"
  for t in test_knn_k_gpu test_knn_gpu test_knn_k; do
    timeout 300 "$B/tests/$t" --verbose > "$T/$t.log" 2>&1
    echo "$t rc=$?"; cat "$T/$t.log" >> "$OUT/knn_methods_tests.log"
    grep -E "Synthesis|FAIL|SKIP|Assert|expected|vs" "$T/$t.log" | head -12
  done
  K="$B/apps/cask-knn" LG="$OUT/knn_methods.log"
  run() {   # NAME ARGS...: one timed run, the summary's key lines
    name=$1; shift
    echo "--- $name: cask-knn $*" >> "$LG"
    timeout 300 "$K" "$@" >> "$LG" 2>&1
    echo "$name rc=$?: $(tail -12 "$LG" | grep -E 'method|time:|check:.*force' | tr '\n' ' ')"
  }
  same() { if cmp -s "$1" "$2"; then echo "cmp $1 $2: identical"; else echo "cmp $1 $2: DIFFER"; fi; }
  U="--generate 2^24 2^14 --seed 7"
  C="--generate 2^24 2^14 --seed 7 --clusters 300"
  echo "--- uniform 2^24 x 2^14, K = 1"
  run brute1 $U --method brute --repeat 5 --out "$T/b1.npy"
  run pruned1 $U --method pruned --repeat 5 --out "$T/p1.npy" --check 2048
  run auto1 $U --method auto --repeat 5 --out "$T/a1.npy"
  same "$T/b1.npy" "$T/p1.npy"; same "$T/b1.npy" "$T/a1.npy"
  echo "--- pruned K = 1, other chunk sizes"
  for c in 2^21 2^22 2^19; do run pruned1_c$c $U --method pruned --repeat 5 --chunk $c; done
  echo "--- uniform, K = 16"
  run brute16 $U --k 16 --method brute --repeat 3 --out "$T/b16.npy"
  run pruned16 $U --k 16 --method pruned --repeat 3 --out "$T/p16.npy" --check 256
  same "$T/b16.npy" "$T/p16.npy"
  echo "--- clustered (300 blobs), K = 1 and 16"
  run cbrute1 $C --method brute --repeat 5 --out "$T/cb1.npy"
  run cpruned1 $C --method pruned --repeat 5 --out "$T/cp1.npy" --check 2048
  run cauto1 $C --method auto --repeat 5
  same "$T/cb1.npy" "$T/cp1.npy"
  run cbrute16 $C --k 16 --method brute --repeat 3
  run cpruned16 $C --k 16 --method pruned --repeat 3 --check 256
  echo "--- K = 64, 2^22 x 2^14"
  run brute64 --generate 2^22 2^14 --seed 7 --k 64 --method brute --repeat 3 --out "$T/b64.npy"
  run pruned64 --generate 2^22 2^14 --seed 7 --k 64 --method pruned --repeat 3 --out "$T/p64.npy"
  same "$T/b64.npy" "$T/p64.npy"
  rm -f "$T"/*.npy
  echo "--- adversarial: all in one spot (auto must not prune)"
  for m in auto brute pruned; do
    run onespot_$m --generate 2^22 2^14 --seed 7 --clusters 1 --method $m --repeat 3
  done
  echo "--- trace of one pruned run (transfers against kernels)"
  CASK_TRACE="$T/trace.json" timeout 120 "$K" $U --method pruned -q > "$OUT/knn_methods_trace.log" 2>&1
  python3 bench/trace_overlap.py "$T/trace.json" 2>&1 | tail -25
}

# One GPU shared by two processes. jac1 / knn1 LOG ARGS...: one run, its time line.
jac1() { f=$1; shift; "$@" > "$OUT/$f.txt" 2>&1; printf "%-14s " "$f"; grep -h "^sweeps" "$OUT/$f.txt" | head -1; }
knn1() { f=$1; shift; "$@" > "$OUT/$f.txt" 2>&1; printf "%-14s " "$f"; grep -h "time" "$OUT/$f.txt" | head -1; }
# two independent one-process runs at once against one alone: what time-sharing costs
timeshare() {   # PREFIX kind(jac1|knn1) ARGS...
  p=$1 kind=$2; shift 2
  $kind ${p}_alone "$@"
  "$@" > "$OUT/${p}_a.txt" 2>&1 & pa=$!
  $kind ${p}_b "$@"; wait $pa
  printf "%-14s " ${p}_a; grep -h -E "^sweeps|time" "$OUT/${p}_a.txt" | head -1
}
step_xport_1gpu() {   # P: a file name prefix
  X="timeout 120 $L 2 $B/bench/bench-xport --gpu-only"
  CASK_BENCH_GPU_TIMELINE=1 $X --json "$OUT/${1}xp.jsonl" > "$OUT/${1}xp.txt" 2>&1
  echo "bench-xport --gpu-only, default (rc=$?)"
  grep -E "turns|timeline|bandwidth loop|^ +[0-9]+ |bytes|fitted" "$OUT/${1}xp.txt"
  CASK_BENCH_GPU_STAGED=0 CASK_BENCH_GPU_SIZES=8192,67108864 CASK_UCX_CUDA_POLL_US=0 $X > "$OUT/${1}xp_poll0.txt" 2>&1
  echo "CASK_UCX_CUDA_POLL_US=0 (rc=$?)"; grep -E "^ +[0-9]+ " "$OUT/${1}xp_poll0.txt"
}
step_jacobi_1gpu() {
  J="$B/apps/cask-jacobi --iters 400"
  for i in 1 2 3; do
    jac1 ${1}j1_$i $J --n 16384
    jac1 ${1}j2_$i $L 2 $J --n 16384
    jac1 ${1}j2host_$i env CASK_DIST_GPU_XPORT=host $L 2 $J --n 16384
  done
  r1=$(grep -ho "residual [^ ]*" "$OUT/${1}j1_1.txt" | head -1); r2=$(grep -ho "residual [^ ]*" "$OUT/${1}j2_1.txt" | head -1)
  [ "$r1" = "$r2" ] && echo "jacobi residuals identical ($r1)" || echo "jacobi residuals DIFFER: '$r1' vs '$r2'"
  $J --n 1026 --iters 200 --out "$OUT/jo1.raw" > /dev/null 2>&1; $L 2 $J --n 1026 --iters 200 --out "$OUT/jo2.raw" > /dev/null 2>&1
  cmp "$OUT/jo1.raw" "$OUT/jo2.raw" && echo "jacobi --n 1026 --out: 1 and 2 processes identical"; rm -f "$OUT"/jo*.raw
  echo "time-sharing: two independent 1-process runs of half the cells (--n 11586) at once against one alone"
  timeshare ${1}jh jac1 $J --n 11586
  eval $L 2 $TR "$OUT/${1}j2tl" $J --n 16384 > "$OUT/${1}j2tl.txt" 2>&1
  python3 bench/xfer_timeline.py "$OUT/${1}j2tl" 2 | tail -12
  gzip -f "$OUT/${1}j2tl".*.json 2>/dev/null
}
step_knn_1gpu() {
  K="$B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 9"
  T=${TMPDIR:-/tmp}
  for i in 1 2; do
    knn1 ${1}k1_$i $K --out "$T/knn1.npy"
    knn1 ${1}k2_$i $L 2 $K --out "$T/knn2.npy"
    cmp "$T/knn1.npy" "$T/knn2.npy" && echo "knn outputs identical"
  done
  rm -f "$T/knn1.npy" "$T/knn2.npy"
  echo "time-sharing: two independent 1-process knn 2^23 x 2^14 at once against one alone"
  timeshare ${1}kh knn1 "$B/apps/cask-knn" --generate 8388608 16384 --seed 7 --repeat 9
}
step_perftest() {
  W=$(python3 -c 'import libucx, os; print(os.path.dirname(libucx.__file__))' 2>/dev/null)
  [ -n "$W" ] && [ -x "$W/bin/ucx_perftest" ] || { echo "no ucx_perftest in the wheel"; return; }
  for t in "ucp_am_lat -m cuda,cuda -s 8192 -n 2000" "ucp_am_lat -s 8192 -n 2000" \
           "ucp_am_bw -m cuda,cuda -s 67108864 -n 100"; do
    f="$OUT/pt_$(echo $t | tr ' ,' '__').txt"
    P="timeout 60 env LD_LIBRARY_PATH=$W/lib $W/bin/ucx_perftest -t $t -p 13999"
    $P > "$OUT/pt_srv.txt" 2>&1 & sp=$!
    sleep 1; $P 127.0.0.1 > "$f" 2>&1
    echo "ucx_perftest -t $t: rc=$?"; wait $sp; tail -2 "$f"
  done
}
step_mps() {   # the two processes' work in one GPU context (no time-slicing), then without
  export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
  if nvidia-cuda-mps-control -d; then
    trap 'echo quit | nvidia-cuda-mps-control' EXIT   # the daemon is ours: always told to quit
    trap 'exit 1' INT TERM
    echo "MPS started (pipes in $CUDA_MPS_PIPE_DIRECTORY)"; mps=1
  else
    echo "MPS failed to start: the figures below are without it"; mps=0
  fi
  for m in mps nomps; do
    if [ $m = nomps ]; then
      if [ $mps = 1 ]; then echo quit | nvidia-cuda-mps-control; sleep 2; trap - EXIT; fi
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      echo "--- without MPS (same binaries, same call)"
    fi
    [ $m = mps ] && [ $mps = 1 ] && echo get_server_list | nvidia-cuda-mps-control
    tests/dist/run.sh 2 --need-gpus 1 "$B/tests/test_dist_gpux" auto 8192 > "$OUT/${m}_gpux.txt" 2>&1
    echo "$m test_dist_gpux auto 8192: rc=$?"; grep -E "run 2" "$OUT/${m}_gpux.txt" | head -1
    step_xport_1gpu ${m}_; step_jacobi_1gpu ${m}_; step_knn_1gpu ${m}_
  done
}

# ---- two GPUs ----

step_multigpu() {
  two_gpus multigpu || return
  "$B/apps/cask-knn" --version | head -3
  echo "--- bench-knn --reps 7: even / uneven / hog (cask against the hand-threaded static split)"
  for i in 1 2; do
    timeout 300 "$B/bench/bench-knn" --reps 7 --check 4096 > "$OUT/mg_knn_$i.log" 2>&1
    echo "run $i rc=$?"; grep -v '^{' "$OUT/mg_knn_$i.log" | grep -E "^(even|uneven|hog)|ratio|differ"
  done
  CASK_STATS=1 CASK_LOG=debug timeout 300 "$B/bench/bench-knn" --reps 3 --check 0 > "$OUT/mg_knn_stats.log" 2>&1
  echo "stats run rc=$? (reps 3): tasks left to a faster GPU: $(grep -c ' leaves ' "$OUT/mg_knn_stats.log")"
  grep -E "^(gpu|worker|hog|even|uneven)" "$OUT/mg_knn_stats.log" | grep -v "ratio" | tail -12
  echo "--- cask-jacobi --n 16384 --iters 400: 1 process x 2 GPUs against 2 processes x 1 GPU"
  J="$B/apps/cask-jacobi --n 16384 --iters 400 --check 100"
  R=${TMPDIR:-/tmp}/mg_jac   # the grids (1 GiB each) stay off $OUT
  jac() {   # ROUND NAME ARGS...: one run, its "sweeps ... time" line
    r=$1; n=$2; shift 2
    "$@" > "$OUT/mg_jac_${n}_$r.txt" 2>&1
    printf "round %s %-16s rc=%d " "$r" "$n" $?; grep -h "^sweeps" "$OUT/mg_jac_${n}_$r.txt" | head -1
  }
  i=0
  while [ "$i" -le "${REPS:-3}" ]; do   # round 0: outputs compared, not counted in the medians
    o=""; [ $i = 0 ] && o="--out $R"
    jac $i one timeout 120 $J --gpus 2 ${o:+$o.one}
    for route in ucx nccl auto; do
      for vis in own both; do   # own: each rank sees its GPU only; CUDA IPC needs both
        if [ $vis = own ]; then export CASK_GPU_PER_RANK=1; else unset CASK_GPU_PER_RANK; fi
        export CASK_DIST_GPU_XPORT=$route
        jac $i ${route}_$vis timeout 180 $L 2 $J ${o:+$o.${route}_$vis}
      done
    done
    unset CASK_GPU_PER_RANK CASK_DIST_GPU_XPORT
    # UCX's shared memory for the messages (CASK_UCX_SHM=1; the default is TCP on
    # loopback between the ranks of a host: transport/ucx_config.c)
    jac $i ucx_both_shm env CASK_UCX_SHM=1 CASK_DIST_GPU_XPORT=ucx timeout 180 $L 2 $J ${o:+$o.ucx_both_shm}
    if [ $i = 0 ]; then
      for f in $R.*_*; do
        cmp -s $R.one "$f" && echo "jacobi grid identical to one process's: ${f#$R.}" ||
          echo "jacobi grid DIFFERS from one process's: ${f#$R.}"
      done
      rm -f $R.*
    fi
    i=$((i + 1))
  done
  echo "--- cask-knn 2^24 x 2^14: 1 process x 2 GPUs against 2 processes x 1 GPU"
  # compute timed without --out: with it, the ranks write their rows inside the compute
  # (in place) while one process writes after it; the files are compared in a run apart
  for rc in 16384 4096; do
    K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --ref-chunk $rc --repeat 9 --check 512"
    timeout 200 $K > "$OUT/mg_knn_one_$rc.txt" 2>&1
    echo "ref-chunk $rc, 1 process rc=$?"; grep -E "compute|check: [0-9]|rror" "$OUT/mg_knn_one_$rc.txt"
    timeout 200 $K --repeat 1 --out $R.one.npy > /dev/null 2>&1
    for vis in own both; do
      if [ $vis = own ]; then export CASK_GPU_PER_RANK=1; else unset CASK_GPU_PER_RANK; fi
      timeout 200 $L 2 $K > "$OUT/mg_knn_two_${rc}_$vis.txt" 2>&1
      echo "ref-chunk $rc, 2 processes ($vis GPU visible) rc=$?"
      grep -E "compute|check: [0-9]|rror" "$OUT/mg_knn_two_${rc}_$vis.txt"
      timeout 200 $L 2 $K --repeat 1 --out $R.two.npy > /dev/null 2>&1
      cmp $R.one.npy $R.two.npy && echo "outputs identical"
    done
    unset CASK_GPU_PER_RANK
    rm -f $R.one.npy $R.two.npy
  done
  echo "--- bench-xport --gpu-only --nccl: GPU to GPU between the processes"
  # each rank sees both GPUs, so rank 0 also times cudaMemcpyPeer GPU 0 -> GPU 1
  timeout 300 $L 2 "$B/bench/bench-xport" --gpu-only --nccl --no-perftest --json "$OUT/mg_xport_both.jsonl" \
    > "$OUT/mg_xport_both.txt" 2>&1
  echo "both GPUs visible rc=$?"; grep -v '^{' "$OUT/mg_xport_both.txt" | tail -40
  CASK_GPU_PER_RANK=1 timeout 300 $L 2 "$B/bench/bench-xport" --gpu-only --nccl --no-perftest \
    --json "$OUT/mg_xport_own.jsonl" > "$OUT/mg_xport_own.txt" 2>&1
  echo "one GPU per rank rc=$?"; grep -v '^{' "$OUT/mg_xport_own.txt" | tail -40
  echo "--- summary (medians; REPS=${REPS:-3} jacobi rounds)"
  python3 - "$OUT" <<'PY'
import glob, json, re, statistics, sys
out = sys.argv[1]
def secs(pat):
    v = []
    for f in sorted(glob.glob(f"{out}/{pat}")):
        m = re.search(r"time ([0-9.]+) s", open(f).read())
        if m: v.append(float(m.group(1)))
    return statistics.median(v) if v else None
one = secs("mg_jac_one_[1-9]*.txt")
print(f"jacobi 1x2: {one}")
for route in ("ucx", "nccl", "auto"):
    for vis in ("own", "both"):
        t = secs(f"mg_jac_{route}_{vis}_[1-9]*.txt")
        print(f"jacobi 2x1 {route:4s} {vis:4s}: {t}  ratio {t/one:.3f}" if t and one else
              f"jacobi 2x1 {route} {vis}: no figure")
t = secs("mg_jac_ucx_both_shm_[1-9]*.txt")
print(f"jacobi 2x1 ucx  both, CASK_UCX_SHM=1: {t}" + (f"  ratio {t/one:.3f}" if t and one else ""))
def comp(f):
    try:
        m = re.search(r"compute ([0-9.]+) s", open(f).read())
        return float(m.group(1)) if m else None
    except OSError:
        return None
for rc in (16384, 4096):
    a = comp(f"{out}/mg_knn_one_{rc}.txt")
    for vis in ("own", "both"):
        b = comp(f"{out}/mg_knn_two_{rc}_{vis}.txt")
        print(f"knn ref-chunk {rc} 1x2 {a} 2x1 ({vis}) {b}" + (f"  ratio {b/a:.3f}" if a and b else ""))
for f in ("mg_knn_1.log", "mg_knn_2.log"):
    for line in open(f"{out}/{f}"):
        if line.startswith("{") and '"impl":"cask"' in line:
            d = json.loads(line)
            print(f"{f} {d['case']:7s} cask/baseline {d['ratio_to_baseline']:.3f} "
                  f"(speed-up {1/d['ratio_to_baseline']:.3f})")
PY
}

step_hog() {   # where cask's time goes under a competing load on the last GPU
  two_gpus hog || return
  K="$B/bench/bench-knn"
  for i in 1 2; do
    timeout 300 "$K" --case hog --reps 7 --check 0 > "$OUT/hog_$i.log" 2>&1
    echo "hog run $i rc=$?"; grep -v '^{' "$OUT/hog_$i.log" | grep -E "^hog|differ"
  done
  CASK_STATS=1 CASK_LOG=debug CASK_TRACE="$OUT/hog.json" timeout 300 "$K" --case hog --reps 5 \
    --check 0 > "$OUT/hog_diag.log" 2>&1
  echo "hog diag rc=$?: $(grep -c ' leaves ' "$OUT/hog_diag.log") tasks left to a faster GPU"
  grep -v '^{' "$OUT/hog_diag.log" | grep -E "^hog|differ"
  CASK_STATS=1 CASK_TRACE="$OUT/even.json" timeout 300 "$K" --case even --reps 5 --check 0 \
    > "$OUT/even_diag.log" 2>&1
  echo "even diag rc=$? (the same run without the load)"; grep -v '^{' "$OUT/even_diag.log" | grep -E "^even|differ"
  # finer chunks (64 rather than 16): how much of the loss is the split's granularity
  timeout 300 "$K" --case hog --reps 7 --check 0 --chunk 262144 > "$OUT/hog_c64.log" 2>&1
  echo "hog, 64 chunks rc=$?"; grep -v '^{' "$OUT/hog_c64.log" | grep -E "^hog|differ"
}

step_inflight() {   # MIN_INFLIGHT, INFLIGHT_BUDGET_NS (scheduler/worker_gpu.h) set at build time
  two_gpus inflight || return
  vs=${INFLIGHT_VARIANTS:-"def= m2=-DMIN_INFLIGHT=2"}
  for v in $vs; do
    n=${v%%=*} a=${v#*=}
    if [ ! -f "build-if-$n/build.ninja" ]; then
      meson setup "build-if-$n" -Dbuildtype=release -Dgpu_arch=${GPU_ARCH:-sm_90} -Dtests=disabled \
        ${a:+-Dc_args=$a} > "$OUT/setup-if-$n.log" 2>&1 || { tail -5 "$OUT/setup-if-$n.log"; return; }
    fi
    ninja -C "build-if-$n" bench/bench-knn > "$OUT/build-if-$n.log" 2>&1 ||
      { grep -E "error|FAILED" "$OUT/build-if-$n.log" | head; return; }
  done
  run() {   # NAME LOG ARGS...: one bench-knn run, its ratios
    n=$1 log=$2; shift 2
    timeout 300 "build-if-$n/bench/bench-knn" "$@" --reps 7 --check 0 > "$OUT/if_$log.log" 2>&1
    echo "$log rc=$?: $(grep -h 'ratio' "$OUT/if_$log.log" | grep -v '^{' | awk '{print $1, $NF}' | tr '\n' ' ')"
  }
  r=1
  while [ "$r" -le "${INFLIGHT_ROUNDS:-1}" ]; do   # variants alternated in rounds
    for v in $vs; do
      n=${v%%=*}
      run "$n" "${n}_all_$r"
      for c in 524288 262144; do
        for k in even hog; do run "$n" "${n}_c${c}_${k}_$r" --case $k --chunk $c; done
      done
    done
    r=$((r + 1))
  done
}

step_cma() {   # CASK_UCX_CMA=1 (the default) against 0, every figure both ways
  two_gpus cma || return
  echo "--- bench-xport, host memory"
  for c in 1 0; do
    CASK_UCX_CMA=$c UCX_PROTO_INFO=y timeout 200 $L 2 "$B/bench/bench-xport" --no-perftest \
      > "$OUT/cma_xport_host_$c.txt" 2>&1
    echo "CASK_UCX_CMA=$c rc=$? rendezvous: $(grep -o 'rendezvous [a-z -]* | [a-z_/]*' \
      "$OUT/cma_xport_host_$c.txt" | sort | uniq -c | sort -rn | head -2 | tr -s ' ' | tr '\n' ';')"
    grep -v '^{' "$OUT/cma_xport_host_$c.txt" | grep -E -A7 "^UCX (latency|bandwidth)" | grep -v "^--"
  done
  echo "--- bench-xport --gpu-only (one GPU per rank, both visible)"
  for c in 1 0; do
    CASK_UCX_CMA=$c timeout 300 $L 2 "$B/bench/bench-xport" --gpu-only --no-perftest \
      > "$OUT/cma_xport_gpu_$c.txt" 2>&1
    echo "CASK_UCX_CMA=$c rc=$?"; grep -v '^{' "$OUT/cma_xport_gpu_$c.txt" | tail -16
  done
  echo "--- cask-knn 2^24 x 2^14"
  T=${TMPDIR:-/tmp}
  for opt in "--k 8" "--method auto"; do
    K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --repeat 7 --check 512 $opt"
    timeout 200 $K --out $T/cma_one.npy > "$OUT/cma_knn_one.txt" 2>&1
    echo "$opt, 1 process x 2 GPUs rc=$?: $(grep -E 'compute' "$OUT/cma_knn_one.txt")"
    for c in 1 0; do
      CASK_UCX_CMA=$c CASK_GPU_PER_RANK=1 timeout 200 $L 2 $K --out $T/cma_two.npy > "$OUT/cma_knn_two_$c.txt" 2>&1
      echo "$opt, 2 processes, CASK_UCX_CMA=$c rc=$?: $(grep -E 'compute|check: [0-9]' "$OUT/cma_knn_two_$c.txt" | tr '\n' ' ')"
      cmp $T/cma_one.npy $T/cma_two.npy && echo "  outputs identical"
    done
    rm -f $T/cma_one.npy $T/cma_two.npy
  done
  echo "--- cask-jacobi --n 16384 --iters 400, 2 processes, UCX halos"
  J="$B/apps/cask-jacobi --n 16384 --iters 400 --check 100"
  for r in 1 2; do
    for c in 1 0; do
      CASK_UCX_CMA=$c CASK_DIST_GPU_XPORT=ucx timeout 180 $L 2 $J > "$OUT/cma_jac_${c}_$r.txt" 2>&1
      echo "round $r CASK_UCX_CMA=$c rc=$?: $(grep -h '^sweeps' "$OUT/cma_jac_${c}_$r.txt" | head -1)"
    done
  done
}

step_seg() {   # segments against CMA and TCP, host memory, ucx_perftest in every run
  W=$(python3 -c 'import libucx, os; print(os.path.dirname(libucx.__file__))' 2>/dev/null)
  P=$(mktemp -d)   # ucx_perftest as bench-xport calls it: the wheel's, with its libraries
  [ -n "$W" ] && printf '#!/bin/sh\nexec env LD_LIBRARY_PATH=%s/lib %s/bin/ucx_perftest "$@"\n' \
    "$W" "$W" > "$P/ucx_perftest" && chmod +x "$P/ucx_perftest"
  # what a message costs first (short): CPU time of both processes a message, rings
  # against blocks
  for c in ring blocks; do
    case $c in ring) e="CASK_UCX_SEG=256" ;; blocks) e="CASK_UCX_SEG=256 CASK_UCX_RING=0" ;; esac
    env $e timeout 300 $L 2 "$B/bench/bench-xport" --cpu > "$OUT/seg_xport_cpu_$c.txt" 2>&1
    echo "$c ($e) rc=$?"; grep -v '^{' "$OUT/seg_xport_cpu_$c.txt" | grep -A5 "^UCX host stream"
  done
  # SEG_ROUNDS rounds (3) of bench-xport beside ucx_perftest; TCP, the slowest and known,
  # in the first only (three rounds of everything passed a 600 s call)
  for r in $(seq 1 "${SEG_ROUNDS:-3}"); do
    cs="ring blocks cma"; [ "$r" = 1 ] && cs="$cs tcp"
    for c in $cs; do
      case $c in
        ring) e="CASK_UCX_SEG=256" ;; blocks) e="CASK_UCX_SEG=256 CASK_UCX_RING=0" ;;
        cma) e="CASK_UCX_SEG=0" ;; tcp) e="CASK_UCX_SEG=0 CASK_UCX_CMA=0" ;;
      esac
      PATH="$P:$PATH" env $e timeout 400 $L 2 "$B/bench/bench-xport" > "$OUT/seg_xport_${c}_$r.txt" 2>&1
      echo "round $r $c ($e) rc=$?"
      grep -v '^{' "$OUT/seg_xport_${c}_$r.txt" | grep -E -A9 "^UCX bandwidth" | grep -v "^--"
    done
  done
  # bandwidth against ucx_perftest of the same run, per round (s0: progress thread
  # sleeping between messages, s50: spinning 50 us after activity)
  python3 - "$OUT" <<'PY'
import glob, json, os, re, sys
for c in ("ring", "blocks", "cma", "tcp"):
    rows = {}
    for f in sorted(glob.glob(os.path.join(sys.argv[1], "seg_xport_%s_*.txt" % c))):
        v = {}
        for line in open(f):
            if line.startswith("{"):
                j = json.loads(line)
                if j["metric"] == "bw_mibs":
                    v[(j["path"], j["spin_us"], j["bytes"])] = j["value"]
        for b in sorted({k[2] for k in v}):
            pt = v.get(("ucx_perftest", -1, b), -1)
            if pt > 0:
                rows.setdefault(b, []).append("%.2f/%.2f" % (v.get(("cask", 0, b), 0) / pt,
                                                              v.get(("cask", 50, b), 0) / pt))
    for b, r in sorted(rows.items()):
        print("%s %9d bytes: cask s0/s50 over ucx_perftest, per round: %s" % (c, b, "  ".join(r)))
PY
  T=${TMPDIR:-/tmp}
  K="$B/apps/cask-knn --generate 2^22 2^12 --seed 1 --cpu-only"
  for r in 1 2 3; do
    t1=$(date +%s.%N); $K --threads 16 --out $T/seg_one.npy > "$OUT/seg_knn_one_$r.txt" 2>&1
    echo "round $r 1 x 16: end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s; $(grep -E 'compute' "$OUT/seg_knn_one_$r.txt")"
    for c in 256 0; do
      t1=$(date +%s.%N)
      CASK_UCX_SEG=$c $L 2 $K --threads 8 --out $T/seg_two.npy > "$OUT/seg_knn_two_${c}_$r.txt" 2>&1
      echo "round $r 2 x 8 CASK_UCX_SEG=$c: end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s; $(grep -E 'compute' "$OUT/seg_knn_two_${c}_$r.txt")"
      cmp -s $T/seg_one.npy $T/seg_two.npy && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
    done
  done
  rm -rf "$P" $T/seg_one.npy $T/seg_two.npy
}

step_startup() {   # a job's start-up plus shutdown (bench/startup.py), then cask-knn's
  S="python3 bench/startup.py --build $B --np 2,4,8,16,32 --rounds 5 --json $OUT/startup.json"
  $S --cpu-only > "$OUT/startup_cpu.txt" 2>&1; echo "--cpu-only rc=$?"; grep -v '^{' "$OUT/startup_cpu.txt"
  # ranks with GPUs load UCX as UCX chooses (memory hooks: 50 ms a patch); the same with
  # its CUDA hooks by relocation, and with no memory events, for comparison
  $S --np 2,8 --rounds 3 --variant gpu: --variant cudareloc:UCX_MEM_CUDA_HOOK_MODE=reloc \
    --variant noevents:UCX_MEM_EVENTS=no > "$OUT/startup_gpu.txt" 2>&1
  echo "GPUs opened rc=$?"; grep -v '^{' "$OUT/startup_gpu.txt"
  if command -v mpirun > /dev/null; then
    $S --cpu-only --launcher mpirun > "$OUT/startup_mpirun.txt" 2>&1
    echo "mpirun --cpu-only rc=$?"; grep -v '^{' "$OUT/startup_mpirun.txt"
  fi
  T=${TMPDIR:-/tmp}
  K="$B/apps/cask-knn --generate 2^22 2^12 --seed 1 --cpu-only"
  for r in 1 2 3; do
    t1=$(date +%s.%N); CASK_STATS=1 $K --threads 16 --out $T/st_one.npy > "$OUT/startup_knn_one_$r.txt" 2>&1
    echo "round $r 1 x 16: end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s (outside)"
    grep -E 'time:|end to end|phases' "$OUT/startup_knn_one_$r.txt"
    t1=$(date +%s.%N); CASK_STATS=1 $L 2 $K --threads 8 --out $T/st_two.npy > "$OUT/startup_knn_two_$r.txt" 2>&1
    echo "round $r 2 x 8: end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s (outside)"
    grep -E 'time:|end to end|phases' "$OUT/startup_knn_two_$r.txt"
    cmp -s $T/st_one.npy $T/st_two.npy && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
  done
  rm -f $T/st_one.npy $T/st_two.npy
}

# t_run LABEL LOG CMD...: CMD's end to end time and the app's time line
t_run() {
  label=$1 log=$2
  shift 2
  t1=$(date +%s.%N)
  "$@" > "$log" 2>&1
  echo "$label: rc $?, end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s; $(grep -E 'time:|^sweeps' "$log" | head -1)"
}

# e2e_run LABEL LOG CMD...: CMD's end to end time by the shell's clock, and the lines of
# its own summary that say where the time went
e2e_run() {
  label=$1 log=$2
  shift 2
  t1=$(date +%s.%N)
  timeout 300 "$@" > "$log" 2>&1
  rc=$?
  echo "$label: rc $rc, end to end $(awk "BEGIN{printf \"%.3f\", $(date +%s.%N) - $t1}") s (shell)"
  grep -E 'time:|end to end|I/O:|method|windows|check:' "$log" | sed 's/^/    /' | head -8
  grep -E 'phases' "$log" | sed 's/^/    /' | head -2
}

step_e2e() {   # issue 53: what users time, each figure beside its floor from this call
  T=${TMPDIR:-/tmp}
  # sizes (smaller for a trial run elsewhere): cask-knn's, and the streamed file's rows
  # and references as powers of 2 (the file is 8 x 2^E2E_OBS_LOG2 bytes, >= 2^21 rows)
  E2E_KNN=${E2E_KNN:-2^24 2^14}
  lo=${E2E_OBS_LOG2:-30} lr=${E2E_REF_LOG2:-16}
  rows=$((1 << lo)) blocks=$((1 << (lo - 21)))   # dd's 16 MiB blocks of 8-byte rows
  echo "== start-up plus shutdown, GPUs opened (medians of 3; np 1 is one process alone)"
  # now: UCX without its memory hooks; before: with them (CASK_UCX_MEM_EVENTS=1);
  # nocudaucx: also without UCX's CUDA modules (a diagnostic: such ranks could not move
  # GPU memory by UCX), to tell UCX's CUDA start-up from the GPUs' own
  python3 bench/startup.py --build "$B" --np 1,2,4 --rounds 3 --variant now: \
    --variant before:CASK_UCX_MEM_EVENTS=1 --variant 'nocudaucx:UCX_MODULES=^cuda*' \
    --json "$OUT/e2e_startup.json" > "$OUT/e2e_startup.txt" 2>&1
  echo "startup rc=$?"; grep -v '^{' "$OUT/e2e_startup.txt"
  echo "-- the floor: the same job --cpu-only (no GPU opened)"
  python3 bench/startup.py --build "$B" --np 1,2,4 --rounds 3 --cpu-only \
    --json "$OUT/e2e_startup.json" > "$OUT/e2e_startup_cpu.txt" 2>&1
  echo "startup --cpu-only rc=$?"; grep -v '^{' "$OUT/e2e_startup_cpu.txt"
  echo "== buffers freed and reused between transfers (2 processes, the one GPU)"
  for v in now before; do
    e=; [ $v = before ] && e=CASK_UCX_MEM_EVENTS=1
    for m in gpu host; do
      env $e timeout 120 tests/dist/run.sh 2 "$B/tests/test_dist_ucx_reuse" $m 24 \
        > "$OUT/e2e_reuse_${m}_$v.txt" 2>&1
      echo "reuse $m $v: rc $?"; grep -E 'rounds|skipped|FAIL|failed' "$OUT/e2e_reuse_${m}_$v.txt" | head -3
    done
  done
  for m in "auto 8192" "auto 4"; do   # KiB; GPU to GPU by cuda_ipc
    timeout 120 tests/dist/run.sh 2 "$B/tests/test_dist_gpux" $m > "$OUT/e2e_gpux.txt" 2>&1
    echo "test_dist_gpux $m: rc $?"; grep -iE 'expecting|ok|FAIL' "$OUT/e2e_gpux.txt" | head -3
  done
  echo "== cask-knn --generate $E2E_KNN: 1 process against 2 on the one GPU"
  K="$B/apps/cask-knn --generate $E2E_KNN --seed 1"
  for r in 1 2 3; do
    e2e_run "round $r, 1 process" "$OUT/e2e_knn1_$r.txt" env CASK_STATS=1 $K
    e2e_run "round $r, 2 processes" "$OUT/e2e_knn2_$r.txt" env CASK_STATS=1 $L 2 $K
    e2e_run "round $r, 2 processes, before (CASK_UCX_MEM_EVENTS=1)" "$OUT/e2e_knn2b_$r.txt" \
      env CASK_STATS=1 CASK_UCX_MEM_EVENTS=1 $L 2 $K
  done
  e2e_run "1 process --out" "$OUT/e2e_knn1_out.txt" $K --out $T/e2e_one.npy
  e2e_run "2 processes --out (in place)" "$OUT/e2e_knn2_out.txt" $L 2 $K --out $T/e2e_two.npy
  cmp -s $T/e2e_one.npy $T/e2e_two.npy && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
  rm -f $T/e2e_one.npy $T/e2e_two.npy
  echo "== streamed 2^$lo x 2^$lr from the page cache (default window 2^24)"
  D=${KNN_DIR:-/tmp/knn-stream}; mkdir -p "$D"; G=$B/apps/cask-knn-gen; KS=$B/apps/cask-knn
  O=$D/o$lo.npy R=$D/r$lr.npy
  t1=$(date +%s)
  [ -f "$O" ] || $G --rows $rows --seed 11 --set obs "$O" > /dev/null
  [ -f "$R" ] || $G --rows $((1 << lr)) --seed 11 --set ref "$R" > /dev/null
  sync; echo "inputs made and synced in $(( $(date +%s) - t1 )) s"
  dd if="$O" of=/dev/null bs=16M 2>&1 | tail -1 | sed 's/^/dd read, first (cache warmed): /'
  dd if="$O" of=/dev/null bs=16M 2>&1 | tail -1 | sed 's/^/dd read floor: /'
  S="$KS --obs $O --ref $R --stream --method auto"
  e2e_run "streamed auto, no --out (warm-up of the GPU and cache)" "$OUT/e2e_s30_w.txt" $S
  e2e_run "streamed auto, no --out" "$OUT/e2e_s30.txt" $S
  e2e_run "streamed auto, no --out, --read-ahead 0 --io-threads 4" "$OUT/e2e_s30_ra0.txt" \
    $S --read-ahead 0 --io-threads 4
  dd if="$O" of=/dev/null bs=16M 2>&1 | tail -1 | sed 's/^/dd read floor, again: /'
  dd if=/dev/zero of="$D/dd.bin" bs=16M count=$blocks conv=fdatasync 2>&1 | tail -1 \
    | sed 's/^/dd write floor (the compact bytes, fdatasync): /'
  rm -f "$D/dd.bin"; sync
  e2e_run "streamed auto --out-format compact (synced before its rename)" \
    "$OUT/e2e_s30_c.txt" $S --out "$D/c30.npy" --out-format compact
  ls -l "$D/c30.npy" 2>&1 | tail -1
  python3 -c "import numpy as np, sys; a=np.load(sys.argv[1], mmap_mode='r'); print('compact output', a.dtype, a.shape, 'first index/dist', a[0]['index'], a[0]['dist'])" "$D/c30.npy" 2>&1 | tail -1
  rm -f "$D/c30.npy"; sync
  if [ "${E2E_F64:-0}" = 1 ]; then
    dd if=/dev/zero of="$D/dd.bin" bs=16M count=$((2 * blocks)) conv=fdatasync 2>&1 | tail -1 \
      | sed 's/^/dd write floor (the f64 bytes, fdatasync): /'
    rm -f "$D/dd.bin"; sync
    e2e_run "streamed auto --out f64" "$OUT/e2e_s30_f.txt" $S --out "$D/f30.npy"
    rm -f "$D/f30.npy"
  fi
}

step_write() {   # --out in place against gathered, alternated; the same bytes as 1 process
  T=${TMPDIR:-/tmp}
  K="$B/apps/cask-knn --generate 2^22 2^12 --seed 1 --cpu-only"
  for ext in npy csv; do
    t_run "1 x 16, $ext" "$OUT/write_one_$ext.txt" $K --threads 16 --out $T/write_one.$ext
    for r in 1 2 3; do
      for m in gather inplace; do
        t_run "round $r, 2 x 8, $ext, $m" "$OUT/write_${ext}_${m}_$r.txt" \
          $L 2 $K --threads 8 --write-mode $m --out $T/write_two.$ext
        cmp -s $T/write_one.$ext $T/write_two.$ext && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
      done
    done
  done
  two_gpus write || { rm -f $T/write_one.* $T/write_two.*; return; }
  K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1"
  t_run "1 process, 2 GPUs, knn" "$OUT/write_gpu_one.txt" $K --out $T/write_one.npy
  J="$B/apps/cask-jacobi --n 16384 --iters 400"
  t_run "1 process, 2 GPUs, jacobi" "$OUT/write_jac_one.txt" $J --out $T/write_one.raw
  for r in 1 2 3; do
    for m in gather inplace; do
      t_run "round $r, 1 process a GPU, knn, $m" "$OUT/write_gpu_${m}_$r.txt" \
        env CASK_GPU_PER_RANK=1 $L 2 $K --write-mode $m --out $T/write_two.npy
      cmp -s $T/write_one.npy $T/write_two.npy && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
      t_run "round $r, 1 process a GPU, jacobi, $m" "$OUT/write_jac_${m}_$r.txt" \
        env CASK_GPU_PER_RANK=1 $L 2 $J --write-mode $m --out $T/write_two.raw
      cmp -s $T/write_one.raw $T/write_two.raw && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
    done
  done
  rm -f $T/write_one.* $T/write_two.*
}

step_gather() {   # GPU route against host route, alternated; then a transfer timeline
  two_gpus gather || return
  K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --repeat 5 --k 8"
  $K > "$OUT/gather_k1.txt" 2>&1; echo "1 process: $(grep compute "$OUT/gather_k1.txt")"
  for r in a b; do
    CASK_GPU_PER_RANK=1 $L 2 $K > "$OUT/gather_k2$r.txt" 2>&1
    echo "2 processes, GPU route: $(grep compute "$OUT/gather_k2$r.txt")"
    CASK_DIST_GPU_XPORT=host CASK_GPU_PER_RANK=1 $L 2 $K > "$OUT/gather_k2h$r.txt" 2>&1
    echo "2 processes, host route: $(grep compute "$OUT/gather_k2h$r.txt")"
  done
  CASK_GPU_PER_RANK=1 eval $L 2 $TR "$OUT/gather_kx" $K > "$OUT/gather_kx.txt" 2>&1; grep compute "$OUT/gather_kx.txt"
  python3 bench/xfer_timeline.py "$OUT/gather_kx" 2 > "$OUT/gather_kx_timeline.txt" 2>&1
  head -60 "$OUT/gather_kx_timeline.txt"
  gzip -f "$OUT"/gather_kx.*.json
}

step_gpux() {
  meson test -C "$B" --suite gpu --print-errorlogs > "$OUT/gpu.log" 2>&1; grep -E "^ *[0-9]+/|Ok:|Fail:" "$OUT/gpu.log"
  for m in "auto 8192" "auto 4" "host 8192"; do   # KiB
    CASK_LAUNCHER=local tests/dist/run.sh 2 "$B/tests/test_dist_gpux" $m 2>&1 | tail -3
  done
  CASK_LAUNCHER=local CASK_GPU_PER_RANK=1 tests/dist/run.sh 2 "$B/tests/test_dist_gpux" auto 65536 2>&1 | tail -3
}

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
    # the floor: one cblas_sgemm of Debian's OpenBLAS from the main thread, by core; then
    # cask's one-tile 2048^2 product with the core named, and with workers unbound
    ninja -C "$B" bench/bench-blas-floor > /dev/null 2>&1
    for core in default SkylakeX Cooperlake; do
      if [ $core = default ]; then e="-u OPENBLAS_CORETYPE"; else e="OPENBLAS_CORETYPE=$core"; fi
      env $e "$B/bench/bench-blas-floor" --n 2048,4096,8192 --reps 5 | grep -v '^{' | sed "s/^/floor $core: /"
    done
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

step_mm_diag() {   # cask's one-tile product against one cblas_sgemm, and why
  ninja -C "$B" bench/bench-array-cpu bench/bench-blas-floor > "$OUT/mm_diag_build.log" 2>&1 ||
    { grep -E "error|FAILED" "$OUT/mm_diag_build.log" | head -20; return 1; }
  X="$B/bench/bench-array-cpu"
  command -v perf > /dev/null && echo "perf: $(perf --version)" || echo "perf: none"
  for r in 1 2 3; do   # the floor (the core cask picks) and cask alternated: the host is noisy
    OPENBLAS_CORETYPE=SkylakeX "$B/bench/bench-blas-floor" --n 2048 --reps 9 | grep -v '^{' |
      tail -1 | sed "s/^/floor SkylakeX $r: /"
    env CUDA_VISIBLE_DEVICES= timeout 120 "$X" --only matmul --mm 2048 --mm-chunk 2048 \
      --reps 9 --direct 2>&1 | grep -E "^matmul" | sed "s/^/cask $r: /"
  done
  for v in "CASK_NCPU=1" "CASK_NCPU=2" "CASK_BIND=0"; do
    case $v in *NCPU=[12]) a="--blas-threads 16" ;; *) a= ;; esac
    env CUDA_VISIBLE_DEVICES= $v timeout 120 "$X" --only matmul --mm 2048 --mm-chunk 2048 \
      --reps 9 --direct $a 2>&1 | grep -E "^matmul" | sed "s/^/$v: /"
  done
  CUDA_VISIBLE_DEVICES= CASK_TRACE="$OUT/mm_diag_trace.json" timeout 120 "$X" --only matmul \
    --mm 2048 --mm-chunk 2048 --reps 9 > "$OUT/mm_diag_traced.log" 2>&1
  python3 - "$OUT/mm_diag_trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev.get("traceEvents", ev) if isinstance(ev, dict) else ev
d = sorted(e["dur"] / 1e3 for e in ev if "matmul" in str(e.get("name", "")) and "dur" in e)
print("traced matmul tasks: %d, ms: %s" % (len(d), " ".join("%.2f" % x for x in d)))
PY
  gzip -f "$OUT/mm_diag_trace.json"
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

step_cpu_diag() {   # where the CPU chain's and matmul's time goes on this host
  lscpu | grep -E "^(Model name|Socket|Core|Thread|NUMA|L2|L3|CPU\(s\))" | cut -c1-200
  ninja -C "$B" bench/bench-array-cpu bench/bench-array-fusion tests/test_array_isa \
    tests/test_array_vmath > "$OUT/cpu_diag_build.log" 2>&1 ||
    { grep -E "error|FAILED" "$OUT/cpu_diag_build.log" | head -20; return 1; }
  for t in test_array_isa test_array_vmath; do
    "$B/tests/$t" --verbose > "$OUT/cpu_diag_$t.log" 2>&1; echo "--- $t rc=$?"
    grep -E "widths|Synthesis" "$OUT/cpu_diag_$t.log"
  done
  F="$B/bench/bench-array-fusion"
  for mb in 64 16 4; do
    for m in fused unfused; do
      CUDA_VISIBLE_DEVICES= CASK_STATS=1 CASK_LOG=info timeout 120 "$F" --cpu --bytes 1073741824 \
        --chunk-mb $mb --reps 5 --mode $m > "$OUT/cpu_diag_chain_${mb}_$m.log" 2>&1
      echo "--- chain ${mb} MiB $m rc=$?"
      grep -E "^(fused|unfused) |^cpu (all|[0-9]+) |OpenBLAS|arrays:" "$OUT/cpu_diag_chain_${mb}_$m.log" |
        head -24
    done
  done
  CUDA_VISIBLE_DEVICES= CASK_CPU_ISA=avx2 timeout 120 "$F" --cpu --bytes 1073741824 --chunk-mb 16 \
    --reps 5 --mode fused 2>&1 | grep -E "^fused " | sed 's/^/avx2 loops: /'
  X="$B/bench/bench-array-cpu"
  for c in 2048 4096; do
    for t in 1 2 4 16; do
      CUDA_VISIBLE_DEVICES= CASK_LOG=info timeout 200 "$X" --only matmul --mm 8192 --mm-chunk $c \
        --blas-threads $t --reps 3 > "$OUT/cpu_diag_mm_${c}_$t.log" 2>&1
      echo "--- matmul 8192 tiles $c blas-threads $t rc=$?"
      grep -E "^matmul|OpenBLAS" "$OUT/cpu_diag_mm_${c}_$t.log" | head -3
    done
  done
}

# Graph replays (docs/guide.md, "Replaying GPU graphs"). The self-check first: if the
# CUDA calls replays rest on misbehave here, it says which, and the rest is not run.
step_replay() {
  ninja -C "$B" bench/bench-replay-check bench/bench-gpu apps/cask-jacobi tests/test_gpu_replay \
    > "$OUT/replay_build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/replay_build.log" | head -20; return 1; }
  timeout 300 "$B/bench/bench-replay-check" > "$OUT/replay_check.log" 2>&1
  rc=$?; cat "$OUT/replay_check.log"; echo "self-check rc=$rc"
  [ $rc -eq 0 ] || { echo "self-check failed: stopping the replay step here"; return 1; }
  for r in 1 0; do
    CASK_GRAPH_REPLAY=$r meson test -C "$B" --suite gpu --print-errorlogs > "$OUT/replay_gpu_$r.log" 2>&1
    echo "--- gpu suite, CASK_GRAPH_REPLAY=$r: rc=$?"
    grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:|Assert|expression|FAIL" "$OUT/replay_gpu_$r.log" | tail -25
  done
  timeout 400 "$B/bench/bench-gpu" --tasks 100000 --reps 5 > "$OUT/replay_bench.log" 2>&1
  echo "--- bench-gpu rc=$?"; grep -v '^{' "$OUT/replay_bench.log"
  # acceptance: chained replay >= 1.0 M tasks/s and >= 0.5 of the raw graph; independent >= 0.7 M/s
  awk '$1 == "chain" && $2 == "cask_replay" { c = $5; cr = $7 }
       $1 == "tasks" && $2 == "cask_replay" { i = $5 }
       END { printf "acceptance: chained %.3f M/s (%s), %.3f of the raw graph (%s); independent %.3f M/s (%s)\n",
               c / 1e6, (c >= 1e6 ? "ok" : "SHORT"), cr, (cr >= 0.5 ? "ok" : "SHORT"), i / 1e6, (i >= 7e5 ? "ok" : "SHORT") }' \
    "$OUT/replay_bench.log"
  # cask-jacobi with small tiles, alternating off and on, twice; final grids compared
  for round in 1 2; do
    for r in 0 1; do
      CASK_GRAPH_REPLAY=$r CASK_LOG=info timeout 300 "$B/apps/cask-jacobi" --n 4096 --blocks 64 --iters 1000 \
        --gpus 1 --out "$OUT/replay_jacobi_$r.raw" > "$OUT/replay_jacobi_${r}_$round.log" 2>&1
      echo "jacobi round $round CASK_GRAPH_REPLAY=$r rc=$?: $(grep '^sweeps' "$OUT/replay_jacobi_${r}_$round.log")"
      grep -i "not replayed" "$OUT/replay_jacobi_${r}_$round.log" | head -3
    done
    jt_off=$(sed -n 's/.*time \([0-9.]*\) s.*/\1/p' "$OUT/replay_jacobi_0_$round.log")
    jt_on=$(sed -n 's/.*time \([0-9.]*\) s.*/\1/p' "$OUT/replay_jacobi_1_$round.log")
    r0=$(sed -n 's/.*residual \([^ ]*\) .*/\1/p' "$OUT/replay_jacobi_0_$round.log")
    r1=$(sed -n 's/.*residual \([^ ]*\) .*/\1/p' "$OUT/replay_jacobi_1_$round.log")
    echo "round $round: speed-up with replay $(awk "BEGIN { if ($jt_on > 0) printf \"%.2f\", $jt_off / $jt_on }")x (want >= 2);" \
      "residuals $r0 / $r1 ($( [ "$r0" = "$r1" ] && echo same || echo DIFFERENT ));" \
      "grids $(cmp -s "$OUT/replay_jacobi_0.raw" "$OUT/replay_jacobi_1.raw" && echo identical || echo DIFFERENT)"
  done
  rm -f "$OUT"/replay_jacobi_*.raw
  # traced and with statistics: replayed segments in the trace, every task counted
  CASK_TRACE="$OUT/replay_jacobi_trace.json" CASK_STATS=1 timeout 200 "$B/apps/cask-jacobi" --n 4096 \
    --blocks 64 --iters 200 --gpus 1 > "$OUT/replay_jacobi_traced.log" 2>&1
  echo "traced run rc=$?: $(grep -o 'replay of [0-9]* tasks' "$OUT/replay_jacobi_trace.json" | sort | uniq -c | head -3)"
  tail -8 "$OUT/replay_jacobi_traced.log"
}

step_recover_gpu() {
  CASK_LAUNCHER=local CASK_RECOVER_UCX_TLS= CASK_DIST_XFER_LOG="$OUT/rx" timeout 400 \
    sh tests/dist/recover_app.sh 3 "$B/apps/cask-knn" knngpu kill 2 3 8
  echo "rc $?; the last run's transfers by route, per rank:"
  for f in "$OUT"/rx.*; do echo "$f: $(awk '{print $6}' "$f" | sort | uniq -c | tr '\n' ' ')"; done
  CASK_LAUNCHER=local CASK_RECOVER_UCX_TLS= timeout 300 sh tests/dist/recover_app.sh 4 "$B/apps/cask-knn" knngpu second 2 3 1 2
  echo "rc $?"
}

for step in "$@"; do
  echo "=== $step ($(( $(date +%s) - t0 )) s)"
  case $step in
    unit) meson test -C "$B" --suite unit --num-processes 8 --print-errorlogs > "$OUT/unit.log" 2>&1
          grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:" "$OUT/unit.log" | tail -25 ;;
    gpu) meson test -C "$B" --suite gpu --print-errorlogs > "$OUT/gpu.log" 2>&1
         grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:|Assert|expression|FAIL" "$OUT/gpu.log" | tail -25 ;;
    gpubench) timeout 200 "$B/bench/bench-gpu" --tasks 100000 --reps 5 > "$OUT/gpubench.log" 2>&1
              grep -v '^{' "$OUT/gpubench.log" ;;
    sched) timeout 200 "$B/bench/bench-sched" --workers 1,2,4,8,16 --tasks 1000000 --reps 5 > "$OUT/sched.log" 2>&1
           grep -v '^{' "$OUT/sched.log" | tail -45 ;;
    schedtrace)   # tracing off against on, same binary, empty tasks and 1 us tasks
          for wn in 0 1000; do
            timeout 120 "$B/bench/bench-sched" --workers 16 --tasks 1000000 --reps 7 --work-ns $wn --cases independent,fanout --json-only > "$OUT/sched_off_$wn.jsonl" 2>/dev/null
            CASK_TRACE=/tmp/cask-sched-trace.json timeout 200 "$B/bench/bench-sched" --workers 16 --tasks 1000000 --reps 7 --work-ns $wn --cases independent,fanout --json-only > "$OUT/sched_on_$wn.jsonl" 2>/dev/null
            for f in off on; do grep '"cask"' "$OUT/sched_${f}_$wn.jsonl" | sed "s/^/trace_$f work_ns=$wn /" | cut -c1-220; done
          done ;;
    bcd) step_bcd ;;
    knn) timeout 300 "$B/bench/bench-knn" --reps ${KNN_REPS:-7} --check ${KNN_CHECK:-4096} > "$OUT/knn.log" 2>&1
         echo "rc=$?"; grep -v '^{' "$OUT/knn.log" ;;
    knnapp) timeout 200 "$B/apps/cask-knn" --generate 16777216 16384 --seed 7 --method brute --repeat 5 --check 2048 > "$OUT/knnapp.log" 2>&1
            echo "rc=$?"; tail -12 "$OUT/knnapp.log" ;;
    knn-methods) step_knn_methods ;;
    trace) CASK_TRACE="$OUT/knn_trace.json" timeout 120 "$B/apps/cask-knn" --generate 4194304 16384 --seed 3 -q > "$OUT/trace.log" 2>&1
           echo "rc=$?"; python3 bench/trace_overlap.py "$OUT/knn_trace.json"; ls -la "$OUT/knn_trace.json" ;;
    jacobi) for g in 1 2 4; do   # same domain on 1, 2 (and 4) GPUs, in one run
              [ "$g" -gt "$NG" ] && continue
              timeout 200 "$B/apps/cask-jacobi" --n 32768 --iters 300 --check 100 --gpus $g > "$OUT/jacobi_$g.log" 2>&1
              echo "gpus=$g rc=$?"; tail -4 "$OUT/jacobi_$g.log"
            done ;;
    fusion) timeout 200 "$B/bench/bench-array-fusion" > "$OUT/fusion.log" 2>&1
            echo "rc=$?"; grep -v '^{' "$OUT/fusion.log" | tail -12 ;;
    dashboard)
      K="$B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 150"
      CASK_DASHBOARD=127.0.0.1:18787 $K > "$OUT/knn_dash.txt" 2>&1 & kp=$!
      sleep 1; python3 bench/dash_capture.py http://127.0.0.1:18787 7 "$OUT/knn_dash.json" 2>&1 | tail -1
      wait $kp; echo "with the dashboard: $(grep 'time:' "$OUT/knn_dash.txt")"
      $K > "$OUT/knn_nodash.txt" 2>&1; echo "without: $(grep 'time:' "$OUT/knn_nodash.txt")"
      ROUNDS=7 sh bench/dash_overhead.sh "$B" 16 > "$OUT/dash_overhead.txt" 2>&1
      grep -v '^{' "$OUT/dash_overhead.txt" | tail -12 ;;
    cpu-arrays) step_cpu_arrays ;;
    cpu-diag) step_cpu_diag ;;
    cpu-mm) CPU_FIGS=mm step_cpu_arrays ;;
    mm-diag) step_mm_diag ;;
    knn-ranks) export CASK_LAUNCHER=local; step_knn_ranks; unset CASK_LAUNCHER ;;
    dist) meson test -C "$B" --suite dist --print-errorlogs > "$OUT/dist.log" 2>&1
          grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:" "$OUT/dist.log" | tail -20 ;;
    knn-stream) # streamed runs from .npy files made by cask-knn-gen (KNN_DIR, default
         # /tmp/knn-stream: 8 GiB of observations, 16 GiB for the one output kept):
         # 2^30 x 2^16 auto against brute force (compute, peak RSS, sampled check), its
         # first 2^24 rows against the in-memory pruned run; 2^30 x 2^14 --k 16 streamed
         # (check only: its output would be 256 GiB), and --k 16 streamed against in
         # memory on 2^22 rows
         D=${KNN_DIR:-/tmp/knn-stream}; mkdir -p "$D"; G=$B/apps/cask-knn-gen; K=$B/apps/cask-knn
         for f in "1073741824 obs o30" "16777216 obs o24" "4194304 obs o22" "65536 ref r16" \
                  "16384 ref r14"; do
           set -- $f; [ -f "$D/$3.npy" ] || $G --rows $1 --seed 11 --set $2 "$D/$3.npy"
         done
         run_knn() {   # name, args...: prints the summary's method/compute/check lines and RSS
           n=$1; shift
           /usr/bin/time -v timeout 300 "$K" "$@" > "$OUT/knns_$n.log" 2>&1
           echo "$n rc=$?"; grep -E "method|compute|check:|windows|Maximum resident" "$OUT/knns_$n.log"
         }
         run_knn auto30 --obs "$D/o30.npy" --ref "$D/r16.npy" --stream --method auto --check 4096 --out "$D/s30.npy"
         run_knn brute30 --obs "$D/o30.npy" --ref "$D/r16.npy" --stream --method brute --check 4096
         run_knn pruned24 --obs "$D/o24.npy" --ref "$D/r16.npy" --no-stream --method pruned --out "$D/m24.npy"
         python3 -c "import numpy as np, sys; a=np.load(sys.argv[1], mmap_mode='r'); b=np.load(sys.argv[2], mmap_mode='r'); n=b.shape[0]; print('first %d rows of the streamed 2^30 output identical to in-memory pruned: %s' % (n, bool((a[:n]==b).all())))" "$D/s30.npy" "$D/m24.npy"
         rm -f "$D/s30.npy"
         run_knn k16_30 --obs "$D/o30.npy" --ref "$D/r14.npy" --stream --k 16 --check 1024
         run_knn k16s22 --obs "$D/o22.npy" --ref "$D/r14.npy" --stream --window 1048576 --k 16 --out "$D/k16s.npy"
         run_knn k16m22 --obs "$D/o22.npy" --ref "$D/r14.npy" --no-stream --k 16 --out "$D/k16m.npy"
         cmp "$D/k16s.npy" "$D/k16m.npy" && echo "k16 2^22 streamed identical to in memory" ;;
    knn-floor) # pruned 2^24 x 2^14 host to host against the transfer floor of its bytes
         # (bench-xfer-floor: inputs in, results out, overlapped), same call; and a trace
         timeout 60 "$B/bench/bench-xfer-floor" > "$OUT/xfer_floor.log" 2>&1
         echo "rc=$?"; grep -v '^{' "$OUT/xfer_floor.log"
         timeout 200 "$B/apps/cask-knn" --generate 16777216 16384 --seed 7 --method pruned \
           --repeat 7 > "$OUT/knn_floor.log" 2>&1
         echo "rc=$?"; grep -E "method|compute|repeat|median|pairs/s" "$OUT/knn_floor.log"
         CASK_TRACE="$OUT/pruned_trace.json" timeout 120 "$B/apps/cask-knn" --generate 16777216 \
           16384 --seed 7 --method pruned -q > /dev/null 2>&1
         python3 bench/trace_overlap.py "$OUT/pruned_trace.json" 2>&1 | tail -25 ;;
    distgpu) sh tests/dist/device.sh "$B" 2>&1 | tail -40 ;;
    xport-1gpu) export CASK_LAUNCHER=local; step_xport_1gpu 1gpu_; unset CASK_LAUNCHER ;;
    perftest) step_perftest ;;
    jacobi-1gpu) export CASK_LAUNCHER=local; step_jacobi_1gpu 1gpu_; unset CASK_LAUNCHER ;;
    knn-1gpu) export CASK_LAUNCHER=local; step_knn_1gpu 1gpu_; unset CASK_LAUNCHER ;;
    mps) export CASK_LAUNCHER=local; step_mps; unset CASK_LAUNCHER ;;
    multigpu) export CASK_LAUNCHER=local; step_multigpu; unset CASK_LAUNCHER ;;
    hog) step_hog ;;
    inflight) step_inflight ;;
    cma) export CASK_LAUNCHER=local; step_cma; unset CASK_LAUNCHER ;;
    seg) export CASK_LAUNCHER=local; step_seg; unset CASK_LAUNCHER ;;
    gather) step_gather ;;
    startup) export CASK_LAUNCHER=local; step_startup; unset CASK_LAUNCHER ;;
    write) step_write ;;
    e2e) export CASK_LAUNCHER=local; step_e2e; unset CASK_LAUNCHER ;;
    gpux) step_gpux ;;
    recover-gpu) step_recover_gpu ;;
    replay) step_replay ;;
    knn-k) OUT=$OUT timeout 300 sh tests/dist/device_knn_k.sh "$B" ;;
    chol) B=$B OUT=$OUT sh bench/chol_device.sh ;;
    ucx-wheel) echo "the wheel's UCX: $("$B/apps/cask-knn" --version 2>/dev/null | grep -i ucx | head -1)" ;;
    *) echo "unknown step $step (sh bench/device_run.sh --help)" ;;
  esac
done
echo "done ($(( $(date +%s) - t0 )) s)"
