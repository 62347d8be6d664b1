#!/bin/sh
# bench/device_run.sh: build on the GPU machine and run the named steps, logs under $OUT
# (or ./device-logs). Steps: unit gpu gpubench sched schedtrace knn knnapp trace jacobi
# fusion dist.
#   sh bench/device_run.sh gpu gpubench knn
# Each step prints its table; full logs go to $OUT/<step>.log.
set -u
OUT=${OUT:-device-logs}
mkdir -p "$OUT"
B=${BUILD:-build-gpu}
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dgpu_arch=${GPU_ARCH:-sm_90} > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C "$B" > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
for step in "$@"; do
  echo "=== $step"
  case $step in
    unit) meson test -C "$B" --suite unit --num-processes 8 --print-errorlogs > "$OUT/unit.log" 2>&1
          grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:" "$OUT/unit.log" | tail -25 ;;
    gpu) meson test -C "$B" --suite gpu --print-errorlogs > "$OUT/gpu.log" 2>&1
         grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:|Assert|expression|FAIL" "$OUT/gpu.log" | tail -25 ;;
    gpubench) timeout 200 "$B/bench/bench-gpu" --tasks 100000 --reps 5 > "$OUT/gpubench.log" 2>&1
              grep -v '^{' "$OUT/gpubench.log" ;;
    sched) timeout 200 "$B/bench/bench-sched" --workers 1,2,4,8,16 --tasks 1000000 --reps 5 > "$OUT/sched.log" 2>&1
           grep -v '^{' "$OUT/sched.log" | tail -45 ;;
    schedtrace)   # tracing off vs on, same binary, empty tasks and 1 us tasks
          for wn in 0 1000; do
            timeout 120 "$B/bench/bench-sched" --workers 16 --tasks 1000000 --reps 7 --work-ns $wn --cases independent,fanout --json-only > "$OUT/sched_off_$wn.jsonl" 2>/dev/null
            CASK_TRACE=/tmp/cask-sched-trace.json timeout 200 "$B/bench/bench-sched" --workers 16 --tasks 1000000 --reps 7 --work-ns $wn --cases independent,fanout --json-only > "$OUT/sched_on_$wn.jsonl" 2>/dev/null
            for f in off on; do grep '"cask"' "$OUT/sched_${f}_$wn.jsonl" | sed "s/^/trace_$f work_ns=$wn /" | cut -c1-220; done
          done ;;
    knn) timeout 300 "$B/bench/bench-knn" --reps ${KNN_REPS:-7} --check ${KNN_CHECK:-4096} > "$OUT/knn.log" 2>&1
         echo "rc=$?"; grep -v '^{' "$OUT/knn.log" ;;
    trace) CASK_TRACE="$OUT/knn_trace.json" timeout 120 "$B/apps/cask-knn" --generate 4194304 16384 --seed 3 -q > "$OUT/trace.log" 2>&1
           echo "rc=$?"; python3 bench/trace_overlap.py "$OUT/knn_trace.json"; ls -la "$OUT/knn_trace.json" ;;
    knnapp) timeout 200 "$B/apps/cask-knn" --generate 16777216 16384 --seed 7 --method brute --repeat 5 --check 2048 > "$OUT/knnapp.log" 2>&1
            echo "rc=$?"; tail -12 "$OUT/knnapp.log" ;;
    jacobi) for g in 1 2 4; do   # same domain on 1, 2 (and 4) GPUs, in one run
              [ "$g" -gt "$(nvidia-smi -L | wc -l)" ] && continue
              timeout 200 "$B/apps/cask-jacobi" --n 32768 --iters 300 --check 100 --gpus $g > "$OUT/jacobi_$g.log" 2>&1
              echo "gpus=$g rc=$?"; tail -4 "$OUT/jacobi_$g.log"
            done ;;
    distgpu) sh tests/dist/device.sh "$B" 2>&1 | tail -40 ;;
    fusion) timeout 200 "$B/bench/bench-array-fusion" > "$OUT/fusion.log" 2>&1
            echo "rc=$?"; grep -v '^{' "$OUT/fusion.log" | tail -12 ;;
    dist) meson test -C "$B" --suite dist --print-errorlogs > "$OUT/dist.log" 2>&1
          grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:" "$OUT/dist.log" | tail -20 ;;
    *) echo "unknown step $step" ;;
  esac
done
