#!/usr/bin/env bash
# libsightline_inject.so exports only the injection entry points and the C
# API, links neither abseil nor protobuf nor a shared libstdc++.
set -u
LIB=${1:?usage: exports_test.sh LIBRARY}
fail=0
want="InitializeInjection InitializeInjectionNvtx2 sightline_flush sightline_last_error sightline_range_pop sightline_range_push sightline_start sightline_step sightline_stop sightline_version"
got=$(nm -D --defined-only "$LIB" | awk '$2 ~ /^[TDBVW]$/ {print $3}' | sed 's/@.*//' | sort | tr '\n' ' ' | sed 's/ $//')
if [ "$got" = "$want" ]; then echo "PASS exported symbols: $got"; else echo "FAIL exported: '$got'"; fail=1; fi
deps=$(readelf -d "$LIB" | grep NEEDED)
echo "$deps"
if grep -qE 'absl|protobuf|libstdc\+\+' <<<"$deps"; then echo "FAIL unwanted dependency"; fail=1; else echo "PASS no abseil/protobuf/libstdc++"; fi
if grep -q 'libcupti' <<<"$deps"; then echo "PASS libcupti linked dynamically"; else echo "FAIL libcupti not a dependency"; fail=1; fi
exit $fail
