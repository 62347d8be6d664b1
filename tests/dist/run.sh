#!/bin/sh
# tests/dist/run.sh: runs one multi-process cask test under mpirun.
#
#   run.sh NP [--need-gpus G] [--survivors K] PROGRAM [ARGS...]
#
# Starts NP ranks of PROGRAM with Open MPI's mpirun (or $CASK_MPIRUN), oversubscribing
# the cores and allowed to run as root (CI). Exit 77 (meson: SKIP) when there is no
# usable launcher or cask was built without PMIx (CASK_TEST_HAVE_PMIX=0).
# --need-gpus G: SKIP unless nvidia-smi lists G GPUs or more.
# --survivors K: a test that kills one of its ranks; mpirun is told not to abort the
# job when that happens (--enable-recovery), and the test passes when exactly K ranks
# wrote their ok file into $CASK_TEST_DIR.
# The whole run is limited to $CASK_TEST_TIMEOUT seconds (default 120): a hang fails,
# with what each process of the job was doing (session_dump: threads' kernel waits, and
# their stacks where gdb is on PATH), and every process of the job is ended (the job
# runs in a session of its own). With --survivors, a job whose ranks have all exited with
# fewer than K successes fails once the launcher has had its grace (below) to exit.
# With --survivors, once K ranks have reported success and no process of the job but the
# launcher itself is left running, the launcher has $CASK_TEST_LAUNCHER_GRACE seconds
# (default 10) to exit; past that it is ended and the test passes with a NOTE line. Open
# MPI 4.1's mpirun can hang after a SIGKILLed rank although every rank has exited
# ("PMIX ERROR: BAD-PARAM ... pmix_event_notification.c", docs/distributed.md, "Known
# launcher problems"). A rank that itself does not exit keeps the job running, and the
# test fails at the limit as before: the grace is for the launcher alone.
# CASK_LAUNCHER=local starts the ranks with tests/dist/launch-local.sh (the file
# bootstrap) instead of mpirun, for hosts without Open MPI.
set -u
np=$1; shift
survivors=""
if [ "${1:-}" = "--need-gpus" ]; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [ "${ngpu:-0}" -lt "$2" ]; then
    echo "needs $2 GPUs, found ${ngpu:-0}: skipped"; exit 77
  fi
  shift 2
fi
if [ "${1:-}" = "--survivors" ]; then survivors=$2; shift 2; fi
limit=${CASK_TEST_TIMEOUT:-120}
here=$(cd "$(dirname "$0")" && pwd)

if [ "${CASK_LAUNCHER:-}" = local ]; then
  set -- "$here/launch-local.sh" "$np" "$@"
else
  if [ "${CASK_TEST_HAVE_PMIX:-1}" = 0 ]; then
    echo "cask built without PMIx: multi-process test skipped"; exit 77
  fi
  mpirun=${CASK_MPIRUN:-$(command -v mpirun 2>/dev/null || command -v mpiexec 2>/dev/null || true)}
  if [ -z "$mpirun" ]; then
    echo "no mpirun on PATH (apt-get install openmpi-bin): multi-process test skipped"; exit 77
  fi
  version=$("$mpirun" --version 2>&1 | head -n 3)
  case "$version" in
    *"Open MPI"*|*OpenRTE*|*PRRTE*|*prterun*) ;;
    *) echo "$mpirun is not Open MPI/PRRTE (no PMIx server): skipped"; exit 77 ;;
  esac
  # Root in CI containers; harmless otherwise.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export PRTE_ALLOW_RUN_AS_ROOT=1 PRTE_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # No ssh in containers: every rank is started on this host anyway.
  export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}
  flags="-n $np --oversubscribe"
  [ -n "$survivors" ] && flags="$flags --enable-recovery"
  # sanitizer builds: ignore what the launcher's own libraries leak, in every rank
  export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  flags="$flags -x LSAN_OPTIONS"
  set -- "$mpirun" $flags "$@"
