"""12p: Llama-3.1-70B RMSNorm, bfloat16 in and out, statistics in float32."""
import os
import sys

import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common.specs import io_bytes, normal  # noqa: E402

ID = "12p"
NAME = "llama3_70b_rmsnorm"
OPERATOR = "norm"
DESCRIPTION = ("RMSNorm over the last axis: x * rsqrt(mean(x^2) + 1e-5) * scale with x (B, S, D) "
               "and scale (D,) in bfloat16; the mean of squares and the normalization run in "
               "float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"B": 1, "S": 64, "D": 512},
    "bench": {"B": 2, "S": 2048, "D": 8192},
    "full": {"B": 8, "S": 4096, "D": 8192},
}
EPS = 1e-5


def inputs(scale):
    s = SCALES[scale]
    return [normal("x", (s["B"], s["S"], s["D"]), "bfloat16"),
            normal("scale", (s["D"],), "bfloat16", mean=1.0, std=0.1)]


def function(scale):
    del scale

    def rmsnorm(x, weight):
        xf = x.astype(jnp.float32)
        mean_sq = jnp.mean(xf * xf, axis=-1, keepdims=True)
        return (xf * jax.lax.rsqrt(mean_sq + EPS) * weight.astype(jnp.float32)).astype(x.dtype)

    return rmsnorm


def flops(scale):
    s = SCALES[scale]
    # square, sum, two products per element (the per-row rsqrt is negligible).
    return 4 * s["B"] * s["S"] * s["D"]


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["B"], s["S"], s["D"]), "bfloat16")
