#!/bin/sh
# bench/device_gather.sh: gathers of GPU results between processes on the GPU machine
# (2 GPUs), bench/RESULTS.md 15.6; the wheel's UCX 1.22 (cuda_ipc, CMA), logs under $OUT.
# Steps, in one call:
#   tests    unit and gpu suites (bench/device_run.sh)
#   build    the build alone
#   gpux     the gpu suite and test_gpux (a gathered chunk by the GPU route: 8 MiB, 4 KiB
#            sharing one GPU, 64 MiB with a GPU each; and the host route)
#   recover  recover_app.sh knngpu: a rank of 3 killed (tasks 3, 8), two of 4 in turn
#   knnk     tests/dist/device_knn_k.sh (same bytes: 1 GPU, 2 GPUs, 2 processes)
#   dist     tests/dist/device.sh
#   gather   cask-knn 2^24 x 2^14 --k 8: 1 process; 2 processes by the GPU route and by
#            the host route (CASK_DIST_GPU_XPORT=host), alternated; then traced
#            (CASK_DIST_XFER_LOG, CASK_TRACE) and read by bench/xfer_timeline.py
#   sh bench/device_gather.sh STEP...
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
. bench/device_ucx_wheel.sh
B=build-gpu
if [ ! -f $B/build.ninja ]; then
  meson setup $B -Dbuildtype=release > $OUT/setup.log 2>&1 || tail -30 $OUT/setup.log
  grep -E "^ *(UCX|CUDA|NCCL)" $OUT/setup.log | head
fi
t0=$(date +%s)
for s in "$@"; do echo "=== $s ($(( $(date +%s) - t0 )) s)"; case $s in
  tests) BUILD=$B OUT=$OUT sh bench/device_run.sh unit gpu ;;
  gpux) ninja -C $B > $OUT/build.log 2>&1 || { grep -E "error|FAILED" $OUT/build.log | head; }
    meson test -C $B --suite gpu --print-errorlogs > $OUT/gpu.log 2>&1; grep -E "^ *[0-9]+/|Ok:|Fail:" $OUT/gpu.log
    for m in "auto 8192" "auto 4" "host 8192"; do CASK_LAUNCHER=local tests/dist/run.sh 2 $B/tests/test_dist_gpux $m 2>&1 | tail -3; done
    CASK_LAUNCHER=local CASK_GPU_PER_RANK=1 tests/dist/run.sh 2 $B/tests/test_dist_gpux auto 65536 2>&1 | tail -3 ;;
  build) ninja -C $B > $OUT/build.log 2>&1 || { grep -E "error|FAILED" $OUT/build.log | head; } ;;
  recover) CASK_LAUNCHER=local CASK_RECOVER_UCX_TLS= CASK_DIST_XFER_LOG=$OUT/rx timeout 400 sh tests/dist/recover_app.sh 3 $B/apps/cask-knn knngpu kill 2 3 8
    echo "rc $?; last run's transfers by route, per rank:"; for f in $OUT/rx.*; do echo "$f: $(awk '{print $6}' $f | sort | uniq -c | tr '\n' ' ')"; done
    CASK_LAUNCHER=local CASK_RECOVER_UCX_TLS= timeout 300 sh tests/dist/recover_app.sh 4 $B/apps/cask-knn knngpu second 2 3 1 2; echo "rc $?" ;;
  knnk) OUT=$OUT timeout 300 sh tests/dist/device_knn_k.sh $B ;;
  dist) OUT=$OUT sh tests/dist/device.sh $B ;;
  gather)
    L=tests/dist/launch-local.sh
    TR="sh -c 'CASK_TRACE=\$0.\$CASK_RANK.json CASK_DIST_XFER_LOG=\$0 exec \"\$@\"'"
    K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --repeat 5 --k 8"
    $K > $OUT/k1.txt 2>&1; grep compute $OUT/k1.txt
    CASK_GPU_PER_RANK=1 $L 2 $K > $OUT/k2.txt 2>&1; grep compute $OUT/k2.txt
    CASK_DIST_GPU_XPORT=host CASK_GPU_PER_RANK=1 $L 2 $K > $OUT/k2h.txt 2>&1; grep compute $OUT/k2h.txt
    CASK_GPU_PER_RANK=1 $L 2 $K > $OUT/k2b.txt 2>&1; grep compute $OUT/k2b.txt
    CASK_DIST_GPU_XPORT=host CASK_GPU_PER_RANK=1 $L 2 $K > $OUT/k2hb.txt 2>&1; grep compute $OUT/k2hb.txt
    CASK_GPU_PER_RANK=1 eval $L 2 $TR $OUT/kx $K > $OUT/kx.txt 2>&1; grep compute $OUT/kx.txt
    python3 bench/xfer_timeline.py $OUT/kx 2 > $OUT/kx_timeline.txt 2>&1; head -60 $OUT/kx_timeline.txt
    gzip -f $OUT/kx.*.json ;;
esac; done
echo "done ($(( $(date +%s) - t0 )) s)"
