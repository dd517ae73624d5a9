"""Compile-only compiles for TPU generations with libtpu: XLA:TPU's cost estimate and memory plan,
and the compiler's refusals classified. Tests that compile skip without libtpu."""

import json
import os
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR, REPO, run_bridge
from maxkernel_jax import tpu_xla
from maxkernel_jax.errors import BridgeError

needs_libtpu = pytest.mark.skipif(not tpu_xla.libtpu_available(),
                                  reason="libtpu is not installed (scripts/setup.sh installs it)")
TASK = os.path.join(REPO, "bench", "jaxbench", "1p", "ci")


def test_topologies_match_the_spec_table():
    with open(os.path.join(REPO, "bench", "tpu", "specs.json"), encoding="utf-8") as f:
        specs = {g["chip"]: g["topology"] for g in json.load(f)["generations"]}
    assert tpu_xla.TOPOLOGIES == specs


def test_generation_names():
    assert tpu_xla.generation_of("tpu-v5e") == "v5e"
    assert tpu_xla.generation_of("7x") == "7x"
    with pytest.raises(BridgeError, match="known: v4, v5e"):
        tpu_xla.generation_of("tpu-v3")


class MosaicError(Exception):
    """Stands in for jax's MosaicError: classification goes by the type's name."""


@pytest.mark.parametrize("exc,kind", [
    (RuntimeError("RESOURCE_EXHAUSTED: Allocation (size=134217728) would exceed memory "
                  "(size=134217728) in space=vmem"), "vmem_exhausted"),
    (RuntimeError("RESOURCE_EXHAUSTED: out of HBM"), "resource_exhausted"),
    (NotImplementedError("Unimplemented primitive in Pallas TPU lowering for tc: cumsum"),
     "not_implemented"),
    (MosaicError("Bad lhs/rhs type: 'vector<8x128xi32>'"), "mosaic"),
    (ValueError("The Pallas TPU lowering currently requires that the last two dimensions of "
                "your block shape are divisible by 8 and 128 respectively"), "block_shape"),
    (BridgeError("libtpu is not installed: run scripts/setup.sh"), "libtpu_missing"),
    (RuntimeError("INTERNAL: something else"), "compile_error"),
])
def test_errors_are_classified(exc, kind):
    out = tpu_xla.classify_error(exc)
    assert out["kind"] == kind
    assert out["message"].splitlines()[0] == str(exc).splitlines()[0]


def test_long_compiler_messages_are_cut():
    out = tpu_xla.classify_error(RuntimeError("\n".join(f"line {i}" for i in range(100))))
    assert out["message"].count("\n") == 6 and out["message"].endswith("...")


@needs_libtpu
def test_matmul_cost_and_memory_come_from_xla_tpu():
    import jax.numpy as jnp

    r = tpu_xla.compile_for_tpu(lambda a, b: a @ b,
                                [((1024, 1024), jnp.bfloat16), ((1024, 1024), jnp.bfloat16)],
                                "tpu-v5e")
    assert r["ok"], r
    assert r["cost"]["flops"] == 2 * 1024 ** 3
    # XLA:TPU's estimate lies between the bf16 peak and something absurd.
    assert 2 * 1024 ** 3 / 197e12 <= r["cost"]["optimal_seconds"] < 1e-3
    assert r["memory"]["argument_bytes"] == 2 * 1024 * 1024 * 2
    assert r["memory"]["output_bytes"] == 1024 * 1024 * 2


@needs_libtpu
def test_pallas_refusals_come_back_classified():
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def int_matmul(x, y):
        def kernel(a, b, o):
            o[...] = jnp.dot(a[...], b[...])
        return pl.pallas_call(kernel, out_shape=jax_sds((128, 128), jnp.int32))(x, y)

    r = tpu_xla.compile_for_tpu(int_matmul, [((128, 128), jnp.int32)] * 2, "v5e")
    assert not r["ok"] and r["error"]["kind"] == "mosaic", r

    def huge_scratch(x):
        def kernel(a, o, scratch):
            scratch[0:8, 0:128] = a[...] + 1.0
            o[...] = scratch[0:8, 0:128]
        return pl.pallas_call(kernel, out_shape=jax_sds((8, 128), jnp.float32),
                              scratch_shapes=[pltpu.VMEM((8192, 8192), jnp.float32)])(x)

    r = tpu_xla.compile_for_tpu(huge_scratch, [((8, 128), jnp.float32)], "v4")
    assert not r["ok"] and r["error"]["kind"] == "vmem_exhausted", r
    assert "size=16777216" in r["error"]["message"]  # v4: 16 MiB of VMEM


def jax_sds(shape, dtype):
    import jax

    return jax.ShapeDtypeStruct(shape, dtype)


@needs_libtpu
def test_cli_gives_xla_tpus_estimate_of_a_task():
    r = run_bridge("tpu-xla-cost", "--task", TASK, "--generation", "v5e", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] and out["generation"] == "v5e" and out["estimate"] == "XLA:TPU"
    assert out["cost"]["optimal_seconds"] > 0
    assert out["versions"]["libtpu"]


def test_cli_refuses_an_unknown_generation():
    r = run_bridge("tpu-xla-cost", "--task", TASK, "--generation", "v3")
    assert r.returncode == 2
    assert "unknown TPU generation 'v3'" in r.stderr


@needs_libtpu
def test_hlo_that_does_not_parse_is_bad_input(tmp_path):
    with pytest.raises(BridgeError, match="not HLO text"):
        tpu_xla.compile_hlo_for_tpu("HloModule broken\nENTRY {", "v5e", "x.hlo")


def test_bridge_runs_on_the_cpu_platform_whatever_the_caller_says(tmp_path):
    # With JAX_PLATFORMS=tpu and no TPU, jax would fail to start a backend.
    env = dict(os.environ, JAX_PLATFORMS="tpu", PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-m", "maxkernel_jax", "expected", TASK,
                        "-o", str(tmp_path)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out0.npy").exists()
