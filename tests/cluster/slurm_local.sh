#!/bin/sh
# tests/cluster/slurm_local.sh: a Slurm cluster on this machine, for tests and for trying
# a job script before a real cluster: munge, slurmctld and NODES slurmd "nodes".
#
#   slurm_local.sh run [-n NODES] COMMAND...   start a cluster, run COMMAND on its login
#                                               node, tear it down (exit: COMMAND's)
#   slurm_local.sh start DIR [NODES]           start one whose state lives in DIR (new)
#   slurm_local.sh exec DIR COMMAND...         run COMMAND on DIR's login node
#   slurm_local.sh stop DIR                    stop DIR's cluster, remove its namespaces
#                                               and DIR (refused for a folder that start
#                                               did not make)
#
# Each node (n0, n1, ...) is a Linux network namespace with its own veth (eth0,
# 10.198.0.N+2/16) on a bridge in a switch namespace of its own, as
# tests/dist/netns_hosts.sh makes hosts: nothing is added to this machine's own network.
# slurmd runs there as `slurmd -D -N nN` in its own UTS (hostname nN), IPC, PID and mount
# namespaces (its own /proc; so a job's ranks on two nodes share no shared memory, no
# process table, and reach each other by TCP only). The login node (10.198.0.1, hostname
# login) holds slurmctld and runs COMMAND, so srun, sbatch, squeue and scancel work there
# as on a cluster's login node; munge listens on a socket in DIR. Each node also has
# DIR/scratch mounted from DIR/node/nN/scratch (node-local scratch: the same path,
# another folder on each node; $CLUSTER_DIR/node/nN/scratch is it seen from outside)
# and DIR/tmp from DIR/node/nN/tmp: Slurm's TmpFS, where its PMIx plugin makes a folder
# per job step whose name would collide on a /tmp that all the nodes share. The rest of
# the file system is shared, as a cluster's home is. slurmd's cgroup plugin starts
# (cgroup/v1 on a tmpfs) but nothing uses cgroups.
#
# COMMAND gets SLURM_CONF, CLUSTER_DIR (the state folder), CLUSTER_NODES (the count),
# CLUSTER_SCRATCH (DIR/scratch). Daemons' logs: DIR/log/. The configuration: no cgroups
# (ProctrackType=proctrack/linuxproc, TaskPlugin=task/none), MpiDefault=none (as many
# sites: jobs ask for --mpi=pmix), SelectType=select/cons_tres, no accounting (sacct has
# nothing: read a finished job with `scontrol show job`), KillWait=3.
#
# Exit 77 (meson: SKIP), saying why, where it cannot run: not root, no namespaces, no
# Slurm or munge (sh deps.sh --cluster). `run` tears everything down on every exit, also
# when COMMAND fails or the script is killed by SIGTERM/SIGINT/SIGHUP (trap): no daemon,
# job or namespace is left. Names carry a random tag, so clusters side by side do not
# collide.
set -u
here=$(cd "$(dirname "$0")" && pwd)
self="$here/slurm_local.sh"

skip() { echo "SKIP: $*: the local Slurm cluster did not start"; exit 77; }
die() { echo "slurm_local.sh: $*" >&2; exit 1; }

need() {
  [ "$(id -u 2> /dev/null)" = 0 ] || skip "not root (namespaces and slurmd need root)"
  for c in ip unshare setsid timeout munged slurmctld slurmd srun sbatch sinfo scontrol; do
    command -v "$c" > /dev/null 2>&1 || skip "no $c command (sh deps.sh --cluster)"
  done
  plugdir=""
  for d in /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib/aarch64-linux-gnu/slurm-wlm \
           /usr/lib64/slurm /usr/lib/slurm; do
    [ -e "$d/mpi_pmix.so" ] && plugdir=$d && break
  done
  [ -n "$plugdir" ] || skip "no Slurm PMIx plugin mpi_pmix.so (slurm-wlm-basic-plugins)"
}

# the namespaces of DIR's cluster: its tag is in DIR/tag
tag_of() { cat "$1/tag" 2> /dev/null; }

