#!/usr/bin/env bash
B=$(pwd)/build-gpu; export LD_LIBRARY_PATH=$B/deps:$B/injection:/usr/local/cuda/lib64:$LD_LIBRARY_PATH; export SIGHTLINE_BINARY_DIR=$B
timeout 200 bash tests/gpu/gpu_metrics.sh 2>&1 | grep -E "FAIL|PASS|ok   a forked|GPU metrics on|samples .* in window"; echo "rc=${PIPESTATUS[0]}"
