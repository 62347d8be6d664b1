#!/bin/sh
# tests/dist/netns_hosts.sh: cask-knn and cask-jacobi across NHOSTS emulated hosts give
# the bytes of one process, over TCP as between nodes.
#
#   netns_hosts.sh NHOSTS CASK_KNN CASK_JACOBI [TEST_DIST_GRAPH]
#
# Each "host" is a Linux network namespace with its own veth (eth0, 10.199.0.H/24) on a
# bridge in a switch namespace of its own (nothing is added to this machine's own
# network: no address outside those namespaces, no route, no traffic elsewhere), and each
# rank runs there in its own UTS (hostname), IPC (System V shared memory) and PID
# namespaces, so it shares no network, no shared-memory segment and no process table
# with the others: UCX must reach them by TCP, and cask must see them as other hosts
# (no pid-based liveness). Each has the /proc of its PID namespace (a mount namespace,
# --mount-proc), as a container has: with this host's, UCX read its own start time at
# its own pid there, and its endpoint to itself failed where that pid was free here
# (launch-netns.sh). The ranks are started with the file bootstrap
# (CASK_BOOT_DIR on the shared file system, CASK_RANK, CASK_SIZE; CASK_LOCAL_SIZE=1:
# alone on its host) through `ip netns exec` + `unshare`.
#
# Checked: every rank's endpoints to every other rank are "other host" and go over
# tcp/eth0 only (CASK_UCX_EP_INFO=1); cask-knn's output files (CSV; .npy with several
# reference chunks) and cask-jacobi's --out grid are byte-identical to one process's;
# with TEST_DIST_GRAPH, `test_dist_graph kill` across the hosts: rank 1 dies inside a
# task, the NHOSTS-1 others return CASK_ERR_PEER (found without pid checks); then rank 1
# stops (SIGSTOP) inside the task instead, and the others find it by the peer timeout
# (heartbeats over TCP) and return likewise.
#
# Exit 77 (meson: SKIP), saying why, where namespaces cannot be made (not root, no `ip`
# or `unshare`, namespaces refused). Namespace names carry this shell's pid and a random
# suffix, so runs side by side do not collide; they are removed on every exit (trap). Each launch is
# limited to $CASK_TEST_TIMEOUT seconds (default 120): a hang fails.
set -u
nh=${1:?usage: netns_hosts.sh NHOSTS CASK_KNN CASK_JACOBI [TEST_DIST_GRAPH]}
knn=${2:?}
jacobi=${3:?}
graph=${4:-}
limit=${CASK_TEST_TIMEOUT:-120}

