#!/usr/bin/env bash
# scripts/gpu/stage.sh SRC_BUILD DEST — copy what the GPU run needs (CLI,
# injection library, examples, checker, overhead harness) from a build tree
# into DEST with the same relative layout, then bundle its libraries. DEST
# stays small enough to carry to the GPU machine.
set -euo pipefail
S=${1:?usage: stage.sh SRC_BUILD DEST [EXTRA_FILES...]}
D=${2:?usage: stage.sh SRC_BUILD DEST [EXTRA_FILES...]}
shift 2
rm -rf "$D"
for f in tools/sightline/sightline injection/libsightline_inject.so \
         tests/gpu/sightline_trace_check tests/gpu/sightline_other_subscriber tests/gpu/sightline_fault_app \
         bench/overhead/launch_overhead bench/overhead/libfloor_inject.so \
         bench/overhead/torch_overhead.py examples/pytorch_train.py \
         share/sightline/python/sitecustomize.py \
         examples/starved_gpu examples/fragmented_kernels examples/serialized_streams \
         examples/naive_matmul examples/training_loop examples/nccl_allreduce "$@"; do
  [ -e "$S/$f" ] || { echo "missing $S/$f" >&2; continue; }
  mkdir -p "$D/$(dirname "$f")"
  cp -a "$S/$f" "$D/$f"
done
strip --strip-unneeded "$D"/tools/sightline/sightline "$D"/injection/*.so 2>/dev/null || true
bash "$(dirname "$0")/bundle-deps.sh" "$D"
du -sh "$D"
