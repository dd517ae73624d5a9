"""30k: GEMM + bias, x * 0.5 + x."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "30k"
NAME = "gemm_scale_residual"
OPERATOR = "gemm"
DESCRIPTION = ("out = y * 0.5 + y with y = x W + b, float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512},
    "bench": {"M": 1024, "K": 2048, "N": 1024},
    "full": {"M": 16384, "K": 4096, "N": 4096},
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


def function(scale):
    del scale

    def gemm_scale_residual(x, w, b):
        y = jnp.matmul(x, w) + b
        return y * 0.5 + y

    return gemm_scale_residual


def flops(scale):
    s = SCALES[scale]
    # GEMM plus ~3 elementwise/reduction ops per (M, N) element.
    return 2 * s["M"] * s["K"] * s["N"] + 3 * s["M"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], s["N"]), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
