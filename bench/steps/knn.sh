#!/bin/sh
# bench/steps/knn.sh: the 1-NN and K-nearest search on one GPU: kernel, application, methods, streamed, floor
# Run by bench/device_run.sh (its table names the steps), or alone: sh THIS STEP.
. bench/steps/lib.sh

step_knn_methods() {   # brute force against pruned; every pair of outputs compared
  T=${TMPDIR:-/tmp}/knn-methods; mkdir -p "$T"
  for t in test_knn_k_gpu test_knn_gpu test_knn_k; do
    timeout 300 "$B/tests/$t" --verbose > "$T/$t.log" 2>&1
    echo "$t rc=$?"; cat "$T/$t.log" >> "$OUT/knn_methods_tests.log"
    grep -E "Synthesis|FAIL|SKIP|Assert|expected|vs" "$T/$t.log" | head -12
  done
  K="$B/apps/cask-knn" LG="$OUT/knn_methods.log"
  run() {   # NAME ARGS...: one timed run, the summary's key lines
    name=$1; shift
    echo "--- $name: cask-knn $*" >> "$LG"
    timeout 300 "$K" "$@" >> "$LG" 2>&1
    echo "$name rc=$?: $(tail -12 "$LG" | grep -E 'method|time:|check:.*force' | tr '\n' ' ')"
  }
  same() { if cmp -s "$1" "$2"; then echo "cmp $1 $2: identical"; else echo "cmp $1 $2: DIFFER"; fi; }
  U="--generate 2^24 2^14 --seed 7"
  C="--generate 2^24 2^14 --seed 7 --clusters 300"
  echo "--- uniform 2^24 x 2^14, K = 1"
  run brute1 $U --method brute --repeat 5 --out "$T/b1.npy"
  run pruned1 $U --method pruned --repeat 5 --out "$T/p1.npy" --check 2048
  run auto1 $U --method auto --repeat 5 --out "$T/a1.npy"
  same "$T/b1.npy" "$T/p1.npy"; same "$T/b1.npy" "$T/a1.npy"
  echo "--- pruned K = 1, other chunk sizes"
  for c in 2^21 2^22 2^19; do run pruned1_c$c $U --method pruned --repeat 5 --chunk $c; done
  echo "--- uniform, K = 16"
  run brute16 $U --k 16 --method brute --repeat 3 --out "$T/b16.npy"
  run pruned16 $U --k 16 --method pruned --repeat 3 --out "$T/p16.npy" --check 256
  same "$T/b16.npy" "$T/p16.npy"
  echo "--- clustered (300 blobs), K = 1 and 16"
  run cbrute1 $C --method brute --repeat 5 --out "$T/cb1.npy"
  run cpruned1 $C --method pruned --repeat 5 --out "$T/cp1.npy" --check 2048
  run cauto1 $C --method auto --repeat 5
  same "$T/cb1.npy" "$T/cp1.npy"
  run cbrute16 $C --k 16 --method brute --repeat 3
  run cpruned16 $C --k 16 --method pruned --repeat 3 --check 256
  echo "--- K = 64, 2^22 x 2^14"
  run brute64 --generate 2^22 2^14 --seed 7 --k 64 --method brute --repeat 3 --out "$T/b64.npy"
  run pruned64 --generate 2^22 2^14 --seed 7 --k 64 --method pruned --repeat 3 --out "$T/p64.npy"
  same "$T/b64.npy" "$T/p64.npy"
  rm -f "$T"/*.npy
  echo "--- adversarial: all in one spot (auto must not prune)"
  for m in auto brute pruned; do
    run onespot_$m --generate 2^22 2^14 --seed 7 --clusters 1 --method $m --repeat 3
  done
  echo "--- trace of one pruned run (transfers against kernels)"
  CASK_TRACE="$T/trace.json" timeout 120 "$K" $U --method pruned -q > "$OUT/knn_methods_trace.log" 2>&1
  python3 bench/trace_overlap.py "$T/trace.json" 2>&1 | tail -25
}

case ${STEP:-${1:-}} in
  knn)
    timeout 300 "$B/bench/bench-knn" --reps ${KNN_REPS:-7} --check ${KNN_CHECK:-4096} > "$OUT/knn.log" 2>&1
    echo "rc=$?"; grep -v '^{' "$OUT/knn.log" ;;
  knnapp)
    timeout 200 "$B/apps/cask-knn" --generate 16777216 16384 --seed 7 --method brute --repeat 5 --check 2048 > "$OUT/knnapp.log" 2>&1
    echo "rc=$?"; tail -12 "$OUT/knnapp.log" ;;
  knn-methods)
    step_knn_methods ;;
  knn-stream)
    # streamed runs from .npy files made by cask-knn-gen (KNN_DIR, default
    # /tmp/knn-stream: 8 GiB of observations, 16 GiB for the one output kept):
    # 2^30 x 2^16 auto against brute force (compute, peak RSS, sampled check), its
    # first 2^24 rows against the in-memory pruned run; 2^30 x 2^14 --k 16 streamed
    # (check only: its output would be 256 GiB), and --k 16 streamed against in
    # memory on 2^22 rows
    D=${KNN_DIR:-/tmp/knn-stream}; mkdir -p "$D"; G=$B/apps/cask-knn-gen; K=$B/apps/cask-knn
    for f in "1073741824 obs o30" "16777216 obs o24" "4194304 obs o22" "65536 ref r16" \
             "16384 ref r14"; do
      set -- $f; [ -f "$D/$3.npy" ] || $G --rows $1 --seed 11 --set $2 "$D/$3.npy"
    done
    run_knn() {   # name, args...: prints the summary's method/compute/check lines and RSS
      n=$1; shift
      /usr/bin/time -v timeout 300 "$K" "$@" > "$OUT/knns_$n.log" 2>&1
      echo "$n rc=$?"; grep -E "method|compute|check:|windows|Maximum resident" "$OUT/knns_$n.log"
    }
    run_knn auto30 --obs "$D/o30.npy" --ref "$D/r16.npy" --stream --method auto --check 4096 --out "$D/s30.npy"
    run_knn brute30 --obs "$D/o30.npy" --ref "$D/r16.npy" --stream --method brute --check 4096
    run_knn pruned24 --obs "$D/o24.npy" --ref "$D/r16.npy" --no-stream --method pruned --out "$D/m24.npy"
    python3 -c "import numpy as np, sys; a=np.load(sys.argv[1], mmap_mode='r'); b=np.load(sys.argv[2], mmap_mode='r'); n=b.shape[0]; print('first %d rows of the streamed 2^30 output identical to in-memory pruned: %s' % (n, bool((a[:n]==b).all())))" "$D/s30.npy" "$D/m24.npy"
    rm -f "$D/s30.npy"
    run_knn k16_30 --obs "$D/o30.npy" --ref "$D/r14.npy" --stream --k 16 --check 1024
    run_knn k16s22 --obs "$D/o22.npy" --ref "$D/r14.npy" --stream --window 1048576 --k 16 --out "$D/k16s.npy"
    run_knn k16m22 --obs "$D/o22.npy" --ref "$D/r14.npy" --no-stream --k 16 --out "$D/k16m.npy"
    cmp "$D/k16s.npy" "$D/k16m.npy" && echo "k16 2^22 streamed identical to in memory" ;;
  knn-floor)
    # pruned 2^24 x 2^14 host to host against the transfer floor of its bytes
    # (bench-xfer-floor: inputs in, results out, overlapped), same call; and a trace
    timeout 60 "$B/bench/bench-xfer-floor" > "$OUT/xfer_floor.log" 2>&1
    echo "rc=$?"; grep -v '^{' "$OUT/xfer_floor.log"
    timeout 200 "$B/apps/cask-knn" --generate 16777216 16384 --seed 7 --method pruned \
      --repeat 7 > "$OUT/knn_floor.log" 2>&1
    echo "rc=$?"; grep -E "method|compute|repeat|median|pairs/s" "$OUT/knn_floor.log"
    CASK_TRACE="$OUT/pruned_trace.json" timeout 120 "$B/apps/cask-knn" --generate 16777216 \
      16384 --seed 7 --method pruned -q > /dev/null 2>&1
    python3 bench/trace_overlap.py "$OUT/pruned_trace.json" 2>&1 | tail -25 ;;
esac
