"""3p: DeepSeek-V3 multi-head latent attention (MLA) block, bf16 with f32 statistics."""
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common.activations import softmax  # noqa: E402
from jaxbench_common.attention import MASKED, causal_mask  # noqa: E402
from jaxbench_common.specs import io_bytes, normal, weight  # noqa: E402

ID = "3p"
NAME = "deepseek_v3_mla_attention"
OPERATOR = "attention"
DESCRIPTION = ("DeepSeek-V3 multi-head latent attention: x -> low-rank Q latent (RMSNorm) -> "
               "per-head Q [nope | rope]; x -> KV latent (RMSNorm) + one shared rope key -> "
               "per-head K_nope, V; rotate-half RoPE (theta 1e4) on the rope parts, causal "
               "softmax attention in float32, output projection back to E. Weights bfloat16, "
               "norm statistics float32.")
TOLERANCE = {"atol": 5e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"B": 1, "S": 64, "E": 256, "H": 4, "q_lora": 64, "kv_lora": 32,
           "nope": 32, "rope": 16, "v": 32},
    "bench": {"B": 1, "S": 512, "E": 1024, "H": 16, "q_lora": 512, "kv_lora": 256,
              "nope": 64, "rope": 32, "v": 64},
    "full": {"B": 4, "S": 2048, "E": 7168, "H": 128, "q_lora": 1536, "kv_lora": 512,
             "nope": 128, "rope": 64, "v": 128},
}
ROPE_THETA = 1e4
NORM_EPS = 1e-6


def inputs(scale):
    s = SCALES[scale]
    h, qk, e = s["H"], s["nope"] + s["rope"], s["E"]
    bf16 = "bfloat16"
    return [
        normal("x", (s["B"], s["S"], e), bf16),
        weight("w_dq", e, s["q_lora"], bf16),
        normal("q_norm", (s["q_lora"],), bf16, mean=1.0, std=0.1),
        weight("w_uq", s["q_lora"], h * qk, bf16),
        weight("w_dkv", e, s["kv_lora"] + s["rope"], bf16),
        normal("kv_norm", (s["kv_lora"],), bf16, mean=1.0, std=0.1),
        weight("w_ukv", s["kv_lora"], h * (s["nope"] + s["v"]), bf16),
        weight("w_o", h * s["v"], e, bf16),
    ]


def _rmsnorm(x, scale):
    xf = x.astype(jnp.float32)
    mean_sq = jnp.mean(xf * xf, axis=-1, keepdims=True)
    return (xf * jax.lax.rsqrt(mean_sq + NORM_EPS) * scale.astype(jnp.float32)).astype(x.dtype)


def _matmul(x, w):
    return jnp.matmul(x, w, preferred_element_type=jnp.float32).astype(x.dtype)


def _rope(x, seq, rope_dim):
    """Rotate-half RoPE over the last axis of x (B, S, ..., rope_dim), computed in float32."""
    half = rope_dim // 2
    inv_freq = ROPE_THETA ** (-jnp.arange(half, dtype=jnp.float32) * 2.0 / rope_dim)
    angles = jnp.arange(seq, dtype=jnp.float32)[:, None] * inv_freq[None, :]  # (S, half)
    extra = x.ndim - 3  # axes between S and the rope axis
    shape = (1, seq) + (1,) * extra + (half,)
    cos, sin = jnp.cos(angles).reshape(shape), jnp.sin(angles).reshape(shape)
    xf = x.astype(jnp.float32)
    x1, x2 = xf[..., :half], xf[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)


def function(scale):
    s = SCALES[scale]
    h, nope, rope, vdim, kv_lora = s["H"], s["nope"], s["rope"], s["v"], s["kv_lora"]
    inv_sqrt_d = 1.0 / float(np.sqrt(nope + rope))

    def mla(x, w_dq, q_norm, w_uq, w_dkv, kv_norm, w_ukv, w_o):
        batch, seq, _ = x.shape
        q = _matmul(_rmsnorm(_matmul(x, w_dq), q_norm), w_uq).reshape(batch, seq, h, nope + rope)
        q = jnp.concatenate([q[..., :nope], _rope(q[..., nope:], seq, rope)], axis=-1)
        kv_latent = _matmul(x, w_dkv)
        k_rope = _rope(kv_latent[..., kv_lora:], seq, rope)  # (B, S, rope), shared by all heads
        kv = _matmul(_rmsnorm(kv_latent[..., :kv_lora], kv_norm), w_ukv)
        kv = kv.reshape(batch, seq, h, nope + vdim)
        k = jnp.concatenate(
            [kv[..., :nope], jnp.broadcast_to(k_rope[:, :, None, :], (batch, seq, h, rope))],
            axis=-1)
        v = kv[..., nope:]
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
        scores = scores * inv_sqrt_d
        probs = softmax(jnp.where(causal_mask(seq), scores, MASKED))
        attn = jnp.einsum("bhqk,bkhd->bqhd", probs.astype(x.dtype), v,
                          preferred_element_type=jnp.float32).astype(x.dtype)
        return _matmul(attn.reshape(batch, seq, h * vdim), w_o)

    return mla


def flops(scale):
    s = SCALES[scale]
    tokens, h, e = s["B"] * s["S"], s["H"], s["E"]
    qk = s["nope"] + s["rope"]
    proj_macs = tokens * (e * s["q_lora"] + s["q_lora"] * h * qk + e * (s["kv_lora"] + s["rope"])
                          + s["kv_lora"] * h * (s["nope"] + s["v"]) + h * s["v"] * e)
    scores = s["B"] * h * s["S"] * s["S"]
    # Projections, QK^T and PV over the full masked score matrix, ~6 softmax ops per score.
    return 2 * proj_macs + 2 * scores * (qk + s["v"]) + 6 * scores


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["B"], s["S"], s["E"]), "bfloat16")
