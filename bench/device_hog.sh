#!/bin/sh
# bench/device_hog.sh: the hog case of bench-knn (a competing load on the last GPU) on
# 2 GPUs, with what tells where cask's time goes, logs under $OUT (default ./out):
#   1. bench-knn --case hog --reps 7, twice (cask against the static split, both under
#      the load; results compared);
#   2. the same once with CASK_STATS=1 CASK_LOG=debug (per-worker tasks and steals, the
#      late-binding decisions) and CASK_TRACE=$OUT/hog.json (every task on its GPU);
#   3. --case even with a trace too ($OUT/even.json), the same run without the load.
#   . .devdeps/setup.sh; sh bench/device_hog.sh [BUILD_DIR]
set -u
B=${1:-build-hog}
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$NG" -ge 2 ] || { echo "device_hog: $NG GPU(s): the hog case needs 2"; exit 1; }
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dbuildtype=release -Dgpu_arch=${GPU_ARCH:-sm_90} -Dtests=disabled \
    > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C "$B" bench/bench-knn > "$OUT/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
K="$B/bench/bench-knn"
for i in 1 2; do
  timeout 300 "$K" --case hog --reps 7 --check 0 > "$OUT/hog_$i.log" 2>&1
  echo "hog run $i rc=$?"; grep -v '^{' "$OUT/hog_$i.log" | grep -E "^hog|differ"
done
CASK_STATS=1 CASK_LOG=debug CASK_TRACE="$OUT/hog.json" timeout 300 "$K" --case hog --reps 5 \
  --check 0 > "$OUT/hog_diag.log" 2>&1
echo "hog diag rc=$?: $(grep -c ' leaves ' "$OUT/hog_diag.log") tasks left to a faster GPU"
grep -v '^{' "$OUT/hog_diag.log" | grep -E "^hog|differ"
CASK_STATS=1 CASK_TRACE="$OUT/even.json" timeout 300 "$K" --case even --reps 5 --check 0 \
  > "$OUT/even_diag.log" 2>&1
echo "even diag rc=$?"; grep -v '^{' "$OUT/even_diag.log" | grep -E "^even|differ"
ls -la "$OUT"
# 4. finer chunks (64 rather than 16): how much of the loss is the split's granularity
timeout 300 "$K" --case hog --reps 7 --check 0 --chunk 262144 > "$OUT/hog_c64.log" 2>&1
echo "hog, 64 chunks rc=$?"; grep -v '^{' "$OUT/hog_c64.log" | grep -E "^hog|differ"
