"""45k: GEMM + bias, GroupNorm, swish, x weight, swish."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.activations import swish  # noqa: E402
from jaxbench_common.norms import feature_group_norm  # noqa: E402
from jaxbench_common.specs import affine, io_bytes, normal  # noqa: E402

ID = "45k"
NAME = "gemm_groupnorm_swish_multiply_swish"
OPERATOR = "gemm"
DESCRIPTION = ("out = swish(swish(GroupNorm_G(x W + b)) * mult), GroupNorm with affine "
               "gamma/beta, eps 1e-5, 32 features per group (G = 256 at full), float32.")
TOLERANCE = {"atol": 5e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512, "groups": 16},
    "bench": {"M": 512, "K": 2048, "N": 2048, "groups": 64},
    "full": {"M": 4096, "K": 8192, "N": 8192, "groups": 256},
}


def inputs(scale):
    s = SCALES[scale]
    return gemm.inputs(s, *affine("gn", s["N"]), normal("mult", (s["N"],), mean=1.0, std=0.1))


def function(scale):
    groups = SCALES[scale]["groups"]

    def gemm_groupnorm_swish_multiply_swish(x, w, b, gn_gamma, gn_beta, mult):
        y = jnp.matmul(x, w) + b
        return swish(swish(feature_group_norm(y, groups, gn_gamma, gn_beta)) * mult)

    return gemm_groupnorm_swish_multiply_swish


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=14)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
