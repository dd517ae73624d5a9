"""17p: AlphaFold2 triangle multiplicative update, outgoing edges."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "17p"
NAME = "alphafold2_triangle_mult_outgoing"
OPERATOR = "triangle"
DESCRIPTION = ("AlphaFold2 triangle multiplication (outgoing): zn = LayerNorm(z) over C; a = "
               "sigmoid(zn Wag) * (zn Wap), b likewise; t = einsum('ikc,jkc->ijc', a, b); out = "
               "sigmoid(zn Wg) * (LayerNorm(t) Wo). z (N, N, C) bfloat16, bias-free projections "
               "(bfloat16), LayerNorm statistics and gating in float32, no pair mask.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"N": 32, "C": 32, "Ch": 32},
    "bench": {"N": 256, "C": 64, "Ch": 64},
    "full": {"N": 1536, "C": 128, "Ch": 128},
}
LN_EPS = 1e-5

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def _weight(name, rows, cols):
    return {"name": name, "shape": (rows, cols), "dtype": "bfloat16",
            "init": {"kind": "normal", "mean": 0.0, "std": 1.0 / float(np.sqrt(rows))}}


def _vector(name, size, mean, std):
    return {"name": name, "shape": (size,), "dtype": "bfloat16",
            "init": {"kind": "normal", "mean": mean, "std": std}}


def inputs(scale):
    s = SCALES[scale]
    n, c, ch = s["N"], s["C"], s["Ch"]
    return [
        {"name": "z", "shape": (n, n, c), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        _vector("ln_in_scale", c, 1.0, 0.1),
        _vector("ln_in_bias", c, 0.0, 0.1),
        _weight("w_a_proj", c, ch),
        _weight("w_a_gate", c, ch),
        _weight("w_b_proj", c, ch),
        _weight("w_b_gate", c, ch),
        _vector("ln_out_scale", ch, 1.0, 0.1),
        _vector("ln_out_bias", ch, 0.0, 0.1),
        _weight("w_out", ch, c),
        _weight("w_gate", c, c),
    ]


def _layernorm(x, scale, bias):
    xf = x.astype(jnp.float32)
    mean = jnp.mean(xf, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=-1, keepdims=True)
    y = (xf - mean) * jax.lax.rsqrt(var + LN_EPS)
    return (y * scale.astype(jnp.float32) + bias.astype(jnp.float32)).astype(jnp.bfloat16)


def _proj(x, w):
    return jnp.matmul(x, w, preferred_element_type=jnp.float32)


def function(scale):
    del scale

    def triangle_mult_outgoing(z, ln_in_scale, ln_in_bias, w_a_proj, w_a_gate, w_b_proj,
                               w_b_gate, ln_out_scale, ln_out_bias, w_out, w_gate):
        zn = _layernorm(z, ln_in_scale, ln_in_bias)
        a = (jax.nn.sigmoid(_proj(zn, w_a_gate)) * _proj(zn, w_a_proj)).astype(z.dtype)
        b = (jax.nn.sigmoid(_proj(zn, w_b_gate)) * _proj(zn, w_b_proj)).astype(z.dtype)
        t = jnp.einsum("ikc,jkc->ijc", a, b, preferred_element_type=jnp.float32)
        update = _proj(_layernorm(t, ln_out_scale, ln_out_bias), w_out)
        return (jax.nn.sigmoid(_proj(zn, w_gate)) * update).astype(z.dtype)

    return triangle_mult_outgoing


def flops(scale):
    s = SCALES[scale]
    n, c, ch = s["N"], s["C"], s["Ch"]
    pairs = n * n
    proj = 2 * pairs * (4 * c * ch + c * c + ch * c)
    einsum = 2 * n * n * n * ch
    # ~8 ops per element for each LayerNorm, ~3 per gated element.
    return proj + einsum + 8 * pairs * (c + ch) + 3 * pairs * (2 * ch + c)


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["N"], s["N"], s["C"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
