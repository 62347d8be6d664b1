#!/bin/sh
# bench/dist_diag.sh: one process on 2 GPUs against 2 processes with one GPU each, on a
# 2-GPU machine without mpirun (file bootstrap), in one run: cask-jacobi (halos by UCX,
# then by NCCL), cask-knn with 4 reference chunks and with one (outputs compared byte
# for byte), then the distributed-graph tests with GPUs present. Logs under $OUT.
#   . .devdeps/setup.sh && sh bench/dist_diag.sh      (device run, nvidia-h200-x2)
set -u
B=${BUILD:-build-dist}
OUT=${OUT:-out}
mkdir -p "$OUT"
[ -f $B/build.ninja ] || meson setup $B -Dgpu_arch=sm_90 > $OUT/setup.log 2>&1 || { tail $OUT/setup.log; exit 1; }
ninja -C $B > $OUT/build.log 2>&1 || { grep -E "error|FAILED" $OUT/build.log | head; exit 1; }
L=tests/dist/launch-local.sh
export CASK_LAUNCHER=local
J="$B/apps/cask-jacobi --n 16384 --iters 400 --check 100"
for i in 1; do
echo "== jacobi 1x2"; timeout 120 $J --gpus 2 > $OUT/j1.txt 2>&1; echo rc=$?; tail -1 $OUT/j1.txt
echo "== jacobi 2x1 nccl"; CASK_DIST_NCCL=1 CASK_GPU_PER_RANK=1 timeout 120 $L 2 $J > $OUT/j2.txt 2>&1; echo rc=$?; tail -1 $OUT/j2.txt
echo "== jacobi 2x1 ucx"; CASK_GPU_PER_RANK=1 timeout 120 $L 2 $J > $OUT/j3.txt 2>&1; echo rc=$?; tail -1 $OUT/j3.txt
done
echo "== jacobi verify 2x1 nccl"; CASK_DIST_NCCL=1 CASK_GPU_PER_RANK=1 timeout 120 $L 2 $B/apps/cask-jacobi --n 1026 --iters 200 --check 50 --verify > $OUT/j4.txt 2>&1; echo rc=$?; tail -1 $OUT/j4.txt
for rc in 4096 16384; do
K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --ref-chunk $rc --repeat 9 --check 512"
echo "== knn 1x2 rc=$rc"; $K --out /tmp/one$rc.npy > $OUT/a$rc.txt 2>&1; grep -E "compute|rror" $OUT/a$rc.txt
echo "== knn 2x1 rc=$rc"; CASK_GPU_PER_RANK=1 timeout 120 $L 2 $K --out /tmp/two$rc.npy > $OUT/b$rc.txt 2>&1; echo rc=$?; grep -E "compute|check: [0-9]|rror" $OUT/b$rc.txt
cmp /tmp/one$rc.npy /tmp/two$rc.npy && echo "outputs identical"
done
R=tests/dist/run.sh
for c in flow overlap taskfail gather; do $R 2 "$B/tests/test_dist_graph" $c 2>&1 | tail -1; done
$R 2 --survivors 1 "$B/tests/test_dist_graph" kill 2>&1 | tail -1
