"""22k: Conv2D + bias, InstanceNorm, divide by 2."""
import os
import sys

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import conv  # noqa: E402
from jaxbench_common.norms import normalize  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "22k"
NAME = "conv2d_instancenorm_divide"
OPERATOR = "conv"
DESCRIPTION = ("out = InstanceNorm(conv2d(x, W) + b) / 2, InstanceNorm per (sample, channel) "
               "over H x W, eps 1e-5, no affine (PyTorch's default), 3x3 valid conv, NCHW, "
               "float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 2, "Cin": 8, "H": 32, "W": 32, "Cout": 16, "k": 3},
    "bench": {"N": 8, "Cin": 64, "H": 64, "W": 64, "Cout": 128, "k": 3},
    "full": {"N": 128, "Cin": 64, "H": 128, "W": 128, "Cout": 128, "k": 3},
}


def inputs(scale):
    return conv.inputs(SCALES[scale])


def function(scale):
    del scale

    def conv2d_instancenorm_divide(x, w, b):
        y = conv.valid_conv(x, w, b)
        return normalize(y, axis=(2, 3)) / 2.0  # InstanceNorm: per (sample, channel) over H x W

    return conv2d_instancenorm_divide


def flops(scale):
    return conv.flops(SCALES[scale], epilogue_ops=7)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["N"], s["Cout"]) + conv.out_spatial(s))
