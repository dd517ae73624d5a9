"""38k: GEMM + bias, dropout (identity at inference), softmax over features."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "38k"
NAME = "gemm_dropout_softmax"
OPERATOR = "gemm"
DESCRIPTION = ("out = softmax over features of dropout(x W + b); dropout (p = 0.2) is the "
               "identity at inference, so nothing random is computed (the name is kept from the "
               "public suite). float32.")
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


def _softmax(v):
    e = jnp.exp(v - jnp.max(v, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def function(scale):
    del scale

    def gemm_dropout_softmax(x, w, b):
        y = jnp.matmul(x, w) + b
        return _softmax(y)  # dropout at inference: identity

    return gemm_dropout_softmax


def flops(scale):
    s = SCALES[scale]
    # GEMM plus ~5 elementwise/reduction ops per (M, N) element.
    return 2 * s["M"] * s["K"] * s["N"] + 5 * s["M"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], s["N"]), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
