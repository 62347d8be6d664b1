#!/bin/sh
# bench/steps/multigpu.sh: two GPUs of one host: 1 process x 2 GPUs against 2 x 1, a competing load, gathers
# Run by bench/device_run.sh (its table names the steps), or alone: sh THIS STEP.
. bench/steps/lib.sh

step_multigpu() {
  two_gpus multigpu || return
  "$B/apps/cask-knn" --version | head -3
  echo "--- bench-knn --reps 7: even / uneven / hog (cask against the hand-threaded static split)"
  for i in 1 2; do
    timeout 300 "$B/bench/bench-knn" --reps 7 --check 4096 > "$OUT/mg_knn_$i.log" 2>&1
    echo "run $i rc=$?"; grep -v '^{' "$OUT/mg_knn_$i.log" | grep -E "^(even|uneven|hog)|ratio|differ"
  done
  CASK_STATS=1 CASK_LOG=debug timeout 300 "$B/bench/bench-knn" --reps 3 --check 0 > "$OUT/mg_knn_stats.log" 2>&1
  echo "stats run rc=$? (reps 3): tasks left to a faster GPU: $(grep -c ' leaves ' "$OUT/mg_knn_stats.log")"
  grep -E "^(gpu|worker|hog|even|uneven)" "$OUT/mg_knn_stats.log" | grep -v "ratio" | tail -12
  echo "--- cask-jacobi --n 16384 --iters 400: 1 process x 2 GPUs against 2 processes x 1 GPU"
  J="$B/apps/cask-jacobi --n 16384 --iters 400 --check 100"
  R=${TMPDIR:-/tmp}/mg_jac   # the grids (1 GiB each) stay off $OUT
  jac() {   # ROUND NAME ARGS...: one run, its "sweeps ... time" line
    r=$1; n=$2; shift 2
    "$@" > "$OUT/mg_jac_${n}_$r.txt" 2>&1
    printf "round %s %-16s rc=%d " "$r" "$n" $?; grep -h "^sweeps" "$OUT/mg_jac_${n}_$r.txt" | head -1
  }
  i=0
  while [ "$i" -le "${REPS:-3}" ]; do   # round 0: outputs compared, not counted in the medians
    o=""; [ $i = 0 ] && o="--out $R"
    jac $i one timeout 120 $J --gpus 2 ${o:+$o.one}
    for route in ucx nccl auto; do
      for vis in own both; do   # own: each rank sees its GPU only; CUDA IPC needs both
        if [ $vis = own ]; then export CASK_GPU_PER_RANK=1; else unset CASK_GPU_PER_RANK; fi
        export CASK_DIST_GPU_XPORT=$route
        jac $i ${route}_$vis timeout 180 $L 2 $J ${o:+$o.${route}_$vis}
      done
    done
    unset CASK_GPU_PER_RANK CASK_DIST_GPU_XPORT
    # UCX's shared memory for the messages (CASK_UCX_SHM=1; the default is TCP on
    # loopback between the ranks of a host: transport/ucx_config.c)
    jac $i ucx_both_shm env CASK_UCX_SHM=1 CASK_DIST_GPU_XPORT=ucx timeout 180 $L 2 $J ${o:+$o.ucx_both_shm}
    if [ $i = 0 ]; then
      for f in $R.*_*; do
        cmp -s $R.one "$f" && echo "jacobi grid identical to one process's: ${f#$R.}" ||
          echo "jacobi grid DIFFERS from one process's: ${f#$R.}"
      done
      rm -f $R.*
    fi
    i=$((i + 1))
  done
  echo "--- cask-knn 2^24 x 2^14: 1 process x 2 GPUs against 2 processes x 1 GPU"
  # compute timed without --out: with it, the ranks write their rows inside the compute
  # (in place) while one process writes after it; the files are compared in a run apart
  for rc in 16384 4096; do
    K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --ref-chunk $rc --repeat 9 --check 512"
    timeout 200 $K > "$OUT/mg_knn_one_$rc.txt" 2>&1
    echo "ref-chunk $rc, 1 process rc=$?"; grep -E "compute|check: [0-9]|rror" "$OUT/mg_knn_one_$rc.txt"
    timeout 200 $K --repeat 1 --out $R.one.npy > /dev/null 2>&1
    for vis in own both; do
      if [ $vis = own ]; then export CASK_GPU_PER_RANK=1; else unset CASK_GPU_PER_RANK; fi
      timeout 200 $L 2 $K > "$OUT/mg_knn_two_${rc}_$vis.txt" 2>&1
      echo "ref-chunk $rc, 2 processes ($vis GPU visible) rc=$?"
      grep -E "compute|check: [0-9]|rror" "$OUT/mg_knn_two_${rc}_$vis.txt"
      timeout 200 $L 2 $K --repeat 1 --out $R.two.npy > /dev/null 2>&1
      cmp $R.one.npy $R.two.npy && echo "outputs identical"
    done
    unset CASK_GPU_PER_RANK
    rm -f $R.one.npy $R.two.npy
  done
  echo "--- bench-xport --gpu-only --nccl: GPU to GPU between the processes"
  # each rank sees both GPUs, so rank 0 also times cudaMemcpyPeer GPU 0 -> GPU 1
  timeout 300 $L 2 "$B/bench/bench-xport" --gpu-only --nccl --no-perftest --json "$OUT/mg_xport_both.jsonl" \
    > "$OUT/mg_xport_both.txt" 2>&1
  echo "both GPUs visible rc=$?"; grep -v '^{' "$OUT/mg_xport_both.txt" | tail -40
  CASK_GPU_PER_RANK=1 timeout 300 $L 2 "$B/bench/bench-xport" --gpu-only --nccl --no-perftest \
    --json "$OUT/mg_xport_own.jsonl" > "$OUT/mg_xport_own.txt" 2>&1
  echo "one GPU per rank rc=$?"; grep -v '^{' "$OUT/mg_xport_own.txt" | tail -40
  echo "--- summary (medians; REPS=${REPS:-3} jacobi rounds)"
  python3 - "$OUT" <<'PY'
import glob, json, re, statistics, sys
out = sys.argv[1]
def secs(pat):
    v = []
    for f in sorted(glob.glob(f"{out}/{pat}")):
        m = re.search(r"time ([0-9.]+) s", open(f).read())
        if m: v.append(float(m.group(1)))
    return statistics.median(v) if v else None
one = secs("mg_jac_one_[1-9]*.txt")
print(f"jacobi 1x2: {one}")
for route in ("ucx", "nccl", "auto"):
    for vis in ("own", "both"):
        t = secs(f"mg_jac_{route}_{vis}_[1-9]*.txt")
        print(f"jacobi 2x1 {route:4s} {vis:4s}: {t}  ratio {t/one:.3f}" if t and one else
              f"jacobi 2x1 {route} {vis}: no figure")
t = secs("mg_jac_ucx_both_shm_[1-9]*.txt")
print(f"jacobi 2x1 ucx  both, CASK_UCX_SHM=1: {t}" + (f"  ratio {t/one:.3f}" if t and one else ""))
def comp(f):
    try:
        m = re.search(r"compute ([0-9.]+) s", open(f).read())
        return float(m.group(1)) if m else None
    except OSError:
        return None
for rc in (16384, 4096):
    a = comp(f"{out}/mg_knn_one_{rc}.txt")
    for vis in ("own", "both"):
        b = comp(f"{out}/mg_knn_two_{rc}_{vis}.txt")
        print(f"knn ref-chunk {rc} 1x2 {a} 2x1 ({vis}) {b}" + (f"  ratio {b/a:.3f}" if a and b else ""))
for f in ("mg_knn_1.log", "mg_knn_2.log"):
    for line in open(f"{out}/{f}"):
        if line.startswith("{") and '"impl":"cask"' in line:
            d = json.loads(line)
            print(f"{f} {d['case']:7s} cask/baseline {d['ratio_to_baseline']:.3f} "
                  f"(speed-up {1/d['ratio_to_baseline']:.3f})")
PY
}

