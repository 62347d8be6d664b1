#!/bin/sh
# tests/dist/knn_app.sh: cask-knn under mpirun gives the bytes of a single process.
#
#   knn_app.sh NP CASK_KNN same     output files (CSV; .npy with several reference
#                                   chunks) of NP ranks == those of one process
#   knn_app.sh NP CASK_KNN kpruned  the same for the K-nearest kernels: --k 4 (several
#                                   reference chunks, .npy), --method pruned (CSV), and
#                                   auto choosing pruned for --k 5, and ranks whose
#                                   chunks would make auto choose otherwise agreeing
#   knn_app.sh NP CASK_KNN badinput a bad input file: every rank exits non-zero, no hang
#   knn_app.sh NP CASK_KNN stream   --stream across ranks (each its share of a .npy file,
#                                   its rows written in place): one process's bytes; CSV
#                                   output refused on every rank
#   knn_app.sh NP CASK_KNN compact  --out-format compact refused on every rank (it is one
#                                   process's), nothing left
#
# The ranks are started by run.sh (mpirun; exit 77, SKIP, without it). Small and on CPU,
# one worker per rank: a few seconds on 2 cores.
set -u
np=$1 knn=$2 what=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-knn-dist.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
gen="--generate 20000 500 --seed 7 --cpu-only --threads 1 -q"

# same_bytes EXT OPTIONS...: one process and NP ranks, both run with OPTIONS, write the
# same bytes to an .EXT file ($tmp/one.EXT, $tmp/many.EXT)
same_bytes() {
  ext=$1
  shift
  "$knn" "$@" --check 64 --out "$tmp/one.$ext" || { echo "FAIL: one process"; exit 1; }
  "$here/run.sh" "$np" "$knn" "$@" --check 64 --out "$tmp/many.$ext"
  rc=$?
  [ $rc -eq 0 ] || exit $rc
  cmp "$tmp/one.$ext" "$tmp/many.$ext" || { echo "FAIL: $np ranks wrote other bytes ($*)"; exit 1; }
  echo "ok: $np ranks, $ext $*: $(wc -c < "$tmp/one.$ext") identical bytes"
}

case "$what" in
same)
  same_bytes csv $gen
  same_bytes npy $gen --ref-chunk 128 --chunk 3000
  ;;
kpruned)
  same_bytes npy $gen --k 4 --ref-chunk 128 --chunk 3000
  same_bytes csv $gen --method pruned
  # 100000 x 4096 uniform points: auto prunes for K = 5 (about 0.4 of the pairs at 4
  # ranks, whose chunks are smaller)
  g2="--generate 100000 4096 --seed 3 --cpu-only --threads 1"
  same_bytes npy $g2 -q --k 5
  # the method auto chose, as the ranks' summary says it
  "$here/run.sh" "$np" "$knn" $g2 --k 5 > "$tmp/auto.out" 2>&1 || { cat "$tmp/auto.out"; exit 1; }
  grep -q "k = 5, method pruned (auto" "$tmp/auto.out" ||
    { cat "$tmp/auto.out"; echo "FAIL: $np ranks did not prune with --k 5 (auto)"; exit 1; }
  echo "ok: $np ranks chose pruned by auto for --k 5"
  # ranks that would choose differently, for 1 nearest (where pruned and brute force are
  # other graphs): rank 0 with 1 worker cuts large chunks and would prune (about 0.15),
  # the others with 16 cut chunks of 1024 and would not (0.4); they agree on brute force
  g3="--generate 160000 16384 --seed 3 --cpu-only"
  "$knn" $g3 --threads 1 --method brute --out "$tmp/one3.npy" -q || { echo "FAIL: one process"; exit 1; }
  "$here/run.sh" "$np" sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}
    [ "$r" = 0 ] && t=1 || t=16
    exec "$@" --threads $t' sh "$knn" $g3 --check 64 --out "$tmp/mixed.npy" \
    > "$tmp/mixed.out" 2>&1 || { cat "$tmp/mixed.out"; echo "FAIL: mixed ranks"; exit 1; }
  grep -q "k = 1, method brute (auto: .*another rank" "$tmp/mixed.out" ||
    { cat "$tmp/mixed.out"; echo "FAIL: mixed ranks did not agree on brute force"; exit 1; }
  cmp "$tmp/one3.npy" "$tmp/mixed.npy" || { echo "FAIL: mixed ranks wrote other bytes"; exit 1; }
  echo "ok: $np ranks of 1 and 16 workers agreed on brute force, identical bytes"
  ;;
