#!/bin/sh
# tests/dist/recover_app.sh: a rank of cask-knn or cask-jacobi fails mid-run; the
# survivors finish, and rank 0's output is the bytes of one process.
#
#   recover_app.sh NP APP knn|jacobi kill VICTIM K...    VICTIM is SIGKILLed when its K-th
#                                                        task starts, once per K
#   (knnk: cask-knn --k 4 --method pruned, as knn in every mode; knngpu: cask-knn --k 4
#   on the GPUs, for the device machine, with CASK_RECOVER_UCX_TLS= for its cuda_ipc;
#   knnsim: cask-knn --k 4 on one simulated GPU a rank with the GPU route between the
#   ranks, CPU only, and some transfer of each run must have taken it)
#   recover_app.sh NP APP knn|jacobi freeze VICTIM K MS  VICTIM stops for MS ms at its K-th
#                                                        task (peer timeout 1.5 s): fenced
#                                                        out, it must exit non-zero
#   recover_app.sh NP APP knn|jacobi second V1 K1 V2 K2  V1 dies at its K1-th task, V2 at
#                                                        its K2-th task of the recovery
#   recover_app.sh NP APP KIND killwrite VICTIM W...     VICTIM is SIGKILLed as it writes
#                                                        its rows of --out in place, once
#                                                        per W (CASK_DIST_TEST_KILL_WRITE:
#                                                        wN half way through its N-th
#                                                        write, mN at its N-th part written,
#                                                        commit): the output is still one
#                                                        process's bytes
#   recover_app.sh NP APP KIND writelost VICTIM W ROWS   the same, but the rows VICTIM wrote
#                                                        cannot be made again (jacobi): the
#                                                        survivors fail naming ROWS (among
#                                                        others, if theirs were not written
#                                                        yet), and no output, temporary or
#                                                        not, is left
#   (knncsv: cask-knn with CSV output, its rows placed by a tree of byte counts)
#   RECOVER_APP_LOG=FILE keeps the last passing run's log; with CASK_DIST_TEST_DROP_DONE
#   set, a run in which no DONE was dropped fails (the case did not happen)
#
# Hooks: CASK_DIST_TEST_KILL / CASK_DIST_TEST_FREEZE (dist/dist_testkill.c),
# CASK_DIST_TEST_KILL_WRITE (dist/dist_file.c). Ranks are
# started by run.sh --survivors (mpirun --enable-recovery; exit 77, SKIP, without it);
# each rank records its exit status. Small and on CPU, one worker per rank.
set -u
np=$1 app=$2 kind=$3 mode=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-recover.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export CASK_NCPU=1 CASK_TEST_TIMEOUT=${CASK_TEST_TIMEOUT:-60}
# UCX over TCP (the inter-node path). With UCX's shared-memory FIFOs (CASK_UCX_SHM=1),
# a rank SIGKILLed while it wrote into a survivor's FIFO leaves that survivor deaf
# (transport/ucx_config.c); cask's default leaves them out too. CASK_RECOVER_UCX_TLS=
# keeps cask's choice.
export UCX_TLS=${CASK_RECOVER_UCX_TLS-tcp,self}
[ -n "$UCX_TLS" ] || unset UCX_TLS
usage() {
  echo "usage: recover_app.sh NP APP knn|knncsv|knnk|knngpu|knnsim|jacobi kill|freeze|second|killwrite|writelost ..."
  exit 2
}
case "$kind" in
knn)    args="--generate 20000 500 --seed 7 --cpu-only --threads 1 -q --ref-chunk 128 --chunk 3000"
        ext=npy ;;
knncsv) args="--generate 20000 500 --seed 7 --cpu-only --threads 1 -q --chunk 1000"
        ext=csv ;;
knnk)   # the K-nearest kernels, pruned: korder, ksearch, kmerge, kfinish
        args="--generate 20000 500 --seed 7 --cpu-only --threads 1 -q --ref-chunk 128 --chunk 3000 --k 4 --method pruned"
        ext=npy ;;
knngpu) # on GPUs (the device machine): results gathered by the GPU route
        # (dist_plan_final.c) where the ranks' UCX moves CUDA memory (--write-mode
        # gather: written in place, results cross no rank, and whether any chunk did
        # depended on the moment of the kill)
        args="--generate 400000 4096 --seed 7 -q --chunk 25000 --k 4 --write-mode gather"
        ext=npy ;;
knnsim) # the same on simulated GPUs (host memory, the kernels' CPU code), the GPU route
        # between ranks as on one host with CUDA-aware UCX (dist_gpux.c)
        export CASK_SIM_GPUS=1 CASK_DIST_SIM_GPU_UCX=1 CASK_DIST_XFER_LOG="$tmp/rx"
        args="--generate 40000 1024 --seed 7 -q --chunk 2500 --k 4 --write-mode gather"
        ext=npy ;;
jacobi) args="--n 130 --iters 60 --check 20 --cpu-only"; ext=raw ;;
*) usage ;;
esac
"$app" $args --out "$tmp/one.$ext" > /dev/null || { echo "FAIL: one process"; exit 1; }

