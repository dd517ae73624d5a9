"""48k: GEMM + bias, BatchNorm (inference), + bias, / 1, swish."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.activations import swish  # noqa: E402
from jaxbench_common.norms import batch_norm_inference  # noqa: E402
from jaxbench_common.specs import affine, bias, io_bytes, running_stats  # noqa: E402

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


def inputs(scale):
    s = SCALES[scale]
    return gemm.inputs(s, *running_stats("bn", s["N"]), *affine("bn", s["N"]), bias("bias2", 1))


def function(scale):
    del scale

    def gemm_batchnorm_bias_divide_swish(x, w, b, bn_mean, bn_var, bn_gamma, bn_beta, bias2):
        y = jnp.matmul(x, w) + b
        y = batch_norm_inference(y, bn_mean, bn_var, bn_gamma, bn_beta)
        return swish((y + bias2) / 1.0)

    return gemm_batchnorm_bias_divide_swish


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=10)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
