#!/usr/bin/env python3
"""Fails when a source file includes a header of a layer it may not depend on.

The layers (docs/ARCHITECTURE.md) and what each may include, besides itself; a layer may also
include whatever the layers it names may include. This mirrors the libraries each layer links in
CMakeLists.txt, so an include that runs back up the stack fails here, with the file and line,
before it becomes a link error or a cycle. Tests may include the test helpers of the layers they
link, so they are checked by the same rule.
"""
import os
import re
import sys

DEPENDS = {
    "support": [],
    "hlo": ["support"],
    "interp": ["hlo"],
    "analysis": ["hlo"],
    "target": ["support"],
    "space": ["support"],
    "codegen": ["analysis", "space", "target"],
    "runtime": ["codegen", "interp"],
    "task": ["interp"],
    "store": ["support"],
    "agents": ["runtime", "task", "store"],
    "modes": ["agents"],
    "report": ["support"],
    "export": ["store", "task", "runtime"],
    "benchmarks": ["agents", "modes"],
    "server": ["store", "report"],
    "cli": ["modes", "report", "export", "benchmarks", "server"],
    "bench_baselines": ["support"],
}
# Test binaries that link more than their layer (CMakeLists.txt says why).
TEST_EXTRA = {"export": ["agents", "report"], "codegen": ["runtime", "task"]}


def allowed(layer, extra=()):
    seen, stack = set(), [layer, *extra]
    while stack:
        l = stack.pop()
        if l not in seen:
            seen.add(l)
            stack.extend(DEPENDS.get(l, []))
    return seen


def main(src):
    include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
    bad = []
    for root, _, files in os.walk(src):
        layer = os.path.relpath(root, src).split(os.sep)[0]
        if layer not in DEPENDS:
            continue
        for name in sorted(files):
            if not name.endswith((".h", ".cc")):
                continue
            is_test = name.endswith(("_test.cc", "_test_util.h")) or name.startswith("test_")
            ok = allowed(layer, TEST_EXTRA.get(layer, []) if is_test else [])
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = include.match(line)
                    if m and m.group(1) in DEPENDS and m.group(1) not in ok:
                        bad.append(f"{path}:{n}: {layer} includes {m.group(1)}/ "
                                   f"(allowed: {', '.join(sorted(ok))})")
    for b in bad:
        print(b)
    print(f"layering: {len(bad)} include(s) running against the layer order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "src")))
