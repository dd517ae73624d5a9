"""25k: Conv3D + bias, GroupNorm, mean over all but the batch."""
import numpy as np
import jax
import jax.numpy as jnp

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

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}
_DIMS = ("NCDHW", "OIDHW", "NCDHW")


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def _spatial(s):
    return (s["D"], s["H"], s["W"])


def _out_spatial(s):
    return tuple(d - s["k"] + 1 for d in _spatial(s))


def _vector(name, size, init):
    return {"name": name, "shape": (size,), "dtype": "float32", "init": init}


def inputs(scale):
    s = SCALES[scale]
    n, cin, cout, k = s["N"], s["Cin"], s["Cout"], s["k"]
    params = [
        {"name": "x", "shape": (n, cin) + _spatial(s), "dtype": "float32",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        {"name": "w", "shape": (cout, cin) + (k,) * len(_spatial(s)), "dtype": "float32",
         "init": {"kind": "normal", "mean": 0.0,
                  "std": 1.0 / float(np.sqrt(cin * k ** len(_spatial(s))))}},
        _vector("b", cout, {"kind": "normal", "mean": 0.0, "std": 0.1}),
    ]
    params.append(_vector("gn_gamma", cout, {"kind": "uniform", "low": 0.5, "high": 1.5}))
    params.append(_vector("gn_beta", cout, {"kind": "normal", "mean": 0.0, "std": 0.1}))
    return params


def _groupnorm(v, groups, gamma, beta, eps=1e-5):
    """GroupNorm of (N, C, *spatial): statistics per (sample, group of C/groups channels)."""
    n, c = v.shape[0], v.shape[1]
    g = v.reshape((n, groups, -1))
    mean = jnp.mean(g, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(g - mean), axis=-1, keepdims=True)
    g = ((g - mean) * jax.lax.rsqrt(var + eps)).reshape(v.shape)
    per_channel = (1, c) + (1,) * (v.ndim - 2)
    return g * gamma.reshape(per_channel) + beta.reshape(per_channel)


def _conv(x, w, b):
    """Stride-1 'valid' convolution in PyTorch's channels-first layout, plus the conv bias."""
    spatial = x.ndim - 2
    y = jax.lax.conv_general_dilated(x, w, (1,) * spatial, "VALID", dimension_numbers=_DIMS)
    return y + b.reshape((1, -1) + (1,) * spatial)


def function(scale):
    s = SCALES[scale]
    groups = s["groups"]

    def conv3d_groupnorm_mean(x, w, b, gn_gamma, gn_beta):
        y = _conv(x, w, b)
        y = _groupnorm(y, groups, gn_gamma, gn_beta)
        return jnp.mean(y, axis=(1, 2, 3, 4))

    return conv3d_groupnorm_mean


def flops(scale):
    s = SCALES[scale]
    out_points = s["N"] * s["Cout"] * int(np.prod(_out_spatial(s)))
    # Each output point is a Cin * k^d multiply-add window; plus ~9 epilogue ops per output point.
    window = s["Cin"] * s["k"] ** len(_spatial(s))
    return 2 * out_points * window + 9 * out_points


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["N"],), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
