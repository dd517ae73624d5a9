"""33k: Conv3D + bias, mish, tanh."""
import numpy as np
import jax
import jax.numpy as jnp

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

    def conv3d_mish_tanh(x, w, b):
        y = _conv(x, w, b)
        return jnp.tanh(_mish(y))

    return conv3d_mish_tanh


def flops(scale):
    s = SCALES[scale]
    out_points = s["N"] * s["Cout"] * int(np.prod(_out_spatial(s)))
    # Each output point is a Cin * k^d multiply-add window; plus ~8 epilogue ops per output point.
    window = s["Cin"] * s["k"] ** len(_spatial(s))
    return 2 * out_points * window + 8 * out_points


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["N"], s["Cout"]) + _out_spatial(s), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
