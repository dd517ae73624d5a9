"""`pallas-compile --per-kernel` (issue 31's debugger: which kernel the TPU compiler refuses):
each kernel function of an emitted-style module compiled alone, with the shapes the workload
gives it, its result on stderr as it finishes so a compiler crash does not lose the earlier
ones. The module here is hand-written in the emitter's shape: a clean elementwise kernel and one
that Mosaic refuses (a 1-D bool vector broadcast into the sublane dimension)."""

import json
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR
from maxkernel_jax.tpu_xla import libtpu_available

pytestmark = pytest.mark.skipif(not libtpu_available(),
                                reason="libtpu is not installed (scripts/setup.sh installs it)")

MODULE = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

PARAMETERS = [("f32", [16, 128]), ("s32", [15])]
INTERPRET = None


def _kernel_0_body(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def kernel_0(x):
    return (pl.pallas_call(_kernel_0_body, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32),
                           interpret=INTERPRET or False)(x),)


def _kernel_1_body(m_ref, o_ref):
    mask = m_ref[...] > 0
    o_ref[...] = jax.lax.broadcast_in_dim(mask, (15, 16), (0,))


def kernel_1(m):
    return (pl.pallas_call(_kernel_1_body, out_shape=jax.ShapeDtypeStruct((15, 16), jnp.bool_),
                           interpret=INTERPRET or False)(m),)


def workload(x, m):
    (a,) = kernel_0(x)
    (b,) = kernel_1(m)
    return a, b
'''


def test_per_kernel_names_the_refused_kernel_and_reports_the_clean_one(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(MODULE)
    env = {"PYTHONPATH": PYTHON_DIR, "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-m", "maxkernel_jax", "pallas-compile", "--module", str(path),
                        "--generation", "v5e", "--per-kernel", "--json"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    result = json.loads(p.stdout)
    assert result["ok"] is False
    by_name = {k["function"]: k for k in result["kernels"]}
    assert by_name["kernel_0"]["ok"] is True
    assert by_name["kernel_1"]["ok"] is False
    assert by_name["kernel_1"]["error"]["kind"] == "mosaic", by_name["kernel_1"]
    # The marks a crash would leave: one before each kernel, one result line after.
    assert "maxkernel: compiling kernel_1" in p.stderr
    assert 'maxkernel: compiled {"function": "kernel_1", "ok": false' in p.stderr
