#!/bin/sh
# bench/device_knn15.sh: issue 15 on the GPU machine: builds cask-knn and the knn GPU
# tests only, runs the gpu-suite knn tests, then times 2^24 x 2^14 (uniform and
# clustered) brute force against pruned, K = 1 and K = 16, comparing outputs with cmp.
# Logs under $OUT (build.log, tests.log, timings.log, trace.log).
#   OUT=/tmp/out sh bench/device_knn15.sh
set -u
OUT=${OUT:-device-logs}
mkdir -p "$OUT"
[ -f .devdeps/setup.sh ] && . .devdeps/setup.sh
B=${BUILD:-build-k15}
T=${TMPDIR:-/tmp}/knn15
mkdir -p "$T"
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dgpu_arch=${GPU_ARCH:-sm_90} -Ducx=disabled -Dnccl=disabled -Dpmix=disabled \
    -Ddashboard=disabled -Dbench_peers=disabled > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
fi
ninja -C "$B" apps/cask-knn tests/test_knn_k_gpu tests/test_knn_gpu tests/test_knn_k \
  >> "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
git log --oneline -1

echo "=== tests (knn_k_gpu, knn_gpu, knn_k)"
for t in test_knn_k_gpu test_knn_gpu test_knn_k; do
  timeout 300 "$B/tests/$t" --verbose > "$T/$t.log" 2>&1
  echo "$t rc=$?"
  cat "$T/$t.log" >> "$OUT/tests.log"
  grep -E "Synthesis|FAIL|SKIP|Assert|expected|vs" "$T/$t.log" | head -12
done

K="$B/apps/cask-knn"
L="$OUT/timings.log"
run() { # name, args...: one timed run; prints the summary's key lines
  name=$1; shift
  echo "--- $name: cask-knn $*" >> "$L"
  timeout 300 "$K" "$@" >> "$L" 2>&1
  rc=$?
  echo "$name rc=$rc: $(tail -12 "$L" | grep -E 'method|time:|check:.*force' | tr '\n' ' ')"
}
same() { if cmp -s "$1" "$2"; then echo "cmp $1 $2: identical"; else echo "cmp $1 $2: DIFFER"; cmp "$1" "$2" | head -2; fi; }

U="--generate 2^24 2^14 --seed 7"
C="--generate 2^24 2^14 --seed 7 --clusters 300"
echo "=== uniform 2^24 x 2^14, K = 1"
run brute1 $U --method brute --repeat 5 --out "$T/b1.npy"
run pruned1 $U --method pruned --repeat 5 --out "$T/p1.npy" --check 2048
run auto1 $U --method auto --repeat 5 --out "$T/a1.npy"
run brute1_again $U --method brute --repeat 5
same "$T/b1.npy" "$T/p1.npy"; same "$T/b1.npy" "$T/a1.npy"
echo "=== pruned K = 1, other chunk sizes"
run pruned1_c21 $U --method pruned --repeat 5 --chunk 2^21
run pruned1_c22 $U --method pruned --repeat 5 --chunk 2^22
run pruned1_c19 $U --method pruned --repeat 5 --chunk 2^19
echo "=== uniform, K = 16"
run brute16 $U --k 16 --method brute --repeat 3 --out "$T/b16.npy"
run pruned16 $U --k 16 --method pruned --repeat 3 --out "$T/p16.npy" --check 256
same "$T/b16.npy" "$T/p16.npy"
rm -f "$T/b16.npy" "$T/p16.npy"
echo "=== clustered (300 blobs), K = 1 and 16"
run cbrute1 $C --method brute --repeat 5 --out "$T/cb1.npy"
run cpruned1 $C --method pruned --repeat 5 --out "$T/cp1.npy" --check 2048
run cauto1 $C --method auto --repeat 5
same "$T/cb1.npy" "$T/cp1.npy"
run cbrute16 $C --k 16 --method brute --repeat 3
run cpruned16 $C --k 16 --method pruned --repeat 3 --check 256
echo "=== K = 64, 2^22 x 2^14"
run brute64 --generate 2^22 2^14 --seed 7 --k 64 --method brute --repeat 3 --out "$T/b64.npy"
run pruned64 --generate 2^22 2^14 --seed 7 --k 64 --method pruned --repeat 3 --out "$T/p64.npy"
same "$T/b64.npy" "$T/p64.npy"
rm -f "$T"/*.npy
echo "=== adversarial: all in one spot (auto must not prune)"
run onespot_auto --generate 2^22 2^14 --seed 7 --clusters 1 --method auto --repeat 3
run onespot_brute --generate 2^22 2^14 --seed 7 --clusters 1 --method brute --repeat 3
run onespot_pruned --generate 2^22 2^14 --seed 7 --clusters 1 --method pruned --repeat 3
echo "=== trace of one pruned run (transfers vs kernels)"
CASK_TRACE="$T/trace.json" timeout 120 "$K" $U --method pruned -q > "$OUT/trace.log" 2>&1
python3 bench/trace_overlap.py "$T/trace.json" >> "$OUT/trace.log" 2>&1
tail -25 "$OUT/trace.log"
python3 - "$T/trace.json" >> "$OUT/trace.log" 2>&1 <<'PY'
import json, sys, collections
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
tot = collections.defaultdict(lambda: [0, 0.0, 1e30, 0.0])
for e in ev:
    if e.get("ph") == "X":
        k = e.get("name", "?").split("[")[0]
        t = tot[k]
        t[0] += 1; t[1] += e["dur"]; t[2] = min(t[2], e["ts"]); t[3] = max(t[3], e["ts"] + e["dur"])
for k, (n, d, a, b) in sorted(tot.items(), key=lambda x: -x[1][1])[:20]:
    print(f"{k:30s} n={n:5d} sum={d/1000:9.3f} ms  span {a/1000:9.3f} .. {b/1000:9.3f} ms")
PY
tail -22 "$OUT/trace.log"
