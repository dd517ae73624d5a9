"""30k: GEMM + bias, x * 0.5 + x."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

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


def inputs(scale):
    return gemm.inputs(SCALES[scale])


def function(scale):
    del scale

    def gemm_scale_residual(x, w, b):
        y = jnp.matmul(x, w) + b
        return y * 0.5 + y

    return gemm_scale_residual


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=3)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
