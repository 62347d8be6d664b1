#!/bin/bash
# tests/dist/fence_replay.sh: a rank fenced out while alive (a chaos case that hung, seed
# 800236 on 3 ranks). Rank 1 gives up on a frozen rank 0 after 1.5 s; ranks 0 and 2
# would wait 60 s (CHAOS_PEER_TIMEOUTS), so rank 2 hears of the loss only from rank 1's
# proposal. Rank 2 must then finish without rank 0 at once (before the fix it waited
# for its sends to rank 0 and the tasks rank 0 had taken: a hang while rank 0 stayed
# frozen), and rank 0, continued after 3 s, must end with "rank 0 was fenced out"
# (never a success, never a wait for ranks that went on without it).
#
#   fence_replay.sh [--program PATH]        exit 0 pass, 1 fail, 77 skip (no launcher)
set -u
here=$(cd "$(dirname "$0")" && pwd)
logs=$(mktemp -d "${TMPDIR:-/tmp}/cask-fence.XXXXXX")
export CHAOS_PEER_TIMEOUTS=60000,1500,60000
rc=0
for cont in never 3000; do
  "$here/chaos.sh" --replay 800236 --np 3 --fault in:stop:0:0:1:3:$cont --limit 30 \
    --logs "$logs/$cont" "$@" > "$logs/$cont.out" 2>&1
  r=$?
  [ $r = 77 ] && { cat "$logs/$cont.out"; rm -rf "$logs"; exit 77; }
  tail -n 1 "$logs/$cont.out"
  if [ $r != 0 ]; then
    echo "fence_replay: rank 0 frozen ($cont): FAILED"; cat "$logs/$cont.out"; rc=1; continue
  fi
  for r in 1 2; do
    grep -q '^ok ' "$logs/$cont/replay/out.$r" 2>/dev/null ||
      { echo "fence_replay: rank $r did not finish with the replay's results ($cont)"; rc=1; }
  done
  if [ $cont != never ] && ! grep -q 'rank 0 was fenced out' "$logs/$cont/replay/out.0" 2>/dev/null; then
    echo "fence_replay: rank 0 (continued after $cont ms) did not end fenced out:"
    cat "$logs/$cont/replay/out.0" 2>/dev/null; rc=1
  fi
done
[ $rc = 0 ] && rm -rf "$logs" || echo "fence_replay: logs in $logs"
exit $rc
