#!/bin/sh
# bench/device_knn15_final.sh: the issue-15 acceptance timing only (short): builds cask-knn,
# then 2^24 x 2^14 uniform, brute force vs pruned (default chunking) vs auto, in one run,
# outputs compared with cmp. Log: $OUT/final.log.
set -u
OUT=${OUT:-device-logs}
mkdir -p "$OUT"
[ -f .devdeps/setup.sh ] && . .devdeps/setup.sh
B=${BUILD:-build-k15}
T=${TMPDIR:-/tmp}/knn15f
mkdir -p "$T"
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dgpu_arch=${GPU_ARCH:-sm_90} -Ducx=disabled -Dnccl=disabled -Dpmix=disabled \
    -Ddashboard=disabled -Dbench_peers=disabled -Dtests=disabled > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
fi
ninja -C "$B" apps/cask-knn >> "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head; exit 1; }
K="$B/apps/cask-knn"
U="--generate 2^24 2^14 --seed 7"
L="$OUT/final.log"
for run in "brute --out $T/b.npy" "pruned --out $T/p.npy --check 2048" "auto --out $T/a.npy" brute pruned; do
  echo "--- cask-knn $U --repeat 7 --method $run" >> "$L"
  timeout 60 $K $U --repeat 7 --method $run >> "$L" 2>&1
  echo "method $run rc=$?: $(tail -6 "$L" | grep -E 'chunks|method|time:|force' | tr '\n' ' ')"
done
for f in p a; do cmp "$T/b.npy" "$T/$f.npy" && echo "cmp b.npy $f.npy: identical"; done
