#!/bin/sh
# tests/dist/device.sh: the multi-process checks that need GPUs, on a machine without
# mpirun (file bootstrap): NCCL ring and lost-peer tests, UCX tests with 4 ranks,
# bench-xport with NCCL (GPU memory by UCX on one GPU), a GPU chunk between 2 processes,
# cask-knn on 1 and 2 GPUs (1 and 2 processes; its --k and --method: device_knn_k.sh).
# Logs under $OUT (or ./out).
#   sh tests/dist/device.sh [BUILD_DIR]
set -u
B=${1:-build-dist}
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi -L
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dgpu_arch=${GPU_ARCH:-sm_90} > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
fi
ninja -C "$B" tests/test_dist_nccl tests/test_dist_ucx tests/test_dist_graph tests/test_dist_gpux \
  bench/bench-xport apps/cask-knn > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -20; exit 1; }
export CASK_LAUNCHER=local
R=tests/dist/run.sh
# Two GPUs or more: a GPU a rank, NCCL between them. One GPU: both ranks share it (NCCL
# refuses two ranks on one GPU, so bench-xport moves GPU memory by UCX, cuda_ipc).
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$NG" -ge 2 ]; then PER=1 XA=--nccl; else PER=0 XA=--gpu; fi
echo "== nccl"; $R 2 --need-gpus 2 "$B/tests/test_dist_nccl" ring 256 2>&1 | tail -4
$R 2 --need-gpus 2 --survivors 1 "$B/tests/test_dist_nccl" kill 2>&1 | tail -3
echo "== ucx"; for t in pingpong "rndv 256" flood; do $R 4 "$B/tests/test_dist_ucx" $t 2>&1 | tail -2; done
$R 4 "$B/tests/test_dist_graph" flow 2>&1 | tail -1
echo "== bench-xport"
CASK_GPU_PER_RANK=$PER tests/dist/launch-local.sh 2 "$B/bench/bench-xport" $XA --json "$OUT/xport.jsonl" > "$OUT/xport.txt" 2>&1
grep -v '^{' "$OUT/xport.txt"
echo "== a GPU chunk between 2 processes (GPU route, then host route)"
for m in "auto 8192" "host 8192"; do CASK_GPU_PER_RANK=$PER $R 2 "$B/tests/test_dist_gpux" $m 2>&1 | tail -2; done
echo "== cask-knn"
K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --ref-chunk 4096 --repeat 5 --check 512"
CUDA_VISIBLE_DEVICES=0 $K > "$OUT/knn1.txt" 2>&1; grep -E "time|pairs/s|check: [0-9]" "$OUT/knn1.txt"
$K > "$OUT/knn1x2.txt" 2>&1; grep -E "time|pairs/s" "$OUT/knn1x2.txt"
CASK_GPU_PER_RANK=$PER tests/dist/launch-local.sh 2 $K > "$OUT/knn2.txt" 2>&1; grep -E "processes|time|pairs/s|check: [0-9]" "$OUT/knn2.txt"
echo "== cask-knn --k, --method across processes"
OUT="$OUT" sh tests/dist/device_knn_k.sh "$B" 2>&1 | tail -12
