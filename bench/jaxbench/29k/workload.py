"""29k: GEMM + bias, swish, + bias, GroupNorm."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "29k"
NAME = "gemm_swish_bias_groupnorm"
OPERATOR = "gemm"
DESCRIPTION = ("out = GroupNorm_G(swish(x W + b) + bias2) with affine gamma/beta, eps 1e-5; G = "
               "64 at full (64 features per group; ci and bench keep 64 per group), float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512, "groups": 8},
    "bench": {"M": 512, "K": 2048, "N": 2048, "groups": 32},
    "full": {"M": 8192, "K": 4096, "N": 4096, "groups": 64},
}

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def inputs(scale):
    s = SCALES[scale]
    m, k, n = s["M"], s["K"], s["N"]
    params = [
        {"name": "x", "shape": (m, k), "dtype": "float32",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        {"name": "w", "shape": (k, n), "dtype": "float32",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0 / float(np.sqrt(k))}},
        {"name": "b", "shape": (n,), "dtype": "float32",
         "init": {"kind": "normal", "mean": 0.0, "std": 0.1}},
    ]
    params.append({"name": "bias2", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "normal", "mean": 0.0, "std": 0.1}})
    params.append({"name": "gn_gamma", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "uniform", "low": 0.5, "high": 1.5}})
    params.append({"name": "gn_beta", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "normal", "mean": 0.0, "std": 0.1}})
    return params


def _swish(v):
    return v * jax.nn.sigmoid(v)


def _groupnorm(v, groups, gamma, beta, eps=1e-5):
    """GroupNorm over the feature axis of (M, N): statistics per (row, group of N/groups)."""
    rows, feats = v.shape
    g = v.reshape(rows, groups, feats // groups)
    mean = jnp.mean(g, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(g - mean), axis=-1, keepdims=True)
    g = (g - mean) * jax.lax.rsqrt(var + eps)
    return g.reshape(rows, feats) * gamma + beta


def function(scale):
    s = SCALES[scale]
    groups = s["groups"]

    def gemm_swish_bias_groupnorm(x, w, b, bias2, gn_gamma, gn_beta):
        y = jnp.matmul(x, w) + b
        return _groupnorm(_swish(y) + bias2, groups, gn_gamma, gn_beta)

    return gemm_swish_bias_groupnorm


def flops(scale):
    s = SCALES[scale]
    # GEMM plus ~11 elementwise/reduction ops per (M, N) element.
    return 2 * s["M"] * s["K"] * s["N"] + 11 * s["M"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], s["N"]), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
