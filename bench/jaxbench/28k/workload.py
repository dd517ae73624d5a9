"""28k: ConvTranspose3D (stride 2), LayerNorm over W, GELU, x 1.0."""
import os
import sys

import numpy as np
import jax

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import conv  # noqa: E402
from jaxbench_common.activations import gelu  # noqa: E402
from jaxbench_common.norms import normalize  # noqa: E402
from jaxbench_common.specs import affine, io_bytes  # noqa: E402

ID = "28k"
NAME = "convtranspose3d_layernorm_gelu_scale"
OPERATOR = "conv3d"
DESCRIPTION = ("out = 1.0 * GELU(LayerNorm_W(convT3d(x, W) + b)): transposed 3D conv, k 4, "
               "stride 2, padding 1 (spatial x2), written as an lhs-dilated conv; LayerNorm over "
               "the last (W) axis with affine gamma/beta of size W_out (= Cout at full, as in "
               "the original), eps 1e-5; exact erf GELU; NCDHW, float32.")
TOLERANCE = {"atol": 5e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 2, "Cin": 8, "D": 4, "H": 8, "W": 8, "Cout": 16, "k": 4},
    "bench": {"N": 1, "Cin": 32, "D": 8, "H": 16, "W": 16, "Cout": 24, "k": 4},
    "full": {"N": 32, "Cin": 32, "D": 16, "H": 32, "W": 32, "Cout": 64, "k": 4},
}
STRIDE = 2
PADDING = 1


def _out_spatial(s):
    """Transposed conv: (d - 1) * stride - 2 * padding + k per axis."""
    return tuple((d - 1) * STRIDE - 2 * PADDING + s["k"] for d in conv.spatial(s))


def inputs(scale):
    s = SCALES[scale]
    # Each output point of the stride-2 transposed conv sums (k / stride)^3 taps per channel.
    return conv.inputs(s, *affine("ln", _out_spatial(s)[-1]),
                       fan_in=s["Cin"] * (s["k"] // STRIDE) ** 3)


def _conv_transpose(x, w, b):
    """Transposed 3D conv as a stride-1 conv over the input dilated by STRIDE (zeros between
    samples) and padded by k - 1 - PADDING; w (Cout, Cin, k, k, k) is the kernel of that
    equivalent forward conv (random weights, so no flip is needed). Plus the conv bias."""
    k = w.shape[-1]
    pad = [(k - 1 - PADDING, k - 1 - PADDING)] * 3
    y = jax.lax.conv_general_dilated(x, w, (1, 1, 1), pad, lhs_dilation=(STRIDE,) * 3,
                                     dimension_numbers=conv.DIMS[3])
    return y + b.reshape(1, -1, 1, 1, 1)


def function(scale):
    del scale

    def convtranspose3d_layernorm_gelu_scale(x, w, b, ln_gamma, ln_beta):
        y = _conv_transpose(x, w, b)
        y = normalize(y, axis=-1) * ln_gamma + ln_beta  # LayerNorm over W
        return gelu(y) * 1.0

    return convtranspose3d_layernorm_gelu_scale


def flops(scale):
    s = SCALES[scale]
    out_points = s["N"] * s["Cout"] * int(np.prod(_out_spatial(s)))
    # The arithmetic of a transposed conv: every input point times a Cout x k^3 window
    # (the zeros that lhs dilation inserts are not counted), plus ~15 epilogue ops.
    in_points = s["N"] * s["Cin"] * int(np.prod(conv.spatial(s)))
    return 2 * in_points * s["Cout"] * s["k"] ** 3 + 15 * out_points


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["N"], s["Cout"]) + _out_spatial(s))
