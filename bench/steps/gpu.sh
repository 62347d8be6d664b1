#!/bin/sh
# bench/steps/gpu.sh: GPU tasks and copies, graph replays, fusion, Jacobi, the dashboard's cost
# Run by bench/device_run.sh (its table names the steps), or alone: sh THIS STEP.
. bench/steps/lib.sh

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

case ${STEP:-${1:-}} in
  gpubench)
    timeout 200 "$B/bench/bench-gpu" --tasks 100000 --reps 5 > "$OUT/gpubench.log" 2>&1
    grep -v '^{' "$OUT/gpubench.log" ;;
  jacobi)
    for g in 1 2 4; do   # same domain on 1, 2 (and 4) GPUs, in one run
      [ "$g" -gt "$NG" ] && continue
      timeout 200 "$B/apps/cask-jacobi" --n 32768 --iters 300 --check 100 --gpus $g > "$OUT/jacobi_$g.log" 2>&1
      echo "gpus=$g rc=$?"; tail -4 "$OUT/jacobi_$g.log"
    done ;;
  fusion)
    timeout 200 "$B/bench/bench-array-fusion" > "$OUT/fusion.log" 2>&1
    echo "rc=$?"; grep -v '^{' "$OUT/fusion.log" | tail -12 ;;
  dashboard)
    K="$B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 150"
    CASK_DASHBOARD=127.0.0.1:18787 $K > "$OUT/knn_dash.txt" 2>&1 & kp=$!
    sleep 1; python3 bench/dash_capture.py http://127.0.0.1:18787 7 "$OUT/knn_dash.json" 2>&1 | tail -1
    wait $kp; echo "with the dashboard: $(grep 'time:' "$OUT/knn_dash.txt")"
    $K > "$OUT/knn_nodash.txt" 2>&1; echo "without: $(grep 'time:' "$OUT/knn_nodash.txt")"
    ROUNDS=7 sh bench/dash_overhead.sh "$B" 16 > "$OUT/dash_overhead.txt" 2>&1
    grep -v '^{' "$OUT/dash_overhead.txt" | tail -12 ;;
  replay)
    step_replay ;;
esac
