#!/bin/sh
# tests/cluster/stop_guard.sh: `slurm_local.sh stop DIR` removes DIR at the end, so it
# must refuse a folder that `slurm_local.sh start` did not make (a mistyped `stop ~`
# would otherwise empty a home). Needs no root and no Slurm: stop refuses before it
# touches anything.
set -u
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d "${TMPDIR:-/tmp}/cask-stopguard.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# a folder with files in it, no tag
mkdir "$t/home" && echo keep > "$t/home/file"
sh "$here/slurm_local.sh" stop "$t/home" 2> "$t/err" && fail "stop of a plain folder succeeded"
[ -f "$t/home/file" ] || fail "stop removed a folder that start did not make"
grep -q 'holds no cluster' "$t/err" || { cat "$t/err"; fail "no message saying why"; }
echo "ok: stop of a plain folder refused: $(cat "$t/err")"

# a tag file that start would not write
mkdir "$t/other" && echo hello > "$t/other/tag"
sh "$here/slurm_local.sh" stop "$t/other" 2> /dev/null && fail "stop of a folder with a foreign tag succeeded"
[ -f "$t/other/tag" ] || fail "stop removed a folder with a foreign tag"
echo "ok: stop of a folder with a foreign tag refused"

# a folder that is not there: nothing to do, success
sh "$here/slurm_local.sh" stop "$t/none" || fail "stop of a missing folder failed"
echo "ok: stop of a missing folder does nothing"
