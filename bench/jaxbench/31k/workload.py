"""31k: GEMM + bias, BatchNorm (training statistics), GELU, ReLU."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "31k"
NAME = "gemm_batchnorm_gelu_relu"
OPERATOR = "gemm"
DESCRIPTION = ("out = ReLU(GELU(BatchNorm(x W + b))), BatchNorm with the batch's own statistics "
               "(mean and biased variance over M per feature, eps 1e-5, affine gamma/beta), "
               "exact erf GELU, float32.")
TOLERANCE = {"atol": 5e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512},
    "bench": {"M": 512, "K": 2048, "N": 2048},
    "full": {"M": 16384, "K": 8192, "N": 8192},
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
    params.append({"name": "bn_gamma", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "uniform", "low": 0.5, "high": 1.5}})
    params.append({"name": "bn_beta", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "normal", "mean": 0.0, "std": 0.1}})
    return params


def _gelu(v):
    """Exact (erf) GELU, PyTorch's default."""
    return 0.5 * v * (1.0 + jax.lax.erf(v * 0.7071067811865476))


def function(scale):
    del scale

    def gemm_batchnorm_gelu_relu(x, w, b, bn_gamma, bn_beta):
        y = jnp.matmul(x, w) + b
        mean = jnp.mean(y, axis=0, keepdims=True)
        var = jnp.mean(jnp.square(y - mean), axis=0, keepdims=True)
        y = (y - mean) * jax.lax.rsqrt(var + 1e-5) * bn_gamma + bn_beta
        return jnp.maximum(_gelu(y), 0.0)

    return gemm_batchnorm_gelu_relu


def flops(scale):
    s = SCALES[scale]
    # GEMM plus ~14 elementwise/reduction ops per (M, N) element.
    return 2 * s["M"] * s["K"] * s["N"] + 14 * s["M"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], s["N"]), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
