"""25k: Conv3D + bias, GroupNorm, mean over all but the batch."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import conv  # noqa: E402
from jaxbench_common.norms import group_norm  # noqa: E402
from jaxbench_common.specs import affine, io_bytes  # noqa: E402

ID = "25k"
NAME = "conv3d_groupnorm_mean"
OPERATOR = "conv3d"
DESCRIPTION = ("out (N,) = mean over (C, D, H, W) of GroupNorm_8(conv3d(x, W) + b), GroupNorm "
               "with affine gamma/beta, eps 1e-5, 3x3x3 valid conv, NCDHW, float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 2, "Cin": 3, "D": 8, "H": 16, "W": 16, "Cout": 24, "k": 3, "groups": 8},
    "bench": {"N": 8, "Cin": 3, "D": 24, "H": 32, "W": 32, "Cout": 24, "k": 3, "groups": 8},
    "full": {"N": 128, "Cin": 3, "D": 24, "H": 32, "W": 32, "Cout": 24, "k": 3, "groups": 8},
}


def inputs(scale):
    s = SCALES[scale]
    return conv.inputs(s, *affine("gn", s["Cout"]))


def function(scale):
    groups = SCALES[scale]["groups"]

    def conv3d_groupnorm_mean(x, w, b, gn_gamma, gn_beta):
        y = conv.valid_conv(x, w, b)
        y = group_norm(y, groups, gn_gamma, gn_beta)
        return jnp.mean(y, axis=(1, 2, 3, 4))

    return conv3d_groupnorm_mean


def flops(scale):
    return conv.flops(SCALES[scale], epilogue_ops=9)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["N"],))
