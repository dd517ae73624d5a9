"""export / inputs / expected / time on a tiny workload and a reference file, and the bad
inputs that must give one clear message, exit code 2 and no task directory."""

import json
import os

import ml_dtypes
import numpy as np
import pytest
import yaml

from conftest import HERE as PYTHON_TESTS, REFERENCE, TINY_WORKLOAD, run_bridge
from maxkernel_jax.errors import BridgeError
from maxkernel_jax.export import export
from maxkernel_jax.taskfile import load_task, task_to_yaml
from maxkernel_jax.xla import task_inputs, xla_outputs


@pytest.fixture(scope="module")
def tiny_task(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("tasks") / "tiny")
    export(TINY_WORKLOAD, None, "ci", out)
    return out


def test_export_writes_task(tiny_task):
    with open(os.path.join(tiny_task, "task.yaml")) as f:
        raw = yaml.safe_load(f)
    assert raw["id"] == "0t" and raw["scale"] == "ci" and raw["operator"] == "norm"
    assert raw["source"]["function"] == "function"
    assert [p["dtype"] for p in raw["parameters"]] == ["bf16", "f32", "s32"]
    assert raw["parameters"][0]["shape"] == [4, 8]
    assert raw["parameters"][1]["init"] == {"kind": "uniform", "low": 0.5, "high": 1.5}
    assert raw["parameters"][2]["init"] == {"kind": "data", "file": "data/idx.npy"}
    assert [o["shape"] for o in raw["outputs"]] == [[4, 8], [4]]
    assert [o["dtype"] for o in raw["outputs"]] == ["bf16", "f32"]
    assert raw["flops"] == 5 * 4 * 8
    assert raw["bytes"] == 4 * 8 * 2 + 8 * 4 + 4 * 4 + 4 * 8 * 2 + 4 * 4
    np.testing.assert_array_equal(np.load(os.path.join(tiny_task, "data", "idx.npy")),
                                  np.array([3, 2, 1, 0], np.int32))
    with open(os.path.join(tiny_task, "module.hlo")) as f:
        hlo = f.read()
    assert hlo.startswith("HloModule ") and "ENTRY" in hlo
    assert "bf16[4,8]{1,0} parameter(0)" in hlo and "s32[4]{0} parameter(2)" in hlo
    # The source path is absolute here (the task is outside the repository) and resolvable.
    assert os.path.isfile(raw["source"]["workload"])


def test_yaml_round_trip(tiny_task):
    task = load_task(tiny_task)
    again = yaml.safe_load(task_to_yaml({k: v for k, v in task.items() if k != "dir"}))
    with open(os.path.join(tiny_task, "task.yaml")) as f:
        assert again == yaml.safe_load(f)
    # Floats always carry a '.', so PyYAML reads them back as numbers.
    text = task_to_yaml(dict(task, tolerance={"atol": 1e-5, "rtol": 2.0}))
    assert "atol: 1.0e-05" in text and yaml.safe_load(text)["tolerance"]["atol"] == 1e-5


def test_inputs_and_expected(tiny_task, tmp_path):
    task = load_task(tiny_task)
    x, scale, idx = task_inputs(task, 0)
    assert x.dtype == ml_dtypes.bfloat16 and x.shape == (4, 8)
    assert scale.dtype == np.float32 and 0.5 <= scale.min() and scale.max() < 1.5
    np.testing.assert_array_equal(idx, [3, 2, 1, 0])
    y, sums = xla_outputs(task, 0)
    xf = x.astype(np.float32)
    want_sums = xf[::-1].sum(axis=1)
    np.testing.assert_allclose(sums, want_sums, rtol=1e-5, atol=1e-5)
    rms = np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.astype(np.float32), xf / rms * scale, rtol=1e-2, atol=1e-2)

    r = run_bridge("inputs", tiny_task, "--seed", "0", "-o", str(tmp_path / "in"))
    assert r.returncode == 0, r.stderr
    in0 = np.load(tmp_path / "in" / "in0.npy")
    assert in0.dtype == np.float32  # bf16 widened exactly
    np.testing.assert_array_equal(in0, xf)
    assert np.load(tmp_path / "in" / "in2.npy").dtype == np.int32
    r = run_bridge("expected", tiny_task, "--seed", "0", "-o", str(tmp_path / "exp"))
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "exp" / "out1.npy"), sums)
    # Another seed gives other inputs.
    assert not np.array_equal(task_inputs(task, 1)[0], x)


def test_time_reports_statistics(tiny_task):
    r = run_bridge("time", tiny_task, "--min-runs", "5", "--min-time", "0.05", "--record")
    assert r.returncode == 0, r.stderr
    t = json.loads(r.stdout)
    assert t["engine"] == "xla-cpu" and t["runs"] >= 5
    assert 0 < t["p10_s"] <= t["median_s"] <= t["p90_s"]
    assert load_task(tiny_task)["baseline"]["median_s"] == pytest.approx(t["median_s"])


