"""34k: Conv2D + bias, mish, BatchNorm (training statistics)."""
import os
import sys

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import conv  # noqa: E402
from jaxbench_common.activations import mish  # noqa: E402
from jaxbench_common.norms import normalize  # noqa: E402
from jaxbench_common.specs import affine, io_bytes  # noqa: E402

ID = "34k"
NAME = "conv2d_mish_batchnorm"
OPERATOR = "conv"
DESCRIPTION = ("out = BatchNorm(mish(conv2d(x, W) + b)) with the batch's own statistics (mean "
               "and biased variance per channel over N, H, W; eps 1e-5; affine gamma/beta), 3x3 "
               "valid conv, NCHW, float32.")
TOLERANCE = {"atol": 1e-1, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 2, "Cin": 8, "H": 32, "W": 32, "Cout": 16, "k": 3},
    "bench": {"N": 8, "Cin": 64, "H": 64, "W": 64, "Cout": 128, "k": 3},
    "full": {"N": 64, "Cin": 64, "H": 128, "W": 128, "Cout": 128, "k": 3},
}


def inputs(scale):
    s = SCALES[scale]
    return conv.inputs(s, *affine("bn", s["Cout"]))


def function(scale):
    del scale

    def conv2d_mish_batchnorm(x, w, b, bn_gamma, bn_beta):
        y = conv.valid_conv(x, w, b)
        y = mish(y)
        y = normalize(y, axis=(0, 2, 3))  # BatchNorm with the batch's statistics per channel
        return y * bn_gamma[None, :, None, None] + bn_beta[None, :, None, None]

    return conv2d_mish_batchnorm


def flops(scale):
    return conv.flops(SCALES[scale], epilogue_ops=14)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["N"], s["Cout"]) + conv.out_spatial(s))
