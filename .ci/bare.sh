#!/bin/bash
# .ci/bare.sh: proves the path of a new user on a bare machine, on every CI run.
#
# Makes a minimal Debian 12 root (debootstrap --variant=minbase: no compiler, no CUDA
# toolkit, no UCX, no MPI), copies the project into it, and inside it (chroot, empty
# environment) runs README.md's two commands exactly as written, one after the other
# (the blocks marked <!-- ci:run --> and <!-- ci:test -->: they install what they need
# through deps.sh). Checks that README's install-by-hand line (<!-- ci:install -->)
# names the packages deps.sh installs, that `pip install .` into a venv (meson-python,
# build dependencies from PyPI) gives an `import cask` that computes, that a
# -Dcuda=disabled build configures with no
# CUDA lookup at all in Meson's log, and that cask runs where /sys is hidden. Any
# failure fails CI.
#
# Needs root and debootstrap (.ci/run installs it). The root lives in a temporary folder
# and is removed at the end, with its mounts (/proc, /sys, /dev); nothing is cached.
# CASK_BARE_MIRROR overrides the Debian mirror (default: the one apt uses here).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

if [ "$(id -u)" != 0 ]; then
  echo "bare.sh: needs root (debootstrap, chroot)" >&2; exit 1
fi
command -v debootstrap >/dev/null || { echo "bare.sh: debootstrap not installed" >&2; exit 1; }

readme_block() { sh .ci/readme_block.sh "$1"; }
install_line=$(readme_block install)
run_line=$(readme_block run)
test_line=$(readme_block test)
for v in install_line run_line test_line; do
  [ -n "${!v}" ] || { echo "bare.sh: README.md has no ${v%_line} block" >&2; exit 1; }
done

# the install-by-hand line and deps.sh name the same packages
by_hand=$(printf '%s\n' "$install_line" | sed 's/.*install -y//' | tr ' ' '\n' | grep -v '^$' | sort)
scripted=$(sh deps.sh --list | tr ' ' '\n' | grep -v '^$' | sort)
if [ "$by_hand" != "$scripted" ]; then
  echo "bare.sh: README's install line and 'sh deps.sh --list' differ:" >&2
  diff <(echo "$by_hand") <(echo "$scripted") >&2 || true
  exit 1
fi

mirror=${CASK_BARE_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' \
  /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)}
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d "${TMPDIR:-/tmp}/cask-bare.XXXXXX")
root="$work/root"
cleanup() {
  for m in dev sys proc; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -R -l "$root/$m" 2>/dev/null
  done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

t0=$(date +%s)
echo "== bare root: debootstrap --variant=minbase bookworm ($mirror)"
debootstrap --variant=minbase bookworm "$root" "$mirror" > "$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log"; echo "bare.sh: debootstrap failed" >&2; exit 1; }
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"

# the project as a clone has it: tracked files plus new ones git does not ignore
mkdir -p "$root/src"
git ls-files -z -c -o --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$root/src"

in_root() {
  echo "+ $1"
  env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive \
    chroot "$root" /bin/sh -ec "cd /src && $1"
}

echo "== bare root: README's first command (installs, builds, runs cask-knn)"
in_root "$run_line"
if in_root "command -v nvcc || ls /usr/local/cuda" >/dev/null 2>&1; then
  echo "bare.sh: the bare root has a CUDA toolkit; it must not" >&2; exit 1
fi
echo "== bare root: README's second command (tests)"
in_root "$test_line"

echo "== bare root: pip install . in a venv (docs/python.md), then import cask"
# pip in the root reaches PyPI as the host's pip does: the host's pip.conf and the CA
# bundle it names (a proxy's CA), copied as resolv.conf was
if [ -f /etc/pip.conf ]; then
  cp /etc/pip.conf "$root/etc/pip.conf"
  pip_cert=$(sed -n 's/^ *cert *= *//p' /etc/pip.conf | head -n 1)
  if [ -n "$pip_cert" ] && [ -f "$pip_cert" ]; then
    mkdir -p "$root$(dirname "$pip_cert")" && cp "$pip_cert" "$root$pip_cert"
  fi
fi
in_root "python3 -m venv /tmp/venv && /tmp/venv/bin/pip install --quiet . && cd /tmp && /tmp/venv/bin/python -c 'import cask, cask.array as ca; assert float(ca.ones(10).sum()) == 10; print(\"bare.sh: import cask from\", cask.__file__)'"

echo "== bare root: -Dcuda=disabled configures with no CUDA lookup"
in_root "meson setup build-nocuda -Dcuda=disabled >/dev/null"
if grep -n -E 'Cuda compiler|nvcc|cudart|nccl|nvrtc|cublas|/cuda' \
     "$root/src/build-nocuda/meson-logs/meson-log.txt"; then
  echo "bare.sh: CUDA was looked up with -Dcuda=disabled (lines above)" >&2; exit 1
fi
echo "== bare root without /sys (a container hiding it): cask warns once and runs"
umount -R -l "$root/sys"
in_root "./build/apps/cask-knn --generate 20000 500 --seed 1 --cpu-only --check 50" \
  > "$work/nosys.log" 2>&1 || { cat "$work/nosys.log"; exit 1; }
cat "$work/nosys.log"
if [ "$(grep -c 'topology: ' "$work/nosys.log")" != 1 ] || grep -q 'hwloc/' "$work/nosys.log"; then
  echo "bare.sh: expected exactly one topology warning from cask, nothing from hwloc" >&2; exit 1
fi

echo "bare.sh: bare Debian root passed in $(( $(date +%s) - t0 )) s"