stop() {
  dir=$1
  [ -d "$dir" ] || return 0
  # DIR goes at the end (rm -rf): only a folder that start made, which holds its tag
  tag=$(tag_of "$dir")
  case $tag in
    cl[0-9a-f]*) ;;
    *) echo "slurm_local.sh: $dir holds no cluster made by 'slurm_local.sh start' (no $dir/tag): left as it is" >&2
       return 1 ;;
  esac
  # the nodes: killing unshare (--kill-child) kills the namespace's pid 1 and so every
  # process of that node, slurmd, slurmstepd and the job's tasks
  for f in "$dir"/pid/*; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    case ${f##*/} in
      munged) ;;
      *) kill -KILL "$p" 2> /dev/null ;;
    esac
  done
  # munged last: slurmctld may use it to the end
  [ -e "$dir/pid/munged" ] && kill -TERM "$(cat "$dir/pid/munged")" 2> /dev/null
  for f in "$dir"/pid/*; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    i=0
    while kill -0 "$p" 2> /dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$p" 2> /dev/null
  done
  if [ -n "$tag" ]; then
    for ns in $(ip netns list 2> /dev/null | awk '{print $1}' | grep "^$tag"); do
      ip netns del "$ns" 2> /dev/null
    done
  fi
  rm -rf "$dir"
}

start() {
  dir=$1
  nn=${2:-4}
  [ "$nn" -ge 1 ] 2> /dev/null && [ "$nn" -le 200 ] || die "NODES: 1 to 200"
  need
  mkdir "$dir" || die "cannot make $dir"
  dir=$(cd "$dir" && pwd)
  mkdir "$dir/pid" "$dir/log" "$dir/state" "$dir/spool" "$dir/scratch" "$dir/tmp" "$dir/node" "$dir/munge" ||
    die "cannot fill $dir"
  chmod 700 "$dir/munge"
  tag=cl$$$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  echo "$tag" > "$dir/tag"
  login=${tag}l
  sw=${tag}s

  # ---- the network: a bridge, the login node, the nodes ----
  ip netns add "$sw" 2> "$dir/err" || { e=$(cat "$dir/err"); stop "$dir"; skip "ip netns add refused ($e)"; }
  if ! ip -n "$sw" link add br0 type bridge 2> "$dir/err"; then
    e=$(cat "$dir/err")
    stop "$dir"
    # ip -n and ip netns exec make / a slave mount: in a chroot whose root is a plain
    # folder, not a mount point, they cannot
    case $e in
      *make-rslave*) skip "ip cannot enter a network namespace ($e): / is not a mount point (a chroot? bind-mount its root onto itself before entering it)" ;;
    esac
    skip "no bridge ($e)"
  fi
  ip -n "$sw" link set br0 up || { stop "$dir"; die "bridge"; }
  h=0
  while [ $h -le "$nn" ]; do
    # h 0: the login node; h 1..nn: nodes n0..n(nn-1)
    [ $h -eq 0 ] && ns=$login || ns=${tag}n$((h - 1))
    ip netns add "$ns" || { stop "$dir"; die "ip netns add $ns"; }
    ip -n "$sw" link add "p$h" type veth peer name eth0 netns "$ns" 2> "$dir/err" ||
      { e=$(cat "$dir/err"); stop "$dir"; skip "no veth pair ($e)"; }
    ip -n "$sw" link set "p$h" master br0 up &&
      ip -n "$ns" addr add "10.198.$(((h + 1) / 250)).$(((h + 1) % 250))/16" dev eth0 &&
      ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up ||
      { stop "$dir"; die "addresses in $ns"; }
    h=$((h + 1))
  done
  unshare --uts --ipc --pid --mount --mount-proc --fork --kill-child true 2> "$dir/err" ||
    { e=$(cat "$dir/err"); stop "$dir"; skip "unshare refused ($e)"; }

  # ---- munge: a key and a socket of this cluster's own ----
  dd if=/dev/urandom of="$dir/munge/key" bs=1024 count=1 2> /dev/null
  chmod 400 "$dir/munge/key"
  munged --force --socket="$dir/munge/sock" --key-file="$dir/munge/key" \
    --pid-file="$dir/munge/pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/seed" 2> "$dir/err" ||
    { e=$(cat "$dir/err"); stop "$dir"; die "munged did not start: $e"; }
  cp "$dir/munge/pid" "$dir/pid/munged"

  # ---- slurm.conf ----
  nodes=""
  h=0
  while [ $h -lt "$nn" ]; do
    nodes="${nodes}NodeName=n$h NodeAddr=10.198.$(((h + 2) / 250)).$(((h + 2) % 250)) CPUs=2 RealMemory=1000 State=UNKNOWN
"
    h=$((h + 1))
  done
  cat > "$dir/slurm.conf" << EOF
# written by tests/cluster/slurm_local.sh
ClusterName=cask$tag
SlurmctldHost=login(10.198.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/sock
CredType=cred/munge
PluginDir=$plugdir
StateSaveLocation=$dir/state
TmpFS=$dir/tmp
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/spool/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=3
MinJobAge=600
InactiveLimit=0
MessageTimeout=20
SlurmdTimeout=60
SchedulerType=sched/backfill
$nodes
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  # slurmd's cgroup plugin must start although nothing uses it: `ip netns exec` mounts
  # a sysfs of the namespace's own, without /sys/fs/cgroup, so each node mounts a tmpfs
  # there (below), which cgroup/v1 accepts
  echo "CgroupPlugin=cgroup/v1" > "$dir/cgroup.conf"
  export SLURM_CONF="$dir/slurm.conf"

  # ---- the daemons ----
  ip netns exec "$login" unshare --uts sh -c 'hostname login && exec slurmctld -D -i' \
    > "$dir/log/slurmctld.out" 2>&1 &
  echo $! > "$dir/pid/slurmctld"
  h=0
  while [ $h -lt "$nn" ]; do
    mkdir -p "$dir/node/n$h/scratch" "$dir/node/n$h/tmp" "$dir/spool/n$h"
    # sh is the namespace's pid 1; slurmd its child
    ip netns exec "${tag}n$h" \
      unshare --uts --ipc --pid --mount --mount-proc --fork --kill-child \
      sh -c 'hostname "$1" && mount --bind "$2/node/$1/scratch" "$2/scratch" &&
             mount --bind "$2/node/$1/tmp" "$2/tmp" &&
             mount -t tmpfs cgroup /sys/fs/cgroup && exec slurmd -D -N "$1"' \
      sh "n$h" "$dir" > "$dir/log/slurmd.n$h.out" 2>&1 &
    echo $! > "$dir/pid/n$h"
    h=$((h + 1))
  done

  # ---- wait until every node is idle ----
  t0=$(date +%s)
  while :; do
    idle=$(ip netns exec "$login" sinfo -h -N -t idle -o '%N' 2> /dev/null | sort -u | wc -l)
    [ "$idle" -eq "$nn" ] && break
    if [ $(($(date +%s) - t0)) -ge 60 ]; then
      echo "slurm_local.sh: $idle of $nn nodes idle after 60 s:" >&2
      ip netns exec "$login" sinfo -N >&2
      tail -n 20 "$dir"/log/*.log "$dir"/log/*.out >&2
      stop "$dir"
      exit 1
    fi
    sleep 0.1
  done
  echo "slurm_local.sh: $nn nodes idle (n0..n$((nn - 1)), login node $login), state in $dir"
}

# exec DIR COMMAND...: on the login node (its network and hostname; this machine's
# processes and files)
exec_login() {
  dir=$1
  shift
  export SLURM_CONF="$dir/slurm.conf" CLUSTER_DIR="$dir" CLUSTER_SCRATCH="$dir/scratch"
  CLUSTER_NODES=$(grep -c '^NodeName=' "$dir/slurm.conf")
  export CLUSTER_NODES
  exec ip netns exec "$(tag_of "$dir")l" unshare --uts \
    sh -c 'hostname login && exec "$@"' sh "$@"
}

case ${1:-} in
start) shift; start "$@" ;;
stop) shift; stop "${1:?usage: slurm_local.sh stop DIR}" ;;
exec) shift; d=${1:?usage: slurm_local.sh exec DIR COMMAND...}; shift; exec_login "$d" "$@" ;;
run)
  shift
  n=4
  if [ "${1:-}" = -n ]; then n=$2; shift 2; fi
  [ $# -ge 1 ] || die "usage: slurm_local.sh run [-n NODES] COMMAND..."
  need
  base=$(mktemp -d "${TMPDIR:-/tmp}/cask-slurm.XXXXXX") || exit 1
  cdir="$base/c"
  cpid=""
  # COMMAND runs in a session of its own (setsid: a background job of this shell is no
  # group leader, so setsid needs no fork and $! is the session's id); on the way out
  # every process of it goes (an srun left behind would outlive the cluster)
  cleanup() {
    if [ -n "$cpid" ]; then
      kill -TERM "-$cpid" 2> /dev/null && sleep 1
      kill -KILL "-$cpid" 2> /dev/null
    fi
    stop "$cdir"
    rm -rf "$base"
  }
  trap cleanup EXIT
  trap 'exit 1' INT TERM HUP
  (start "$cdir" "$n") || exit $?
  setsid "$self" exec "$cdir" "$@" &
  cpid=$!
  wait $cpid
  rc=$?
  cpid=""
  exit $rc
  ;;
*) echo "usage: slurm_local.sh run [-n NODES] COMMAND... | start DIR [NODES] | exec DIR COMMAND... | stop DIR" >&2
   exit 2 ;;
esac
