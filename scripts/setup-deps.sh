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
#   libsqlite3-dev                       run history (sightline history / trend)
#   prometheus                           scrapes the monitor endpoint in its test
#                                        (SIGHTLINE_NO_PROMETHEUS=1 leaves it out;
#                                        the test then reports Skipped)
# The CUDA 13.0 toolkit (CUPTI, NVTX3, NCCL) is expected at /usr/local/cuda (or
# CUDAToolkit_ROOT); without it sightline builds its CUDA-free half only.
set -euo pipefail
PKGS=(cmake ninja-build g++ pkg-config libabsl-dev libprotobuf-dev protobuf-compiler
      libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev python3
      libsqlite3-dev)
if [ "${SIGHTLINE_NO_CHROMIUM:-0}" != 1 ]; then PKGS+=(chromium); fi
# Optional: a failed install is a warning (its test then reports Skipped).
OPTIONAL=()
if [ "${SIGHTLINE_NO_PROMETHEUS:-0}" != 1 ]; then OPTIONAL+=(prometheus); fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
optional_missing=()
for p in "${OPTIONAL[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || optional_missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && [ ${#optional_missing[@]} -eq 0 ]; then
  echo "setup-deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "setup-deps: installing ${missing[*]} ${optional_missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${optional_missing[@]}"; do
  $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null ||
    echo "setup-deps: warning: optional package $p could not be installed; its tests report Skipped"
done
echo "setup-deps: done"
