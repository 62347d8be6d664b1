#!/bin/sh
# bench/steps/sched.sh: scheduler throughput, what tracing costs, build + compute + destroy
# Run by bench/device_run.sh (its table names the steps), or alone: sh THIS STEP.
. bench/steps/lib.sh

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

case ${STEP:-${1:-}} in
  sched)
    timeout 200 "$B/bench/bench-sched" --workers 1,2,4,8,16 --tasks 1000000 --reps 5 > "$OUT/sched.log" 2>&1
    grep -v '^{' "$OUT/sched.log" | tail -45 ;;
  schedtrace)
      # tracing off against on, same binary, empty tasks and 1 us tasks
    for wn in 0 1000; do
      timeout 120 "$B/bench/bench-sched" --workers 16 --tasks 1000000 --reps 7 --work-ns $wn --cases independent,fanout --json-only > "$OUT/sched_off_$wn.jsonl" 2>/dev/null
      CASK_TRACE=/tmp/cask-sched-trace.json timeout 200 "$B/bench/bench-sched" --workers 16 --tasks 1000000 --reps 7 --work-ns $wn --cases independent,fanout --json-only > "$OUT/sched_on_$wn.jsonl" 2>/dev/null
      for f in off on; do grep '"cask"' "$OUT/sched_${f}_$wn.jsonl" | sed "s/^/trace_$f work_ns=$wn /" | cut -c1-220; done
    done ;;
  bcd)
    step_bcd ;;
esac
