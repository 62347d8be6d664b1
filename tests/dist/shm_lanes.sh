#!/bin/sh
# tests/dist/shm_lanes.sh: which UCX transports carry the messages between ranks of one
# host (transport/ucx_config.c, ucx_choose_transports).
#   By default none of UCX's shared-memory FIFOs (posix, sysv, xpmem): a rank killed
#   while it wrote into a peer's FIFO leaves an element that peer waits for forever,
#   and the peer is then deaf to every rank of its host. Before the fix the
#   lanes were sysv/memory or posix/memory: this test failed.
#   Rendezvous data goes by CMA reads where the UCX allows it (cma/ on every same-host
#   endpoint), unless CASK_UCX_CMA=0.
#   With CASK_UCX_SHM=1 UCX chooses as it likes (shared memory where it can).
#   With UCX_TLS set, the user's list is kept (here tcp,self: tcp only).
#
#   shm_lanes.sh PROGRAM [ARGS...]      exit 0 pass, 1 fail
# PROGRAM is a cask test program of 3 ranks started by tests/dist/launch-local.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-lanes.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
np=3

# lanes NAME [ENV...]: runs the program with ENV, its output (the endpoint lines of
# every rank among it) in $tmp/NAME.log
lanes() {
  name=$1; shift
  if ! env -u UCX_TLS -u CASK_UCX_SHM "$@" CASK_UCX_EP_INFO=1 \
       timeout -k 5 120 "$here/launch-local.sh" $np $prog > "$tmp/$name.log" 2>&1; then
    echo "FAIL: $name: the program failed"; tail -n 20 "$tmp/$name.log"; exit 1
  fi
  n=$(grep -c '^cask ucx: rank [0-9]* -> rank [0-9]* (same host): ' "$tmp/$name.log")
  if [ "$n" -ne $((np * (np - 1))) ]; then
    echo "FAIL: $name: $n same-host endpoint lines, not $((np * (np - 1)))"
    cat "$tmp/$name.log"; exit 1
  fi
}
prog="$*"

lanes default
bad=$(grep '^cask ucx: rank .* (same host): ' "$tmp/default.log" | grep -E 'posix/|sysv/|xpmem/')
if [ -n "$bad" ]; then
  echo "FAIL: by default a same-host endpoint uses a shared-memory FIFO:"; echo "$bad"; exit 1
fi
echo "ok: default: no shared-memory FIFO between ranks of one host:"
grep '^cask ucx: rank 0 -> ' "$tmp/default.log"
# bulk data by CMA reads from UCX 1.22 on (CMA_MEMORY_INVALIDATE), on every same-host
# endpoint; with CASK_UCX_CMA=0, or an older UCX (1.13), by TCP alone
ver=$(sed -n 's/^cask ucx: rank 0 same-host transports (UCX \([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p' \
      "$tmp/default.log")
[ -n "$ver" ] || { echo "FAIL: no same-host transports line"; cat "$tmp/default.log"; exit 1; }
set -- $ver
if [ "$1" -gt 1 ] || [ "$2" -ge 22 ]; then
  grep -q 'rendezvous data by CMA reads' "$tmp/default.log" ||
    { echo "FAIL: UCX $1.$2 and no CMA:"; grep '^cask ucx: rank 0 ' "$tmp/default.log"; exit 1; }
  bad=$(grep '^cask ucx: rank .* (same host): ' "$tmp/default.log" | grep -v 'cma/')
  [ -z "$bad" ] || { echo "FAIL: CMA on, but an endpoint without it:"; echo "$bad"; exit 1; }
  echo "ok: default: rendezvous data by CMA reads on every same-host endpoint"
  lanes nocma CASK_UCX_CMA=0
  if grep -q 'cma/' "$tmp/nocma.log" || ! grep -q 'rendezvous data by TCP' "$tmp/nocma.log"; then
    echo "FAIL: CASK_UCX_CMA=0 kept CMA:"; grep '^cask ucx: rank 0 ' "$tmp/nocma.log"; exit 1
  fi
  echo "ok: CASK_UCX_CMA=0: TCP alone"
else
  grep -q 'rendezvous data by TCP' "$tmp/default.log" ||
    { echo "FAIL: UCX $1.$2 and CMA asked for:"; grep '^cask ucx: rank 0 ' "$tmp/default.log"; exit 1; }
  echo "ok: default: UCX $1.$2, older than 1.22: rendezvous data by TCP"
fi

lanes tls UCX_TLS=tcp,self
bad=$(grep '^cask ucx: rank .* (same host): ' "$tmp/tls.log" | grep -Ev '\): (tcp/[^ ]* ?)+$')
if [ -n "$bad" ]; then
  echo "FAIL: UCX_TLS=tcp,self was not kept:"; echo "$bad"; exit 1
fi
echo "ok: UCX_TLS=tcp,self kept"

lanes shm CASK_UCX_SHM=1
if grep -Eq '^cask ucx: rank .* \(same host\): .*(posix|sysv|xpmem)/' "$tmp/shm.log"; then
  echo "ok: CASK_UCX_SHM=1: UCX's shared memory again:"
else
  echo "ok: CASK_UCX_SHM=1: UCX chose no shared memory on this host (allowed):"
fi
grep '^cask ucx: rank 0 -> ' "$tmp/shm.log"
exit 0
