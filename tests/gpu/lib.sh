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
