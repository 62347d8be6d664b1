#!/bin/sh
# tests/dist/multiroot.sh: one datum gathered to several roots, and a rank lost at each of
# many points. Runs tests/dist/test_dist_multiroot (which checks every
# gathered residual against a replay after every compute) under run.sh --survivors:
#
#   multiroot.sh NP PROGRAM VICTIM K...    VICTIM is SIGKILLed when its K-th task
#                                          starts (CASK_DIST_TEST_KILL), once per K;
#                                          K = a..b stands for every point from a to b
#
# With CASK_DIST_TEST_DROP_DONE=R:S:N in the environment, rank R also drops the DONE of
# run N from rank S (as one that lands after R changed its view): killed at the first
# task of the next run, the victim has completed run N with everyone else while R waits
# for that DONE; R must learn that the run was completed, and every rank must go on
# with the same run numbers.
#
# A case passes when the NP-1 others finish with the replay's values, each recovered
# once, and the victim exited by the kill. UCX over TCP, as recover_app.sh (UCX's
# shared-memory FIFOs can leave a survivor deaf after a peer's SIGKILL).
set -u
np=$1 prog=$2 victim=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-multiroot.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export CASK_TEST_TIMEOUT=${CASK_TEST_TIMEOUT:-60}
export UCX_TLS=${CASK_RECOVER_UCX_TLS-tcp,self}
[ -n "$UCX_TLS" ] || unset UCX_TLS
points=""
for a in "$@"; do
  case "$a" in
  *..*) points="$points $(seq "${a%%..*}" "${a##*..}")" ;;
  *) points="$points $a" ;;
  esac
done
n=0
for k in $points; do
  rm -rf "$tmp/rc"
  mkdir "$tmp/rc"
  CASK_DIST_TEST_KILL="$victim:$k" RC_DIR="$tmp/rc" "$here/run.sh" "$np" \
    --survivors $((np - 1)) sh -c \
    '"$@"; rc=$?; r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-$$}}; echo $rc > "$RC_DIR/rc.$r"
     exit 0' sh "$prog" > "$tmp/log" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then cat "$tmp/log"; exit 77; fi
  if [ $rc -ne 0 ] || [ "$(cat "$tmp/rc/rc.$victim" 2>/dev/null)" != 137 ]; then
    grep -v 'PMIX ERROR' "$tmp/log" | tail -n 30
    echo "FAIL: rank $victim killed at task $k: job status $rc, ranks:" \
         "$(cd "$tmp/rc" && grep . rc.* | tr '\n' ' ')"
    exit 1
  fi
  # one loss, one recovery on each survivor: a plan over the survivors that still sent
  # to the lost root failed every later compute and recovered again
  nrec=$(grep -c 'recovered on' "$tmp/log")
  if [ "$nrec" -ne $((np - 1)) ]; then
    grep -v 'PMIX ERROR' "$tmp/log" | grep 'recover' | tail -n 20
    echo "FAIL: rank $victim killed at task $k: $nrec recoveries, not one per survivor"
    exit 1
  fi
  n=$((n + 1))
done
echo "ok: $n kill points of rank $victim, every survivor had every gathered value right"
