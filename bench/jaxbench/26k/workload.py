"""26k: GEMM + bias, per-row instance norm, + y, * y."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.norms import normalize  # noqa: E402
from jaxbench_common.specs import io_bytes, normal  # noqa: E402

ID = "26k"
NAME = "gemm_instancenorm_add_multiply"
OPERATOR = "gemm"
DESCRIPTION = ("out = (norm(x W + b) + y) * y, norm = zero-mean unit-variance over the N "
               "features of each row (eps 1e-5, no affine), float32. This is what the original "
               "PyTorch InstanceNorm2d on x.unsqueeze(1).unsqueeze(1) computes; normalizing (N, "
               "C, 1, 1) over its 1x1 spatial extent instead would be identically 0 and drop the "
               "GEMM.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512},
    "bench": {"M": 512, "K": 2048, "N": 2048},
    "full": {"M": 4096, "K": 8192, "N": 8192},
}


def inputs(scale):
    s = SCALES[scale]
    return gemm.inputs(s, normal("y", (s["M"], s["N"])))


def function(scale):
    del scale

    def gemm_instancenorm_add_multiply(x, w, b, y_in):
        y = jnp.matmul(x, w) + b
        y = normalize(y, axis=1)  # over the N features of each row, no affine
        return (y + y_in) * y_in

    return gemm_instancenorm_add_multiply


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=8)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
