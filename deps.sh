#!/bin/sh
# deps.sh: installs what building and testing cask needs on Debian or Ubuntu, with apt,
# and nothing when it is all there already (so it needs no root then). README's two
# commands start with it; .ci/run calls it with --ci.
#
#   sh deps.sh            build and tests, CPU only: compiler, Meson, hwloc, Criterion,
#                         libmicrohttpd (the live dashboard), Python, OpenBLAS (CPU
#                         matmul of arrays) and SLEEF (vector math of CPU arrays); the
#                         Python package's headers, venv, and its tests' NumPy, pytest,
#                         Hypothesis and Dask (suite python)
#   sh deps.sh --dist     also UCX, PMIx and Open MPI's mpirun (several processes), and
#                         iproute2 (the network-namespace hosts test)
#   sh deps.sh --cluster  also Slurm (slurmctld, slurmd, its clients and PMIx plugin)
#                         and munge: the local test cluster (tests/cluster, suite cluster)
#   sh deps.sh --ci       all of the above, plus debootstrap (CI's bare-machine check)
#                         and Chromium (the dashboard's browser test)
#   sh deps.sh --list     prints the packages it would install and exits
#
# As root it calls apt-get directly, otherwise through sudo. The CUDA toolkit is not
# installed here (NVIDIA's packages): with nvcc on the PATH, Meson builds the GPU parts.
set -eu

BASE="meson ninja-build pkg-config gcc libc6-dev libhwloc-dev libcriterion-dev libmicrohttpd-dev python3 libopenblas-dev libsleef-dev python3-dev python3-venv python3-numpy python3-pytest python3-hypothesis python3-dask"
DIST="libucx-dev libpmix-dev openmpi-bin iproute2"
CLUSTER="slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge"
CI="debootstrap chromium fonts-dejavu-core"

want=$BASE
list=0
for a in "$@"; do
  case $a in
    --dist) want="$BASE $DIST" ;;
    --cluster) want="$BASE $DIST $CLUSTER" ;;
    --ci) want="$BASE $DIST $CLUSTER $CI" ;;
    --list) list=1 ;;
    *) echo "deps.sh: unknown option $a (--dist, --cluster, --ci, --list)" >&2; exit 2 ;;
  esac
done
if [ "$list" = 1 ]; then
  echo "$want"
  exit 0
fi

missing=""
for p in $want; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "deps.sh: everything is installed"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps.sh: no apt-get here; install by hand:$missing" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deps.sh: need root or sudo to install:$missing" >&2; exit 1; }
  sudo=sudo
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
