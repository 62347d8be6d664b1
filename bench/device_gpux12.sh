#!/bin/sh
# bench/device_gpux12.sh: issue 12's diagnosis on ONE GPU shared by two processes: where
# the fixed cost of a GPU-to-GPU transfer goes (bench-xport --gpu timeline, UCX knobs,
# ucx_perftest with CUDA memory), what two CUDA contexts time-sharing the GPU cost alone
# (two independent one-process runs at once vs one), and per-rank timelines of cask-jacobi
# and cask-knn across 2 processes (CASK_DIST_XFER_LOG, CASK_TRACE). Logs in $OUT/diag.tgz,
# a summary on stdout.
#   sh bench/device_gpux12.sh [STEPS...]   (steps: xport perftest jacobi knn (the first
#   diagnosis); gpuxtest xport2 jacobi2 knn2 (after the fixes); gpuxtest xport3 perftest
#   jacobi3 knn2 (the final figures); gpuxtest mps (with CUDA MPS and without, one run);
#   default: the first four)
set -u
B=${BUILD:-build-gpux12}
OUT=${OUT:-out}
L=tests/dist/launch-local.sh
export CASK_LAUNCHER=local
D=$(mktemp -d /tmp/gpux12.XXXXXX)
STEPS=${*:-xport perftest jacobi knn}
t0=$(date +%s)
el() { echo "[$(($(date +%s) - t0)) s]"; }
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dbuildtype=release -Dgpu_arch=${GPU_ARCH:-sm_90} -Dtests=disabled \
    -Ddashboard=disabled -Dbench_peers=disabled > "$D/setup.log" 2>&1 || { tail -20 "$D/setup.log"; exit 1; }
fi
grep -E "UCX|CUDA|NCCL" "$D/setup.log" 2>/dev/null | head -4
ninja -C "$B" apps/cask-knn apps/cask-jacobi bench/bench-xport > "$D/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$D/build.log" | head -20; exit 1; }
el; echo "built"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,compute_mode --format=csv,noheader
W=$(python3 -c 'import libucx, os; print(os.path.dirname(libucx.__file__))' 2>/dev/null)
# each rank its own trace / transfer log: run as  $TR PREFIX prog args
TR="sh -c 'CASK_TRACE=\$0.\$CASK_RANK.json CASK_DIST_XFER_LOG=\$0 exec \"\$@\"'"
bundle() { tar czf "$OUT/diag.tgz" -C "$D" . 2>/dev/null; }
trap bundle EXIT

for step in $STEPS; do case $step in
xport)
  echo "== bench-xport --gpu-only: timeline, UCX knobs (8 KiB, 2 MiB, 64 MiB; no staged column)"
  X="timeout 90 $L 2 $B/bench/bench-xport --gpu-only"
  export CASK_BENCH_GPU_STAGED=0 CASK_BENCH_GPU_SIZES=8192,2097152,67108864
  CASK_BENCH_GPU_TIMELINE=1 UCX_PROTO_INFO=y $X > "$D/xp_base.txt" 2>&1
  echo "-- default (rc=$?)"; grep -E "turns|timeline|bandwidth loop|^ +[0-9]+ " "$D/xp_base.txt"
  grep -iE "cuda|rndv" "$D/xp_base.txt" | grep -v "^ " | sort | uniq -c | sort -rn | head -12
  CASK_UCX_SPIN_US=200000 CASK_BENCH_GPU_TIMELINE=1 $X > "$D/xp_spin.txt" 2>&1
  echo "-- progress threads spinning (CASK_UCX_SPIN_US=200000) (rc=$?)"
  grep -E "timeline|bandwidth loop|^ +[0-9]+ " "$D/xp_spin.txt"
  for k in "UCX_RNDV_SCHEME=put_zcopy" "UCX_RNDV_SCHEME=get_zcopy" "UCX_PROTO_ENABLE=n" \
           "UCX_TLS=sm,self,cuda_copy,cuda_ipc"; do
    env $k $X > "$D/xp_$k.txt" 2>&1; echo "-- $k (rc=$?)"; grep -E "^ +[0-9]+ " "$D/xp_$k.txt"
  done
  unset CASK_BENCH_GPU_STAGED CASK_BENCH_GPU_SIZES
  el ;;
