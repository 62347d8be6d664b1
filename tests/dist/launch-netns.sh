#!/bin/sh
# tests/dist/launch-netns.sh: starts NP ranks of a cask program as NP emulated hosts, as
# launch-local.sh starts them on this host (the file bootstrap: CASK_BOOT_DIR, CASK_RANK,
# CASK_SIZE; CASK_LOCAL_SIZE=1, alone on its host).
#
#   launch-netns.sh NP PROGRAM [ARGS...]
#
# Rank r runs in network, UTS, IPC, PID and mount namespaces of its own, its veth (eth0,
# 10.199.H.L/16) on a bridge in a switch namespace, as in netns_hosts.sh: it shares no
# network, shared memory or process table with the others, so UCX reaches them by TCP
# and cask sees them as other hosts (no pid-based liveness). Like a container, it has
# the /proc of its PID namespace (--mount-proc): with this host's /proc, UCX read a
# process's own start time at its own pid there (a keepalive of its endpoint to itself),
# found another process or none, and ucp_ep_create to itself failed with "Endpoint
# timeout" where that pid was free on this host (a chaos soak: 1 case in 256; every
# time with the pid forced to one). Unlike netns_hosts.sh the namespaces have no names:
# they are held by this launch's processes alone and vanish with them, even when the
# launch is ended by SIGKILL to its process group (chaos.sh on a hang), so nothing is
# left on this machine.
#
# CASK_HOST_PID_DIR=DIR: the launcher writes there hostpid.R, rank r's pid on this host
# (its getpid() is the one of its own namespace), once it runs: what a `kill` from
# outside needs (chaos.sh --launcher netns).
#
# Exit status: 0 if every rank exited 0, else 1; 77 (meson: SKIP), saying why, where the
# namespaces cannot be made (not root, no `ip`, `unshare`, `nsenter`, `mkfifo` or
# `timeout`, refused).
set -u
np=${1:?usage: launch-netns.sh NP PROGRAM [ARGS...]}; shift
[ "$np" -ge 1 ] 2>/dev/null && [ "$np" -le 200 ] || { echo "launch-netns.sh: NP 1 to 200" >&2; exit 2; }
skip() { echo "SKIP: launch-netns.sh: $*" >&2; exit 77; }
[ "$(id -u 2> /dev/null)" = 0 ] || skip "not root (network namespaces need CAP_SYS_ADMIN)"
for c in ip unshare nsenter mkfifo timeout; do
  command -v $c > /dev/null 2>&1 || skip "no $c command"
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/cask-boot.XXXXXX") || exit 1
sw="" pids=""
cleanup() {
  for p in $pids $sw; do kill -KILL "$p" 2> /dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

mine=$(readlink /proc/self/ns/net)
# waits until process $1 is in a network namespace of its own (it ran unshare(2))
own_ns() {
  n=0
  while [ "$(readlink "/proc/$1/ns/net" 2> /dev/null)" = "$mine" ]; do
    n=$((n + 1))
    [ $n -lt 500 ] || return 1
    sleep 0.01
  done
  [ -e "/proc/$1/ns/net" ]
}

# the switch: a bridge in a namespace held by a sleeping process
unshare --net sleep 100000 &
sw=$!
own_ns "$sw" || skip "unshare --net refused"
nsenter -t "$sw" -n ip link add br0 type bridge 2> "$dir/err" || skip "no bridge ($(cat "$dir/err"))"
nsenter -t "$sw" -n ip link set br0 up || exit 1

# rank r: its namespaces made first (the program waits on the pipe go.r), then its veth
r=0
while [ "$r" -lt "$np" ]; do
  mkfifo "$dir/go.$r" || exit 1
  # sh is the PID namespace's pid 1 and the program its only child after the go (the
  # read is a builtin; not an exec: pid 1 would ignore the signals the program raises
  # itself, as a test's rank dies by raise(SIGKILL))
  CASK_BOOT_DIR="$dir" CASK_RANK=$r CASK_SIZE=$np CASK_LOCAL_RANK=0 CASK_LOCAL_SIZE=1 \
    unshare --net --uts --ipc --pid --mount --mount-proc --fork --kill-child \
    sh -c 'hostname "$2"; read -r go < "$1" && shift 2 && "$@"; exit $?' \
    sh "$dir/go.$r" "cask-host$r" "$@" &
  p=$!
  pids="$pids $p"
  own_ns "$p" || { echo "launch-netns.sh: rank $r's namespace was not made" >&2; exit 1; }
  nsenter -t "$sw" -n ip link add "p$r" type veth peer name eth0 netns "$p" 2> "$dir/err" ||
    skip "no veth pair ($(cat "$dir/err"))"
  nsenter -t "$sw" -n ip link set "p$r" master br0 up || exit 1
  nsenter -t "$p" -n ip addr add "10.199.$((r / 250)).$((r % 250 + 1))/16" dev eth0 || exit 1
  nsenter -t "$p" -n ip link set eth0 up || exit 1
  nsenter -t "$p" -n ip link set lo up || exit 1
  timeout 30 sh -c 'echo go > "$1"' sh "$dir/go.$r" ||
    { echo "launch-netns.sh: rank $r did not start" >&2; exit 1; }
  r=$((r + 1))
done
# the ranks' pids on this host: unshare's one child is the namespace's sh, whose one
# child after the go is the program
if [ -n "${CASK_HOST_PID_DIR:-}" ]; then
  r=0
  for p in $pids; do
    n=0 c=""
    while [ -z "$c" ] && [ $n -lt 1000 ] && kill -0 "$p" 2> /dev/null; do
      s=$(cat "/proc/$p/task/$p/children" 2> /dev/null)
      s=${s%% *}
      [ -n "$s" ] && c=$(cat "/proc/$s/task/$s/children" 2> /dev/null)
      [ -n "$c" ] || sleep 0.005
      n=$((n + 1))
    done
    c=${c%% *}
    if [ -n "$c" ]; then
      echo "$c" > "$CASK_HOST_PID_DIR/hostpid.$r.tmp" &&
        mv "$CASK_HOST_PID_DIR/hostpid.$r.tmp" "$CASK_HOST_PID_DIR/hostpid.$r"
    fi
    r=$((r + 1))
  done
fi
# every rank's status (a rank killed on purpose counts as a failure, as in launch-local)
status=0
for p in $pids; do wait "$p" || status=1; done
pids=""   # all reaped: nothing for the trap to kill but the switch
exit $status
