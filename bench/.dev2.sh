. .devdeps/setup.sh
unset UCX_MODULE_DIR
python3 -m pip install --no-deps --no-index -q .devdeps/libucx_cu13-*.whl 2>&1 | tail -1
W=/tmp/w; mkdir -p $W; B=build-gpux
if [ ! -f $B/build.ninja ]; then meson setup $B -Dbuildtype=release -Dgpu_arch=sm_90 > $W/setup.log 2>&1 || tail -20 $W/setup.log; fi
ninja -C $B apps/cask-knn apps/cask-jacobi apps/cask-knn-gen bench/bench-xport bench/bench-sched > $W/build.log 2>&1 || { grep -E "error|FAILED" $W/build.log | head; }
grep -E "UCX|dashboard" $B/meson-logs/meson-log.txt | tail -2
L=tests/dist/launch-local.sh
echo "== xport"; $L 2 $B/bench/bench-xport --gpu-only --json $OUT/xport_gpu.jsonl 2>&1 | grep -v "^\[" | tail -13
J="$B/apps/cask-jacobi --n 16384 --iters 400"
for i in 1 2 3; do $J | grep -h "^sweeps"; $L 2 $J | grep -h "^sweeps"; done > $OUT/jacobi.txt 2>&1; cat $OUT/jacobi.txt
K="$B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 9"
$K --out $W/k1.npy 2>&1 | grep "time:"; $L 2 $K --out $W/k2.npy 2>&1 | grep "time:"; cmp $W/k1.npy $W/k2.npy && echo knn identical
echo "== dashboard"
CASK_DASHBOARD=127.0.0.1:18787 $B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 150 > $W/kd.txt 2>&1 &
kp=$!; sleep 1
python3 bench/dash_capture.py http://127.0.0.1:18787 7 $OUT/knn_dash.json 2>&1 | tail -1
wait $kp; grep "time:" $W/kd.txt
$B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 150 2>&1 | grep "time:"
ROUNDS=7 sh bench/dash_overhead.sh $B 16 > $OUT/dash_overhead.txt 2>&1; grep -v '^{' $OUT/dash_overhead.txt | tail -10
