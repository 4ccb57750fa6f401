# tests/gpu/lib.sh — shared by the GPU test scripts (sourced).
# Finds the build tree, the CLI and the checker; skips (77) without a GPU.
set -uo pipefail
B=${SIGHTLINE_BINARY_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../build-gpu" && pwd)}
SL=${SIGHTLINE_BIN:-$B/tools/sightline/sightline}
CHECK=$B/tests/gpu/sightline_trace_check
EX=$B/examples
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIPPED: no GPU"; exit 77; fi
WORK=${SIGHTLINE_TEST_OUT:-$(mktemp -d)}
mkdir -p "$WORK"
fail=0
note() { echo "== $*"; }
expect_ok() { if "$@"; then :; else echo "FAIL: $*"; fail=1; fi; }
# Trace PATH is complete with 0 records lost; else "FAIL LABEL: ..." and fail=1.
trace_complete_lossless() {
  "$SL" info "$1" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("  complete=%s lost=%s kernels=%s" % (d["complete"], d["lost_records"], d["counts"].get("kernel")))
sys.exit(0 if d["complete"] and d["lost_records"] == 0 else 1)' || { echo "FAIL $2: trace incomplete or lossy"; fail=1; }
}
