#!/bin/sh
# bench/steps/xport.sh: host data between processes of one host: CMA against TCP, cask's segments and rings
# Run by bench/device_run.sh (its table names the steps), or alone: sh THIS STEP.
. bench/steps/lib.sh

step_cma() {   # CASK_UCX_CMA=1 (the default) against 0, every figure both ways
  two_gpus cma || return
  echo "--- bench-xport, host memory"
  for c in 1 0; do
    CASK_UCX_CMA=$c UCX_PROTO_INFO=y timeout 200 $L 2 "$B/bench/bench-xport" --no-perftest \
      > "$OUT/cma_xport_host_$c.txt" 2>&1
    echo "CASK_UCX_CMA=$c rc=$? rendezvous: $(grep -o 'rendezvous [a-z -]* | [a-z_/]*' \
      "$OUT/cma_xport_host_$c.txt" | sort | uniq -c | sort -rn | head -2 | tr -s ' ' | tr '\n' ';')"
    grep -v '^{' "$OUT/cma_xport_host_$c.txt" | grep -E -A7 "^UCX (latency|bandwidth)" | grep -v "^--"
  done
  echo "--- bench-xport --gpu-only (one GPU per rank, both visible)"
  for c in 1 0; do
    CASK_UCX_CMA=$c timeout 300 $L 2 "$B/bench/bench-xport" --gpu-only --no-perftest \
      > "$OUT/cma_xport_gpu_$c.txt" 2>&1
    echo "CASK_UCX_CMA=$c rc=$?"; grep -v '^{' "$OUT/cma_xport_gpu_$c.txt" | tail -16
  done
  echo "--- cask-knn 2^24 x 2^14"
  T=${TMPDIR:-/tmp}
  for opt in "--k 8" "--method auto"; do
    K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --repeat 7 --check 512 $opt"
    timeout 200 $K --out $T/cma_one.npy > "$OUT/cma_knn_one.txt" 2>&1
    echo "$opt, 1 process x 2 GPUs rc=$?: $(grep -E 'compute' "$OUT/cma_knn_one.txt")"
    for c in 1 0; do
      CASK_UCX_CMA=$c CASK_GPU_PER_RANK=1 timeout 200 $L 2 $K --out $T/cma_two.npy > "$OUT/cma_knn_two_$c.txt" 2>&1
      echo "$opt, 2 processes, CASK_UCX_CMA=$c rc=$?: $(grep -E 'compute|check: [0-9]' "$OUT/cma_knn_two_$c.txt" | tr '\n' ' ')"
      cmp $T/cma_one.npy $T/cma_two.npy && echo "  outputs identical"
    done
    rm -f $T/cma_one.npy $T/cma_two.npy
  done
  echo "--- cask-jacobi --n 16384 --iters 400, 2 processes, UCX halos"
  J="$B/apps/cask-jacobi --n 16384 --iters 400 --check 100"
  for r in 1 2; do
    for c in 1 0; do
      CASK_UCX_CMA=$c CASK_DIST_GPU_XPORT=ucx timeout 180 $L 2 $J > "$OUT/cma_jac_${c}_$r.txt" 2>&1
      echo "round $r CASK_UCX_CMA=$c rc=$?: $(grep -h '^sweeps' "$OUT/cma_jac_${c}_$r.txt" | head -1)"
    done
  done
}