step_hog() {   # where cask's time goes under a competing load on the last GPU
  two_gpus hog || return
  K="$B/bench/bench-knn"
  for i in 1 2; do
    timeout 300 "$K" --case hog --reps 7 --check 0 > "$OUT/hog_$i.log" 2>&1
    echo "hog run $i rc=$?"; grep -v '^{' "$OUT/hog_$i.log" | grep -E "^hog|differ"
  done
  CASK_STATS=1 CASK_LOG=debug CASK_TRACE="$OUT/hog.json" timeout 300 "$K" --case hog --reps 5 \
    --check 0 > "$OUT/hog_diag.log" 2>&1
  echo "hog diag rc=$?: $(grep -c ' leaves ' "$OUT/hog_diag.log") tasks left to a faster GPU"
  grep -v '^{' "$OUT/hog_diag.log" | grep -E "^hog|differ"
  CASK_STATS=1 CASK_TRACE="$OUT/even.json" timeout 300 "$K" --case even --reps 5 --check 0 \
    > "$OUT/even_diag.log" 2>&1
  echo "even diag rc=$? (the same run without the load)"; grep -v '^{' "$OUT/even_diag.log" | grep -E "^even|differ"
  # finer chunks (64 rather than 16): how much of the loss is the split's granularity
  timeout 300 "$K" --case hog --reps 7 --check 0 --chunk 262144 > "$OUT/hog_c64.log" 2>&1
  echo "hog, 64 chunks rc=$?"; grep -v '^{' "$OUT/hog_c64.log" | grep -E "^hog|differ"
}

step_gather() {   # GPU route against host route, alternated; then a transfer timeline
  two_gpus gather || return
  K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --repeat 5 --k 8"
  $K > "$OUT/gather_k1.txt" 2>&1; echo "1 process: $(grep compute "$OUT/gather_k1.txt")"
  for r in a b; do
    CASK_GPU_PER_RANK=1 $L 2 $K > "$OUT/gather_k2$r.txt" 2>&1
    echo "2 processes, GPU route: $(grep compute "$OUT/gather_k2$r.txt")"
    CASK_DIST_GPU_XPORT=host CASK_GPU_PER_RANK=1 $L 2 $K > "$OUT/gather_k2h$r.txt" 2>&1
    echo "2 processes, host route: $(grep compute "$OUT/gather_k2h$r.txt")"
  done
  CASK_GPU_PER_RANK=1 eval $L 2 $TR "$OUT/gather_kx" $K > "$OUT/gather_kx.txt" 2>&1; grep compute "$OUT/gather_kx.txt"
  python3 bench/xfer_timeline.py "$OUT/gather_kx" 2 > "$OUT/gather_kx_timeline.txt" 2>&1
  head -60 "$OUT/gather_kx_timeline.txt"
  gzip -f "$OUT"/gather_kx.*.json
}

case ${STEP:-${1:-}} in
  multigpu)
    export CASK_LAUNCHER=local; step_multigpu ;;
  hog)
    step_hog ;;
  gather)
    step_gather ;;
esac
