#!/bin/sh
# bench/device_inflight.sh: bench-knn on 2 GPUs for builds of the GPU workers' in-flight
# rule (MIN_INFLIGHT, INFLIGHT_BUDGET_NS in scheduler/worker_gpu.h, set at build time),
# alternated in rounds on one machine: every case (even / uneven / hog) at the default 16
# chunks, then even and hog at 32 and 64 chunks. One line per run (cask / static split),
# logs under $OUT (default ./out).
#   . .devdeps/setup.sh; sh bench/device_inflight.sh ROUNDS NAME=C_ARGS...
# e.g. the default against two depths (bench/RESULTS.md section 17):
#   sh bench/device_inflight.sh 2 def= m2=-DMIN_INFLIGHT=2 b2=-DINFLIGHT_BUDGET_NS=2000000ull
set -u
rounds=${1:?usage: device_inflight.sh ROUNDS NAME=C_ARGS...}
shift
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
for v in "$@"; do
  n=${v%%=*} a=${v#*=}
  B=build-if-$n
  if [ ! -f "$B/build.ninja" ]; then
    meson setup "$B" -Dbuildtype=release -Dgpu_arch=${GPU_ARCH:-sm_90} -Dtests=disabled \
      ${a:+-Dc_args=$a} > "$OUT/setup-$n.log" 2>&1 || { tail -5 "$OUT/setup-$n.log"; exit 1; }
  fi
  ninja -C "$B" bench/bench-knn > "$OUT/build-$n.log" 2>&1 ||
    { grep -E "error|FAILED" "$OUT/build-$n.log" | head; exit 1; }
done
run() {   # NAME LOG ARGS...: one bench-knn run, its ratios
  n=$1 log=$2; shift 2
  timeout 300 "build-if-$n/bench/bench-knn" "$@" --reps 7 --check 0 > "$OUT/$log.log" 2>&1
  echo "$log rc=$?: $(grep -h 'ratio' "$OUT/$log.log" | grep -v '^{' | awk '{print $1, $NF}' | tr '\n' ' ')"
}
r=1
while [ "$r" -le "$rounds" ]; do
  for v in "$@"; do
    n=${v%%=*}
    run "$n" "${n}_all_$r"
    for c in 524288 262144; do
      for k in even hog; do run "$n" "${n}_c${c}_${k}_$r" --case $k --chunk $c; done
    done
  done
  r=$((r + 1))
done
