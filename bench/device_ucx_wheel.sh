# bench/device_ucx_wheel.sh, sourced by the device scripts (bench/device_gather.sh,
# bench/device_cma.sh) in the project root on the GPU machine: the carried packages
# (.devdeps/setup.sh), with the libucx-cu13 wheel's UCX (1.22: cuda_ipc, cuda_copy, CMA)
# in place of Debian's 1.13, which setup.sh puts first on LD_LIBRARY_PATH; and
# NCCL_NVLS_ENABLE=0. Without .devdeps (a machine that has its own packages) it only
# sets the latter.
if [ -f .devdeps/setup.sh ]; then
  . .devdeps/setup.sh
  unset UCX_MODULE_DIR   # the wheel's UCX loads its own transport modules
  rm -f /opt/devdeps/usr/lib/x86_64-linux-gnu/libuc[pmst]*   # not Debian's UCX 1.13
  for w in .devdeps/libucx_cu13-*.whl; do
    [ -f "$w" ] && python3 -m pip install --no-deps --no-index -q "$w" 2>&1 | tail -1
  done
fi
export NCCL_NVLS_ENABLE=0
