#!/usr/bin/env bash
# README's main command: installs what is missing, builds and installs sightline
# into ./dist, then
#   - on a machine with a CUDA GPU: profiles an example program and analyzes it;
#   - without a GPU: analyzes the bundled real trace recorded on an H200.
# Writes out/report.txt, out/report.json, out/report.html and out/timeline.json.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
SIGHTLINE_NO_CHROMIUM=1 bash scripts/setup-deps.sh

CUDA=OFF
if [ -x "${CUDAToolkit_ROOT:-/usr/local/cuda}/bin/nvcc" ]; then CUDA=ON; fi
cmake -S . -B build/main -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIGHTLINE_WITH_CUDA=$CUDA \
  -DSIGHTLINE_BUILD_TESTS=OFF -DSIGHTLINE_BUILD_BENCH=OFF >/dev/null
cmake --build build/main -j"$JOBS"
cmake --install build/main --prefix dist >/dev/null
echo "installed: $(pwd)/dist (bin/sightline, lib/libsightline_inject.so, include/sightline)"

umask 077  # reports and traces are private, like everything sightline writes
mkdir -p out
has_gpu=0
if [ "$CUDA" = ON ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  has_gpu=1
fi
if [ "$has_gpu" = 1 ]; then
  TRACE=out/starved_gpu_slow.sltrace
  rm -f "$TRACE"
  dist/bin/sightline profile -o "$TRACE" -- dist/bin/sightline-examples/starved_gpu --variant slow
else
  TRACE=${SIGHTLINE_TRACE:-tests/data/starved_gpu_slow.sltrace}
  echo "no GPU here: analyzing the bundled trace $TRACE (recorded on an NVIDIA H200)"
fi
dist/bin/sightline info "$TRACE"
dist/bin/sightline analyze "$TRACE" | tee out/report.txt
dist/bin/sightline analyze "$TRACE" --format json -o out/report.json
dist/bin/sightline report "$TRACE" -o out/report.html
dist/bin/sightline export "$TRACE" --format chrome -o out/timeline.json
echo
echo "wrote out/report.txt, out/report.json, out/report.html (open in a browser),"
echo "      out/timeline.json (open in https://ui.perfetto.dev or chrome://tracing)"
