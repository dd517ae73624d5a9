"""46k: Conv2D + bias, GroupNorm, tanh, HardSwish, + conv output, logsumexp over channels."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import conv  # noqa: E402
from jaxbench_common.activations import hardswish, logsumexp  # noqa: E402
from jaxbench_common.norms import group_norm  # noqa: E402
from jaxbench_common.specs import affine, io_bytes  # noqa: E402

ID = "46k"
NAME = "conv2d_groupnorm_tanh_hardswish_residual_logsumexp"
OPERATOR = "conv"
DESCRIPTION = ("c = conv2d(x, W) + b; h = HardSwish(tanh(GroupNorm_16(c))) with affine "
               "gamma/beta, eps 1e-5; out (N, 1, H', W') = logsumexp over channels of (c + h), "
               "3x3 valid conv, NCHW, float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 2, "Cin": 8, "H": 32, "W": 32, "Cout": 64, "k": 3, "groups": 16},
    "bench": {"N": 16, "Cin": 8, "H": 128, "W": 128, "Cout": 64, "k": 3, "groups": 16},
    "full": {"N": 128, "Cin": 8, "H": 128, "W": 128, "Cout": 64, "k": 3, "groups": 16},
}


def inputs(scale):
    s = SCALES[scale]
    return conv.inputs(s, *affine("gn", s["Cout"]))


def function(scale):
    groups = SCALES[scale]["groups"]

    def conv2d_groupnorm_tanh_hardswish_residual_logsumexp(x, w, b, gn_gamma, gn_beta):
        y = conv.valid_conv(x, w, b)
        h = hardswish(jnp.tanh(group_norm(y, groups, gn_gamma, gn_beta)))
        return logsumexp(y + h, axis=1)  # over channels, kept as a size-1 axis

    return conv2d_groupnorm_tanh_hardswish_residual_logsumexp


def flops(scale):
    return conv.flops(SCALES[scale], epilogue_ops=17)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["N"], 1) + conv.out_spatial(s))
