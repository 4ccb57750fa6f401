#!/usr/bin/env bash
# Bad input to every command → exit 2 with one clear line naming the file.
source "$(dirname "$0")/common.sh"

"$GEN" "$WORK/ok.sltrace" --steps 3 || exit 1
mkdir "$WORK/dir.sltrace"
echo '{"not": "a trace"}' > "$WORK/wrong.sltrace"
head -c 20 "$WORK/ok.sltrace" > "$WORK/truncated.sltrace"
: > "$WORK/empty.sltrace"
MISSING="$WORK/missing.sltrace"
UNWRITABLE="$WORK/no-such-dir/out"

one_line_naming() {  # the last command printed one stderr line that names $1
  local lines
  lines=$(grep -c . "$WORK/last.err")
  if [ "$lines" -ne 1 ] || ! grep -qF -- "$1" "$WORK/last.err"; then
    echo "stderr was: $(cat "$WORK/last.err")" >&2
    return 1
  fi
}

for bad in "$MISSING" "$WORK/dir.sltrace" "$WORK/wrong.sltrace" "$WORK/truncated.sltrace" "$WORK/empty.sltrace"; do
  n=$(basename "$bad")
  expect_exit 2 "analyze $n" "$SL" analyze "$bad"; check "analyze $n message" one_line_naming "$bad"
  expect_exit 2 "analyze json $n" "$SL" analyze "$bad" --format json; check "analyze json $n message" one_line_naming "$bad"
  expect_exit 2 "diff base $n" "$SL" diff "$bad" "$WORK/ok.sltrace"; check "diff base $n message" one_line_naming "$bad"
  expect_exit 2 "diff new $n" "$SL" diff "$WORK/ok.sltrace" "$bad"; check "diff new $n message" one_line_naming "$bad"
  expect_exit 2 "export chrome $n" "$SL" export "$bad" --format chrome -o "$WORK/o.json"; check "export $n message" one_line_naming "$bad"
  expect_exit 2 "export perfetto $n" "$SL" export "$bad" --format perfetto -o "$WORK/o.pftrace"; check "export perfetto $n message" one_line_naming "$bad"
  expect_exit 2 "report $n" "$SL" report "$bad" -o "$WORK/o.html"; check "report $n message" one_line_naming "$bad"
  check "no output left behind for $n" bash -c "! ls '$WORK'/o.* 2>/dev/null | grep -q ."
done

# Unwritable output paths.
expect_exit 2 "analyze -o unwritable" "$SL" analyze "$WORK/ok.sltrace" -o "$UNWRITABLE"; check "analyze -o message" one_line_naming "$UNWRITABLE"
expect_exit 2 "diff -o unwritable" "$SL" diff "$WORK/ok.sltrace" "$WORK/ok.sltrace" -o "$UNWRITABLE"; check "diff -o message" one_line_naming "$UNWRITABLE"
expect_exit 2 "export -o unwritable" "$SL" export "$WORK/ok.sltrace" --format chrome -o "$UNWRITABLE"; check "export -o message" one_line_naming "$UNWRITABLE"
expect_exit 2 "export -o directory" "$SL" export "$WORK/ok.sltrace" --format perfetto -o "$WORK/dir.sltrace"; check "export -o dir message" one_line_naming "is a directory"
expect_exit 2 "report -o unwritable" "$SL" report "$WORK/ok.sltrace" -o "$UNWRITABLE"; check "report -o message" one_line_naming "$UNWRITABLE"

# Usage errors.
expect_exit 2 "analyze no args" "$SL" analyze
expect_exit 2 "analyze bad format" "$SL" analyze "$WORK/ok.sltrace" --format xml; check "format message" one_line_naming "xml"
expect_exit 2 "export bad format" "$SL" export "$WORK/ok.sltrace" --format svg -o "$WORK/x"; check "export format message" one_line_naming "svg"
expect_exit 2 "export no -o" "$SL" export "$WORK/ok.sltrace" --format chrome
expect_exit 2 "report no -o" "$SL" report "$WORK/ok.sltrace"
expect_exit 2 "unknown option" "$SL" analyze "$WORK/ok.sltrace" --frobnicate; check "option message" one_line_naming "--frobnicate"
finish
