#!/bin/sh
# tests/dist/fake_launcher.sh: stands in for mpirun in launcher_grace.sh, the tests of
# run.sh's own verdicts. Takes mpirun's options as run.sh passes them (-n NP, -x VAR,
# --flags), starts NP copies of the program with PMIX_RANK set, waits for them, and
# then, with FAKE_LAUNCHER_HANG=1, does not exit: Open MPI 4.1's hang after a killed
# rank, reproduced on demand (the process that stays is this one, the launcher).
case "${1:-}" in
  --version) echo "mpirun (Open MPI) 4.1.4 [fake: tests/dist/fake_launcher.sh]"; exit 0 ;;
esac
np=1
while [ $# -gt 0 ]; do
  case $1 in
    -n) np=$2; shift 2 ;;
    -x) shift 2 ;;
    --*) shift ;;
    *) break ;;
  esac
done
r=0
while [ "$r" -lt "$np" ]; do
  PMIX_RANK=$r "$@" &
  r=$((r + 1))
done
wait
[ "${FAKE_LAUNCHER_HANG:-0}" = 1 ] && exec sleep 3600
exit 0
