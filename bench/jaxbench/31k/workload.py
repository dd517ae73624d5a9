"""31k: GEMM + bias, BatchNorm (training statistics), GELU, ReLU."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.activations import gelu  # noqa: E402
from jaxbench_common.norms import normalize  # noqa: E402
from jaxbench_common.specs import affine, io_bytes  # noqa: E402

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


def inputs(scale):
    s = SCALES[scale]
    return gemm.inputs(s, *affine("bn", s["N"]))


def function(scale):
    del scale

    def gemm_batchnorm_gelu_relu(x, w, b, bn_gamma, bn_beta):
        y = jnp.matmul(x, w) + b
        y = normalize(y, axis=0) * bn_gamma + bn_beta  # BatchNorm with the batch's statistics
        return jnp.maximum(gelu(y), 0.0)

    return gemm_batchnorm_gelu_relu


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=14)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
