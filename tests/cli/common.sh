# tests/cli/common.sh — sourced by the CLI script tests.
# Env (set by ctest): SIGHTLINE_BIN, SIGHTLINE_SOURCE_DIR, SIGHTLINE_BINARY_DIR.
set -u
SL="${SIGHTLINE_BIN:?SIGHTLINE_BIN not set}"
SRC="${SIGHTLINE_SOURCE_DIR:?}"
BIN_DIR="${SIGHTLINE_BINARY_DIR:?}"
GEN="$BIN_DIR/tests/cli/sightline_trace_gen"
PDUMP="$BIN_DIR/tests/cli/sightline_perfetto_dump"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sightline-cli-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
FAILS=0
PASSES=0

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { PASSES=$((PASSES + 1)); }
check() {  # check "description" command...
  local what="$1"; shift
  if "$@"; then pass; else fail "$what"; fi
}
# expect_exit CODE "description" command... (stdout/stderr to $WORK/last.{out,err})
expect_exit() {
  local want="$1" what="$2"; shift 2
  "$@" > "$WORK/last.out" 2> "$WORK/last.err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$what: exit $got, expected $want; stderr: $(head -c 400 "$WORK/last.err")"
    return 1
  fi
  pass
}
finish() {
  echo "$PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
  exit $?
}
# Real traces recorded on the H200 (tests/data), when present.
real_traces() { ls "$SRC"/tests/data/*.sltrace 2>/dev/null; }
