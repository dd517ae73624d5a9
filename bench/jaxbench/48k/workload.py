"""48k: GEMM + bias, BatchNorm (inference), + bias, / 1, swish."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "48k"
NAME = "gemm_batchnorm_bias_divide_swish"
OPERATOR = "gemm"
DESCRIPTION = ("out = swish((BN(x W + b) + bias2) / 1), BN with running mean/var (inference), "
               "eps 1e-5, affine gamma/beta; bias2 is a (1,) parameter, float32.")
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
    params.append({"name": "bn_mean", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "normal", "mean": 0.0, "std": 0.1}})
    params.append({"name": "bn_var", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "uniform", "low": 0.5, "high": 1.5}})
    params.append({"name": "bn_gamma", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "uniform", "low": 0.5, "high": 1.5}})
    params.append({"name": "bn_beta", "shape": (n,), "dtype": "float32",
                   "init": {"kind": "normal", "mean": 0.0, "std": 0.1}})
    params.append({"name": "bias2", "shape": (1,), "dtype": "float32",
                   "init": {"kind": "normal", "mean": 0.0, "std": 0.1}})
    return params


def _swish(v):
    return v * jax.nn.sigmoid(v)


def function(scale):
    del scale

    def gemm_batchnorm_bias_divide_swish(x, w, b, bn_mean, bn_var, bn_gamma, bn_beta, bias2):
        y = jnp.matmul(x, w) + b
        y = (y - bn_mean) * jax.lax.rsqrt(bn_var + 1e-5) * bn_gamma + bn_beta
        return _swish((y + bias2) / 1.0)

    return gemm_batchnorm_bias_divide_swish


def flops(scale):
    s = SCALES[scale]
    # GEMM plus ~10 elementwise/reduction ops per (M, N) element.
    return 2 * s["M"] * s["K"] * s["N"] + 10 * s["M"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], s["N"]), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
