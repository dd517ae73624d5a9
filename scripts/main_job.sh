#!/usr/bin/env bash
# The main job: build, then `maxkernel optimize` on a suite workload's ci task with the embedded
# store (SQLite under the data directory, $MAXKERNEL_HOME or ~/.local/share/maxkernel): plan,
# then implement / build / test / profile candidates, time the best against XLA:CPU interleaved
# in the same run (the verdict is printed), and write the result JSON, an HTML report and a
# Prometheus metrics file. Usage: scripts/main_job.sh [WORKLOAD_ID] [extra optimize args]
# (default 12p: Llama RMSNorm).
set -euo pipefail
cd "$(dirname "$0")/.."
id="${1:-12p}"
shift || true
task="bench/jaxbench/$id/ci"
# Only the binary it runs: the test targets are the test command's (scripts/test.sh).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1  # as scripts/build.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j"$(nproc)" maxkernel
mk=build/maxkernel
out="$(mktemp -d /tmp/maxkernel-main-XXXXXX)"

echo "== optimize $task (auto mode, cpu)"
"$mk" optimize "$task" --target cpu --max-iterations 12 --time-budget 300 \
  --report "$out/report.html" --metrics-file "$out/maxkernel.prom" "$@"
"$mk" optimize --help >/dev/null
echo "== stored runs"
"$mk" runs list --limit 3 || true
echo "main job done: report $out/report.html, metrics $out/maxkernel.prom"
