"""34k: Conv2D + bias, mish, BatchNorm (training statistics)."""
import numpy as np
import jax
import jax.numpy as jnp

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

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}
_DIMS = ("NCHW", "OIHW", "NCHW")


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def _spatial(s):
    return (s["H"], s["W"])


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
    params.append(_vector("bn_gamma", cout, {"kind": "uniform", "low": 0.5, "high": 1.5}))
    params.append(_vector("bn_beta", cout, {"kind": "normal", "mean": 0.0, "std": 0.1}))
    return params


def _mish(v):
    """x * tanh(softplus(x)), softplus written overflow-free."""
    softplus = jnp.maximum(v, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(v)))
    return v * jnp.tanh(softplus)


def _conv(x, w, b):
    """Stride-1 'valid' convolution in PyTorch's channels-first layout, plus the conv bias."""
    spatial = x.ndim - 2
    y = jax.lax.conv_general_dilated(x, w, (1,) * spatial, "VALID", dimension_numbers=_DIMS)
    return y + b.reshape((1, -1) + (1,) * spatial)


def function(scale):
    del scale

    def conv2d_mish_batchnorm(x, w, b, bn_gamma, bn_beta):
        y = _conv(x, w, b)
        y = _mish(y)
        mean = jnp.mean(y, axis=(0, 2, 3), keepdims=True)
        var = jnp.mean(jnp.square(y - mean), axis=(0, 2, 3), keepdims=True)
        y = (y - mean) * jax.lax.rsqrt(var + 1e-5)
        return y * bn_gamma[None, :, None, None] + bn_beta[None, :, None, None]

    return conv2d_mish_batchnorm


def flops(scale):
    s = SCALES[scale]
    out_points = s["N"] * s["Cout"] * int(np.prod(_out_spatial(s)))
    # Each output point is a Cin * k^d multiply-add window; plus ~14 epilogue ops per output point.
    window = s["Cin"] * s["k"] ** len(_spatial(s))
    return 2 * out_points * window + 14 * out_points


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["N"], s["Cout"]) + _out_spatial(s), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
