"""23k: GEMM + bias, then sum, max, mean, logsumexp, logsumexp over features."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.activations import logsumexp  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "23k"
NAME = "gemm_sum_max_mean_logsumexp2"
OPERATOR = "gemm"
DESCRIPTION = ("out (M, 1): y = x W + b summed over features, then max, mean, logsumexp and "
               "logsumexp over that size-1 axis (identities kept as written), float32.")
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

    def gemm_sum_max_mean_logsumexp2(x, w, b):
        y = jnp.matmul(x, w) + b
        y = jnp.sum(y, axis=1, keepdims=True)
        y = jnp.max(y, axis=1, keepdims=True)
        y = jnp.mean(y, axis=1, keepdims=True)
        return logsumexp(logsumexp(y))

    return gemm_sum_max_mean_logsumexp2


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=2)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], 1))
