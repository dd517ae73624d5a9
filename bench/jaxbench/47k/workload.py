"""47k: GEMM + bias, + add, swish, tanh, GELU, clip +-1."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.activations import gelu, swish  # noqa: E402
from jaxbench_common.specs import bias, io_bytes  # noqa: E402

ID = "47k"
NAME = "gemm_add_swish_tanh_gelu_hardtanh"
OPERATOR = "gemm"
DESCRIPTION = ("out = clip(GELU(tanh(swish(x W + b + add))), -1, 1), exact erf GELU, float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512},
    "bench": {"M": 512, "K": 2048, "N": 2048},
    "full": {"M": 4096, "K": 8192, "N": 8192},
}


def inputs(scale):
    s = SCALES[scale]
    return gemm.inputs(s, bias("add", s["N"]))


def function(scale):
    del scale

    def gemm_add_swish_tanh_gelu_hardtanh(x, w, b, add):
        y = jnp.matmul(x, w) + b
        return jnp.clip(gelu(jnp.tanh(swish(y + add))), -1.0, 1.0)

    return gemm_add_swish_tanh_gelu_hardtanh


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=16)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
