"""24k: GEMM + bias, x2, x + x, clamp +-10, logsumexp, x * mish(x)."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "24k"
NAME = "gemm_scale_residual_clamp_logsumexp_mish"
OPERATOR = "gemm"
DESCRIPTION = ("out (M, 1) = l * mish(l) with l = logsumexp over features of clamp(2y + 2y, -10, "
               "10), y = x W + b, float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512},
    "bench": {"M": 512, "K": 2048, "N": 2048},
    "full": {"M": 4096, "K": 8192, "N": 8192},
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
    return params


def _logsumexp(v, keepdims=True):
    top = jnp.max(v, axis=-1, keepdims=True)
    out = jnp.log(jnp.sum(jnp.exp(v - top), axis=-1, keepdims=True)) + top
    return out if keepdims else out[..., 0]


def _mish(v):
    """x * tanh(softplus(x)), softplus written overflow-free."""
    softplus = jnp.maximum(v, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(v)))
    return v * jnp.tanh(softplus)


def function(scale):
    del scale

    def gemm_scale_residual_clamp_logsumexp_mish(x, w, b):
        y = jnp.matmul(x, w) + b
        y = y * 2.0
        y = y + y
        y = jnp.clip(y, -10.0, 10.0)
        lse = _logsumexp(y)
        return lse * _mish(lse)

    return gemm_scale_residual_clamp_logsumexp_mish


def flops(scale):
    s = SCALES[scale]
    # GEMM plus ~9 elementwise/reduction ops per (M, N) element.
    return 2 * s["M"] * s["K"] * s["N"] + 9 * s["M"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], 1), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