badinput)
  printf 'lat,lon\n1,2\n95,3\n' > "$tmp/bad.csv"
  mkdir "$tmp/rc"
  export KNN_RC_DIR="$tmp/rc"
  # Each rank records its exit status and exits 0, so that mpirun lets every rank end
  # by itself rather than killing the others after the first failure.
  "$here/run.sh" "$np" sh -c '"$@"; echo $? > "$KNN_RC_DIR/rc.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-$$}}"' \
    sh "$knn" --obs "$tmp/bad.csv" --ref "$tmp/bad.csv" --cpu-only --threads 1
  rc=$?
  [ $rc -eq 77 ] && exit 77
  [ $rc -eq 0 ] || { echo "FAIL: the job ended with $rc"; exit 1; }
  n=0
  for f in "$tmp"/rc/rc.*; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    [ "$(cat "$f")" = 0 ] && { echo "FAIL: ${f##*/} exited 0 on a bad input"; exit 1; }
  done
  [ $n -eq "$np" ] || { echo "FAIL: $n of $np ranks reported an exit status"; exit 1; }
  echo "ok: all $np ranks failed cleanly on a bad input"
  ;;
stream)
  # each rank streams its share of a .npy file and writes its rows in place: the bytes of
  # one process (K nearest pruned; 1 nearest by auto), and CSV output refused everywhere
  knngen=$(dirname "$knn")/cask-knn-gen
  "$knngen" --rows 30011 --seed 5 --set obs "$tmp/obs.npy" &&
    "$knngen" --rows 2000 --seed 5 --set ref "$tmp/ref.npy" || { echo "FAIL: cask-knn-gen"; exit 1; }
  io="--obs $tmp/obs.npy --ref $tmp/ref.npy --cpu-only --threads 1 -q"
  for opts in "--k 4 --method pruned" "--method auto"; do
    "$knn" $io $opts --no-stream --out "$tmp/one.npy" || { echo "FAIL: one process"; exit 1; }
    "$here/run.sh" "$np" "$knn" $io $opts --stream --window 4000 --check 64 \
      --out "$tmp/many.npy" || exit $?
    cmp "$tmp/one.npy" "$tmp/many.npy" || { echo "FAIL: $np ranks streamed other bytes ($opts)"; exit 1; }
    echo "ok: $np ranks streamed $opts: $(wc -c < "$tmp/one.npy") identical bytes"
  done
  mkdir "$tmp/rc"
  export KNN_RC_DIR="$tmp/rc"
  "$here/run.sh" "$np" sh -c '"$@" 2>> "$KNN_RC_DIR/err"; echo $? > "$KNN_RC_DIR/rc.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-$$}}"' \
    sh "$knn" $io --stream --out "$tmp/many.csv"
  rc=$?
  [ $rc -eq 77 ] && exit 77
  for f in "$tmp"/rc/rc.*; do
    [ "$(cat "$f")" = 1 ] || { echo "FAIL: ${f##*/} exited $(cat "$f") on CSV output"; exit 1; }
  done
  [ "$(ls "$tmp"/rc/rc.* | wc -l)" -eq "$np" ] || { echo "FAIL: not every rank ended"; exit 1; }
  grep -q "writes .npy output" "$tmp/rc/err" || { cat "$tmp/rc/err"; echo "FAIL: no clear message"; exit 1; }
  [ ! -e "$tmp/many.csv" ] && ! ls "$tmp"/many.csv.tmp.* > /dev/null 2>&1 ||
    { echo "FAIL: a CSV file was left"; exit 1; }
  echo "ok: CSV output streamed across $np ranks refused on every rank, nothing left"
  ;;
compact)
  # --out-format compact is one process's: across ranks every rank refuses it at once
  # (where the output is opened, before the choice of in memory or streamed), rank 0
  # says why, and no file is left
  mkdir "$tmp/rc"
  export KNN_RC_DIR="$tmp/rc"
  "$here/run.sh" "$np" sh -c '"$@" 2>> "$KNN_RC_DIR/err"; echo $? > "$KNN_RC_DIR/rc.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-$$}}"' \
    sh "$knn" $gen --out "$tmp/many.npy" --out-format compact
  rc=$?
  [ $rc -eq 77 ] && exit 77
  for f in "$tmp"/rc/rc.*; do
    [ "$(cat "$f")" = 1 ] || { echo "FAIL: ${f##*/} exited $(cat "$f") on --out-format compact"; exit 1; }
  done
  [ "$(ls "$tmp"/rc/rc.* | wc -l)" -eq "$np" ] || { echo "FAIL: not every rank ended"; exit 1; }
  grep -q "compact is written by one process" "$tmp/rc/err" || { cat "$tmp/rc/err"; echo "FAIL: no clear message"; exit 1; }
  ! ls "$tmp"/many.npy* > /dev/null 2>&1 || { echo "FAIL: a file was left"; exit 1; }
  echo "ok: --out-format compact across $np ranks refused on every rank, nothing left"
  ;;
*) echo "usage: knn_app.sh NP CASK_KNN same|kpruned|badinput|stream|compact"; exit 2 ;;
esac
exit 0
