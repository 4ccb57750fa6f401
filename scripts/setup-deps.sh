#!/usr/bin/env bash
# Installs sightline's build and test dependencies from Debian/Ubuntu packages.
# Idempotent: skips apt when everything is already present.
#   cmake ninja-build g++ pkg-config     build tools
#   libabsl-dev                          abseil (Status/StatusOr, strings)
#   libprotobuf-dev protobuf-compiler    schema classes (tests, embedding)
#   libgtest-dev libgmock-dev            unit tests
#   libbenchmark-dev                     bench/ programs
#   clang libclang-rt-14-dev             libFuzzer target for the trace reader
#   chromium                             headless check of the HTML report
#   python3                              test scripts parse JSON outputs
# The CUDA 13.0 toolkit (CUPTI, NVTX3, NCCL) is expected at /usr/local/cuda (or
# CUDAToolkit_ROOT); without it sightline builds its CUDA-free half only.
set -euo pipefail
PKGS=(cmake ninja-build g++ pkg-config libabsl-dev libprotobuf-dev protobuf-compiler
      libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev python3)
if [ "${SIGHTLINE_NO_CHROMIUM:-0}" != 1 ]; then PKGS+=(chromium); fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "setup-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup-deps: done"
