#!/bin/sh
# tests/dist/write_app.sh: where the output of NP ranks is written (--write-mode, the
# in-place writing of cask_dist_file): the same bytes whoever writes them.
#
#   write_app.sh NP APP knn|jacobi same       one process == NP ranks in place == NP
#                                             ranks gathered to rank 0 == auto (in place
#                                             here); knn: .npy and CSV, 1 and 4
#                                             nearest; the summary says how it was written
#   write_app.sh NP APP knn|jacobi notshared  rank 1 in a mount namespace of its own with
#                                             an empty tmpfs over the output's folder (as
#                                             a node-local folder): auto falls back to the
#                                             gather, says so once, same bytes; inplace
#                                             fails on every rank naming rank 1, and
#                                             leaves no file (SKIP without unshare -m)
#
# The ranks are started by run.sh (mpirun; exit 77, SKIP, without it). Small and on CPU,
# one worker per rank.
set -u
np=$1 app=$2 kind=$3 what=$4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-write.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export CASK_NCPU=1
case "$kind" in
knn) cases="npy|--generate 20000 500 --seed 7 --cpu-only --threads 1 --ref-chunk 128 --chunk 3000
csv|--generate 20000 500 --seed 7 --cpu-only --threads 1 --chunk 1000
npy|--generate 20000 500 --seed 7 --cpu-only --threads 1 --k 4 --method pruned
csv|--generate 20000 500 --seed 7 --cpu-only --threads 1 --k 4 --chunk 700" ;;
jacobi) cases="raw|--n 130 --iters 60 --check 20 --cpu-only" ;;
*) echo "usage: write_app.sh NP APP knn|jacobi same|notshared"; exit 2 ;;
esac

# job LOG ARGS...: NP ranks of APP ARGS, every rank's exit status in $tmp/rc
job() {
  log=$1
  shift
  rm -rf "$tmp/rc"
  mkdir "$tmp/rc"
  RC_DIR="$tmp/rc" "$here/run.sh" "$np" sh -c \
    '"$@"; echo $? > "$RC_DIR/rc.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${CASK_RANK:-$$}}}"' \
    sh "$@" > "$log" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then cat "$log"; exit 77; fi
  return $rc
}

# every rank ended with status $1
all_rc() {
  [ "$(ls "$tmp"/rc/rc.* 2> /dev/null | wc -l)" -eq "$np" ] || return 1
  for f in "$tmp"/rc/rc.*; do [ "$(cat "$f")" = "$1" ] || return 1; done
}

case "$what" in
same)
  echo "$cases" | while IFS='|' read -r ext opts; do
    "$app" $opts --out "$tmp/one.$ext" > /dev/null 2>&1 || { echo "FAIL: one process ($opts)"; exit 1; }
    for mode in inplace gather auto; do
      rm -f "$tmp/many.$ext"
      job "$tmp/log" "$app" $opts --write-mode $mode --out "$tmp/many.$ext"
      if ! all_rc 0 || ! cmp -s "$tmp/one.$ext" "$tmp/many.$ext"; then
        grep -v 'PMIX ERROR' "$tmp/log" | tail -n 20
        echo "FAIL: $np ranks, --write-mode $mode, $ext $opts: other bytes or a rank failed"
        exit 1
      fi
      if [ "$kind" = knn ]; then   # the summary says who wrote the rows
        case $mode in
          gather) want="gathered to rank 0" ;;
          *) want="each rank wrote its rows" ;;
        esac
        grep -q "$want" "$tmp/log" || { cat "$tmp/log"; echo "FAIL: no '$want' ($mode)"; exit 1; }
      fi
      ls "$tmp"/many.$ext.tmp.* > /dev/null 2>&1 && { echo "FAIL: a temporary file was left"; exit 1; }
      echo "ok: $np ranks, --write-mode $mode, $ext $opts: $(wc -c < "$tmp/one.$ext") identical bytes"
    done
  done || exit 1
  ;;
notshared)
  mkdir "$tmp/out"
  unshare -m sh -c "mount -t tmpfs tmpfs '$tmp/out'" 2> /dev/null ||
    { echo "no mount namespace (unshare -m, as root): skipped"; exit 77; }
  ext=${cases%%|*}
  opts=$(echo "$cases" | head -n 1 | cut -d'|' -f2)
  "$app" $opts --out "$tmp/one.$ext" > /dev/null 2>&1 || { echo "FAIL: one process"; exit 1; }
  # rank 1 sees an empty folder where the others see $tmp/out
  export OUTDIR="$tmp/out"
  split='r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${CASK_RANK:-0}}}
    if [ "$r" = 1 ]; then exec unshare -m sh -c "mount -t tmpfs tmpfs \"\$OUTDIR\" && exec \"\$@\"" sh "$@"; fi
    exec "$@"'
  job "$tmp/log" sh -c "$split" sh "$app" $opts --write-mode auto --out "$tmp/out/many.$ext"
  if ! all_rc 0 || ! cmp -s "$tmp/one.$ext" "$tmp/out/many.$ext"; then
    grep -v 'PMIX ERROR' "$tmp/log" | tail -n 20
    echo "FAIL: auto with rank 1 apart: other bytes or a rank failed"; exit 1
  fi
  n=$(grep -c "written by rank 0, the .* gathered to it: rank 1 cannot open" "$tmp/log")
  [ "$n" = 1 ] || { cat "$tmp/log"; echo "FAIL: the fallback was said $n times, not once"; exit 1; }
  echo "ok: auto with rank 1 apart: gathered to rank 0, said once, identical bytes"
  rm -f "$tmp/out/many.$ext"
  job "$tmp/log" sh -c "$split" sh "$app" $opts --write-mode inplace --out "$tmp/out/many.$ext"
  all_rc 1 || { cat "$tmp/log"; echo "FAIL: inplace with rank 1 apart: not every rank exited 1"; exit 1; }
  grep -q "rank 1 cannot open .*many.$ext.tmp.*every rank sees" "$tmp/log" ||
    { cat "$tmp/log"; echo "FAIL: no message naming rank 1"; exit 1; }
  [ -z "$(ls "$tmp/out")" ] || { ls "$tmp/out"; echo "FAIL: a file was left"; exit 1; }
  echo "ok: inplace with rank 1 apart: every rank failed naming it, nothing left"
  ;;
*) echo "usage: write_app.sh NP APP knn|jacobi same|notshared"; exit 2 ;;
esac
exit 0
