"""39k: Conv2D + bias, GELU, global average pool."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import conv  # noqa: E402
from jaxbench_common.activations import gelu  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "39k"
NAME = "conv2d_gelu_global_avgpool"
OPERATOR = "conv"
DESCRIPTION = ("out (N, Cout) = mean over H x W of GELU(conv2d(x, W) + b), exact erf GELU, 3x3 "
               "valid conv, NCHW, float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 2, "Cin": 8, "H": 32, "W": 32, "Cout": 64, "k": 3},
    "bench": {"N": 16, "Cin": 8, "H": 128, "W": 128, "Cout": 64, "k": 3},
    "full": {"N": 128, "Cin": 8, "H": 256, "W": 256, "Cout": 64, "k": 3},
}


def inputs(scale):
    return conv.inputs(SCALES[scale])


def function(scale):
    del scale

    def conv2d_gelu_global_avgpool(x, w, b):
        y = conv.valid_conv(x, w, b)
        return jnp.mean(gelu(y), axis=(2, 3))

    return conv2d_gelu_global_avgpool


def flops(scale):
    return conv.flops(SCALES[scale], epilogue_ops=9)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["N"], s["Cout"]))