# run SURVIVORS LABEL: the job, every rank recording its exit status in $tmp/rc
run() {
  rm -rf "$tmp/rc" "$tmp/many.$ext" "$tmp"/rx.*
  mkdir "$tmp/rc"
  RC_DIR="$tmp/rc" "$here/run.sh" "$np" --survivors "$1" sh -c \
    '"$@"; rc=$?; r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${CASK_RANK:-$$}}}; echo $rc > "$RC_DIR/rc.$r"
     [ $rc = 0 ] && : > "$CASK_TEST_DIR/ok.$r"; exit 0' sh "$app" $args --out "$tmp/many.$ext" \
    > "$tmp/log" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then cat "$tmp/log"; exit 77; fi
  if [ $rc -ne 0 ] || ! cmp -s "$tmp/one.$ext" "$tmp/many.$ext"; then
    grep -v 'PMIX ERROR' "$tmp/log" | tail -n 30
    echo "FAIL: $2: job status $rc, ranks: $(cd "$tmp/rc" && grep . rc.* | tr '\n' ' ')"
    cmp "$tmp/one.$ext" "$tmp/many.$ext"
    exit 1
  fi
  # (the transfer log's sixth field is the route: gpu or host)
  if [ "$kind" = knnsim ] &&
     ! cat "$tmp"/rx.* 2>/dev/null | awk '$6 == "gpu" { n++ } END { exit !n }'; then
    echo "FAIL: $2: no transfer went by the GPU route"; exit 1
  fi
  [ -n "${RECOVER_APP_LOG:-}" ] && cp "$tmp/log" "$RECOVER_APP_LOG"
  # a DONE to drop that never came (the graph's number moved): the case did not happen
  if [ -n "${CASK_DIST_TEST_DROP_DONE:-}" ] && ! grep -q 'drops the DONE' "$tmp/log"; then
    echo "FAIL: $2: CASK_DIST_TEST_DROP_DONE=$CASK_DIST_TEST_DROP_DONE dropped nothing"; exit 1
  fi
  grep -c 'recovered on' "$tmp/log" > "$tmp/nrec"
  echo "ok: $2: $(cat "$tmp/nrec") survivors recovered, output identical" \
       "($(wc -c < "$tmp/one.$ext") bytes)"
}

case "$mode" in
kill|killwrite)
  victim=$1; shift
  for k in "$@"; do
    if [ "$mode" = kill ]; then
      what="at task $k"; export CASK_DIST_TEST_KILL="$victim:$k"
    else
      what="writing ($k)"; export CASK_DIST_TEST_KILL_WRITE="$victim:$k"
    fi
    run $((np - 1)) "rank $victim killed $what"
    [ "$(cat "$tmp/rc/rc.$victim" 2>/dev/null)" = 137 ] ||
      { echo "FAIL: rank $victim was not killed $what (no such point?)"; exit 1; }
    ls "$tmp"/many.$ext.tmp.* > /dev/null 2>&1 && { echo "FAIL: a temporary file was left"; exit 1; }
  done
  unset CASK_DIST_TEST_KILL CASK_DIST_TEST_KILL_WRITE ;;
freeze)
  victim=$1 k=$2 ms=$3
  CASK_PEER_TIMEOUT_MS=1500 CASK_UCX_HEARTBEAT_MS=250 CASK_DIST_TEST_FREEZE="$victim:$k:$ms" \
    run $((np - 1)) "rank $victim frozen ${ms} ms at task $k"
  grep -q "fenced out" "$tmp/log" ||
    { grep -v "PMIX ERROR" "$tmp/log" | tail -n 40; echo "FAIL: rank $victim did not say it was fenced out"; exit 1; }
  echo "ok: rank $victim exited $(cat "$tmp/rc/rc.$victim"): $(grep -o 'rank [0-9]* was fenced out' "$tmp/log" | head -n 1)" ;;
writelost)
  victim=$1 w=$2 rows=$3
  rm -rf "$tmp/rc" "$tmp/many.$ext"
  mkdir "$tmp/rc"
  # every survivor must fail: none reports ok, so run.sh's verdict (how many did) is not
  # the test's; --survivors keeps mpirun from ending the job at the first death
  RC_DIR="$tmp/rc" CASK_DIST_TEST_KILL_WRITE="$victim:$w" "$here/run.sh" "$np" \
    --survivors $((np - 1)) sh -c \
    '"$@"; echo $? > "$RC_DIR/rc.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${CASK_RANK:-$$}}}"; exit 0' \
    sh "$app" $args --out "$tmp/many.$ext" > "$tmp/log" 2>&1
  [ $? -eq 77 ] && { cat "$tmp/log"; exit 77; }
  for r in $(seq 0 $((np - 1))); do
    want=1; [ "$r" = "$victim" ] && want=137
    [ "$(cat "$tmp/rc/rc.$r" 2>/dev/null)" = $want ] ||
      { grep -v 'PMIX ERROR' "$tmp/log" | tail -n 20; echo "FAIL: rank $r ended $(cat "$tmp/rc/rc.$r" 2>/dev/null), not $want"; exit 1; }
  done
  # the victim's rows at least (others' too when the writes stopped before theirs)
  named=$(grep "of --out written by no rank" "$tmp/log")
  for rr in $(echo "$rows" | tr -d ' ' | tr ',' ' '); do
    case "$named" in
      *"rows "*"$rr"*) ;;
      *) grep -v 'PMIX ERROR' "$tmp/log" | tail -n 20; echo "FAIL: no message naming rows $rr"; exit 1 ;;
    esac
  done
  ls "$tmp"/many.$ext* > /dev/null 2>&1 && { ls "$tmp"; echo "FAIL: an output was left"; exit 1; }
  echo "ok: rank $victim killed writing ($w): the survivors failed naming rows $rows, nothing left" ;;
second)
  CASK_DIST_TEST_KILL="$1:$2,$3:r$4" run $((np - 2)) "rank $1 killed at task $2, rank $3 at recovery task $4"
  grep -q 'attempt 2' "$tmp/log" ||
    { echo "FAIL: the second failure did not hit a recovery"; exit 1; } ;;
*) usage ;;
esac
exit 0
