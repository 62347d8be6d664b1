#!/bin/sh
# tests/dist/write_array.sh: cask_array_to_npy across the ranks (tests/dist/test_dist_write.c).
#
#   write_array.sh NP PROG same   --write-mode auto, inplace and gather: one process's
#                                 bytes, nothing left beside them
#   write_array.sh NP PROG kill   in place, a rank killed as it writes its slabs
#                                 (CASK_DIST_TEST_KILL_WRITE: half way through its first
#                                 write; at its second; at its first slab written, before
#                                 it is reported; rank 0, which made the file, too): the
#                                 survivors compute and write its slabs, one process's bytes
#
# Ranks are started by run.sh (mpirun; exit 77, SKIP, without it).
set -u
np=$1 prog=$2 what=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-write-array.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
case "$what" in
same)
  for mode in auto inplace gather; do
    mkdir "$tmp/$mode"
    "$here/run.sh" "$np" "$prog" array $mode "$tmp/$mode" || exit $?
    echo "ok: $np ranks, --write-mode $mode: every array one process's bytes"
  done ;;
kill)
  # UCX over TCP, as the other recovery tests (recover_app.sh says why)
  export UCX_TLS=${CASK_RECOVER_UCX_TLS-tcp,self} CASK_TEST_TIMEOUT=${CASK_TEST_TIMEOUT:-90}
  [ -n "$UCX_TLS" ] || unset UCX_TLS
  for k in 1:w1 1:w2 2:m1 0:w1; do
    d="$tmp/kill.${k%%:*}.${k#*:}"
    mkdir "$d"
    CASK_DIST_TEST_KILL_WRITE=$k "$here/run.sh" "$np" --survivors $((np - 1)) "$prog" \
      arraykill "$d" || { echo "FAIL: rank ${k%%:*} killed writing (${k#*:})"; exit 1; }
    echo "ok: rank ${k%%:*} killed writing (${k#*:}): the survivors wrote its slabs, one process's bytes"
  done ;;
*) echo "usage: write_array.sh NP PROG same|kill"; exit 2 ;;
esac
exit 0
