"""26k: GEMM + bias, per-row instance norm, + y, * y."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "26k"
NAME = "gemm_instancenorm_add_multiply"
OPERATOR = "gemm"
DESCRIPTION = ("out = (norm(x W + b) + y) * y, norm = zero-mean unit-variance over the N "
               "features of each row (eps 1e-5, no affine), float32. This is what the original "
               "PyTorch InstanceNorm2d on x.unsqueeze(1).unsqueeze(1) computes; normalizing (N, "
               "C, 1, 1) over its 1x1 spatial extent instead would be identically 0 and drop the "
               "GEMM.")
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
    params.append({"name": "y", "shape": (m, n), "dtype": "float32",
                   "init": {"kind": "normal", "mean": 0.0, "std": 1.0}})
    return params


def function(scale):
    del scale

    def gemm_instancenorm_add_multiply(x, w, b, y_in):
        y = jnp.matmul(x, w) + b
        mean = jnp.mean(y, axis=1, keepdims=True)
        var = jnp.mean(jnp.square(y - mean), axis=1, keepdims=True)
        y = (y - mean) * jax.lax.rsqrt(var + 1e-5)
        return (y + y_in) * y_in

    return gemm_instancenorm_add_multiply


def flops(scale):
    s = SCALES[scale]
    # GEMM plus ~8 elementwise/reduction ops per (M, N) element.
    return 2 * s["M"] * s["K"] * s["N"] + 8 * s["M"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], s["N"]), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
