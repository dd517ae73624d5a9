"""21k: GEMM at highest precision, divide 2, sum over features, multiply 1.5."""
import os
import sys

import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

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


def inputs(scale):
    return gemm.inputs(SCALES[scale])


def function(scale):
    del scale

    def gemm_divide_sum_scale(x, w, b):
        y = jnp.matmul(x, w, precision=jax.lax.Precision.HIGHEST) + b
        return jnp.sum(y / 2.0, axis=1, keepdims=True) * 1.5

    return gemm_divide_sum_scale


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=3)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], 1))
