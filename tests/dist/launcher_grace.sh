#!/bin/sh
# tests/dist/launcher_grace.sh: run.sh's verdicts when a launcher or a rank does not exit.
#
#   launcher_grace.sh fake                  with fake_launcher.sh as mpirun: (1) the
#                                           launcher hangs once its ranks exited (one
#                                           SIGKILLed, the others reported success): the
#                                           test passes with run.sh's NOTE, well before
#                                           its limit; (2) a rank that reported success
#                                           does not exit: the test fails as a hang, with
#                                           and without a hung launcher, the report
#                                           naming the job's processes; (3) every rank
#                                           exited, one without success, and the
#                                           launcher hangs: a failure within the grace
#   launcher_grace.sh cask PROGRAM ARGS...  the real launcher and a rank of cask's that
#                                           reports success and then does not exit
#                                           (CASK_DIST_TEST_HANG_AFTER_OK): run.sh fails,
#                                           as a hang (77, SKIP, where run.sh skips)
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp "${TMPDIR:-/tmp}/cask-grace.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
fails=0

# expect WHAT RC PATTERN CMD...: CMD exits RC and prints PATTERN
expect() {
  what=$1 want=$2 pattern=$3
  shift 3
  t0=$(date +%s)
  "$@" > "$out" 2>&1
  rc=$? t=$(( $(date +%s) - t0 ))
  if [ "$rc" = 77 ]; then sed 's/^/  | /' "$out"; echo "SKIP: $what"; exit 77; fi
  if [ "$rc" = "$want" ] && grep -q "$pattern" "$out"; then
    echo "ok: $what (exit $rc after ${t}s)"
  else
    echo "FAILED: $what: exit $rc after ${t}s (want $want and \"$pattern\"); its output:"
    sed 's/^/  | /' "$out"
    fails=$((fails + 1))
  fi
}

case "${1:-}" in
fake)
  export CASK_MPIRUN="$here/fake_launcher.sh" CASK_TEST_HAVE_PMIX=1 CASK_LAUNCHER=
  export FAKE_VICTIM=1 CASK_TEST_LAUNCHER_GRACE=2
  FAKE_LAUNCHER_HANG=1 CASK_TEST_TIMEOUT=30 \
    expect "a launcher hung after every rank exited: pass, with a note" 0 \
      "NOTE: every rank had exited" "$here/run.sh" 3 --survivors 2 "$here/fake_rank.sh"
  case $(grep -c "^PASS" "$out") in 1) ;; *) echo "FAILED: no PASS line"; fails=$((fails + 1)) ;; esac
  FAKE_HANG_RANK=2 CASK_TEST_TIMEOUT=8 \
    expect "a rank that reported success does not exit: a hang" 1 \
      "did not finish within 8s" "$here/run.sh" 3 --survivors 2 "$here/fake_rank.sh"
  FAKE_LAUNCHER_HANG=1 FAKE_HANG_RANK=2 CASK_TEST_TIMEOUT=8 \
    expect "the same with a hung launcher: a hang" 1 \
      "did not finish within 8s" "$here/run.sh" 3 --survivors 2 "$here/fake_rank.sh"
  grep -q "^-- pid .*fake_rank.sh" "$out" ||
    { echo "FAILED: the hang's report names no process of the job"; fails=$((fails + 1)); }
  FAKE_LAUNCHER_HANG=1 FAKE_SILENT_RANK=2 CASK_TEST_TIMEOUT=30 \
    expect "every rank exited, one without success, the launcher hung: a failure at once" 1 \
      "every rank exited but 1 of 2 reported success" "$here/run.sh" 3 --survivors 2 \
      "$here/fake_rank.sh"
  [ "$t" -lt 15 ] || { echo "FAILED: that took ${t}s"; fails=$((fails + 1)); }
  ;;
cask)
  shift
  CASK_DIST_TEST_HANG_AFTER_OK=2 CASK_TEST_TIMEOUT=${CASK_TEST_TIMEOUT:-25} \
  CASK_TEST_LAUNCHER_GRACE=3 \
    expect "a rank of cask's that reported success and does not exit: a hang" 1 \
      "did not finish within" "$here/run.sh" 3 --survivors 2 "$@"
  ;;
*) echo "usage: launcher_grace.sh fake | cask PROGRAM ARGS..."; exit 2 ;;
esac
[ "$fails" = 0 ] || exit 1
echo "PASS"
