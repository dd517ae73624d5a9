#!/usr/bin/env bash
# Configures and builds maxkernel into build/ (or $1). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"; shift || true
# ccache keys on the compiler's command line: with paths inside the checkout made relative and
# the working directory left out of the hash, a fresh clone in another folder (CI's) reuses what
# an earlier build of the same sources compiled.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C "$dir" -j"$(nproc)"
