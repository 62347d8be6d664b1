#!/bin/sh
# bench/dist_scale.sh: bench-dist-scale (bench/dist_scale.c) at each rank count given,
# one mpirun per count (tests/dist/run.sh: --oversubscribe, root allowed, hard timeout),
# REPS times each; the rows of every run, then the JSON lines in $JSON.
#
#   sh bench/dist_scale.sh [2 4 8 16 32]
#   BUILD=build REPS=3 IDLE=2 JSON=dist_scale.json TLS=tcp,self sh bench/dist_scale.sh 32
#
# TLS sets UCX_TLS for every rank (tcp,self: the transport between nodes, on loopback).
# CASK_LAUNCHER=local starts the ranks with the file bootstrap instead of mpirun.
set -u
B=${BUILD:-build}
REPS=${REPS:-3}
IDLE=${IDLE:-2}
JSON=${JSON:-dist_scale.json}
here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || set -- 2 4 8 16 32
[ -n "${TLS:-}" ] && export UCX_TLS="$TLS"
export CASK_UCX_EP_INFO=1   # the phases of the UCX connect, one line per rank
label=${TLS:-default}
echo "# $(uname -n), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), UCX_TLS=${UCX_TLS:-default}, idle ${IDLE}s"
first=1
for np in "$@"; do
  i=0
  while [ $i -lt "$REPS" ]; do
    out=$(CASK_TEST_TIMEOUT=${CASK_TEST_TIMEOUT:-300} "$here/../tests/dist/run.sh" "$np" \
          "$B/bench/bench-dist-scale" --idle "$IDLE" --label "$label" --json "$JSON" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then echo "$out" | tail -n 20; echo "FAIL: $np ranks, exit $rc"; exit 1; fi
    if [ $first = 1 ]; then echo "$out" | grep '^ranks' | sed 's/$/   connect: exchange endpoints handshakes ms (median)/'; first=0; fi
    # CASK_UCX_EP_INFO's line per rank: "... connected to P ranks in T ms: addresses
    # exchanged A ms, P endpoints created E ms, handshakes H ms"
    phases=$(echo "$out" | grep 'connected to .* ranks in' | awk '{
        a[NR] = $(NF-9); e[NR] = $(NF-4); h[NR] = $(NF-1) }
      function med(v, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
        if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t } return v[int(n / 2) + 1] }
      END { if (NR) printf "%.3f %.3f %.3f", med(a, NR), med(e, NR), med(h, NR) }')
    echo "$out" | grep '^{' > /dev/null || { echo "FAIL: no figures from $np ranks"; exit 1; }
    if [ -n "$phases" ]; then
      read -r pa pe ph <<EOF
$phases
EOF
      for f in "exchange $pa" "endpoints $pe" "handshakes $ph"; do
        printf '{"bench":"dist_scale","label":"%s","ranks":%d,"figure":"connect_%s","unit":"ms","median":%s,"case":"connect_%s (ms)","impl":"%s"}\n' \
          "$label" "$np" "${f%% *}" "${f#* }" "${f%% *}" "$label" >> "$JSON"
      done
      echo "$(echo "$out" | grep -E '^ +[0-9]+ ')$(printf '   %8.1f %9.1f %10.1f' "$pa" "$pe" "$ph")"
    else
      echo "$out" | grep -E '^ +[0-9]+ '
    fi
    i=$((i + 1))
  done
done
echo "(median / largest over the ranks of each run; JSON lines in $JSON)"
