#!/bin/sh
# bench/dist_balance.sh: a rank slowed on purpose, with and without balancing while
# running (docs/design/distributed-internals.md, "Balance while running"). One script,
# one machine: for each repetition it runs, in turn, the four cases
#
#   off        CASK_DIST_BALANCE=0                                (the static plan only)
#   on         CASK_DIST_BALANCE=1
#   off+slow   CASK_DIST_BALANCE=0 CASK_DIST_SLOW_RANK=R:F
#   on+slow    CASK_DIST_BALANCE=1 CASK_DIST_SLOW_RANK=R:F
#
# (CASK_DIST_SLOW_RANK makes rank R's task bodies take F times as long: it sleeps F-1
# times each body's measured time after it) and prints the median compute time of each
# (the program's own "compute" time, itself a median of --repeat) and the ratios
# slow / unslowed with balancing off and on.
#
#   sh bench/dist_balance.sh [-n NP] [-r REPS] [-s R:F] [--pattern RE] -- PROGRAM ARGS...
#
# PROGRAM runs under tests/dist/run.sh NP (mpirun); its time is the first number of
# the first match of RE in its output (default 'compute [0-9.]* s': cask-knn).
set -u
np=4 reps=5 slow=1:4 pat='compute [0-9.]* s'
while [ $# -gt 0 ]; do
  case "$1" in
    -n) np=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -s) slow=$2; shift 2 ;;
    --pattern) pat=$2; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
run="$here/../tests/dist/run.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-balance.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

one() {   # case-name "VAR=value ..." PROGRAM ARGS... -> appends the time to $tmp/<case>
  name=$1 envs=$2; shift 2
  for try in 1 2 3; do   # a run killed from outside (a shared machine) is run again
    out=$(env $envs CASK_TEST_TIMEOUT=600 "$run" "$np" "$@" 2>&1)
    rc=$?
    t=$(printf '%s\n' "$out" | grep -o "$pat" | head -n 1 | grep -o '[0-9][0-9.]*' | head -n 1)
    [ $rc -eq 0 ] && [ -n "$t" ] && break
    printf '%s\n' "$out" | tail -n 5 >&2
    echo "case $name failed (exit $rc, try $try)" >&2
    [ $try -eq 3 ] && { echo "FAIL: case $name" >&2; exit 1; }
  done
  echo "$t" >> "$tmp/$name"
  printf ' %s %s' "$name" "$t"
}

echo "# $(uname -n), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg); $np ranks, slow rank:factor $slow, $reps reps"
echo "# program: $*"
i=0
while [ $i -lt "$reps" ]; do
  printf 'rep %d:' "$i"
  one off "CASK_DIST_BALANCE=0" "$@"
  one on "CASK_DIST_BALANCE=1" "$@"
  one off_slow "CASK_DIST_BALANCE=0 CASK_DIST_SLOW_RANK=$slow" "$@"
  one on_slow "CASK_DIST_BALANCE=1 CASK_DIST_SLOW_RANK=$slow" "$@"
  echo
  i=$((i + 1))
done

median() { sort -g "$tmp/$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
least() { sort -g "$tmp/$1" | head -n 1; }
# The median says what a run usually takes; on a machine shared with other jobs the
# least of the repetitions is the one least disturbed by them.
for stat in median least; do
  off=$($stat off); on=$($stat on); offs=$($stat off_slow); ons=$($stat on_slow)
  echo "$stat compute time (s): off $off, on $on, off+slow $offs, on+slow $ons"
  awk -v s="$stat" -v a="$off" -v b="$on" -v c="$offs" -v d="$ons" 'BEGIN {
    printf "  %s: slowed / unslowed: balancing off %.2fx, balancing on %.2fx (on+slow / off: %.2fx)\n", s, c / a, d / b, d / a }'
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
