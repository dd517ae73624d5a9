#!/usr/bin/env bash
# Builds and runs vmath_bench.cc twice: with the generated kernels' flags (GCC's default tuning
# for -march=native here prefers 256-bit vectors, so our loops use ymm) and with
# -mprefer-vector-width=512 (zmm). Needs libsleef-dev. Usage: bench/vector_math/run.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${TMPDIR:-/tmp}/mk-vmath-bench"
mkdir -p "$out"
flags=(-std=c++20 -O3 -march=native -fno-math-errno -Isrc)
g++ "${flags[@]}" bench/vector_math/vmath_bench.cc -o "$out/ymm" -lsleef
g++ "${flags[@]}" -mprefer-vector-width=512 bench/vector_math/vmath_bench.cc -o "$out/zmm" -lsleef
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$out/ymm" "${1:-15}" " (ours ymm)"
"$out/zmm" "${1:-15}" " (ours zmm)" rows-only
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
