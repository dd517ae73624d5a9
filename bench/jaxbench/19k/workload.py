"""19k: GEMM + bias, subtract 2, multiply 1.5, ReLU."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "19k"
NAME = "gemm_subtract_multiply_relu"
OPERATOR = "gemm"
DESCRIPTION = ("y = ReLU((x W + b - 2) * 1.5), x (M, K), W (K, N), float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512},
    "bench": {"M": 512, "K": 2048, "N": 2048},
    "full": {"M": 4096, "K": 8192, "N": 8192},
}


def inputs(scale):
    return gemm.inputs(SCALES[scale])


def function(scale):
    del scale

    def gemm_subtract_multiply_relu(x, w, b):
        y = jnp.matmul(x, w) + b
        return jnp.maximum((y - 2.0) * 1.5, 0.0)

    return gemm_subtract_multiply_relu


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=4)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