def test_time_runs_on_the_cpus_it_is_given(tiny_task):
    r = run_bridge("time", tiny_task, "--min-runs", "2", "--min-time", "0.01", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["threads"] == 1
    r = run_bridge("time", tiny_task, "--threads", "0")
    assert r.returncode != 0 and "at least 1" in r.stderr
    r = run_bridge("time", tiny_task, "--threads", str(len(os.sched_getaffinity(0)) + 1))
    assert r.returncode != 0 and "may run on only" in r.stderr


def test_reference_file_with_example_arrays(tmp_path):
    out = str(tmp_path / "ref")
    task = export(REFERENCE, "gelu_mlp", "ci", out)
    assert task["scale"] == "custom"
    assert [p["init"]["kind"] for p in task["parameters"]] == ["normal", "normal"]
    assert task["tolerance"] == {"atol": 1e-3, "rtol": 1e-3}
    assert task["outputs"] == [{"shape": (4, 3), "dtype": "f32", "atol": 1e-3, "rtol": 1e-3}]
    assert task["description"] == "GELU(x @ w)."
    assert [p["name"] for p in task["parameters"]] == ["x", "w"]  # gelu_mlp(x, w), not arg0
    loaded = load_task(out)
    (y,) = xla_outputs(loaded, 0)
    x, w = task_inputs(loaded, 0)
    np.testing.assert_allclose(y, np.tanh(x @ w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("args,message", [
    (["--workload", "nope.py"], "no such file"),
    (["--workload", REFERENCE], "pass --function"),
    (["--workload", REFERENCE, "--function", "missing"], "no function named 'missing'"),
    (["--workload", REFERENCE, "--function", "broken"], "JAX lowering failed"),
    (["--workload", TINY_WORKLOAD, "--scale", "huge"], "unknown scale 'huge'"),
])
def test_bad_input_exit_2_and_no_directory(tmp_path, args, message):
    out = tmp_path / "task"
    r = run_bridge("export", *args, "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert r.stderr.count("\n") == 1  # one line, no traceback
    assert not out.exists()
    assert os.listdir(tmp_path) == []  # no staging leftovers


def test_import_errors_and_unsupported_dtype(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import jax.numpy as jnp\nraise RuntimeError('boom')\n")
    with pytest.raises(BridgeError, match="does not import: RuntimeError: boom"):
        export(str(bad), "f", "ci", str(tmp_path / "t1"))
    f64 = tmp_path / "f64.py"
    f64.write_text("import numpy as np\nINPUTS=[np.zeros(3, np.complex64)]\ndef f(x):\n  return x\n")
    with pytest.raises(BridgeError, match="unsupported dtype"):
        export(str(f64), "f", "ci", str(tmp_path / "t2"))
    spec = tmp_path / "spec.py"
    spec.write_text("INPUTS=[{'name':'x','shape':(2,),'dtype':'int64','init':{'kind':'normal'}}]\n"
                    "def f(x):\n  return x\n")
    with pytest.raises(BridgeError, match="unsupported dtype 'int64'"):
        export(str(spec), "f", "ci", str(tmp_path / "t3"))
    assert sorted(os.listdir(tmp_path)) == ["bad.py", "f64.py", "spec.py"]


def test_existing_directory_needs_force(tmp_path):
    out = tmp_path / "t"
    out.mkdir()
    (out / "keep").write_text("x")
    with pytest.raises(BridgeError, match="already exists"):
        export(TINY_WORKLOAD, None, "ci", str(out))
    assert (out / "keep").exists()
    # --force replaces only a task directory (issue 30 hole 6): an unrelated file stays.
    with pytest.raises(BridgeError, match="refusing to replace .*it holds keep"):
        export(TINY_WORKLOAD, None, "ci", str(out), force=True)
    assert (out / "keep").read_text() == "x"
    (out / "keep").unlink()
    export(TINY_WORKLOAD, None, "ci", str(out), force=True)  # empty: replaced
    (out / "module.hlo").write_text("stale")
    export(TINY_WORKLOAD, None, "ci", str(out), force=True)  # a task: replaced
    assert (out / "module.hlo").read_text().startswith("HloModule")
    assert sorted(os.listdir(tmp_path)) == ["t"]
    plain = tmp_path / "plain.txt"
    plain.write_text("keep me")
    with pytest.raises(BridgeError, match="not a directory"):
        export(TINY_WORKLOAD, None, "ci", str(plain), force=True)
    assert plain.read_text() == "keep me"


def test_argument_names():
    from maxkernel_jax.sources import argument_names

    def f(x, w, *rest, scale=1.0):
        return x

    assert argument_names(f, 2) == ["x", "w"]
    assert argument_names(f, 4) == ["x", "w", "rest_0", "rest_1"]
    assert argument_names(lambda a, b: a, 2) == ["a", "b"]
    assert argument_names(max, 2) == ["arg0", "arg1"]  # no signature to read


def test_hlo_text_runs_on_xla_cpu():
    """A task imported from HLO is timed (and checked) through jaxlib's compiler: the dumped
    attention block, compiled from its text, computes what the JAX function computes."""
    import jax
    import jax.numpy as jnp

    from maxkernel_jax.xla import compile_hlo_text

    dumps = os.path.join(os.path.dirname(PYTHON_TESTS), "..", "src", "hlo", "testdata", "jax_dumps")
    with open(os.path.join(dumps, "attention.before_optimizations.txt")) as f:
        run = compile_hlo_text(f.read())
    rng = np.random.default_rng(0)
    x, wq, wk, wv, wo = (rng.standard_normal(s).astype(np.float32)
                         for s in [(16, 32)] + [(32, 32)] * 4)

    def attention(x, wq, wk, wv, wo):  # as in generate.py there
        q, k, v = x @ wq, x @ wk, x @ wv
        s = (q @ k.T) / jnp.sqrt(jnp.float32(q.shape[-1]))
        return (jax.nn.softmax(s, axis=-1) @ v) @ wo + x

    (got,) = run(x, wq, wk, wv, wo)
    want = jax.jit(attention)(x, wq, wk, wv, wo)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
    with pytest.raises(BridgeError, match="XLA:CPU cannot compile it"):
        compile_hlo_text("HloModule broken\nENTRY e {\n  ROOT p = f32[] frob(0)\n}\n")
