"""17p: AlphaFold2 triangle multiplicative update, outgoing edges."""
import os
import sys

import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common.norms import normalize  # noqa: E402
from jaxbench_common.specs import io_bytes, normal, weight  # noqa: E402

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


def inputs(scale):
    s = SCALES[scale]
    n, c, ch = s["N"], s["C"], s["Ch"]
    bf16 = "bfloat16"
    return [
        normal("z", (n, n, c), bf16),
        normal("ln_in_scale", (c,), bf16, mean=1.0, std=0.1),
        normal("ln_in_bias", (c,), bf16, std=0.1),
        weight("w_a_proj", c, ch, bf16),
        weight("w_a_gate", c, ch, bf16),
        weight("w_b_proj", c, ch, bf16),
        weight("w_b_gate", c, ch, bf16),
        normal("ln_out_scale", (ch,), bf16, mean=1.0, std=0.1),
        normal("ln_out_bias", (ch,), bf16, std=0.1),
        weight("w_out", ch, c, bf16),
        weight("w_gate", c, c, bf16),
    ]


def _layernorm(x, scale, bias):
    y = normalize(x.astype(jnp.float32), axis=-1, eps=LN_EPS)
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
    return io_bytes(inputs(scale), (s["N"], s["N"], s["C"]), "bfloat16")
