#!/bin/sh
# bench/steps/e2e.sh: start-up plus shutdown of a job, and end to end as users time it (issue 53)
# Run by bench/device_run.sh (its table names the steps), or alone: sh THIS STEP.
. bench/steps/lib.sh

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

# e2e_run LABEL LOG CMD...: CMD's end to end time by the shell's clock, and the lines of
# its own summary that say where the time went
e2e_run() {
  label=$1 log=$2
  shift 2
  t1=$(date +%s.%N)
  timeout 300 "$@" > "$log" 2>&1
  rc=$?
  echo "$label: rc $rc, end to end $(awk "BEGIN{printf \"%.3f\", $(date +%s.%N) - $t1}") s (shell)"
  grep -E 'time:|end to end|I/O:|method|windows|check:|outside' "$log" | sed 's/^/    /' | head -9
  grep -E 'phases' "$log" | sed 's/^/    /' | head -2
}

step_e2e() {   # issue 53: what users time, each figure beside its floor from this call
  T=${TMPDIR:-/tmp}
  # sizes (smaller for a trial run elsewhere): cask-knn's, and the streamed file's rows
  # and references as powers of 2 (the file is 8 x 2^E2E_OBS_LOG2 bytes, >= 2^21 rows)
  E2E_KNN=${E2E_KNN:-2^24 2^14}
  lo=${E2E_OBS_LOG2:-30} lr=${E2E_REF_LOG2:-16}
  rows=$((1 << lo)) blocks=$((1 << (lo - 21)))   # dd's 16 MiB blocks of 8-byte rows
  [ "${E2E_STREAM_ONLY:-0}" = 1 ] || e2e_jobs   # E2E_STREAM_ONLY=1: the streamed runs alone
  e2e_stream
}

e2e_jobs() {   # start-up of 1, 2, 4 ranks and cask-knn on 1 and 2 processes, with floors
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
  echo "-- the floor of N processes opening the one GPU at once: N independent bench-startup"
  echo "   (each a job of one: no launcher, no UCX), started together; wall by the shell"
  for n in 1 2 4; do
    ws=""
    for r in 1 2 3; do
      t1=$(date +%s.%N); i=0
      while [ $i -lt $n ]; do "$B/bench/bench-startup" > /dev/null 2>&1 & i=$((i + 1)); done
      wait
      ws="$ws $(awk "BEGIN{printf \"%.1f\", ($(date +%s.%N) - $t1) * 1000}")"
    done
    echo "$n independent: wall ms$ws (median $(echo $ws | tr ' ' '\n' | sort -n | sed -n 2p))"
  done
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
  # the floor of any 2 processes on the one GPU: two independent cask-knn of half the
  # rows each, started together (no job, no UCX): two GPU contexts made at once, two
  # processes' kernels time-sliced, two processes loaded and ended
  H=$(echo "$E2E_KNN" | awk '{ split($1, a, "^"); printf "%s^%d %s", a[1], a[2] - 1, $2 }')
  for r in 1 2 3; do
    t1=$(date +%s.%N)
    $B/apps/cask-knn --generate $H --seed 1 > "$OUT/e2e_half_a_$r.txt" 2>&1 &
    $B/apps/cask-knn --generate $H --seed 2 > "$OUT/e2e_half_b_$r.txt" 2>&1
    wait
    echo "round $r, floor: 2 independent processes of --generate $H at once: end to end $(awk "BEGIN{printf \"%.3f\", $(date +%s.%N) - $t1}") s (shell)"
    grep -hE 'end to end' "$OUT/e2e_half_a_$r.txt" "$OUT/e2e_half_b_$r.txt" | sed 's/^/    /'
  done
  e2e_run "1 process --out" "$OUT/e2e_knn1_out.txt" $K --out $T/e2e_one.npy
  e2e_run "2 processes --out (in place)" "$OUT/e2e_knn2_out.txt" $L 2 $K --out $T/e2e_two.npy
  cmp -s $T/e2e_one.npy $T/e2e_two.npy && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
  rm -f $T/e2e_one.npy $T/e2e_two.npy
}

e2e_stream() {   # streamed from the page cache, against dd's read and write
  echo "== streamed 2^$lo x 2^$lr from the page cache (default window 2^24)"
  D=${KNN_DIR:-/tmp/knn-stream}; mkdir -p "$D"; G=$B/apps/cask-knn-gen; KS=$B/apps/cask-knn
  O=$D/o$lo.npy R=$D/r$lr.npy t1=$(date +%s)
  [ -f "$O" ] || $G --rows $rows --seed 11 --set obs "$O" > /dev/null
  [ -f "$R" ] || $G --rows $((1 << lr)) --seed 11 --set ref "$R" > /dev/null
  sync; echo "inputs made and synced in $(( $(date +%s) - t1 )) s"
  dd if="$O" of=/dev/null bs=16M 2>&1 | tail -1 | sed 's/^/dd read, first (cache warmed): /'
  dd if="$O" of=/dev/null bs=16M 2>&1 | tail -1 | sed 's/^/dd read floor: /'
  S="$KS --obs $O --ref $R --stream --method auto"
  e2e_run "streamed auto, no --out (warm-up of the GPU and cache)" "$OUT/e2e_s30_w.txt" $S
  for r in 1 2 3; do
    e2e_run "round $r, streamed auto, no --out" "$OUT/e2e_s30_$r.txt" $S
  done
  e2e_run "streamed auto, no --out, --read-ahead 2 (the default before 6df7e1f)" \
    "$OUT/e2e_s30_ra2.txt" $S --read-ahead 2
  dd if="$O" of=/dev/null bs=16M 2>&1 | tail -1 | sed 's/^/dd read floor, again: /'
  dd if=/dev/zero of="$D/dd.bin" bs=16M count=$blocks conv=fdatasync 2>&1 | tail -1 \
    | sed 's/^/dd write floor (the compact bytes, fdatasync): /'
  rm -f "$D/dd.bin"; sync
  e2e_run "streamed auto --out-format compact (synced before its rename)" "$OUT/e2e_s30_c.txt" $S --out "$D/c30.npy" --out-format compact
  ls -l "$D/c30.npy" 2>&1 | tail -1
  python3 -c "import numpy as np, sys; a=np.load(sys.argv[1], mmap_mode='r'); print('compact output', a.dtype, a.shape, 'first index/dist', a[0]['index'], a[0]['dist'])" "$D/c30.npy" 2>&1 | tail -1
  rm -f "$D/c30.npy"; sync
  [ "${E2E_F64:-0}" = 1 ] || return 0
  dd if=/dev/zero of="$D/dd.bin" bs=16M count=$((2 * blocks)) conv=fdatasync 2>&1 | tail -1 \
    | sed 's/^/dd write floor (the f64 bytes, fdatasync): /'
  rm -f "$D/dd.bin"; sync
  e2e_run "streamed auto --out f64" "$OUT/e2e_s30_f.txt" $S --out "$D/f30.npy"; rm -f "$D/f30.npy"
}

case ${STEP:-${1:-}} in
  startup)
    export CASK_LAUNCHER=local; step_startup ;;
  e2e)
    export CASK_LAUNCHER=local; step_e2e ;;
esac
