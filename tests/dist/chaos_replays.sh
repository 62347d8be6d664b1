#!/bin/bash
# tests/dist/chaos_replays.sh: cases the chaos soak found, each replayed N times (the
# faults hit at a random moment: a race shows in some replays only). Fails at the first
# bad verdict (HANG, WRONG, CRASH, UNEXPLAINED), its log printed.
#
#   chaos_replays.sh [-n N] [--program PATH]        exit 0 pass, 1 fail, 77 skip
#
# 603143019 np 4 out:KILL:2:19: a rank whose run completed just before the loss, while
# the others recovered it (no answer to their STATE, then its BARRIER of the older view
# dropped): hung about 1 replay in 10 (docs/design/distributed-history.md).
# 606916636 np 3 out:KILL:1:41: rank 1 killed while graph 1 was planned; rank 0 planned
# it for the view without rank 1 (its data adopted), rank 2 for the old view: both said
# "rank N built another graph" (UNEXPLAINED) about 1 replay in 3; now CASK_ERR_PEER
# naming the lost rank. Later (about 1 replay in 200, under load): the survivors agreed
# the view twice (at the plan, then in the recovery), one answered the other's newer
# round from its handler and recovered on in the older epoch, found no source for a lost
# chunk and left; the other waited 60 s for its STATE (HANG, or CRASH when the launcher
# ended it). Now the recovery's waits join a newer view first, and stop when a survivor
# gives up (its ABORT) or leaves the job (tests/dist/test_dist_recover.c giveup). And (1
# in 440): rank 2 dropped rank 0's PLAN, made before rank 0 heard of the loss, as stale;
# UNEXPLAINED ("rank 0 left the job"). A PLAN of an older view now counts (planlate).
# 618022620 np 4 in:kill:0:0:1:19: rank 0 killed in graph 0 compute 1; its datum 8, which
# graph 0 gathers to rank 1 but never writes, was adopted by rank 1 into a fresh (zeroed)
# handle, and compute 2 gathered that: WRONG (word 0 = 0) about 7 replays in 8. Now
# CASK_ERR_PEER naming the chunk (a gather of a lost datum the graph does not write reads
# the lost content, like a task's first read).
# 737253524 np 3 in:kill:1:1:1:18, balancing while running on (CASK_DIST_BALANCE=1, as
# in a soak with balancing on): every datum owned by rank 1, so the others take its tasks; a thief
# ran a task that writes an input it had kept from an earlier task (read-write) in the
# kept copy itself, and a later task given that kept version read the written one: WRONG
# in graph 0, before the fault, 4 replays in 4. Now such an input is copied first.
# 737253168 np 2 out:KILL:0:102, balancing on (the same soak): rank 0 killed before graph
# 1 was planned; rank 1, alone, fenced itself in the plan's agreement, and the plan
# failed with an empty message (UNEXPLAINED, 2 replays in 3). Now the fenced message.
# 843764083 np 3 in:kill:1:0:0:32 on simulated GPUs with the GPU route (CHAOS_SIM_GPUS=2,
# the soak's --gpus): rank 1 killed in graph 0 compute 0; re-planning for the
# recovery freed the slots' landing buffers before the plan's handles, and a handle
# registered over one, whose chunk had come into its GPU replica, wrote it back into
# the freed buffer when destroyed: heap corruption (glibc "malloc_consolidate():
# unaligned fastbin chunk detected", CRASH; ASan: heap-use-after-free in device_copy
# from cask_data_destroy in dist_plan_free, drop_plan), 5 replays in 5. Now the slots go
# after the handles (dist_recover.c, drop_plan).
set -u
here=$(cd "$(dirname "$0")" && pwd)
n=15
[ "${1:-}" = -n ] && { n=$2; shift 2; }
logs=$(mktemp -d "${TMPDIR:-/tmp}/cask-replays.XXXXXX")
# seed, ranks, fault, and the environment of the case (- for none)
cases=("603143019 4 out:KILL:2:19 -" "606916636 3 out:KILL:1:41 -" "618022620 4 in:kill:0:0:1:19 -"
       "737253524 3 in:kill:1:1:1:18 CASK_DIST_BALANCE=1" "737253168 2 out:KILL:0:102 CASK_DIST_BALANCE=1"
       "843764083 3 in:kill:1:0:0:32 CHAOS_SIM_GPUS=2")
for c in "${cases[@]}"; do
  read -r seed np fault cenv <<< "$c"
  [ "$cenv" = - ] && cenv=X_CASK_REPLAY=1
  for i in $(seq 1 "$n"); do
    env "$cenv" "$here/chaos.sh" --replay "$seed" --np "$np" --fault "$fault" --limit 40 \
      --logs "$logs/$seed.$i" "$@" > "$logs/$seed.$i.out" 2>&1
    r=$?
    [ $r = 77 ] && { tail -n 1 "$logs/$seed.$i.out"; rm -rf "$logs"; exit 77; }
    if [ $r != 0 ]; then
      cat "$logs/$seed.$i.out"
      echo "chaos_replays: seed $seed np $np $fault failed at replay $i of $n (logs in $logs)"
      exit 1
    fi
  done
  echo "chaos_replays: seed $seed np $np $fault ($cenv): $n replays ok or clean"
done
rm -rf "$logs"
