"""The JAX FFI round trip (docs/EXPORT.md): a run of a ci-scale suite task is exported with
`maxkernel export RUN --format jax-ffi`, the generated module is imported, the kernel is called
from a jitted JAX function on fresh random inputs and compared with the workload's own JAX
function within the task's tolerances."""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import SUITE_DIR
from maxkernel_jax.sources import source_of_task
from maxkernel_jax.taskfile import load_task
from maxkernel_jax.xla import task_inputs

TASK_DIR = os.path.join(SUITE_DIR, "12p", "ci")  # RMSNorm, bf16 in and out: small, quick
INPUT_SEED = 20240607  # not the task's seed: inputs the optimizer never tested on


def run(argv, home, timeout=600, extra_env=None):
    env = dict(os.environ)
    env["MAXKERNEL_HOME"] = str(home)  # the artifact store lives in the data directory
    env["MAXKERNEL_PYTHON"] = sys.executable
    env.update(extra_env or {})
    return subprocess.run([str(a) for a in argv], env=env, capture_output=True, text=True,
                          timeout=timeout)


def make_run(mk_bin, home, db):
    """A finished run of TASK_DIR in `db`: by `maxkernel optimize` when the binary has it, else
    by the C++ test fixture that builds a run the way optimize leaves one
    (export_test's FixtureForPython, src/export/run_export_test.cc)."""
    if run([mk_bin, "optimize", "--help"], home).returncode == 0:
        r = run([mk_bin, "optimize", TASK_DIR, "--max-iterations", "2", "--db", db,
                 "--xla-rounds", "0"], home)
        assert r.returncode == 0, f"optimize failed: {r.stderr.strip()[-2000:]}"
    else:
        export_test = os.path.join(os.path.dirname(mk_bin), "export_test")
        if not os.access(export_test, os.X_OK):
            pytest.skip("maxkernel has no optimize command and export_test is not beside it")
        r = run([export_test, "--gtest_filter=FixtureForPython.*"], home,
                extra_env={"MK_EXPORT_FIXTURE_HOME": str(home), "MK_EXPORT_FIXTURE_TASK": TASK_DIR})
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        os.replace(os.path.join(home, "maxkernel.db"), db)
    r = run([mk_bin, "runs", "list", "--json", "--limit", "1", "--db", db], home)
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert len(runs) == 1 and runs[0]["status"] == "succeeded", runs
    return runs[0]["id"]


def import_path(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_close(got, want, atol, rtol, what):
    got = np.asarray(got).astype(np.float64)
    want = np.asarray(want).astype(np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    ok = (np.abs(got - want) <= atol + rtol * np.abs(want)) | (np.isnan(got) & np.isnan(want))
    bad = np.argwhere(~ok)
    assert bad.size == 0, (f"{what}: {len(bad)} of {ok.size} elements out of tolerance "
                           f"(atol {atol}, rtol {rtol}); first at {tuple(bad[0])}: "
                           f"{got[tuple(bad[0])]} vs {want[tuple(bad[0])]}")


def test_jax_ffi_export_round_trip(mk_bin, tmp_path):
    import jax
    import jax.numpy as jnp

    home = tmp_path / "home"
    home.mkdir()
    db = tmp_path / "tmp.db"
    run_id = make_run(mk_bin, home, db)

    out = tmp_path / "export"
    r = run([mk_bin, "export", run_id, "--format", "jax-ffi", "-o", out, "--db", db, "--json"],
            home)
    assert r.returncode == 0, r.stderr
    exported = json.loads(r.stdout)
    name = exported["name"]
    assert name == "llama3_70b_rmsnorm"
    assert sorted(os.listdir(out)) == sorted([
        "README.txt", f"libmaxkernel_{name}.so", f"{name}_jax.py", f"{name}_ffi.cc",
        f"{name}_ffi.so"])

    module = import_path(f"{name}_jax", exported["files"]["python"])
    kernel = getattr(module, name)

    task = load_task(TASK_DIR)
    reference = source_of_task(task).fn
    args = [jnp.asarray(a) for a in task_inputs(task, INPUT_SEED)]

    @jax.jit
    def program(*xs):  # the kernel inside a larger jitted computation
        return kernel(*xs)

    got = jax.tree_util.tree_leaves(program(*args))
    want = jax.tree_util.tree_leaves(jax.jit(reference)(*args))
    assert len(got) == len(want) == len(task["outputs"])
    for i, (g, w, spec) in enumerate(zip(got, want, task["outputs"])):
        assert g.dtype == w.dtype and tuple(g.shape) == tuple(spec["shape"])
        assert_close(g, w, spec["atol"], spec["rtol"], f"output {i}")

    # Wrong arguments are refused before they reach the kernel, naming the argument.
    with pytest.raises(TypeError, match=r"argument 0 \('x.1'\) must be bfloat16\[1, 64, 512\]"):
        kernel(args[0].astype(jnp.float32), *args[1:])
    with pytest.raises(ValueError, match=r"argument 1 .* got bfloat16\[256\]"):
        kernel(args[0], args[1][:256])
    with pytest.raises(TypeError, match="takes 2 arguments"):
        kernel(args[0])


def test_export_of_unknown_run_is_bad_input(mk_bin, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    r = run([mk_bin, "export", "1", "--format", "jax-ffi", "-o", tmp_path / "out"], home)
    assert r.returncode == 2
    assert "no maxkernel database at" in r.stderr
    assert not (tmp_path / "out").exists()


def test_imported_argument_names_reach_the_header_and_the_ffi_module(mk_bin, tmp_path):
    """Issue 29 item 5: a JAX function's own argument names (x, w; JAX names the HLO parameters
    x.1 and w.1) are the names the exported header's buffer table and the FFI module use."""
    import jax.numpy as jnp

    from conftest import REFERENCE

    home = tmp_path / "home"
    home.mkdir()
    db = tmp_path / "names.db"
    task_dir = tmp_path / "gelu"
    r = run([mk_bin, "import", REFERENCE, "--function", "gelu_mlp", "-o", task_dir], home)
    assert r.returncode == 0, r.stderr
    r = run([mk_bin, "optimize", task_dir, "--max-iterations", "1", "--db", db, "--xla-rounds",
             "0", "--no-probe", "--json", "-q"], home)
    assert r.returncode == 0, r.stderr
    run_id = str(json.loads(r.stdout)["run_id"])

    lib = tmp_path / "lib"
    r = run([mk_bin, "export", run_id, "--format", "lib", "-o", lib, "--db", db, "--json"], home)
    assert r.returncode == 0, r.stderr
    name = json.loads(r.stdout)["name"]
    header = (lib / f"{name}.h").read_text()
    assert '"x"' in header and '"w"' in header, header
    assert "x.1" not in header and "x_1" not in header and "arg0" not in header

    ffi = tmp_path / "ffi"
    r = run([mk_bin, "export", run_id, "--format", "jax-ffi", "-o", ffi, "--db", db, "--json"],
            home)
    assert r.returncode == 0, r.stderr
    exported = json.loads(r.stdout)
    source = (ffi / f"{name}_jax.py").read_text()
    assert "x.1" not in source and "x_1" not in source and "arg0" not in source
    kernel = getattr(import_path(f"{name}_names_jax", exported["files"]["python"]), name)
    x = jnp.zeros((4, 8), jnp.float32)
    w = jnp.zeros((8, 3), jnp.float32)
    with pytest.raises(TypeError, match=r"argument 0 \('x'\) must be float32\[4, 8\]"):
        kernel(x.astype(jnp.int32), w)
    with pytest.raises(ValueError, match=r"argument 1 \('w'\)"):
        kernel(x, w[:4])
