"""18k: Conv2D + bias, ReLU, + bias."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import conv  # noqa: E402
from jaxbench_common.specs import bias, io_bytes  # noqa: E402

ID = "18k"
NAME = "conv2d_relu_biasadd"
OPERATOR = "conv"
DESCRIPTION = ("out = ReLU(conv2d(x, W) + b) + bias2[c], 3x3 valid stride-1 convolution, NCHW, "
               "float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 2, "Cin": 8, "H": 32, "W": 32, "Cout": 16, "k": 3},
    "bench": {"N": 8, "Cin": 64, "H": 64, "W": 64, "Cout": 128, "k": 3},
    "full": {"N": 128, "Cin": 64, "H": 128, "W": 128, "Cout": 128, "k": 3},
}


def inputs(scale):
    s = SCALES[scale]
    return conv.inputs(s, bias("bias2", s["Cout"]))


def function(scale):
    del scale

    def conv2d_relu_biasadd(x, w, b, bias2):
        y = conv.valid_conv(x, w, b)
        return jnp.maximum(y, 0.0) + bias2[None, :, None, None]

    return conv2d_relu_biasadd


def flops(scale):
    return conv.flops(SCALES[scale], epilogue_ops=3)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["N"], s["Cout"]) + conv.out_spatial(s))
