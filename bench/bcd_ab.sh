#!/bin/sh
# bench/bcd_ab.sh: build + destroy of two builds of bench-sched, alternated on one pinned
# core (the GPU machine's rounds spread by 20-30%: only alternation and medians of many
# rounds separate a change from the noise). One JSON line per measurement, tagged with
# the binary and the round, into OUT/bcd_pinned.jsonl; bench/bcd_ab.py tabulates them.
# Each repetition's build + destroy and the clock after it (BENCH_REP_LOG) go to
# OUT/bcd_reps.txt; bench/bcd_reps.py tabulates those. Each round starts with the host's
# load latency and line-write cost (bench-mem-probe) in OUT/mem_probe.jsonl.
#   [BCD_CASES="random fanout"] [BCD_MORE="BUILD..."] sh bench/bcd_ab.sh BASE_BUILD NEW_BUILD [ROUNDS] [CORE]
# BCD_MORE: more builds alternated with the two (variants of one change); bcd_ab.py
# compares the base with one of them at a time (keep the base's lines and that build's).
# e.g. on the GPU machine, with the code before the change in .bcdbase (carried):
#   meson setup .bcdbase/build-bcd .bcdbase -Dcuda=disabled && ninja -C .bcdbase/build-bcd bench/bench-sched
#   meson setup build-bcd -Dcuda=disabled && ninja -C build-bcd bench/bench-sched bench/bench-mem-probe
#   sh bench/bcd_ab.sh .bcdbase/build-bcd build-bcd 9 5 && python3 bench/bcd_ab.py $OUT/bcd_pinned.jsonl
set -u
base=$1 new=$2 rounds=${3:-9} core=${4:-5}
[ "$new" = "$base" ] && new=   # one build alone: its rounds, no pairs
OUT=${OUT:-device-logs}
mkdir -p "$OUT"
r=1
probe="${new:-$base}/bench/bench-mem-probe"
while [ "$r" -le "$rounds" ]; do
  # the host's memory at the start of the round (when the new build has the probe)
  [ -x "$probe" ] && taskset -c "$core" "$probe" 1 | grep '^{' |
    sed "s|^{|{\"round\":$r,|" >> "$OUT/mem_probe.jsonl"
  for c in ${BCD_CASES:-independent fanout chains random}; do
    for b in "$base" ${new:+"$new"} ${BCD_MORE:-}; do
      BENCH_REP_LOG=1 taskset -c "$core" "$b/bench/bench-sched" --mode bcd --workers 1 \
        --tasks 1000000 --reps 5 --cases "$c" --json-only 2>"$OUT/bcd_rep.tmp" |
        sed "s|^{|{\"bin\":\"$b\",\"round\":$r,|" >> "$OUT/bcd_pinned.jsonl"
      grep '^rep ' "$OUT/bcd_rep.tmp" | sed "s|^rep |$b $r |" >> "$OUT/bcd_reps.txt"
    done
  done
  r=$((r + 1))
done
rm -f "$OUT/bcd_rep.tmp"
