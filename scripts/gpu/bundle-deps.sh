#!/usr/bin/env bash
# scripts/gpu/bundle-deps.sh BUILD_DIR — copy the non-system shared libraries
# (abseil, protobuf, benchmark, gtest) that the binaries under BUILD_DIR need
# into BUILD_DIR/deps, so the tree runs on a machine without them (the GPU
# node): LD_LIBRARY_PATH=BUILD_DIR/deps. CUDA/CUPTI/NCCL/libc are left to the
# target machine.
set -euo pipefail
B=${1:?usage: bundle-deps.sh BUILD_DIR}
mkdir -p "$B/deps"
mapfile -t bins < <(find "$B" -path "$B/deps" -prune -o -type f -perm -u+x -print; find "$B" -name '*.so' -type f)
for f in "${bins[@]}"; do
  file -b "$f" 2>/dev/null | grep -q ELF || continue
  ldd "$f" 2>/dev/null | awk '/=> \// {print $3}' | grep -E 'libabsl|libprotobuf|libbenchmark|libgtest|libgmock' || true
done | sort -u | while read -r lib; do
  cp -L "$lib" "$B/deps/"
done
echo "bundled $(ls "$B/deps" | wc -l) libraries into $B/deps ($(du -sh "$B/deps" | cut -f1))"