step_seg() {   # segments against CMA and TCP, host memory, ucx_perftest in every run
  W=$(python3 -c 'import libucx, os; print(os.path.dirname(libucx.__file__))' 2>/dev/null)
  P=$(mktemp -d)   # ucx_perftest as bench-xport calls it: the wheel's, with its libraries
  [ -n "$W" ] && printf '#!/bin/sh\nexec env LD_LIBRARY_PATH=%s/lib %s/bin/ucx_perftest "$@"\n' \
    "$W" "$W" > "$P/ucx_perftest" && chmod +x "$P/ucx_perftest"
  # what a message costs first (short): CPU time of both processes a message, rings
  # against blocks
  for c in ring blocks; do
    case $c in ring) e="CASK_UCX_SEG=256" ;; blocks) e="CASK_UCX_SEG=256 CASK_UCX_RING=0" ;; esac
    env $e timeout 300 $L 2 "$B/bench/bench-xport" --cpu > "$OUT/seg_xport_cpu_$c.txt" 2>&1
    echo "$c ($e) rc=$?"; grep -v '^{' "$OUT/seg_xport_cpu_$c.txt" | grep -A5 "^UCX host stream"
  done
  # SEG_ROUNDS rounds (3) of bench-xport beside ucx_perftest; TCP, the slowest and known,
  # in the first only (three rounds of everything passed a 600 s call)
  for r in $(seq 1 "${SEG_ROUNDS:-3}"); do
    cs="ring blocks cma"; [ "$r" = 1 ] && cs="$cs tcp"
    for c in $cs; do
      case $c in
        ring) e="CASK_UCX_SEG=256" ;; blocks) e="CASK_UCX_SEG=256 CASK_UCX_RING=0" ;;
        cma) e="CASK_UCX_SEG=0" ;; tcp) e="CASK_UCX_SEG=0 CASK_UCX_CMA=0" ;;
      esac
      PATH="$P:$PATH" env $e timeout 400 $L 2 "$B/bench/bench-xport" > "$OUT/seg_xport_${c}_$r.txt" 2>&1
      echo "round $r $c ($e) rc=$?"
      grep -v '^{' "$OUT/seg_xport_${c}_$r.txt" | grep -E -A9 "^UCX bandwidth" | grep -v "^--"
    done
  done
  # bandwidth against ucx_perftest of the same run, per round (s0: progress thread
  # sleeping between messages, s50: spinning 50 us after activity)
  python3 - "$OUT" <<'PY'
import glob, json, os, re, sys
for c in ("ring", "blocks", "cma", "tcp"):
    rows = {}
    for f in sorted(glob.glob(os.path.join(sys.argv[1], "seg_xport_%s_*.txt" % c))):
        v = {}
        for line in open(f):
            if line.startswith("{"):
                j = json.loads(line)
                if j["metric"] == "bw_mibs":
                    v[(j["path"], j["spin_us"], j["bytes"])] = j["value"]
        for b in sorted({k[2] for k in v}):
            pt = v.get(("ucx_perftest", -1, b), -1)
            if pt > 0:
                rows.setdefault(b, []).append("%.2f/%.2f" % (v.get(("cask", 0, b), 0) / pt,
                                                              v.get(("cask", 50, b), 0) / pt))
    for b, r in sorted(rows.items()):
        print("%s %9d bytes: cask s0/s50 over ucx_perftest, per round: %s" % (c, b, "  ".join(r)))
PY
  T=${TMPDIR:-/tmp}
  K="$B/apps/cask-knn --generate 2^22 2^12 --seed 1 --cpu-only"
  for r in 1 2 3; do
    t1=$(date +%s.%N); $K --threads 16 --out $T/seg_one.npy > "$OUT/seg_knn_one_$r.txt" 2>&1
    echo "round $r 1 x 16: end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s; $(grep -E 'compute' "$OUT/seg_knn_one_$r.txt")"
    for c in 256 0; do
      t1=$(date +%s.%N)
      CASK_UCX_SEG=$c $L 2 $K --threads 8 --out $T/seg_two.npy > "$OUT/seg_knn_two_${c}_$r.txt" 2>&1
      echo "round $r 2 x 8 CASK_UCX_SEG=$c: end to end $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s; $(grep -E 'compute' "$OUT/seg_knn_two_${c}_$r.txt")"
      cmp -s $T/seg_one.npy $T/seg_two.npy && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
    done
  done
  rm -rf "$P" $T/seg_one.npy $T/seg_two.npy
}

case ${STEP:-${1:-}} in
  cma)
    export CASK_LAUNCHER=local; step_cma ;;
  seg)
    export CASK_LAUNCHER=local; step_seg ;;
esac
