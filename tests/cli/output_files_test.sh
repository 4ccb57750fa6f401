#!/usr/bin/env bash
# Every file a command writes is private (0600, whatever the umask) and is
# never written through a symlink: a symlink at the output path is replaced,
# its target stays untouched; a pre-planted temporary name is not followed.
source "$(dirname "$0")/common.sh"

"$GEN" "$WORK/ok.sltrace" --steps 3 || exit 1
umask 022

mode_is_600() { test "$(stat -c %a "$1")" = 600; }

expect_exit 0 "analyze -o" "$SL" analyze "$WORK/ok.sltrace" --format json -o "$WORK/r.json"
check "analyze output 0600" mode_is_600 "$WORK/r.json"
expect_exit 0 "export chrome" "$SL" export "$WORK/ok.sltrace" --format chrome -o "$WORK/t.json"
check "chrome export 0600" mode_is_600 "$WORK/t.json"
expect_exit 0 "export perfetto" "$SL" export "$WORK/ok.sltrace" --format perfetto -o "$WORK/t.pftrace"
check "perfetto export 0600" mode_is_600 "$WORK/t.pftrace"
expect_exit 0 "report" "$SL" report "$WORK/ok.sltrace" -o "$WORK/r.html"
check "html report 0600" mode_is_600 "$WORK/r.html"
expect_exit 0 "diff -o" "$SL" diff "$WORK/ok.sltrace" "$WORK/ok.sltrace" -o "$WORK/d.txt"
check "diff output 0600" mode_is_600 "$WORK/d.txt"

# A symlink at the output path: replaced, the file it points to untouched.
echo "precious" > "$WORK/victim"
chmod 644 "$WORK/victim"
ln -s "$WORK/victim" "$WORK/link.json"
expect_exit 0 "export over a symlink" "$SL" export "$WORK/ok.sltrace" --format chrome -o "$WORK/link.json"
check "symlink target untouched" test "$(cat "$WORK/victim")" = precious
check "symlink replaced by a regular file" bash -c "[ -f '$WORK/link.json' ] && [ ! -L '$WORK/link.json' ]"
check "replacement is 0600" mode_is_600 "$WORK/link.json"

finish
