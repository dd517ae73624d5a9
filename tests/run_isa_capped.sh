#!/bin/sh
# ctest helper: runs gtest BINARY with MAXKERNEL_CPU_ISA=avx2 and the given --gtest_filter, so
# the tests see exactly what an AVX2-only CPU builds and runs. On a host without AVX-512 the cap
# changes nothing and the run would repeat the regular one: exit 77 (ctest: skipped).
# Usage: run_isa_capped.sh BINARY FILTER
set -eu
binary="$1"
filter="$2"
if ! grep -qw avx512f /proc/cpuinfo; then
  echo "this CPU has no AVX-512: the avx2 cap is its native level, already tested"
  exit 77
fi
MAXKERNEL_CPU_ISA=avx2 exec "$binary" --gtest_filter="$filter" --gtest_brief=1
