#!/bin/bash
# tests/dist/stall_replay.sh: a survivor whose heartbeats are late right after a loss
# (the mutual fencing a loaded chaos soak found: seeds 609199405 and 609199358 on
# 3 ranks). Rank 2 is killed at its first task; rank 1, on first news of the loss,
# stops its progress thread (CASK_DIST_TEST_STALL: nothing read or sent, no heartbeat)
# before it answers rank 0, so that rank 0, agreeing, finds rank 1 silent for the peer
# timeout (2 s here) with no majority left.
#   stall 3 s (less than twice the timeout): rank 1 is heard again while rank 0 waits
#     for it; both must agree on a view without rank 2 and finish with the replay's
#     results. Before the fix, rank 0 fenced itself at once and rank 1 then found itself
#     alone: both ended "fenced out" (UNEXPLAINED).
#   stall 6 s (more than twice the timeout): rank 1 is lost for good; no majority is
#     left, so neither may succeed: both must end with an error (fenced out).
#
#   stall_replay.sh [--program PATH]        exit 0 pass, 1 fail, 77 skip (no launcher)
set -u
here=$(cd "$(dirname "$0")" && pwd)
logs=$(mktemp -d "${TMPDIR:-/tmp}/cask-stall.XXXXXX")
export CHAOS_PEER_TIMEOUT_MS=2000
rc=0
for ms in 3000 6000; do
  CASK_DIST_TEST_STALL=1:$ms "$here/chaos.sh" --replay 609199358 --np 3 \
    --fault in:kill:2:0:0:1 --limit 40 --logs "$logs/$ms" "$@" > "$logs/$ms.out" 2>&1
  r=$?
  [ $r = 77 ] && { cat "$logs/$ms.out"; rm -rf "$logs"; exit 77; }
  tail -n 1 "$logs/$ms.out"
  grep -q 'cask test hook: rank 1 stalls' "$logs/$ms.out" ||
    { echo "stall_replay: the hook did not fire ($ms ms)"; rc=1; continue; }
  if [ $r != 0 ]; then
    echo "stall_replay: rank 1 stalled $ms ms: FAILED"; cat "$logs/$ms.out"; rc=1; continue
  fi
  for q in 0 1; do
    out=$(cat "$logs/$ms/replay/out.$q" 2>/dev/null)
    if [ $ms = 3000 ]; then
      case "$out" in ok*) ;; *) echo "stall_replay: rank $q did not finish with the replay's results after rank 1 stalled $ms ms: $out"; rc=1 ;; esac
    else
      case "$out" in error*) ;; *) echo "stall_replay: rank $q did not fail without a majority (rank 1 stalled $ms ms): $out"; rc=1 ;; esac
    fi
  done
done
[ $rc = 0 ] && rm -rf "$logs" || echo "stall_replay: logs in $logs"
exit $rc
