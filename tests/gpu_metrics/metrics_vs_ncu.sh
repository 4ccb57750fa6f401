#!/usr/bin/env bash
# GPU script test: our range profiler vs ncu on the same kernels (values within
# ±2%, wall time side by side). Usage: metrics_vs_ncu.sh HARNESS WORKLOAD
# Exit 77 (skipped) without a GPU or without ncu.
set -u
harness="$1"; workload="$2"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no GPU"; exit 77
fi
out="${OUT:-$(mktemp -d)}/metrics_vs_ncu"
mkdir -p "$out"
exec python3 "$(dirname "$0")/compare_ncu.py" "$harness" "$workload" --metrics full --out "$out"
