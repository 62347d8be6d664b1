#!/bin/sh
# bench/device_multigpu17.sh: issue 17's measurements on 2 GPUs of one host
# (nvidia-h200-x2 or -x4), in one device call, logs under $OUT (default ./out):
#   1. bench-knn --reps 7 (even / uneven / hog: competing load on the last GPU), twice,
#      then once more with statistics and late-binding decisions (CASK_STATS,
#      CASK_LOG=debug: how many "GPU n leaves ..." lines, per-worker steals);
#   2. cask-jacobi --n 16384 --iters 400: one process on both GPUs against two
#      processes with one GPU each, halos by the UCX CUDA path, by NCCL and by the
#      automatic choice; each with CASK_GPU_PER_RANK=1 (each rank sees its GPU only) and
#      without (each rank sees both and prefers its own: CUDA IPC between the
#      processes needs both visible); a first round with --out compares every
#      configuration's grid with one process's, byte for byte (not timed);
#   3. cask-knn 2^24 x 2^14, default reference chunk and --ref-chunk 4096: one process
#      against two (auto route), outputs compared byte for byte;
#   4. bench-xport --gpu-only --nccl between the two processes (each sees both GPUs, so
#      rank 0 also times cudaMemcpyPeer GPU 0 -> GPU 1 in one process): cask's UCX CUDA
#      path and NCCL against cudaMemcpyPeer and NCCL's own send/recv; and once with one
#      GPU per rank.
# Every figure is a median over the program's repeats (REPS rounds of jacobi); the
# summary at the end is what goes to bench/RESULTS.md (section 14.3).
#   . .devdeps/setup.sh; sh bench/device_multigpu17.sh [BUILD_DIR]
# (the script sources .devdeps/setup.sh and installs the libucx-cu13 wheel from .devdeps
# itself where they are there: nothing is fetched, the machine has no network.)
set -u
B=${1:-build-mg17}
OUT=${OUT:-out}
REPS=${REPS:-3}
mkdir -p "$OUT"
if [ -f .devdeps/setup.sh ]; then
  . .devdeps/setup.sh
  unset UCX_MODULE_DIR   # the wheel's UCX loads its own transport modules
  for w in .devdeps/libucx_cu13-*.whl; do
    [ -f "$w" ] && python3 -m pip install --no-deps --no-index -q "$w" 2>&1 | tail -1
  done
fi
export NCCL_NVLS_ENABLE=0   # NVLink multicast off, as .devdeps/setup.sh sets it
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$NG" -lt 2 ]; then
  echo "device_multigpu17: $NG GPU(s): these measurements need 2"
  exit 1
fi
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dbuildtype=release -Dgpu_arch=${GPU_ARCH:-sm_90} > "$OUT/setup.log" 2>&1 ||
    { tail -30 "$OUT/setup.log"; exit 1; }
fi
grep -E "UCX|NCCL|CUDA" "$OUT/setup.log" 2>/dev/null | head -5
ninja -C "$B" bench/bench-knn bench/bench-xport apps/cask-knn apps/cask-jacobi \
  > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
"$B/apps/cask-knn" --version | head -3
export CASK_LAUNCHER=local
L=tests/dist/launch-local.sh
T=timeout

echo "=== 1. bench-knn --reps 7: even / uneven / hog (cask vs the hand-threaded static split)"
for i in 1 2; do
  $T 300 "$B/bench/bench-knn" --reps 7 --check 4096 > "$OUT/knn_$i.log" 2>&1
  echo "run $i rc=$?"; grep -v '^{' "$OUT/knn_$i.log" | grep -E "^(even|uneven|hog)|ratio|differ"
done
CASK_STATS=1 CASK_LOG=debug $T 300 "$B/bench/bench-knn" --reps 3 --check 0 > "$OUT/knn_stats.log" 2>&1
echo "stats run rc=$? (reps 3): tasks left to a faster GPU: $(grep -c ' leaves ' "$OUT/knn_stats.log")"
grep -E "^(gpu|worker|hog|even|uneven)" "$OUT/knn_stats.log" | grep -v "ratio" | tail -12

echo "=== 2. cask-jacobi --n 16384 --iters 400: 1 process x 2 GPUs vs 2 processes x 1 GPU"
J="$B/apps/cask-jacobi --n 16384 --iters 400 --check 100"
R=/tmp/mg17_jac   # the grids (1 GiB each) stay off $OUT
# jac ROUND NAME ARGS...: one run, its "sweeps ... time" line
jac() {
  r=$1; n=$2; shift 2
  "$@" > "$OUT/jac_${n}_$r.txt" 2>&1
  printf "round %s %-16s rc=%d " "$r" "$n" $?; grep -h "^sweeps" "$OUT/jac_${n}_$r.txt" | head -1
}
i=0
while [ "$i" -le "$REPS" ]; do   # round 0: outputs, not counted in the medians
  o=""; [ $i = 0 ] && o="--out $R"
  jac $i one $T 120 $J --gpus 2 ${o:+$o.one}
  for route in ucx nccl auto; do
    for vis in own both; do
      if [ $vis = own ]; then export CASK_GPU_PER_RANK=1; else unset CASK_GPU_PER_RANK; fi
      export CASK_DIST_GPU_XPORT=$route
      jac $i ${route}_$vis $T 180 $L 2 $J ${o:+$o.${route}_$vis}
    done
  done
  unset CASK_GPU_PER_RANK CASK_DIST_GPU_XPORT
  # UCX's shared memory for the messages (CASK_UCX_SHM=1, the default before session 6;
  # now TCP on loopback between the ranks of a host: transport/ucx_config.c)
  jac $i ucx_both_shm env CASK_UCX_SHM=1 CASK_DIST_GPU_XPORT=ucx $T 180 $L 2 $J ${o:+$o.ucx_both_shm}
  if [ $i = 0 ]; then
    for f in $R.*_*; do
      cmp -s $R.one "$f" && echo "jacobi grid identical to one process's: ${f#$R.}" ||
        echo "jacobi grid DIFFERS from one process's: ${f#$R.}"
    done
    rm -f $R.*
  fi
  i=$((i + 1))
