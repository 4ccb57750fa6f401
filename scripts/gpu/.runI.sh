#!/usr/bin/env bash
B=$(pwd)/build-gpu; export LD_LIBRARY_PATH=$B/deps:$B/injection:/usr/local/cuda/lib64:$LD_LIBRARY_PATH; export SIGHTLINE_BINARY_DIR=$B
SL=$B/tools/sightline/sightline
W=$(mktemp -d)
sed -n '/cat >"\$WORK\/fork.py"/,/^PY$/p' tests/gpu/gpu_metrics.sh | sed '1d;$d' > $W/fork.py
cat $W/fork.py | head -3
timeout 100 $SL profile --gpu-metrics -o $W/fork.sltrace -- python3 $W/fork.py; echo "rc=$?"
$SL info $W/fork.sltrace | head -8
