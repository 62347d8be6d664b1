#!/bin/sh
# tests/dist/chol_app.sh: cask-chol across ranks as users run it (file bootstrap, through
# run.sh's time limit): the factor written by 2 and 3 ranks is the same file as one
# process's, in f64 and f32, with a last tile smaller than the others, and --check holds
# on rank 0; a matrix that is not SPD fails on 3 ranks with the message naming the tile
# and the order of the minor (exit 3 in each rank; one process: exit 3 too).
#
#   chol_app.sh CASK_CHOL
set -u
chol=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/cask-chol-app.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; [ -f "$dir/log" ] && cat "$dir/log"; exit 1; }
ranks() { np=$1; shift; CASK_LAUNCHER=local sh "$here/run.sh" "$np" "$chol" "$@" >"$dir/log" 2>&1; }

for dt in f64 f32; do
  "$chol" --n 300 --tile 64 --dtype $dt --cpu-only --out "$dir/one.npy" -q >"$dir/log" 2>&1 ||
    fail "one process, $dt"
  for np in 2 3; do
    ranks $np --n 300 --tile 64 --dtype $dt --cpu-only --check --out "$dir/n$np.npy" ||
      fail "$np ranks, $dt"
    grep -q "$np ranks (grid 1x${np})" "$dir/log" || fail "$np ranks, $dt: no line naming the ranks"
    grep -q "^check: ||A - L L^T||" "$dir/log" || fail "$np ranks, $dt: no check line"
    cmp -s "$dir/one.npy" "$dir/n$np.npy" || fail "$np ranks, $dt: not the same bytes as one process"
  done
done
echo "2 and 3 ranks: the same factor as one process (f64, f32)"

# A[70][70] = -1: the leading minor of order 71 is not positive (tile (2,2) at tiles of 32)
python3 - "$dir/bad.npy" <<'PY' || fail "writing bad.npy"
import math, struct, sys
n = 100
hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }" % (n, n)
hdr += ' ' * (63 - (10 + len(hdr)) % 64) + '\n'
with open(sys.argv[1], 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode())
    for i in range(n):
        row = [0.5 * math.cos(min(i, j) * 131 + max(i, j) * 7) for j in range(n)]
        row[i] = -1.0 if i == 70 else n + 1.0
        f.write(struct.pack('<%dd' % n, *row))
PY
"$chol" --in "$dir/bad.npy" --tile 32 --cpu-only >"$dir/log" 2>&1
rc=$?
[ $rc = 3 ] || fail "one process: exit $rc on a matrix that is not SPD (3 expected)"
ranks 3 --in "$dir/bad.npy" --tile 32 --cpu-only --out "$dir/bad_l.npy" && fail "3 ranks: a matrix that is not SPD passed"
grep -q "rank 0: matrix not positive definite: .*tile (2,2): the leading minor of order 71" "$dir/log" ||
  fail "3 ranks: the message does not name the tile and the order"
[ ! -e "$dir/bad_l.npy" ] || fail "3 ranks: an output was left behind"
echo "not SPD: exit 3 in one process, the tile and the order named on 3 ranks"
