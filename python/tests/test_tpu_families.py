"""One ci task per Pallas family, checked for TPU v5e (issue 31: "CI checks one task per family
with one seed, in at most 5 minutes"): `maxkernel check TASK --target tpu-v5e --seeds 1` runs the
emitted module in TPU interpret mode (race detection on two simulated cores) against the
reference interpreter, and libtpu compiles it compile-only for v5e. Each task's compute-heavy
operations must run inside a pallas_call. The norm family (12p) is covered end to end by
test_tpu_pipeline.py; the whole 50-task sweep is `maxkernel bench --suite tpu`, not a test."""

import json
import os
import subprocess
import sys

import pytest

from conftest import SUITE_DIR
from maxkernel_jax.tpu_xla import libtpu_available

pytestmark = pytest.mark.skipif(not libtpu_available(),
                                reason="libtpu is not installed (scripts/setup.sh installs it)")

# (task, what its heavy operation is, an instruction name prefix that must run in a pallas_call)
FAMILIES = [
    ("41k", "GEMM with a bias + ReLU epilogue", "dot"),
    ("18k", "2-D convolution as an implicit GEMM", "conv"),
    ("1p", "causal multi-head attention", "dot"),
]


@pytest.mark.parametrize("task,family,heavy", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_a_task_per_family_checks_and_compiles_for_v5e(mk_bin, tmp_path, task, family, heavy):
    env = dict(os.environ, MAXKERNEL_HOME=str(tmp_path), MAXKERNEL_PYTHON=sys.executable)
    r = subprocess.run([mk_bin, "check", os.path.join(SUITE_DIR, task, "ci"), "--target", "tpu-v5e",
                        "--seeds", "1", "--json"], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.stdout, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report.get("status") == "passed", (family, json.dumps(report)[:3000])
    assert r.returncode == 0
    tpu = report["tpu"]
    assert tpu["compile"]["ok"] is True, tpu["compile"]
    kernels = tpu["model"]["kernels"]
    in_pallas = [op for k in kernels if k["runs"] != "glue" for op in k["ops_in_pallas"]]
    assert any(op.startswith(heavy) for op in in_pallas), (family, kernels)
    in_glue = [op for k in kernels for op in k["ops_in_glue"]]
    assert not any(op.startswith(heavy) for op in in_glue), (family, in_glue)


# Paged attention (6p decode, 7p ragged): K/V pages are read from the pool through the
# scalar-prefetched page table (the gathered cache is never built, and no glue gathers it), 7p's
# per-slot query counts are recomputed in glue and prefetched, and both check in interpret mode
# with no kernel falling back to glue.
@pytest.mark.parametrize("task", ["6p", "7p"])
def test_paged_attention_reads_kv_pages_through_the_page_table(mk_bin, tmp_path, task):
    env = dict(os.environ, MAXKERNEL_HOME=str(tmp_path), MAXKERNEL_PYTHON=sys.executable)
    task_dir = os.path.join(SUITE_DIR, task, "ci")
    r = subprocess.run([mk_bin, "check", task_dir, "--target", "tpu-v5e", "--seeds", "1", "--json",
                        "--no-glue-fallback"], env=env, capture_output=True, text=True, timeout=600)
    assert r.stdout, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report.get("status") == "passed", json.dumps(report)[:3000]
    assert report["tpu"]["compile"]["ok"] is True, report["tpu"]["compile"]
    out = tmp_path / "out"
    r = subprocess.run([mk_bin, "compile", task_dir, "--target", "tpu-v5e", "-o", str(out)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    kernel_map = json.loads((out / "kernel_map.json").read_text())
    assert "attention_refused" not in kernel_map, kernel_map["attention_refused"]
    attention = [k for k in kernel_map["kernels"] if k["family"] == "attention"]
    assert len(attention) == 1, kernel_map["kernels"]
    paged = attention[0]["paged_kv"]
    assert paged["k"]["pool"] == "k_pages.1" and paged["v"]["pool"] == "v_pages.1", paged
    assert paged["k"]["page"] == 16, paged
    glue = [op for k in kernel_map["kernels"] for op in k["ops_in_glue"]]
    # The K/V takes are jit__take_.2/.3 (6p) and .6/.7 (7p); 7p's query and output takes stay.
    kv_takes = ("jit__take_.2.", "jit__take_.3.") if task == "6p" else ("jit__take_.6.", "jit__take_.7.")
    assert not [op for op in glue if "gather" in op and op.startswith(kv_takes)], glue


# A reverse along the lanes inside a kernel: libtpu's Pallas TPU lowering has no rule for `rev`,
# so the pallas_call is refused and the kernel falls back to XLA glue.
REVERSE_LANES = """HloModule reverse_lanes
ENTRY main {
  x = f32[8,100] parameter(0)
  r = f32[8,100] reverse(x), dimensions={1}
  ROOT e = f32[8,100] exponential(r)
}
"""

# A bool vector broadcast along a new minor dim (14p's masks): Mosaic refuses the shape cast of a
# bool vector, so the emitter moves bools through int32 in a kernel body, and it compiles.
BOOL_BROADCAST = """HloModule bool_broadcast
ENTRY main {
  c = pred[15] parameter(0)
  b = f32[15,16] parameter(1)
  cb = pred[15,16] broadcast(c), dimensions={0}
  z = f32[] constant(0)
  zero2 = f32[15,16] broadcast(z), dimensions={}
  ROOT s = f32[15,16] select(cb, b, zero2)
}
"""


def check_json(mk_bin, tmp_path, hlo_text, name, *extra):
    module = tmp_path / f"{name}.hlo"
    module.write_text(hlo_text)
    env = dict(os.environ, MAXKERNEL_HOME=str(tmp_path), MAXKERNEL_PYTHON=sys.executable)
    r = subprocess.run([mk_bin, "check", str(module), "--target", "tpu-v5e", "--seeds", "1", "--json", *extra],
                       env=env, capture_output=True, text=True, timeout=600)
    return r, module, env


def test_a_grouped_gemm_on_other_group_sizes_runs_as_one_call_and_checks(mk_bin, tmp_path):
    """14p (ragged dot) with group sizes other than its data file's: empty groups (including the
    first and last), uneven sizes, and rows past their sum (which must be zero). Its grouped GEMM
    runs as one pallas_call (family "grouped_gemm") that the gathers, the batched dot, the mask and
    the scatter-add are fused into; checked in interpret mode and compiled for v5e by libtpu."""
    import shutil
    import numpy as np
    task = tmp_path / "14p"
    shutil.copytree(os.path.join(SUITE_DIR, "14p", "ci"), task / "ci")
    shutil.copy(os.path.join(SUITE_DIR, "14p", "workload.py"), task / "workload.py")
    np.save(task / "ci" / "data" / "group_sizes.npy", np.array([0, 37, 0, 0, 50, 3, 20, 0], np.int32))
    env = dict(os.environ, MAXKERNEL_HOME=str(tmp_path), MAXKERNEL_PYTHON=sys.executable)
    r = subprocess.run([mk_bin, "check", str(task / "ci"), "--target", "tpu-v5e", "--seeds", "1", "--json",
                        "--no-glue-fallback"], env=env, capture_output=True, text=True, timeout=600)
    assert r.stdout, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report.get("status") == "passed", json.dumps(report)[:3000]
    assert report["tpu"]["compile"]["ok"] is True
    r = subprocess.run([mk_bin, "compile", str(task / "ci"), "--target", "tpu-v5e", "-o", str(tmp_path / "out")],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    kernel_map = json.loads((tmp_path / "out" / "kernel_map.json").read_text())
    grouped = [k for k in kernel_map["kernels"] if k["family"] == "grouped_gemm"]
    assert len(grouped) == 1 and grouped[0]["runs"] == "pallas", kernel_map["kernels"]
    fused = [k for k in kernel_map["kernels"] if k.get("fused_into") == grouped[0]["name"]]
    assert any(op.startswith("dot") for k in fused for op in k["ops_in_pallas"]), fused
    assert any(op.startswith("scatter") for op in grouped[0]["ops_in_pallas"]), grouped
    # Every gather of a weight per visit is fused: none is left to run in glue.
    weights_gathers = [op for k in fused for op in k["ops_in_pallas"] if op.startswith("jit__take_.9.gather")]
    assert weights_gathers, fused


def test_a_kernel_the_compiler_refuses_falls_back_to_glue_and_still_checks(mk_bin, tmp_path):
    r, module, env = check_json(mk_bin, tmp_path, REVERSE_LANES, "reverse_lanes")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["status"] == "passed", report
    fallback = report["tpu"]["glue_fallback"]
    assert [f["function"] for f in fallback] == ["kernel_0"], fallback
    assert "rev" in fallback[0]["reason"], fallback
    assert report["tpu"]["compile"]["ok"] is True
    assert [k["runs"] for k in report["tpu"]["model"]["kernels"]] == ["glue"]
    # Without --json the fallback is printed, with the compiler's reason.
    r = subprocess.run([mk_bin, "compile", str(module), "--target", "tpu-v5e", "-o", str(tmp_path / "out")],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "fell back to XLA glue: kernel_0 (the TPU compiler refused its pallas_call: " in r.stdout, r.stdout
    kernel_map = json.loads((tmp_path / "out" / "kernel_map.json").read_text())
    assert kernel_map["kernels"][0]["fallback"] is True
    # --no-glue-fallback keeps the refusal: the check fails at the build, naming the kernel.
    r, _, _ = check_json(mk_bin, tmp_path, REVERSE_LANES, "reverse_lanes", "--no-glue-fallback")
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["status"] == "build-failed", report
    assert "kernel_0: " in report["message"], report["message"]


def test_a_bool_mask_broadcast_in_a_kernel_compiles_without_falling_back(mk_bin, tmp_path):
    r, _, _ = check_json(mk_bin, tmp_path, BOOL_BROADCAST, "bool_broadcast", "--no-glue-fallback")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["status"] == "passed", report
    assert report["tpu"]["glue_fallback"] == []
    assert [k["runs"] for k in report["tpu"]["model"]["kernels"]] == ["pallas"]


# Positions as f32 iota times a frequency (RoPE, 3p and 15p): Pallas' verifier refuses a float
# iota in a kernel body, so the emitter makes an int32 iota and converts it.
FLOAT_IOTA = """HloModule float_iota
ENTRY main {
  x = f32[16,256] parameter(0)
  pos = f32[16,256] iota(), iota_dimension=1
  c = f32[] constant(0.01)
  cb = f32[16,256] broadcast(c), dimensions={}
  angle = f32[16,256] multiply(pos, cb)
  s = f32[16,256] sine(angle)
  ROOT y = f32[16,256] multiply(x, s)
}
"""


def test_a_float_iota_in_a_kernel_checks_and_compiles_without_falling_back(mk_bin, tmp_path):
    r, _, _ = check_json(mk_bin, tmp_path, FLOAT_IOTA, "float_iota", "--no-glue-fallback")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["status"] == "passed", report
    assert [k["runs"] for k in report["tpu"]["model"]["kernels"]] == ["pallas"]


# A group norm as 25k writes it: channels reshaped into groups across the minor dims, statistics
# per group, reshaped back. Inside a pallas_call Mosaic refuses such a reshape ("unsupported shape
# cast"); the TPU fusion plan keeps each one a kernel of its own, in XLA glue, and the norm itself
# runs in a pallas_call.
GROUP_NORM = """HloModule group_norm
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[2,24,14,14] parameter(0)
  g = f32[2,8,588] reshape(x)
  zero = f32[] constant(0)
  sum = f32[2,8] reduce(g, zero), dimensions={2}, to_apply=add_f32
  n = f32[] constant(588)
  nb = f32[2,8] broadcast(n), dimensions={}
  mean = f32[2,8] divide(sum, nb)
  mb = f32[2,8,588] broadcast(mean), dimensions={0,1}
  c = f32[2,8,588] subtract(g, mb)
  ROOT y = f32[2,24,14,14] reshape(c)
}
"""


def test_a_group_norms_lane_reshapes_run_in_glue_and_the_norm_in_a_pallas_call(mk_bin, tmp_path):
    r, _, _ = check_json(mk_bin, tmp_path, GROUP_NORM, "group_norm", "--no-glue-fallback")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["status"] == "passed", report
    kernels = report["tpu"]["model"]["kernels"]
    reduce_kernel = [k for k in kernels if "sum" in k["ops_in_pallas"]]
    assert len(reduce_kernel) == 1 and reduce_kernel[0]["runs"] == "pallas", kernels
    glue = [k for k in kernels if k["runs"] == "glue"]
    assert sorted(op for k in glue for op in k["ops_in_glue"]) == ["g", "y"], kernels
    assert all("minor (lane) dim" in k["reason"] for k in glue), glue


def test_optimize_stores_the_fallen_back_module_as_a_candidate_and_exports_it(mk_bin, tmp_path):
    module = tmp_path / "reverse_lanes.hlo"
    module.write_text(REVERSE_LANES)
    env = dict(os.environ, MAXKERNEL_HOME=str(tmp_path), MAXKERNEL_PYTHON=sys.executable)
    task = tmp_path / "task"
    r = subprocess.run([mk_bin, "import", str(module), "-o", str(task)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    db = tmp_path / "runs.db"
    r = subprocess.run([mk_bin, "optimize", str(task), "--target", "tpu-v5e", "--max-iterations", "2",
                        "--test-seeds", "1", "--db", str(db), "--json"],
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout)
    assert result["status"] == "succeeded", result
    fallbacks = result["tpu"]["glue_fallback"]
    assert len(fallbacks) == 1 and fallbacks[0]["compiled"] is True, fallbacks
    assert fallbacks[0]["fallbacks"][0]["function"] == "kernel_0"
    # The fallen-back module is a candidate of its own, and the one checked and kept.
    row = [c for c in result["candidates"] if c.get("fallback_of") is not None]
    assert len(row) == 1 and row[0]["seq"] == fallbacks[0]["seq"], result["candidates"]
    assert row[0]["schedule"]["kernels"][0]["glue_fallback"] == 1, row[0]
    assert result["best"]["seq"] == row[0]["seq"]
    assert [k["runs"] for k in result["best"]["model"]["kernels"]] == ["glue"]
    # export reads the stored (fallen-back) implementation.
    out = tmp_path / "export"
    r = subprocess.run([mk_bin, "export", str(result["run_id"]), "--format", "pallas", "-o", str(out),
                        "--db", str(db), "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    source = open(json.loads(r.stdout)["files"]["python"]).read()
    assert "jnp glue (fallback: the TPU compiler refused" in source
