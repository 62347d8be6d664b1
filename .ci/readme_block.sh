#!/bin/sh
# .ci/readme_block.sh NAME: prints the command of README.md's block marked
# <!-- ci:NAME ... --> (the first line inside the fenced block after the marker), so
# that CI runs README's commands exactly as written.
awk -v tag="<!-- ci:$1" '
  index($0, tag) == 1 { want = 1; next }
  want && /^```/ { if (inside) exit; inside = 1; next }
  want && inside { print; exit }' "$(dirname "$0")/../README.md"
