. .devdeps/setup.sh
unset UCX_MODULE_DIR
python3 -m pip install --no-deps --no-index -q .devdeps/libucx_cu13-*.whl 2>&1 | tail -1
export OUT
rm -rf build-gpux
sh tests/dist/device_gpux.sh build-gpux > $OUT/gpux.txt 2>&1
grep -v "^\[" $OUT/gpux.txt | tail -42
echo "=== dashboard"
grep -i "dashboard" build-gpux/meson-logs/meson-log.txt | tail -1
ninja -C build-gpux bench/bench-sched > $OUT/build2.log 2>&1 || tail -20 $OUT/build2.log
CASK_DASHBOARD=127.0.0.1:18787 ./build-gpux/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 150 > $OUT/knn_dash.txt 2>&1 &
kp=$!
python3 bench/dash_capture.py http://127.0.0.1:18787 8 $OUT/knn_dash.json 2>&1 | tail -2
wait $kp; grep -E "time|pairs" $OUT/knn_dash.txt
./build-gpux/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 150 > $OUT/knn_nodash.txt 2>&1; grep -E "time|pairs" $OUT/knn_nodash.txt
ROUNDS=7 sh bench/dash_overhead.sh build-gpux 16 > $OUT/dash_overhead.txt 2>&1; grep -v '^{' $OUT/dash_overhead.txt | tail -12
