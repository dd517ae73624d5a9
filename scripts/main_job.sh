#!/usr/bin/env bash
# The main job on a suite workload, with the embedded store's defaults: build, show the suite,
# then generate, verify and compile a CPU kernel for one workload's ci task and check it against
# the reference interpreter on fresh seeded inputs. (This becomes `maxkernel optimize` when the
# optimizer lands.) Usage: scripts/main_job.sh [WORKLOAD_ID]   (default 12p: Llama RMSNorm)
set -euo pipefail
cd "$(dirname "$0")/.."
id="${1:-12p}"
task="bench/jaxbench/$id/ci"
scripts/build.sh build
mk=build/maxkernel
out="$(mktemp -d /tmp/maxkernel-main-XXXXXX)"

echo "== suite"
"$mk" suite list > "$out/suite.txt"
head -5 "$out/suite.txt"
echo "== task $task"
"$mk" hlo check "$task/module.hlo"
echo "== compile for cpu -> $out/kernel"
"$mk" compile "$task" --target cpu -o "$out/kernel"
echo "== check against the interpreter (3 fresh seeds, NaN-poisoned outputs)"
"$mk" check "$task" --target cpu --seeds 3
echo "main job done: artifacts in $out"
