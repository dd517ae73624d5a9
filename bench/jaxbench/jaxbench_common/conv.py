"""Stride-1 'valid' convolutions in PyTorch's channels-first layout (NCHW / NCDHW, OIHW / OIDHW)
plus bias, the scaffolding of the KernelBench conv workloads.

Sizes are a dict with N, Cin, Cout, k and the spatial extent H, W (2D) or D, H, W (3D)."""
import numpy as np
import jax

from . import specs

DIMS = {2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}


def spatial(s):
    """The input's spatial extent: (D, H, W) for a 3D conv, (H, W) for a 2D one."""
    return (s["D"], s["H"], s["W"]) if "D" in s else (s["H"], s["W"])


def out_spatial(s):
    return tuple(d - s["k"] + 1 for d in spatial(s))


def inputs(s, *extra, fan_in=None):
    """x (N, Cin, *spatial), w (Cout, Cin, k, ..) with std 1/sqrt(fan_in) (default Cin * k^d),
    the conv bias b (Cout,), then `extra` parameter specs; all float32."""
    n, cin, cout, k = s["N"], s["Cin"], s["Cout"], s["k"]
    nd = len(spatial(s))
    fan_in = cin * k ** nd if fan_in is None else fan_in
    return [
        specs.normal("x", (n, cin) + spatial(s)),
        specs.normal("w", (cout, cin) + (k,) * nd, std=1.0 / float(np.sqrt(fan_in))),
        specs.bias("b", cout),
        *extra,
    ]


def valid_conv(x, w, b):
    """Stride-1 'valid' convolution of x (N, Cin, *spatial) by w (Cout, Cin, *kernel), plus b."""
    nd = x.ndim - 2
    y = jax.lax.conv_general_dilated(x, w, (1,) * nd, "VALID", dimension_numbers=DIMS[nd])
    return y + b.reshape((1, -1) + (1,) * nd)


def flops(s, epilogue_ops):
    """Each output point is a Cin * k^d multiply-add window, plus ~epilogue_ops elementwise or
    reduction ops per output point."""
    out_points = s["N"] * s["Cout"] * int(np.prod(out_spatial(s)))
    window = s["Cin"] * s["k"] ** len(spatial(s))
    return 2 * out_points * window + epilogue_ops * out_points
