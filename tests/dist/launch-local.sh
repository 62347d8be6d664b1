#!/bin/sh
# tests/dist/launch-local.sh: starts NP ranks of a cask program on this host without a
# PMIx launcher, through the file bootstrap (CASK_BOOT_DIR, CASK_RANK, CASK_SIZE).
#
#   launch-local.sh NP PROGRAM [ARGS...]
#
# CASK_GPU_PER_RANK=1 gives rank r the GPU r alone (CUDA_VISIBLE_DEVICES=r).
# Exit status: 0 if every rank exited 0, 77 (meson: SKIP) if every rank did, else 1.
# A rank killed on purpose (a failure
# test) counts as a failure here; run.sh --survivors judges those by their ok files.
set -u
np=$1; shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/cask-boot.XXXXXX") || exit 1
pids=""
r=0
while [ "$r" -lt "$np" ]; do
  if [ "${CASK_GPU_PER_RANK:-0}" = 1 ]; then export CUDA_VISIBLE_DEVICES=$r; fi
  CASK_BOOT_DIR="$dir" CASK_RANK=$r CASK_SIZE=$np CASK_LOCAL_RANK=$r CASK_LOCAL_SIZE=$np \
    "$@" &
  pids="$pids $!"
  r=$((r + 1))
done
rc=0 skips=0
for p in $pids; do
  wait "$p"
  case $? in
    0) ;;
    77) skips=$((skips + 1)) ;;
    *) rc=1 ;;
  esac
done
rm -rf "$dir"
if [ "$rc" = 0 ] && [ "$skips" -gt 0 ]; then
  [ "$skips" = "$np" ] && exit 77
  rc=1   # some ranks skipped, others ran: not a skip
fi
exit $rc
