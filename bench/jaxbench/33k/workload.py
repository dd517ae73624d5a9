"""33k: Conv3D + bias, mish, tanh."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import conv  # noqa: E402
from jaxbench_common.activations import mish  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "33k"
NAME = "conv3d_mish_tanh"
OPERATOR = "conv3d"
DESCRIPTION = ("out = tanh(mish(conv3d(x, W) + b)), 3x3x3 valid conv, NCDHW, float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 1, "Cin": 8, "D": 8, "H": 16, "W": 16, "Cout": 16, "k": 3},
    "bench": {"N": 2, "Cin": 32, "D": 16, "H": 32, "W": 32, "Cout": 64, "k": 3},
    "full": {"N": 16, "Cin": 32, "D": 32, "H": 64, "W": 64, "Cout": 64, "k": 3},
}


def inputs(scale):
    return conv.inputs(SCALES[scale])


def function(scale):
    del scale

    def conv3d_mish_tanh(x, w, b):
        y = conv.valid_conv(x, w, b)
        return jnp.tanh(mish(y))

    return conv3d_mish_tanh


def flops(scale):
    return conv.flops(SCALES[scale], epilogue_ops=8)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["N"], s["Cout"]) + conv.out_spatial(s))