perftest)
  if [ -n "$W" ] && [ -x "$W/bin/ucx_perftest" ]; then
    env LD_LIBRARY_PATH=$W/lib $W/bin/ucx_info -c -f 2>/dev/null | grep -iE "^UCX_(CUDA|RNDV|PROTO|MEMTYPE|TLS)" > "$D/ucx_info_cfg.txt"
    for t in "ucp_am_lat -m cuda,cuda -s 8192 -n 2000" "ucp_am_lat -s 8192 -n 2000" \
             "ucp_am_bw -m cuda,cuda -s 67108864 -n 100"; do
      P="timeout 60 env LD_LIBRARY_PATH=$W/lib $W/bin/ucx_perftest -t $t -p 13999"
      $P > "$D/pt_srv.txt" 2>&1 & sp=$!
      sleep 1; $P 127.0.0.1 > "$D/pt_$(echo $t | tr ' ,' '__').txt" 2>&1
      echo "== ucx_perftest -t $t: rc=$?"; wait $sp
      tail -2 "$D/pt_$(echo $t | tr ' ,' '__').txt"
    done
  fi
  el ;;
jacobi)
  J="$B/apps/cask-jacobi --iters 400"
  echo "== cask-jacobi --n 16384 --iters 400: 1 process; 1 process --blocks 4; 2 processes"
  for i in 1 2; do
    $J --n 16384 > "$D/j1_$i.txt" 2>&1
    $J --n 16384 --blocks 4 > "$D/j1b4_$i.txt" 2>&1
    $L 2 $J --n 16384 > "$D/j2_$i.txt" 2>&1
    for f in j1 j1b4 j2; do printf "%-6s " $f; grep -h "^sweeps" "$D/${f}_$i.txt" | head -1; done
  done
  CASK_UCX_SPIN_US=200000 $L 2 $J --n 16384 > "$D/j2spin.txt" 2>&1
  printf "j2 spinning: "; grep -h "^sweeps" "$D/j2spin.txt"
  eval $L 2 $TR "$D/j2tl" $J --n 16384 > "$D/j2tl.txt" 2>&1
  printf "j2 traced:   "; grep -h "^sweeps" "$D/j2tl.txt"
  echo "== time-sharing: two independent 1-process runs of half the cells (--n 11586) at once vs alone"
  $J --n 11586 > "$D/jh_alone.txt" 2>&1
  $J --n 11586 > "$D/jh_a.txt" 2>&1 & pa=$!
  $J --n 11586 > "$D/jh_b.txt" 2>&1; wait $pa
  for f in jh_alone jh_a jh_b; do printf "%-9s " $f; grep -h "^sweeps" "$D/$f.txt"; done
  el ;;
