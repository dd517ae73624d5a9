#!/usr/bin/env bash
# The whole test suite, as CI runs it: unit tests under AddressSanitizer + UBSan, then the
# regular build's full ctest run (unit, end-to-end and Python bridge tests). The last line is
# ctest's summary ("N tests failed out of M").
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== build (sanitizers: address, undefined)"
scripts/build.sh build-asan -DMK_SANITIZE=ON -DMK_WERROR=ON -DCMAKE_BUILD_TYPE=Debug
echo "== unit tests under ASan + UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$(nproc)" -LE slow)

echo "== build (release)"
scripts/build.sh build -DMK_WERROR=ON
echo "== all tests"
cd build && ctest --output-on-failure -j"$(nproc)"
