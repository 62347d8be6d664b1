#!/bin/sh
# tests/dist/fake_rank.sh: a rank for fake_launcher.sh. Rank $FAKE_VICTIM SIGKILLs
# itself; rank $FAKE_SILENT_RANK exits without a word; every other rank reports success
# as dt_report_survivor does (ok.RANK in $CASK_TEST_DIR), and rank $FAKE_HANG_RANK then
# does not exit.
r=${PMIX_RANK:?}
if [ "$r" = "${FAKE_VICTIM:--1}" ]; then kill -KILL $$; fi
[ "$r" = "${FAKE_SILENT_RANK:--1}" ] && exit 0
echo ok > "$CASK_TEST_DIR/ok.$r"
[ "$r" = "${FAKE_HANG_RANK:--1}" ] && exec sleep 3600
exit 0