skip() { echo "SKIP: $*: the network-namespace hosts test did not run"; exit 77; }
[ "$(id -u 2> /dev/null)" = 0 ] || skip "not root (network namespaces need CAP_SYS_ADMIN)"
command -v ip > /dev/null 2>&1 || skip "no ip command (iproute2)"
command -v unshare > /dev/null 2>&1 || skip "no unshare command (util-linux)"
command -v timeout > /dev/null 2>&1 || skip "no timeout command (coreutils)"
[ "$nh" -ge 2 ] 2>/dev/null && [ "$nh" -le 200 ] || { echo "NHOSTS: 2 to 200"; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-netns.XXXXXX") || exit 1
# this shell's pid and the temporary folder's random suffix: unique among runs
tag=cask$$$(echo "${tmp##*.}" | tr -dc 'a-zA-Z0-9')
sw=${tag}sw
pids=""
# Ends one launch: `timeout`'s child is `unshare`, which lets no SIGTERM through; its
# SIGKILL makes the kernel kill its child (--kill-child), the pid namespace's init, and
# with it every process of that namespace.
stop_launch() {
  for c in $(cat "/proc/$1/task/$1/children" 2> /dev/null); do kill -KILL "$c" 2> /dev/null; done
  kill -KILL "$1" 2> /dev/null
  wait "$1" 2> /dev/null
}
cleanup() {
  for p in $pids; do stop_launch "$p"; done
  h=0
  while [ $h -lt "$nh" ]; do ip netns del "${tag}h$h" 2> /dev/null; h=$((h + 1)); done
  ip netns del "$sw" 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- the hosts ----
ip netns add "$sw" 2> "$tmp/err" || skip "ip netns add refused ($(cat "$tmp/err"))"
ip -n "$sw" link add br0 type bridge 2> "$tmp/err" || skip "no bridge ($(cat "$tmp/err"))"
ip -n "$sw" link set br0 up || exit 1
h=0
while [ $h -lt "$nh" ]; do
  ns=${tag}h$h
  ip netns add "$ns" || exit 1
  # the veth is made inside the switch namespace: its names never meet this host's
  ip -n "$sw" link add "p$h" type veth peer name eth0 netns "$ns" 2> "$tmp/err" ||
    skip "no veth pair ($(cat "$tmp/err"))"
  ip -n "$sw" link set "p$h" master br0 up || exit 1
  ip -n "$ns" addr add "10.199.$((h / 250)).$((h % 250 + 1))/16" dev eth0 || exit 1
  ip -n "$ns" link set eth0 up || exit 1
  ip -n "$ns" link set lo up || exit 1
  h=$((h + 1))
done
if ! unshare --uts --ipc --pid --mount --mount-proc --fork --kill-child true 2> "$tmp/err"; then
  skip "unshare refused ($(cat "$tmp/err"))"
fi
echo "$nh hosts: network namespaces ${tag}h0..${tag}h$((nh - 1)), bridge in $sw"

# start NAME PROGRAM ARGS...: rank h of the job in host h ($pids: their launches, in
# rank order); outputs in $tmp/NAME.h.out and .err. run: start, then wait for all, and
# $failed lists "rank:status" of those that did not exit 0.
start() {
  name=$1; shift
  boot="$tmp/boot.$name"
  mkdir "$boot" || exit 1
  pids=""
  h=0
  while [ $h -lt "$nh" ]; do
    # sh is the namespace's pid 1 and the program its child: pid 1 would ignore the
    # signals it raises itself (the kill test's rank dies by raise(SIGKILL))
    timeout -k 5 "$limit" ip netns exec "${tag}h$h" \
      unshare --uts --ipc --pid --mount --mount-proc --fork --kill-child \
      sh -c 'hostname "$1" && shift && "$@"' sh "${tag}-host$h" \
      env CASK_BOOT_DIR="$boot" CASK_RANK=$h CASK_SIZE="$nh" CASK_LOCAL_RANK=0 \
          CASK_LOCAL_SIZE=1 CASK_UCX_EP_INFO=1 "$@" \
      > "$tmp/$name.$h.out" 2> "$tmp/$name.$h.err" &
    pids="$pids $!"
    h=$((h + 1))
  done
}
run() {
  start "$@"
  failed=""
  h=0
  for p in $pids; do
    wait "$p"
    rc=$?
    [ $rc -eq 0 ] || failed="$failed $h:$rc"
    h=$((h + 1))
  done
  pids=""
}

show() {
  for f in "$tmp/$1".*.out "$tmp/$1".*.err; do
    [ -s "$f" ] && { echo "--- ${f##*/}"; tail -n 15 "$f"; }
  done
}

# every rank: nh-1 endpoint lines, all "other host" and over tcp only
check_tcp() {
  h=0
  while [ $h -lt "$nh" ]; do
    lines=$(grep -c "^cask ucx: rank $h -> rank " "$tmp/$1.$h.err")
    if [ "$lines" -ne $((nh - 1)) ]; then
      echo "FAIL: $1: rank $h reported $lines endpoints, not $((nh - 1))"; show "$1"; exit 1
    fi
    bad=$(grep "^cask ucx: rank $h -> rank " "$tmp/$1.$h.err" |
          grep -Ev '\(other host\): (tcp/eth0 ?)+$')
    if [ -n "$bad" ]; then
      echo "FAIL: $1: an endpoint not over TCP between hosts: $bad"; exit 1
    fi
    h=$((h + 1))
  done
  echo "ok: $1: each of $nh ranks reaches the $((nh - 1)) others as other hosts, over tcp/eth0"
}

# ---- cask-knn and cask-jacobi: the bytes of one process ----
export CASK_NCPU=1
gen="--generate 20000 500 --seed 7 --cpu-only --threads 1 -q --check 64"
for v in "csv" "npy --ref-chunk 128 --chunk 3000"; do
  ext=${v%% *}
  opts=${v#"$ext"}
  "$knn" $gen $opts --out "$tmp/one.$ext" || { echo "FAIL: cask-knn, one process"; exit 1; }
  run "knn$ext" "$knn" $gen $opts --out "$tmp/hosts.$ext"
  [ -z "$failed" ] || { echo "FAIL: cask-knn ($v) on $nh hosts: rank:status$failed"; show "knn$ext"; exit 1; }
  check_tcp "knn$ext"
  cmp "$tmp/one.$ext" "$tmp/hosts.$ext" || { echo "FAIL: cask-knn ($v): $nh hosts wrote other bytes"; exit 1; }
  echo "ok: cask-knn $v: $nh hosts wrote the $(wc -c < "$tmp/one.$ext") bytes of one process"
done
jopts="--n 130 --iters 60 --check 20 --cpu-only"
"$jacobi" $jopts --out "$tmp/one.grid" > /dev/null || { echo "FAIL: cask-jacobi, one process"; exit 1; }
run jacobi "$jacobi" $jopts --out "$tmp/hosts.grid"
[ -z "$failed" ] || { echo "FAIL: cask-jacobi on $nh hosts: rank:status$failed"; show jacobi; exit 1; }
check_tcp jacobi
cmp "$tmp/one.grid" "$tmp/hosts.grid" || { echo "FAIL: cask-jacobi: $nh hosts wrote another grid"; exit 1; }
echo "ok: cask-jacobi: $nh hosts wrote the $(wc -c < "$tmp/one.grid") bytes of one process"

# ---- a rank dies on another host: found by the transport, not by its pid ----
if [ -n "$graph" ]; then
  mkdir "$tmp/ok"
  # placement by data only: the dying task stays on rank 1, the owner of its chunk
  export CASK_TEST_DIR="$tmp/ok" CASK_DIST_STEAL=0
  t0=$(date +%s)
  run kill "$graph" kill
  got=$(ls "$tmp/ok" | grep -c '^ok\.')
  if [ "$got" -ne $((nh - 1)) ]; then
    echo "FAIL: test_dist_graph kill: $got of $((nh - 1)) surviving hosts reported success"
    show kill
    exit 1
  fi
  if grep -h "on this host has exited" "$tmp"/kill.*.out; then
    echo "FAIL: a rank on another host was judged by its pid"; exit 1
  fi
  echo "ok: rank 1 killed: the $got other hosts finished without it (recovered) in $(( $(date +%s) - t0 )) s:"
  grep -h "kill: " "$tmp"/kill.*.out | head -n 3

  # rank 1 stops (SIGSTOP) instead: its sockets stay open, so only the heartbeats tell
  mkdir "$tmp/okf"
  export CASK_TEST_DIR="$tmp/okf" CASK_TEST_FREEZE=1
  t0=$(date +%s)
  start freeze "$graph" kill
  h=0
  for p in $pids; do
    [ $h -eq 1 ] && victim=$p || wait "$p"
    h=$((h + 1))
  done
  stop_launch "$victim"
  pids=""
  unset CASK_TEST_FREEZE
  rm -f "$tmp/okf/ok.1"   # the stopped rank itself (see below) is not judged
  got=$(ls "$tmp/okf" | grep -c '^ok\.')
  if [ "$got" -ne $((nh - 1)) ]; then
    echo "FAIL: test_dist_graph kill, rank 1 stopped: $got of $((nh - 1)) other hosts reported success"
    show freeze
    exit 1
  fi
  # a survivor recovers (the stopped rank is fenced out once the peer timeout passed)
  # or, if it returned the loss, must have found it by the silence (rank 1's own output
  # is not judged: it may be woken by a SIGCONT, as seen under meson, once the others
  # are gone, and finish on its own before it is killed)
  rm -f "$tmp/freeze.1.out"
  if grep -h "kill: " "$tmp"/freeze.*.out | grep -v "kill: ok" | grep -v "kill: success" |
     grep -v "nothing heard"; then
    echo "FAIL: a stopped rank on another host was not found by the peer timeout"; exit 1
  fi
  echo "ok: rank 1 stopped: the $got other hosts finished without it (fenced out) in $(( $(date +%s) - t0 )) s:"
  grep -h "kill: " "$tmp"/freeze.*.out | head -n 3
fi
echo "PASS: $nh network-namespace hosts"
exit 0