done

echo "=== 3. cask-knn 2^24 x 2^14: 1 process x 2 GPUs vs 2 processes x 1 GPU"
for rc in 16384 4096; do
  K="$B/apps/cask-knn --generate 2^24 2^14 --seed 1 --ref-chunk $rc --repeat 9 --check 512"
  $T 200 $K --out /tmp/mg17_one_$rc.npy > "$OUT/knn_one_$rc.txt" 2>&1
  echo "ref-chunk $rc, 1 process rc=$?"; grep -E "compute|check: [0-9]|rror" "$OUT/knn_one_$rc.txt"
  for vis in own both; do
    if [ $vis = own ]; then export CASK_GPU_PER_RANK=1; else unset CASK_GPU_PER_RANK; fi
    $T 200 $L 2 $K --out /tmp/mg17_two_$rc.npy > "$OUT/knn_two_${rc}_$vis.txt" 2>&1
    echo "ref-chunk $rc, 2 processes ($vis GPU visible) rc=$?"
    grep -E "compute|check: [0-9]|rror" "$OUT/knn_two_${rc}_$vis.txt"
    cmp /tmp/mg17_one_$rc.npy /tmp/mg17_two_$rc.npy && echo "outputs identical"
  done
  unset CASK_GPU_PER_RANK
  rm -f /tmp/mg17_one_$rc.npy /tmp/mg17_two_$rc.npy
done

echo "=== 4. bench-xport --gpu-only --nccl: GPU to GPU between the processes"
$T 300 $L 2 "$B/bench/bench-xport" --gpu-only --nccl --no-perftest --json "$OUT/xport_both.jsonl" \
  > "$OUT/xport_both.txt" 2>&1
echo "both GPUs visible rc=$?"; grep -v '^{' "$OUT/xport_both.txt" | tail -40
CASK_GPU_PER_RANK=1 $T 300 $L 2 "$B/bench/bench-xport" --gpu-only --nccl --no-perftest \
  --json "$OUT/xport_own.jsonl" > "$OUT/xport_own.txt" 2>&1
echo "one GPU per rank rc=$?"; grep -v '^{' "$OUT/xport_own.txt" | tail -40

echo "=== summary (medians; REPS=$REPS jacobi rounds)"
python3 - "$OUT" "$REPS" <<'PY'
import glob, json, re, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def secs(pat):
    v = []
    for f in sorted(glob.glob(f"{out}/{pat}")):
        m = re.search(r"time ([0-9.]+) s", open(f).read())
        if m: v.append(float(m.group(1)))
    return statistics.median(v) if v else None
one = secs("jac_one_[1-9]*.txt")
print(f"jacobi 1x2: {one}")
for route in ("ucx", "nccl", "auto"):
    for vis in ("own", "both"):
        t = secs(f"jac_{route}_{vis}_[1-9]*.txt")
        print(f"jacobi 2x1 {route:4s} {vis:4s}: {t}  ratio {t/one:.3f}" if t and one else
              f"jacobi 2x1 {route} {vis}: no figure")
t = secs("jac_ucx_both_shm_[1-9]*.txt")
print(f"jacobi 2x1 ucx  both, CASK_UCX_SHM=1: {t}" + (f"  ratio {t/one:.3f}" if t and one else ""))
def comp(f):
    try:
        m = re.search(r"compute ([0-9.]+) s", open(f).read())
        return float(m.group(1)) if m else None
    except OSError:
        return None
for rc in (16384, 4096):
    a = comp(f"{out}/knn_one_{rc}.txt")
    for vis in ("own", "both"):
        b = comp(f"{out}/knn_two_{rc}_{vis}.txt")
        print(f"knn ref-chunk {rc} 1x2 {a} 2x1 ({vis}) {b}" + (f"  ratio {b/a:.3f}" if a and b else ""))
for f in ("knn_1.log", "knn_2.log"):
    for line in open(f"{out}/{f}"):
        if line.startswith("{") and '"impl":"cask"' in line:
            d = json.loads(line)
            print(f"{f} {d['case']:7s} cask/baseline {d['ratio_to_baseline']:.3f} "
                  f"(speed-up {1/d['ratio_to_baseline']:.3f})")
PY
