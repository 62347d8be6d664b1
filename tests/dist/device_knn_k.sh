#!/bin/sh
# tests/dist/device_knn_k.sh: cask-knn's K-nearest and pruned searches across processes,
# on GPUs: one process on GPU 0, one process on all GPUs, and one process per GPU (file
# bootstrap, as tests/dist/device.sh); the output must be the same bytes from each.
# 2^24 x 2^14, medians of 5 computes. Logs under $OUT (or ./out).
#   sh tests/dist/device_knn_k.sh [BUILD_DIR]
set -u
B=${1:-build-dist}
OUT=${OUT:-out}
mkdir -p "$OUT"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 2 ] || { echo "SKIP: $ngpu GPU(s), 2 needed"; exit 77; }
ninja -C "$B" apps/cask-knn > "$OUT/knnk_build.log" 2>&1 || { tail -20 "$OUT/knnk_build.log"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cask-knnk.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for m in "k8:--k 8" "pruned:--method pruned" "auto:--method auto"; do
  name=${m%%:*}
  K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --repeat 5 --check 512 ${m#*:}"
  CUDA_VISIBLE_DEVICES=0 $K --out "$tmp/one_gpu.npy" > "$OUT/knnk_${name}_1gpu.txt" 2>&1 || fail=1
  $K --out "$tmp/one_proc.npy" > "$OUT/knnk_${name}_1proc.txt" 2>&1 || fail=1
  CASK_GPU_PER_RANK=1 tests/dist/launch-local.sh "$ngpu" $K --out "$tmp/procs.npy" \
    > "$OUT/knnk_${name}_procs.txt" 2>&1 || fail=1
  for f in 1gpu 1proc procs; do
    echo "$name $f: $(grep -E 'GPU|method|compute|check: [0-9]' "$OUT/knnk_${name}_$f.txt" |
                      sed 's/^cask-knn: //' | tr '\n' ' ')"
  done
  if cmp "$tmp/one_gpu.npy" "$tmp/one_proc.npy" && cmp "$tmp/one_gpu.npy" "$tmp/procs.npy"; then
    echo "$name: identical bytes ($(wc -c < "$tmp/one_gpu.npy"))"
  else
    echo "FAIL: $name: the outputs differ"
    fail=1
  fi
  rm -f "$tmp"/*.npy
done
exit $fail
