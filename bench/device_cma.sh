#!/bin/sh
# bench/device_cma.sh: host data between the processes of one host by CMA reads (the
# default since ucx_config.c's CASK_UCX_CMA) against loopback TCP (CASK_UCX_CMA=0), in
# one device call on 2 GPUs, the libucx-cu13 wheel's UCX (1.22; Debian's 1.13 has no CMA
# setting and keeps TCP), logs under $OUT:
#   1. bench-xport host memory, 2 processes: latency and bandwidth, both settings;
#   2. bench-xport --gpu-only: GPU to GPU by UCX (the rendezvous scheme is get_zcopy
#      with CMA on, auto without), both settings;
#   3. cask-knn 2^24 x 2^14, --k 8 and the default (auto): 1 process x 2 GPUs, and 2
#      processes x 1 GPU with each setting; outputs compared byte for byte;
#   4. cask-jacobi --n 16384 --iters 400, 2 processes, halos by UCX: both settings.
#   sh bench/device_cma.sh [BUILD_DIR]   (sources bench/device_ucx_wheel.sh)
set -u
B=${1:-build-cma}
OUT=${OUT:-out}
mkdir -p "$OUT"
. bench/device_ucx_wheel.sh
[ -f "$B/build.ninja" ] || meson setup "$B" -Dbuildtype=release -Dgpu_arch=${GPU_ARCH:-sm_90} \
  > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
grep -E "^ *(UCX|ucx)" "$OUT/setup.log" | head -3
ninja -C "$B" bench/bench-xport apps/cask-knn apps/cask-jacobi > "$OUT/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
export CASK_LAUNCHER=local
L=tests/dist/launch-local.sh
T=timeout
echo "=== 1. bench-xport, host memory"
for c in 1 0; do
  CASK_UCX_CMA=$c UCX_PROTO_INFO=y $T 200 $L 2 "$B/bench/bench-xport" --no-perftest \
    > "$OUT/xport_host_cma$c.txt" 2>&1
  echo "CASK_UCX_CMA=$c rc=$? rendezvous: $(grep -o 'rendezvous [a-z -]* | [a-z_/]*' \
    "$OUT/xport_host_cma$c.txt" | sort | uniq -c | sort -rn | head -2 | tr -s ' ' | tr '\n' ';')"
  grep -v '^{' "$OUT/xport_host_cma$c.txt" | grep -E -A7 "^UCX (latency|bandwidth)" | grep -v "^--"
done
echo "=== 2. bench-xport --gpu-only (one GPU per rank, both visible)"
for c in 1 0; do
  CASK_UCX_CMA=$c $T 300 $L 2 "$B/bench/bench-xport" --gpu-only --no-perftest \
    > "$OUT/xport_gpu_cma$c.txt" 2>&1
  echo "CASK_UCX_CMA=$c rc=$?"; grep -v '^{' "$OUT/xport_gpu_cma$c.txt" | tail -16
done
echo "=== 3. cask-knn 2^24 x 2^14"
for opt in "--k 8" "--method auto"; do
  K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --repeat 7 --check 512 $opt"
  $T 200 $K --out /tmp/cma_one.npy > "$OUT/knn_one.txt" 2>&1
  echo "$opt, 1 process x 2 GPUs rc=$?: $(grep -E 'compute' "$OUT/knn_one.txt")"
  for c in 1 0; do
    CASK_UCX_CMA=$c CASK_GPU_PER_RANK=1 $T 200 $L 2 $K --out /tmp/cma_two.npy > "$OUT/knn_two_$c.txt" 2>&1
    echo "$opt, 2 processes, CASK_UCX_CMA=$c rc=$?: $(grep -E 'compute|check: [0-9]' "$OUT/knn_two_$c.txt" | tr '\n' ' ')"
    cmp /tmp/cma_one.npy /tmp/cma_two.npy && echo "  outputs identical"
  done
  rm -f /tmp/cma_one.npy /tmp/cma_two.npy
done
echo "=== 4. cask-jacobi --n 16384 --iters 400, 2 processes, UCX halos"
J="$B/apps/cask-jacobi --n 16384 --iters 400 --check 100"
for r in 1 2; do
  for c in 1 0; do
    CASK_UCX_CMA=$c CASK_DIST_GPU_XPORT=ucx $T 180 $L 2 $J > "$OUT/jac_${c}_$r.txt" 2>&1
    echo "round $r CASK_UCX_CMA=$c rc=$?: $(grep -h '^sweeps' "$OUT/jac_${c}_$r.txt" | head -1)"
  done
done
