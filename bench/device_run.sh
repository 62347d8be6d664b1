#!/bin/sh
# bench/device_run.sh: build on the GPU machine and run the named steps, logs under $OUT
# (or ./device-logs). Steps: unit gpu gpubench sched schedtrace bcd knn knnapp trace jacobi
# fusion dist cpu-arrays. cpu-arrays: issue 38's CPU arrays against NumPy, dask.array and
# numexpr (bench/device_cpu_arrays.sh: carry .devdeps with Debian's OpenBLAS and SLEEF
# .debs and the dask/numexpr wheels). bcd: build + compute + destroy on one worker (1M tasks), CPU-only build
# (build-bcd), then 16 workers with the peers (50k tasks); for a before/after in the
# same call, BCD_BASE=<its source tree or build dir> (a source tree is built CPU-only
# in it), or BCD_BASE_REF=<git ref> (needs .git) builds that code too; BCD_ROUNDS=R
# alternates base and this tree R times (default 1). A call of bcd alone skips the GPU build.
# The StarPU peer needs Debian's StarPU on that machine: in .devdeps, `apt-get download
# libstarpu-dev libstarpu-1.3-9 libglpk40 libamd2 libcolamd2 libsuitesparseconfig5
# libltdl7 ocl-icd-libopencl1` (3 MB); without it the table says StarPU was not built in.
#   sh bench/device_run.sh gpu gpubench knn
# Each step prints its table; full logs go to $OUT/<step>.log.
set -u
OUT=${OUT:-device-logs}
mkdir -p "$OUT"
B=${BUILD:-build-gpu}
need_main=0
for step in "$@"; do [ "$step" = bcd ] || need_main=1; done
if [ $need_main = 1 ]; then
  if [ ! -f "$B/build.ninja" ]; then
    meson setup "$B" -Dgpu_arch=${GPU_ARCH:-sm_90} > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
  fi
  ninja -C "$B" > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
fi
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
    bcd) # CPU-only builds of this tree and (BCD_BASE_REF, needs git) of the code before it,
         # or BCD_BASE=<build dir>, run in this same call
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
         ninja -C build-bcd bench/bench-sched > "$OUT/bcd_build.log" 2>&1 || { echo "build-bcd failed"; continue; }
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
         echo "rc=$?"; grep -v '^{' "$OUT/bcd_peers.log" | tail -16 ;;
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
    cpu-arrays) sh bench/device_cpu_arrays.sh "$B" ;;
    dist) meson test -C "$B" --suite dist --print-errorlogs > "$OUT/dist.log" 2>&1
          grep -E "^ *[0-9]+/|Ok:|Fail:|Skipped:" "$OUT/dist.log" | tail -20 ;;
    *) echo "unknown step $step" ;;
  esac
done
