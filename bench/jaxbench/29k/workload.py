"""29k: GEMM + bias, swish, + bias, GroupNorm."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.activations import swish  # noqa: E402
from jaxbench_common.norms import feature_group_norm  # noqa: E402
from jaxbench_common.specs import affine, bias, io_bytes  # noqa: E402

ID = "29k"
NAME = "gemm_swish_bias_groupnorm"
OPERATOR = "gemm"
DESCRIPTION = ("out = GroupNorm_G(swish(x W + b) + bias2) with affine gamma/beta, eps 1e-5; G = "
               "64 at full (64 features per group; ci and bench keep 64 per group), float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512, "groups": 8},
    "bench": {"M": 512, "K": 2048, "N": 2048, "groups": 32},
    "full": {"M": 8192, "K": 4096, "N": 4096, "groups": 64},
}


def inputs(scale):
    s = SCALES[scale]
    return gemm.inputs(s, bias("bias2", s["N"]), *affine("gn", s["N"]))


def function(scale):
    groups = SCALES[scale]["groups"]

    def gemm_swish_bias_groupnorm(x, w, b, bias2, gn_gamma, gn_beta):
        y = jnp.matmul(x, w) + b
        return feature_group_norm(swish(y) + bias2, groups, gn_gamma, gn_beta)

    return gemm_swish_bias_groupnorm


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=11)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
