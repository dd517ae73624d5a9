"""35k: GEMM + bias, x 0.5, clamp +-2, GELU (tanh form)."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "35k"
NAME = "gemm_scale_hardtanh_gelu"
OPERATOR = "gemm"
DESCRIPTION = ("out = GELU_tanh(clamp(0.5 * (x W + b), -2, 2)), tanh-approximation GELU, "
               "float32.")
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

    def gemm_scale_hardtanh_gelu(x, w, b):
        y = jnp.matmul(x, w) + b
        y = jnp.clip(y * 0.5, -2.0, 2.0)
        inner = 0.7978845608028654 * (y + 0.044715 * y * y * y)
        return 0.5 * y * (1.0 + jnp.tanh(inner))

    return gemm_scale_hardtanh_gelu


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=11)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
