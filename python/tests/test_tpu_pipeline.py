"""The TPU target end to end (issue 31; docs/TPU.md): `optimize --target tpu-v5e` models the
candidates of the Pallas emitter's space, checks the best in TPU interpret mode and compiles it
with libtpu (compile-only); `export --format pallas` writes the module, which a fresh Python
process runs in interpret mode and which agrees with the workload's own JAX function. One small
task (12p, RMSNorm at ci scale: one kernel) keeps it to about a minute."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import SUITE_DIR
from maxkernel_jax.sources import source_of_task
from maxkernel_jax.taskfile import load_task
from maxkernel_jax.tpu_xla import libtpu_available
from maxkernel_jax.xla import task_inputs

TASK_DIR = os.path.join(SUITE_DIR, "12p", "ci")
INPUT_SEED = 7  # not a seed the optimizer tested on

pytestmark = pytest.mark.skipif(not libtpu_available(),
                                reason="libtpu is not installed (scripts/setup.sh installs it)")


def run(argv, home, timeout=900):
    env = dict(os.environ)
    env["MAXKERNEL_HOME"] = str(home)
    env["MAXKERNEL_PYTHON"] = sys.executable
    return subprocess.run([str(a) for a in argv], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_optimize_for_tpu_checks_compiles_models_and_exports(mk_bin, tmp_path):
    home, db = tmp_path / "home", tmp_path / "runs.db"
    home.mkdir()
    r = run([mk_bin, "optimize", TASK_DIR, "--target", "tpu-v5e", "--max-iterations", "4",
             "--test-seeds", "1", "--db", db, "--json"], home)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout)
    assert result["status"] == "succeeded"
    assert result["target"]["name"] == "tpu-v5e" and result["target"]["kind"] == "tpu"
    best = result["best"]
    assert best["test"]["status"] == "passed"       # interpret mode vs the interpreter
    assert best["compile"]["ok"] is True            # libtpu, compile-only, for v5e
    assert best["modelled_s"] > 0
    assert best["model"]["label"].startswith("modelled")
    assert best["model"]["pallas_kernels"] >= 1     # the norm runs in a pallas_call
    assert result["search"]["admissibility"]["ok"] is True
    xla = result["tpu"]["xla_tpu_estimate"]
    assert xla.get("ok") is True and xla["cost"]["optimal_seconds"] > 0
    assert result["tpu"]["modelled_ratio"] > 0

    out = tmp_path / "export"
    r = run([mk_bin, "export", result["run_id"], "--format", "pallas", "-o", out, "--db", db,
             "--json"], home)
    assert r.returncode == 0, r.stderr
    exported = json.loads(r.stdout)
    module_path = exported["files"]["python"]

    # A fresh process: the exported file alone, in interpret mode, on inputs of another seed.
    task = load_task(TASK_DIR)
    inputs = task_inputs(task, INPUT_SEED)
    for i, a in enumerate(inputs):
        np.save(tmp_path / f"in{i}.npy", a.astype(np.float32) if a.dtype.name == "bfloat16" else a)
    script = (
        "import os, sys, importlib.util, numpy as np\n"
        "os.environ['JAX_PLATFORMS'] = 'cpu'\n"
        "import jax.numpy as jnp\n"
        "from jax.experimental.pallas import tpu as pltpu\n"
        f"spec = importlib.util.spec_from_file_location('m', {str(module_path)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "m.INTERPRET = pltpu.InterpretParams()\n"
        f"xs = [np.load({str(tmp_path)!r} + f'/in{{i}}.npy') for i in range({len(inputs)})]\n"
        "out = m.workload(*xs)\n"
        f"np.save({str(tmp_path / 'out.npy')!r}, np.asarray(jnp.asarray(out, jnp.float32)))\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    got = np.load(tmp_path / "out.npy")
    import jax
    want = np.asarray(jax.jit(source_of_task(task).fn)(*inputs), dtype=np.float32)
    spec = task["outputs"][0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=spec["atol"], rtol=spec["rtol"])


def test_a_cpu_run_does_not_export_as_pallas(mk_bin, tmp_path):
    home, db = tmp_path / "home", tmp_path / "runs.db"
    home.mkdir()
    r = run([mk_bin, "optimize", TASK_DIR, "--max-iterations", "1", "--xla-rounds", "0",
             "--no-probe", "--profile-kernels", "0", "--db", db, "--json"], home)
    assert r.returncode == 0, r.stderr[-2000:]
    run_id = json.loads(r.stdout)["run_id"]
    r = run([mk_bin, "export", run_id, "--format", "pallas", "-o", tmp_path / "x", "--db", db],
            home)
    assert r.returncode == 2
    assert "TPU runs" in r.stderr
