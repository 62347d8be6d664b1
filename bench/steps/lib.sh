# bench/steps/lib.sh: what the steps of bench/device_run.sh share. Each step script
# sources it; the driver has set B (the build), OUT (the logs) and NG (the GPUs).
set -u
B=${B:-${BUILD:-build-gpu}}
OUT=${OUT:-device-logs}
NG=${NG:-$(nvidia-smi -L 2>/dev/null | wc -l)}
L=tests/dist/launch-local.sh
# each rank its own trace and transfer log: run as  eval $L 2 $TR PREFIX prog args
TR="sh -c 'CASK_TRACE=\$0.\$CASK_RANK.json CASK_DIST_XFER_LOG=\$0 exec \"\$@\"'"
two_gpus() { [ "$NG" -ge 2 ] || { echo "$1: $NG GPU(s): this step needs 2"; return 1; }; }
