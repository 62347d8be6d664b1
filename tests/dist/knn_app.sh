#!/bin/sh
# tests/dist/knn_app.sh: cask-knn under mpirun gives the bytes of a single process.
#
#   knn_app.sh NP CASK_KNN same     output files (CSV; .npy with several reference
#                                   chunks) of NP ranks == those of one process
#   knn_app.sh NP CASK_KNN badinput a bad input file: every rank exits non-zero, no hang
#
# The ranks are started by run.sh (mpirun; exit 77, SKIP, without it). Small and on CPU,
# one worker per rank: a few seconds on 2 cores.
set -u
np=$1 knn=$2 what=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-knn-dist.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
gen="--generate 20000 500 --seed 7 --cpu-only --threads 1 -q"

case "$what" in
same)
  for v in "csv" "npy --ref-chunk 128 --chunk 3000"; do
    ext=${v%% *}
    opts=${v#"$ext"}
    "$knn" $gen $opts --check 64 --out "$tmp/one.$ext" || { echo "FAIL: one process"; exit 1; }
    "$here/run.sh" "$np" "$knn" $gen $opts --check 64 --out "$tmp/many.$ext"
    rc=$?
    [ $rc -eq 0 ] || exit $rc
    cmp "$tmp/one.$ext" "$tmp/many.$ext" || { echo "FAIL: $np ranks wrote other bytes ($v)"; exit 1; }
    echo "ok: $np ranks, $v: $(wc -c < "$tmp/one.$ext") identical bytes"
  done
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
*) echo "usage: knn_app.sh NP CASK_KNN same|badinput"; exit 2 ;;
esac
exit 0
