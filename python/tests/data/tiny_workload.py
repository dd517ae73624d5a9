"""A tiny suite-style workload for the bridge's own tests: y = rmsnorm(x) * scale, plus a
gathered row sum through an integer index table (a "data" input)."""

import jax.numpy as jnp
import numpy as np

ID = "0t"
NAME = "tiny_rmsnorm_gather"
OPERATOR = "norm"
DESCRIPTION = "RMSNorm of x times scale, and row sums of x gathered through idx."
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {"ci": {"n": 4, "d": 8}, "bench": {"n": 64, "d": 256}, "full": {"n": 256, "d": 1024}}


def inputs(scale):
    n, d = SCALES[scale]["n"], SCALES[scale]["d"]
    return [
        {"name": "x", "shape": (n, d), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        {"name": "scale", "shape": (d,), "dtype": "float32",
         "init": {"kind": "uniform", "low": 0.5, "high": 1.5}},
        {"name": "idx", "shape": (n,), "dtype": "int32",
         "init": {"kind": "data", "values": np.arange(n, dtype=np.int32)[::-1].copy()}},
    ]


def function(scale):
    def f(x, scale_, idx):
        xf = x.astype(jnp.float32)
        y = xf * jnp.reciprocal(jnp.sqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + 1e-5))
        return (y * scale_).astype(jnp.bfloat16), jnp.sum(xf[idx], axis=-1)
    return f


def flops(scale):
    n, d = SCALES[scale]["n"], SCALES[scale]["d"]
    return 5 * n * d


def bytes_moved(scale):
    n, d = SCALES[scale]["n"], SCALES[scale]["d"]
    return n * d * 2 + d * 4 + n * 4 + n * d * 2 + n * 4
