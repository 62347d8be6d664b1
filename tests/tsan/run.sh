#!/bin/sh
# tests/tsan/run.sh: the scheduler's ThreadSanitizer check. Criterion cannot start under
# TSan (its issue #274), so the core test files are compiled against the small stand-in
# in tests/tsan/criterion/ (each test forked, one at a time). UCX is left out: its memory
# hooks crash under TSan. Prints each file's summary and the number of reports; exits 1
# if any test failed or TSan reported anything.
#   sh tests/tsan/run.sh [BUILD_DIR]
set -u
# (built without CUDA: CASK_TEST_HAVE_CUDA=0 tells the tests so, as meson test does)
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
B=${1:-build-tsan}
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" "$top" -Db_sanitize=thread -Db_lundef=false -Dcuda=disabled -Ducx=disabled \
    -Dpmix=disabled > "$B.setup.log" 2>&1 || { tail -20 "$B.setup.log"; exit 1; }
fi
ninja -C "$B" libcask.so tests/stress_sched > /dev/null || exit 1
bad=0
# test_<file>.c:<its Criterion suite> (the stress suites are left out)
for c in graph_deps:graph graph_misuse:graph graph_run:graph graph_task:graph \
         graph_scale:graph sched:sched data_host:data data_coherence:data data_evict:data \
         data_random:data async:async dynamic:dynamic future:future subflow:subflow \
         graph_build:graph_build graph_build_deps:graph_build graph_succ:graph_succ \
         perfmodel:perfmodel linalg:linalg; do
  t=${c%%:*}
  cc -fsanitize=thread -g -O1 -I"$here" -I"$top/include" -I"$top/tests" -I"$top" "$top/tests/test_$t.c" \
     -o "$B/tsan_$t" -L"$B" -lcask -Wl,-rpath,"$(cd "$B" && pwd)" -lpthread -lm || exit 1
  CASK_TEST_HAVE_CUDA=0 TSAN_OPTIONS="halt_on_error=0" "$B/tsan_$t" "${c#*:}/*" > "$B/tsan_$t.log" 2>&1 || bad=1
  n=$(grep -c 'WARNING: ThreadSanitizer' "$B/tsan_$t.log")
  echo "$t: $(tail -n 1 "$B/tsan_$t.log"), $n reports"
  [ "$n" -eq 0 ] || bad=1
done
TSAN_OPTIONS="halt_on_error=0" "$B/tests/stress_sched" 2 > "$B/tsan_stress.log" 2>&1 || bad=1
n=$(grep -c 'WARNING: ThreadSanitizer' "$B/tsan_stress.log")
echo "stress_sched: $(tail -n 1 "$B/tsan_stress.log"), $n reports"
[ "$n" -eq 0 ] || bad=1
# GPU workers against a slowed simulated GPU: tasks in flight on its virtual clock,
# late binding, placement by expected finish (tests/tsan/sim_gpus.c)
cc -fsanitize=thread -g -O1 -I"$top/include" -I"$top/bench" -I"$top/tests" "$here/sim_gpus.c" "$top/tests/sim_load.c" \
   -o "$B/tsan_sim_gpus" -L"$B" -lcask -Wl,-rpath,"$(cd "$B" && pwd)" -lpthread -lm || exit 1
TSAN_OPTIONS="halt_on_error=0" "$B/tsan_sim_gpus" > "$B/tsan_simgpus.log" 2>&1 || bad=1
n=$(grep -c 'WARNING: ThreadSanitizer' "$B/tsan_simgpus.log")
echo "sim_gpus: $(grep -c ' cask ' "$B/tsan_simgpus.log") cases, $n reports"
[ "$n" -eq 0 ] || bad=1
exit $bad
