"""The C++ commands of the suite (src/cli/suite_commands.cc), driven through the real binary:
import (Python and HLO), suite list/export, baseline."""

import json
import os
import sqlite3

import pytest

import yaml

from conftest import REFERENCE, REPO, SUITE_DIR, TINY_WORKLOAD, run_mk

JAX_DUMPS = os.path.join(REPO, "src", "hlo", "testdata", "jax_dumps")
MLP_DUMP = os.path.join(JAX_DUMPS, "mlp_dump")

ADD_HLO = """HloModule add_mul, entry_computation_layout={(f32[2,3]{1,0}, s32[4]{0})->(f32[2,3]{1,0}, s32[4]{0})}

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  i = s32[4]{0} parameter(1)
  y = f32[2,3]{1,0} add(x, x)
  ROOT t = (f32[2,3]{1,0}, s32[4]{0}) tuple(y, i)
}
"""


def test_suite_list(mk_bin):
    r = run_mk(mk_bin, "suite", "list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "50 workloads"
    assert len(lines) == 52  # header + 50 + count
    row = next(line for line in lines if line.startswith("12p "))
    assert "llama3_70b_rmsnorm" in row and "FLOP" in row
    r = run_mk(mk_bin, "suite", "list", "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert isinstance(listed, dict) and set(listed) == {"workloads"}
    with open(os.path.join(SUITE_DIR, "suite.json")) as f:
        assert listed["workloads"] == json.load(f)["workloads"]


def test_suite_list_bad_index(mk_bin, tmp_path):
    (tmp_path / "suite.json").write_text("{not json")
    r = run_mk(mk_bin, "suite", "list", "--suite-dir", str(tmp_path))
    assert r.returncode == 2 and "not a suite index" in r.stderr
    r = run_mk(mk_bin, "suite", "list", "--suite-dir", str(tmp_path / "none"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_import_hlo_dump(mk_bin, tmp_path):
    dump = tmp_path / "add_mul.hlo"
    dump.write_text(ADD_HLO)
    out = tmp_path / "task"
    r = run_mk(mk_bin, "import", str(dump), "-o", str(out))
    assert r.returncode == 0, r.stderr
    with open(out / "task.yaml") as f:
        t = yaml.safe_load(f)
    assert t["id"] == "add_mul" and t["name"] == "add_mul" and "source" not in t
    assert t["parameters"][0] == {"name": "x", "shape": [2, 3], "dtype": "f32",
                                  "init": {"kind": "normal", "mean": 0.0, "std": 1.0}}
    assert t["parameters"][1]["init"] == {"kind": "randint", "low": 0, "high": 4}
    assert [o["dtype"] for o in t["outputs"]] == ["f32", "s32"]
    assert t["bytes"] == 2 * (24 + 16)
    assert (out / "module.hlo").read_text() == ADD_HLO  # names already identifiers: kept as is
    assert t["flops"] == 6  # the planner's count (one add per element), not 0
    # No JAX source: XLA:CPU compiles module.hlo itself.
    r = run_mk(mk_bin, "baseline", str(out), "--xla", "--json", "--no-record", "--min-runs", "3",
               "--min-time", "0")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["compiled"] == "module.hlo" and j["median_s"] > 0 and j["runs"] >= 3


def test_import_bad_hlo_leaves_nothing(mk_bin, tmp_path):
    dump = tmp_path / "bad.hlo"
    dump.write_text(ADD_HLO.replace("add(x, x)", "frobnicate(x, x)"))
    r = run_mk(mk_bin, "import", str(dump), "-o", str(tmp_path / "task"))
    assert r.returncode == 2
    assert "bad.hlo:" in r.stderr and "frobnicate" in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["bad.hlo"]


def test_import_python_and_baseline(mk_bin, tmp_path):
    out = tmp_path / "tiny"
    r = run_mk(mk_bin, "import", TINY_WORKLOAD, "--scale", "ci", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == ["data", "module.hlo", "task.yaml"]
    assert sorted(os.listdir(tmp_path)) == ["tiny"]  # no staging directory left
    r = run_mk(mk_bin, "import", TINY_WORKLOAD, "-o", str(out))
    assert r.returncode == 2 and "already exists" in r.stderr

    db = tmp_path / "runs.db"
    task_yaml = (out / "task.yaml").read_text()
    r = run_mk(mk_bin, "baseline", str(out), "--xla", "--min-runs", "3", "--min-time", "0.05",
               "--db", str(db))
    assert r.returncode == 0, r.stderr
    assert "median" in r.stdout and "recorded in" in r.stdout
    # Recorded in the store, keyed by module and CPU; the task directory is left as it was.
    assert (out / "task.yaml").read_text() == task_yaml
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT engine, median_s, runs, module_sha256 FROM baselines").fetchall()
    assert len(rows) == 1
    engine, median_s, runs, module_sha = rows[0]
    assert engine == "xla-cpu" and median_s > 0 and runs >= 3 and len(module_sha) == 64

    r = run_mk(mk_bin, "baseline", str(out), "--xla", "--json", "--no-record", "--min-runs", "3",
               "--min-time", "0.05")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["recorded"] is False and j["p10_s"] <= j["median_s"] <= j["p90_s"]
    r = run_mk(mk_bin, "baseline", str(out))
    assert r.returncode == 2 and "--xla" in r.stderr


def test_import_python_errors(mk_bin, tmp_path):
    for args, message in [
        ([REFERENCE, "--function", "missing"], "no function named 'missing'"),
        ([REFERENCE, "--function", "broken"], "JAX lowering failed"),
        ([str(tmp_path / "none.py")], "no such file"),
    ]:
        r = run_mk(mk_bin, "import", *args, "-o", str(tmp_path / "t"))
        assert r.returncode == 2, r.stderr
        assert message in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "t").exists()
    assert os.listdir(tmp_path) == []


def test_suite_export_only(mk_bin, tmp_path):
    r = run_mk(mk_bin, "suite", "export", "--only", "12p,30k", "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["12p", "30k"]
    with open(os.path.join(SUITE_DIR, "12p", "ci", "module.hlo")) as f:
        assert (tmp_path / "12p" / "ci" / "module.hlo").read_text() == f.read()
    r = run_mk(mk_bin, "suite", "export", "--only", "99z", "-o", str(tmp_path))
    assert r.returncode == 2 and "99z" in r.stderr


def _entry_parameter_names(module_text):
    """Names of the ENTRY computation's parameter instructions, in parameter-number order."""
    entry = module_text[module_text.index("ENTRY"):]
    found = {}
    for line in entry.splitlines()[1:]:
        if " parameter(" in line:
            name = line.split("=")[0].strip().lstrip("%")
            found[int(line.split(" parameter(")[1].split(")")[0])] = name
        if line.strip() == "}":
            break
    return [found[i] for i in sorted(found)]


def test_import_reference_keeps_argument_names_and_counts_flops(mk_bin, tmp_path):
    out = tmp_path / "ref"
    r = run_mk(mk_bin, "import", REFERENCE, "--function", "gelu_mlp", "-o", str(out))
    assert r.returncode == 0, r.stderr
    with open(out / "task.yaml") as f:
        t = yaml.safe_load(f)
    # gelu_mlp(x, w): the user's names in task.yaml and in the module the exporters read
    # (JAX itself names the HLO parameters x.1 and w.1).
    assert [p["name"] for p in t["parameters"]] == ["x", "w"]
    assert _entry_parameter_names((out / "module.hlo").read_text()) == ["x", "w"]
    # tanh(x @ w), x 4x8, w 8x3: 2*4*3*8 for the dot, 4*3 for tanh; the file gives no FLOPS.
    assert t["flops"] == 2 * 4 * 3 * 8 + 4 * 3
    r = run_mk(mk_bin, "hlo", "check", str(out / "module.hlo"))
    assert r.returncode == 0, r.stderr


def test_import_xla_dump_folder_takes_the_jitted_function(mk_bin, tmp_path):
    out = tmp_path / "mlp"
    r = run_mk(mk_bin, "import", MLP_DUMP, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "jit_mlp.before_optimizations.txt" in r.stderr
    with open(out / "task.yaml") as f:
        t = yaml.safe_load(f)
    assert t["id"] == "mlp" and t["name"] == "jit_mlp"
    assert [p["name"] for p in t["parameters"]] == ["x", "w1", "b1", "w2", "b2"]
    assert _entry_parameter_names((out / "module.hlo").read_text()) == ["x", "w1", "b1", "w2", "b2"]
    # gelu(x @ w1 + b1) @ w2 + b2 with x 8x32, w1 32x64, w2 64x32: the two dots alone.
    assert t["flops"] > 2 * 8 * 64 * 32 + 2 * 8 * 32 * 64
    r = run_mk(mk_bin, "import", MLP_DUMP, "--function", "nosuch", "-o", str(tmp_path / "n"))
    assert r.returncode == 2 and "has no module jit_nosuch" in r.stderr
    # XLA:CPU compiles the imported module (renamed parameters, printed form), and it still
    # computes the function that was dumped.
    import jax
    import numpy as np
    from maxkernel_jax.taskfile import load_task
    from maxkernel_jax.xla import task_inputs, xla_outputs

    task = load_task(str(out))
    x, w1, b1, w2, b2 = task_inputs(task, 0)
    want = jax.nn.gelu(x @ w1 + b1) @ w2 + b2
    (got,) = xla_outputs(task, 0)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5)
    r = run_mk(mk_bin, "baseline", str(out), "--xla", "--json", "--no-record", "--min-runs", "3",
               "--min-time", "0")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["compiled"] == "module.hlo"


@pytest.mark.parametrize("suffix,kind", [
    ("cpu_after_optimizations-buffer-assignment.txt", "an XLA buffer-assignment dump"),
    ("cpu_after_optimizations-live-range.txt", "an XLA live-range dump"),
    ("debug_options", "XLA's debug options"),
    ("obj-file.broadcast_add_fusion_kernel_module.o", "an object file"),
    ("broadcast_add_fusion_kernel_module.ir-no-opt.ll", "LLVM IR"),
])
def test_import_refuses_other_dump_files_by_kind(mk_bin, tmp_path, suffix, kind):
    (path,) = [os.path.join(MLP_DUMP, f) for f in os.listdir(MLP_DUMP)
               if ".jit_mlp." in f and f.endswith(suffix)]
    r = run_mk(mk_bin, "import", path, "-o", str(tmp_path / "t"))
    assert r.returncode == 2
    assert f"is {kind}, not HLO text" in r.stderr, r.stderr
    assert os.listdir(tmp_path) == []


FRESH_DUMP = r"""
import jax, jax.numpy as jnp

def block(x, w, g):
    h = jnp.tanh(x @ w)
    h = h * jax.lax.rsqrt(jnp.mean(h * h, axis=-1, keepdims=True) + 1e-6) * g
    return jnp.sum(jax.nn.softmax(h, axis=-1), axis=0)

x = jnp.ones((4, 8)); w = jnp.full((8, 16), 0.5); g = jnp.arange(16.0)
jax.block_until_ready(jax.jit(block)(x, w, g))
"""


def test_every_optimizations_file_this_jax_writes_parses(mk_bin, tmp_path):
    """A fresh --xla_dump_to folder from the installed jax: each *_optimizations.txt (the
    user's module, JAX's helper modules, before and after XLA's passes) passes hlo check."""
    import subprocess
    import sys

    dump = tmp_path / "dump"
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump}", JAX_PLATFORMS="cpu")
    subprocess.run([sys.executable, "-c", FRESH_DUMP], check=True, env=env, timeout=120)
    files = sorted(f for f in os.listdir(dump) if f.endswith("_optimizations.txt"))
    assert any("jit_block.before" in f for f in files) and any("after_opt" in f for f in files)
    for f in files:
        r = run_mk(mk_bin, "hlo", "check", str(dump / f))
        assert r.returncode == 0, f"{f}: {r.stderr}"
    r = run_mk(mk_bin, "import", str(dump), "-o", str(tmp_path / "task"))
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "task" / "task.yaml") as f:
        assert [p["name"] for p in yaml.safe_load(f)["parameters"]] == ["x", "w", "g"]
