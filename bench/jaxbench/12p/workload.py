"""12p: Llama-3.1-70B RMSNorm, bfloat16 in and out, statistics in float32."""
import numpy as np
import jax
import jax.numpy as jnp

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

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def inputs(scale):
    s = SCALES[scale]
    return [
        {"name": "x", "shape": (s["B"], s["S"], s["D"]), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        {"name": "scale", "shape": (s["D"],), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 1.0, "std": 0.1}},
    ]


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
    out = ((s["B"], s["S"], s["D"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
