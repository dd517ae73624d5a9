"""49k: GEMM + bias, AvgPool1d(16) over features, GELU, x 2, max."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.activations import gelu  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "49k"
NAME = "gemm_avgpool_gelu_scale_max"
OPERATOR = "gemm"
DESCRIPTION = ("out (M,) = max over windows of 2 * GELU(mean of each window of 16 consecutive "
               "features of x W + b), exact erf GELU, float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512, "pool": 16},
    "bench": {"M": 512, "K": 2048, "N": 2048, "pool": 16},
    "full": {"M": 4096, "K": 8192, "N": 8192, "pool": 16},
}


def inputs(scale):
    return gemm.inputs(SCALES[scale])


def function(scale):
    pool = SCALES[scale]["pool"]

    def gemm_avgpool_gelu_scale_max(x, w, b):
        y = jnp.matmul(x, w) + b
        rows, feats = y.shape
        pooled = jnp.mean(y.reshape(rows, feats // pool, pool), axis=-1)
        return jnp.max(gelu(pooled) * 2.0, axis=1)

    return gemm_avgpool_gelu_scale_max


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=3)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"],))