knn)
  K="$B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 5"
  echo "== cask-knn 2^24 x 2^14: 1 process, 2 processes, 2 processes traced"
  $K --out "$D/knn1.npy" > "$D/k1.txt" 2>&1; grep -hE "time" "$D/k1.txt"
  $L 2 $K --out "$D/knn2.npy" > "$D/k2.txt" 2>&1; grep -hE "time" "$D/k2.txt"
  cmp "$D/knn1.npy" "$D/knn2.npy" && echo "knn outputs identical"
  eval $L 2 $TR "$D/k2tl" $K --out "$D/knn2t.npy" > "$D/k2tl.txt" 2>&1; grep -hE "time" "$D/k2tl.txt"
  rm -f "$D"/*.npy
  echo "== time-sharing: two independent 1-process knn 2^23 x 2^14 at once vs alone"
  KH="$B/apps/cask-knn --generate 8388608 16384 --seed 7 --repeat 5"
  $KH > "$D/kh_alone.txt" 2>&1
  $KH > "$D/kh_a.txt" 2>&1 & pa=$!
  $KH > "$D/kh_b.txt" 2>&1; wait $pa
  for f in kh_alone kh_a kh_b; do printf "%-9s " $f; grep -h "time" "$D/$f.txt"; done
  el ;;
gpuxtest)   # the acceptance test: no host copy on the UCX GPU path
  CU=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
  T="$B/test_dist_gpux"
  ninja -C "$B" libcask.so > /dev/null 2>&1
  cc -std=c11 -O2 -D_GNU_SOURCE -DCASK_HAVE_CUDA=1 -DCASK_HAVE_UCX=1 -Iinclude -I. -Itests/dist -I"$CU/include" tests/dist/test_gpux.c \
     -o "$T" -L"$B" -lcask -Wl,-rpath,"$PWD/$B" -L"$CU/lib64" -lcudart || echo "test_dist_gpux: build failed"
  for a in "auto 8192" "auto 4" "auto 65536" "host 8192"; do   # KiB
    tests/dist/run.sh 2 --need-gpus 1 "$T" $a > "$D/gpux_$(echo $a | tr ' ' _).txt" 2>&1
    echo "test_dist_gpux $a: rc=$?"; grep -E "CUDA memory|run 2|staging|ok|failed" "$D/gpux_$(echo $a | tr ' ' _).txt" | head -4
  done
  el ;;
xport2)
  echo "== bench-xport --gpu-only (8 KiB .. 256 MiB, no staged column): default, CUDA polling 0 / 20 us"
  X="timeout 90 $L 2 $B/bench/bench-xport --gpu-only"
  export CASK_BENCH_GPU_STAGED=0 CASK_BENCH_GPU_SIZES=8192,2097152,67108864,268435456
  CASK_BENCH_GPU_TIMELINE=1 $X > "$D/xp2_base.txt" 2>&1
  echo "-- default (rc=$?)"; grep -E "turns|timeline|bandwidth loop|^ +[0-9]+ |bytes" "$D/xp2_base.txt"
  for p in 0 20; do
    CASK_BENCH_GPU_TIMELINE=1 CASK_UCX_CUDA_POLL_US=$p $X > "$D/xp2_poll$p.txt" 2>&1
    echo "-- CASK_UCX_CUDA_POLL_US=$p (rc=$?)"; grep -E "timeline|^ +[0-9]+ " "$D/xp2_poll$p.txt"
  done
  unset CASK_BENCH_GPU_STAGED CASK_BENCH_GPU_SIZES
  el ;;
jacobi2)
  J="$B/apps/cask-jacobi --iters 400"
  echo "== cask-jacobi --n 16384 --iters 400: 1 process, 2 processes (default, CUDA polling 0 / 20 us, put_zcopy + polling 0)"
  for i in 1 2 3; do
    $J --n 16384 > "$D/j1_$i.txt" 2>&1
    $L 2 $J --n 16384 > "$D/j2_$i.txt" 2>&1
    CASK_UCX_CUDA_POLL_US=0 $L 2 $J --n 16384 > "$D/j2p0_$i.txt" 2>&1
    CASK_UCX_CUDA_POLL_US=20 $L 2 $J --n 16384 > "$D/j2p20_$i.txt" 2>&1
    UCX_RNDV_SCHEME=put_zcopy CASK_UCX_CUDA_POLL_US=0 $L 2 $J --n 16384 > "$D/j2put_$i.txt" 2>&1
    for f in j1 j2 j2p0 j2p20 j2put; do printf "%-6s " $f; grep -h "^sweeps" "$D/${f}_$i.txt" | head -1; done
  done
  CASK_DIST_GPU_XPORT=host $L 2 $J --n 16384 > "$D/j2host.txt" 2>&1
  printf "j2 host path: "; grep -h "^sweeps" "$D/j2host.txt"
  eval $L 2 $TR "$D/j2tl" $J --n 16384 > "$D/j2tl.txt" 2>&1
  printf "j2 traced:   "; grep -h "^sweeps" "$D/j2tl.txt"
  python3 bench/xfer_timeline.py "$D/j2tl" 2 | tail -12
  r1=$(grep -ho "residual [^ ]*" "$D/j1_1.txt" | head -1); r2=$(grep -ho "residual [^ ]*" "$D/j2_1.txt" | head -1)
  [ "$r1" = "$r2" ] && echo "jacobi residuals identical ($r1)" || echo "jacobi residuals DIFFER: '$r1' vs '$r2'"
  $J --n 1026 --iters 200 --out "$D/jo1.raw" > /dev/null 2>&1; $L 2 $J --n 1026 --iters 200 --out "$D/jo2.raw" > /dev/null 2>&1
  cmp "$D/jo1.raw" "$D/jo2.raw" && echo "jacobi --n 1026 --out: 1 and 2 processes identical"; rm -f "$D"/*.raw
  echo "== time-sharing: two independent 1-process runs of half the cells (--n 11586) at once vs alone"
  for i in 1 2; do
    $J --n 11586 > "$D/jh_alone$i.txt" 2>&1
    $J --n 11586 > "$D/jh_a$i.txt" 2>&1 & pa=$!
    $J --n 11586 > "$D/jh_b$i.txt" 2>&1; wait $pa
    for f in jh_alone$i jh_a$i jh_b$i; do printf "%-9s " $f; grep -h "^sweeps" "$D/$f.txt"; done
  done
  el ;;
knn2)
  K="$B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 9"
  echo "== cask-knn 2^24 x 2^14 --repeat 9: 1 process, 2 processes (twice each)"
  for i in 1 2; do
    $K --out "$D/knn1.npy" > "$D/k1_$i.txt" 2>&1; grep -hE "time" "$D/k1_$i.txt"
    $L 2 $K --out "$D/knn2.npy" > "$D/k2_$i.txt" 2>&1; grep -hE "time" "$D/k2_$i.txt"
    cmp "$D/knn1.npy" "$D/knn2.npy" && echo "knn outputs identical"
  done
  rm -f "$D"/*.npy
  echo "== time-sharing: two independent 1-process knn 2^23 x 2^14 at once vs alone"
  KH="$B/apps/cask-knn --generate 8388608 16384 --seed 7 --repeat 9"
  $KH > "$D/kh_alone.txt" 2>&1
  $KH > "$D/kh_a.txt" 2>&1 & pa=$!
  $KH > "$D/kh_b.txt" 2>&1; wait $pa
  for f in kh_alone kh_a kh_b; do printf "%-9s " $f; grep -h "time" "$D/$f.txt"; done
  el ;;
xport3)   # the acceptance table: every size, staged column, default settings; then polling
  echo "== bench-xport --gpu-only (8 KiB .. 256 MiB), default settings"
  X="timeout 120 $L 2 $B/bench/bench-xport --gpu-only"
  CASK_BENCH_GPU_TIMELINE=1 $X --json "$D/xp3.jsonl" > "$D/xp3_base.txt" 2>&1
  echo "-- default (rc=$?)"; grep -E "turns|timeline|bandwidth loop|^ +[0-9]+ |bytes|fitted" "$D/xp3_base.txt"
  CASK_BENCH_GPU_STAGED=0 CASK_BENCH_GPU_SIZES=8192,67108864 CASK_UCX_CUDA_POLL_US=0 $X > "$D/xp3_poll0.txt" 2>&1
  echo "-- CASK_UCX_CUDA_POLL_US=0 (rc=$?)"; grep -E "^ +[0-9]+ " "$D/xp3_poll0.txt"
  el ;;
jacobi3)
  J="$B/apps/cask-jacobi --iters 400"
  echo "== cask-jacobi --n 16384 --iters 400: 1 process, 2 processes (GPU halos by UCX; by the host path)"
  for i in 1 2 3; do
    $J --n 16384 > "$D/j1_$i.txt" 2>&1
    $L 2 $J --n 16384 > "$D/j2_$i.txt" 2>&1
    CASK_DIST_GPU_XPORT=host $L 2 $J --n 16384 > "$D/j2host_$i.txt" 2>&1
    for f in j1 j2 j2host; do printf "%-7s " $f; grep -h "^sweeps" "$D/${f}_$i.txt" | head -1; done
  done
  r1=$(grep -ho "residual [^ ]*" "$D/j1_1.txt" | head -1); r2=$(grep -ho "residual [^ ]*" "$D/j2_1.txt" | head -1)
  [ "$r1" = "$r2" ] && echo "jacobi residuals identical ($r1)" || echo "jacobi residuals DIFFER: '$r1' vs '$r2'"
  $J --n 1026 --iters 200 --out "$D/jo1.raw" > /dev/null 2>&1; $L 2 $J --n 1026 --iters 200 --out "$D/jo2.raw" > /dev/null 2>&1
  cmp "$D/jo1.raw" "$D/jo2.raw" && echo "jacobi --n 1026 --out: 1 and 2 processes identical"; rm -f "$D"/*.raw
  echo "== time-sharing: two independent 1-process runs of half the cells (--n 11586) at once vs alone"
  for i in 1 2; do
    $J --n 11586 > "$D/jh_alone$i.txt" 2>&1
    $J --n 11586 > "$D/jh_a$i.txt" 2>&1 & pa=$!
    $J --n 11586 > "$D/jh_b$i.txt" 2>&1; wait $pa
    for f in jh_alone$i jh_a$i jh_b$i; do printf "%-9s " $f; grep -h "^sweeps" "$D/$f.txt"; done
  done
  el ;;
mps)   # the same measurements with CUDA MPS (the two processes' work in one GPU context:
       # no time-slicing between contexts), then without it, in one run. The daemon is
       # ours: started here, always told to quit on exit.
  export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
  if nvidia-cuda-mps-control -d; then
    trap 'echo quit | nvidia-cuda-mps-control; sleep 1; bundle' EXIT
    trap 'exit 1' INT TERM   # the EXIT trap quits the daemon then
    echo "== MPS started (pipes in $CUDA_MPS_PIPE_DIRECTORY)"
    MPS=1
  else
    echo "== MPS failed to start: the figures below are without it"; MPS=0
  fi
  J="$B/apps/cask-jacobi --iters 400"
  K="$B/apps/cask-knn --generate 16777216 16384 --seed 7 --repeat 9"
  KH="$B/apps/cask-knn --generate 8388608 16384 --seed 7 --repeat 9"
  for m in mps nomps; do
    if [ $m = nomps ]; then
      if [ "$MPS" = 1 ]; then echo quit | nvidia-cuda-mps-control; sleep 2; fi
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      trap bundle EXIT
      echo "== without MPS (same binaries, same run)"
    fi
    if [ -x "$B/test_dist_gpux" ]; then
      tests/dist/run.sh 2 --need-gpus 1 "$B/test_dist_gpux" auto 8192 > "$D/${m}_gpux.txt" 2>&1
      echo "$m test_dist_gpux auto 8192: rc=$?"; grep -E "run 2" "$D/${m}_gpux.txt" | head -1
    fi
    [ $m = mps ] && echo get_server_list | nvidia-cuda-mps-control
    CASK_BENCH_GPU_TIMELINE=1 CASK_BENCH_GPU_STAGED=0 CASK_BENCH_GPU_SIZES=8192,2097152,67108864,268435456 \
      timeout 90 $L 2 $B/bench/bench-xport --gpu-only > "$D/${m}_xp.txt" 2>&1
    echo "$m bench-xport (rc=$?)"; grep -E "turns|^ +[0-9]+ |bytes" "$D/${m}_xp.txt"
    grep -E "timeline" "$D/${m}_xp.txt" | head -1
    for i in 1 2 3; do
      $J --n 16384 > "$D/${m}_j1_$i.txt" 2>&1
      $L 2 $J --n 16384 > "$D/${m}_j2_$i.txt" 2>&1
      for f in j1 j2; do printf "%-6s %-3s " $m $f; grep -h "^sweeps" "$D/${m}_${f}_$i.txt" | head -1; done
    done
    CASK_DIST_GPU_XPORT=host $L 2 $J --n 16384 > "$D/${m}_j2host.txt" 2>&1
    printf "%-6s j2 host path: " $m; grep -h "^sweeps" "$D/${m}_j2host.txt"
    r1=$(grep -ho "residual [^ ]*" "$D/${m}_j1_1.txt" | head -1); r2=$(grep -ho "residual [^ ]*" "$D/${m}_j2_1.txt" | head -1)
    [ "$r1" = "$r2" ] && echo "$m jacobi residuals identical ($r1)" || echo "$m jacobi residuals DIFFER: '$r1' vs '$r2'"
    $J --n 11586 > "$D/${m}_jh_alone.txt" 2>&1
    $J --n 11586 > "$D/${m}_jh_a.txt" 2>&1 & pa=$!
    $J --n 11586 > "$D/${m}_jh_b.txt" 2>&1; wait $pa
    for f in jh_alone jh_a jh_b; do printf "%-6s %-9s " $m $f; grep -h "^sweeps" "$D/${m}_$f.txt"; done
    for i in 1 2; do
      $K --out "$D/knn1.npy" > "$D/${m}_k1_$i.txt" 2>&1; printf "%-6s k1 " $m; grep -hE "time" "$D/${m}_k1_$i.txt"
      $L 2 $K --out "$D/knn2.npy" > "$D/${m}_k2_$i.txt" 2>&1; printf "%-6s k2 " $m; grep -hE "time" "$D/${m}_k2_$i.txt"
      cmp "$D/knn1.npy" "$D/knn2.npy" && echo "$m knn outputs identical"
    done
    rm -f "$D"/*.npy
    $KH > "$D/${m}_kh_alone.txt" 2>&1
    $KH > "$D/${m}_kh_a.txt" 2>&1 & pa=$!
    $KH > "$D/${m}_kh_b.txt" 2>&1; wait $pa
    for f in kh_alone kh_a kh_b; do printf "%-6s %-9s " $m $f; grep -h "time" "$D/${m}_$f.txt"; done
    el
  done ;;
esac; done