fi

dir=""
if [ -n "$survivors" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/cask-dist.XXXXXX") || exit 1
  export CASK_TEST_DIR="$dir"
fi

echo "+ $*"
hung=$(mktemp "${TMPDIR:-/tmp}/cask-hung.XXXXXX") && rm -f "$hung"
graced=$hung.graced short=$hung.short
setsid "$@" &
job=$!
# meson ends a test past its timeout with SIGTERM to this script alone: the job, in a
# session of its own, must end with it, or a launcher hung after its ranks exited outlives
# the test (CI, Open MPI 4.1 after a killed rank: one at 97% of a core to the run's end)
trap 'kill -TERM -"$job" 2>/dev/null; sleep 1; kill -KILL -"$job" 2>/dev/null; exit 143' TERM INT HUP

. "$here/session_procs.sh"
grace=${CASK_TEST_LAUNCHER_GRACE:-10}
( i=0 done_at="" short_at=""
  while [ $i -lt "$limit" ] && kill -0 "$job" 2>/dev/null; do
    sleep 1; i=$((i + 1))
    [ -n "$survivors" ] || continue
    got=$(ls "$dir" 2>/dev/null | grep -c '^ok\.' || true)
    if [ "$got" -lt "$survivors" ] && kill -0 "$job" 2>/dev/null && ! others_running "$job"; then
      # every rank has exited (only the launcher is left) and too few said ok: that is
      # the result, whether or not the launcher ever exits
      [ -n "$short_at" ] || short_at=$i
      if [ $((i - short_at)) -ge "$grace" ] && kill -0 "$job" 2>/dev/null; then
        echo "$got" > "$short"; kill -TERM -"$job"; sleep 2; kill -KILL -"$job"; exit 0
      fi
      continue
    fi
    short_at=""
    if [ "$got" -ge "$survivors" ] && kill -0 "$job" 2>/dev/null && ! others_running "$job"; then
      [ -n "$done_at" ] || done_at=$i
      if [ $((i - done_at)) -ge "$grace" ] && kill -0 "$job" 2>/dev/null; then
        : > "$graced"; kill -TERM -"$job"; sleep 2; kill -KILL -"$job"; exit 0
      fi
    else
      done_at=""
    fi
  done
  if kill -0 "$job" 2>/dev/null; then
    session_dump "$job" > "$hung.dump" 2>&1
    : > "$hung"; kill -TERM -"$job"; sleep 5; kill -KILL -"$job"
  fi ) >/dev/null 2>&1 &
wait "$job"
rc=$?
if [ -e "$hung" ]; then
  rm -f "$hung"
  echo "FAIL: the job did not finish within ${limit}s (a hang); its processes then:"
  cat "$hung.dump" 2>/dev/null; rm -f "$hung.dump"
  [ -n "$dir" ] && rm -rf "$dir"
  exit 1
fi
if [ -e "$short" ]; then
  echo "FAIL: every rank exited but $(cat "$short") of $survivors reported success; the launcher ($1) was still running ${grace}s later"
  rm -f "$short"; [ -n "$dir" ] && rm -rf "$dir"
  exit 1
fi
if [ -e "$graced" ]; then
  rm -f "$graced"
  note="NOTE: every rank had exited and $survivors reported success, but the launcher"
  note="$note ($1) was still running ${grace}s later: ended it (a launcher hang, not"
  note="$note cask's; docs/distributed.md, \"Known launcher problems\")"
  echo "$note"
fi
if [ -n "$survivors" ]; then
  got=$(ls "$dir" 2>/dev/null | grep -c '^ok\.' || true)
  rm -rf "$dir"
  if [ "$got" -ne "$survivors" ]; then
    echo "FAIL: $got of $survivors surviving ranks reported success (exit status $rc)"
    exit 1
  fi
  echo "PASS: $got surviving ranks detected the failure and stopped cleanly"
  exit 0
fi
exit $rc
