#!/bin/sh
# bench/steps/tests.sh: the test suites on the GPU machine, and the GPU tests of several processes
# Run by bench/device_run.sh (its table names the steps), or alone: sh THIS STEP.
. bench/steps/lib.sh

step_gpux() {
  meson test -C "$B" --suite gpu --print-errorlogs > "$OUT/gpu.log" 2>&1; grep -E "^ *[0-9]+/|Ok:|Fail:" "$OUT/gpu.log"
  for m in "auto 8192" "auto 4" "host 8192"; do   # KiB
    CASK_LAUNCHER=local tests/dist/run.sh 2 "$B/tests/test_dist_gpux" $m 2>&1 | tail -3
  done
  CASK_LAUNCHER=local CASK_GPU_PER_RANK=1 tests/dist/run.sh 2 "$B/tests/test_dist_gpux" auto 65536 2>&1 | tail -3
}

step_recover_gpu() {
  CASK_LAUNCHER=local CASK_RECOVER_UCX_TLS= CASK_DIST_XFER_LOG="$OUT/rx" timeout 400 \
    sh tests/dist/recover_app.sh 3 "$B/apps/cask-knn" knngpu kill 2 3 8
  echo "rc $?; the last run's transfers by route, per rank:"
  for f in "$OUT"/rx.*; do echo "$f: $(awk '{print $6}' "$f" | sort | uniq -c | tr '\n' ' ')"; done
  CASK_LAUNCHER=local CASK_RECOVER_UCX_TLS= timeout 300 sh tests/dist/recover_app.sh 4 "$B/apps/cask-knn" knngpu second 2 3 1 2
  echo "rc $?"
}

case ${STEP:-${1:-}} in
  unit)
    meson test -C "$B" --suite unit --num-processes 8 --print-errorlogs > "$OUT/unit.log" 2>&1
    grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:" "$OUT/unit.log" | tail -25 ;;
  gpu)
    meson test -C "$B" --suite gpu --print-errorlogs > "$OUT/gpu.log" 2>&1
    grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:|Assert|expression|FAIL" "$OUT/gpu.log" | tail -25 ;;
  dist)
    meson test -C "$B" --suite dist --print-errorlogs > "$OUT/dist.log" 2>&1
    grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:" "$OUT/dist.log" | tail -20 ;;
  distgpu)
    sh tests/dist/device.sh "$B" 2>&1 | tail -60 ;;
  knn-k)
    OUT=$OUT timeout 300 sh tests/dist/device_knn_k.sh "$B" ;;
  gpux)
    step_gpux ;;
  recover-gpu)
    step_recover_gpu ;;
esac
