"""28k: ConvTranspose3D (stride 2), LayerNorm over W, GELU, x 1.0."""
import numpy as np
import jax
import jax.numpy as jnp

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

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}
_DIMS = ("NCDHW", "OIDHW", "NCDHW")


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def _spatial(s):
    return (s["D"], s["H"], s["W"])


def _out_spatial(s):
    """Transposed conv: (d - 1) * stride - 2 * padding + k per axis."""
    return tuple((d - 1) * STRIDE - 2 * PADDING + s["k"] for d in _spatial(s))


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
                  "std": 1.0 / float(np.sqrt(cin * (k // STRIDE) ** 3))}},
        _vector("b", cout, {"kind": "normal", "mean": 0.0, "std": 0.1}),
    ]
    w_out = _out_spatial(s)[-1]
    params.append(_vector("ln_gamma", w_out, {"kind": "uniform", "low": 0.5, "high": 1.5}))
    params.append(_vector("ln_beta", w_out, {"kind": "normal", "mean": 0.0, "std": 0.1}))
    return params


def _gelu(v):
    """Exact (erf) GELU, PyTorch's default."""
    return 0.5 * v * (1.0 + jax.lax.erf(v * 0.7071067811865476))


def _conv(x, w, b):
    """Transposed 3D conv as a stride-1 conv over the input dilated by STRIDE (zeros between
    samples) and padded by k - 1 - PADDING; w (Cout, Cin, k, k, k) is the kernel of that
    equivalent forward conv (random weights, so no flip is needed). Plus the conv bias."""
    k = w.shape[-1]
    pad = [(k - 1 - PADDING, k - 1 - PADDING)] * 3
    y = jax.lax.conv_general_dilated(x, w, (1, 1, 1), pad, lhs_dilation=(STRIDE,) * 3,
                                     dimension_numbers=_DIMS)
    return y + b.reshape(1, -1, 1, 1, 1)


def function(scale):
    del scale

    def convtranspose3d_layernorm_gelu_scale(x, w, b, ln_gamma, ln_beta):
        y = _conv(x, w, b)
        mean = jnp.mean(y, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(y - mean), axis=-1, keepdims=True)
        y = (y - mean) * jax.lax.rsqrt(var + 1e-5) * ln_gamma + ln_beta
        return _gelu(y) * 1.0

    return convtranspose3d_layernorm_gelu_scale


def flops(scale):
    s = SCALES[scale]
    out_points = s["N"] * s["Cout"] * int(np.prod(_out_spatial(s)))
    # The arithmetic of a transposed conv: every input point times a Cout x k^3 window
    # (the zeros that lhs dilation inserts are not counted), plus ~15 epilogue ops.
    in_points = s["N"] * s["Cin"] * int(np.prod(_spatial(s)))
    return 2 * in_points * s["Cout"] * s["k"] ** 3 + 15 * out_points


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["N"], s["Cout"]) + _out_spatial(s), "float32")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
