"""21k: GEMM at highest precision, divide 2, sum over features, multiply 1.5."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "21k"
NAME = "gemm_divide_sum_scale"
OPERATOR = "gemm"
DESCRIPTION = ("out (M, 1) = 1.5 * sum_n((x W + b) / 2), the GEMM at Precision.HIGHEST, float32.")
TOLERANCE = {"atol": 1e-1, "rtol": 1e-1}
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


def function(scale):
    del scale

    def gemm_divide_sum_scale(x, w, b):
        y = jnp.matmul(x, w, precision=jax.lax.Precision.HIGHEST) + b
        return jnp.sum(y / 2.0, axis=1, keepdims=True) * 1.5

    return gemm_divide_sum_scale


def flops(scale):
    s = SCALES[scale]
    # GEMM plus ~3 elementwise/reduction ops per (M, N) element.
    return 2 * s["M"] * s["K"] * s["N"] + 3 * s["M"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], 1), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
