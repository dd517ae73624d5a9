"""40k: GEMM + bias, GroupNorm, min over features, + bias."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.norms import feature_group_norm  # noqa: E402
from jaxbench_common.specs import affine, bias, io_bytes  # noqa: E402

ID = "40k"
NAME = "gemm_groupnorm_min_bias"
OPERATOR = "gemm"
DESCRIPTION = ("out (M, N) = min_n GroupNorm_G(x W + b)[m, :] + bias2[n]: the original "
               "broadcasts the (M, 1) row minimum against a per-feature bias (its (1, N, M, 1) "
               "result holds these values); written here as an explicit (M, N) sum. GroupNorm "
               "with affine gamma/beta, eps 1e-5, 16 features per group (G = 512 at full), "
               "float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512, "groups": 32},
    "bench": {"M": 512, "K": 2048, "N": 2048, "groups": 128},
    "full": {"M": 4096, "K": 8192, "N": 8192, "groups": 512},
}


def inputs(scale):
    s = SCALES[scale]
    return gemm.inputs(s, *affine("gn", s["N"]), bias("bias2", s["N"]))


def function(scale):
    groups = SCALES[scale]["groups"]

    def gemm_groupnorm_min_bias(x, w, b, gn_gamma, gn_beta, bias2):
        y = jnp.matmul(x, w) + b
        y = feature_group_norm(y, groups, gn_gamma, gn_beta)
        return jnp.min(y, axis=1, keepdims=True) + bias2[None, :]

    return gemm_groupnorm_min_bias


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=9)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
