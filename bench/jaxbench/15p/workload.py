"""15p: RetNet-6.7B multi-scale retention, parallel form (bf16 in/out, f32 inside)."""
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import attention  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "15p"
NAME = "retnet_6_7b_retention"
OPERATOR = "retention"
DESCRIPTION = ("Parallel retention: scores = (Q K^T / sqrt(D)) * Dmask with the causal decay "
               "mask Dmask[h,i,j] = gamma_h^(i-j) (i >= j, else 0), gamma_h = 1 - 2^(-5-h), each "
               "mask row scaled by 1/sqrt(its sum); rows divided by max(|row sum of scores|, 1); "
               "times V. Q/K/V (B, S, H, D) bfloat16, mask and scores float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"B": 1, "S": 128, "H": 4, "D": 64},
    "bench": {"B": 1, "S": 1024, "H": 4, "D": 256},
    "full": {"B": 4, "S": 4096, "H": 16, "D": 256},
}


def inputs(scale):
    s = SCALES[scale]
    return attention.qkv_inputs(s["B"], s["S"], s["H"], s["H"], s["D"])


def function(scale):
    s = SCALES[scale]
    heads, inv_sqrt_d = s["H"], 1.0 / float(np.sqrt(s["D"]))

    def retention(q, k, v):
        seq = q.shape[1]
        log_gamma = jnp.log(1.0 - jnp.exp2(-5.0 - jnp.arange(heads, dtype=jnp.float32)))
        i = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 0)
        j = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 1)
        distance = (i - j).astype(jnp.float32)
        decay = jnp.where((i >= j)[None], jnp.exp(log_gamma[:, None, None] * distance[None]), 0.0)
        decay = decay * jax.lax.rsqrt(jnp.sum(decay, axis=-1, keepdims=True))      # (H, S, S)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
        scores = scores * inv_sqrt_d * decay[None]
        scores = scores / jnp.maximum(jnp.abs(jnp.sum(scores, axis=-1, keepdims=True)), 1.0)
        out = jnp.einsum("bhqk,bkhd->bqhd", scores.astype(q.dtype), v,
                         preferred_element_type=jnp.float32)
        return out.astype(q.dtype)

    return retention


def flops(scale):
    s = SCALES[scale]
    # QK^T and (scores)V over the full masked matrix, ~5 ops per score (scale, decay product, row
    # sum, abs/max, divide); the decay mask itself is per (H, S, S) and shared over the batch.
    scores = s["B"] * s["H"] * s["S"] * s["S"]
    return attention.flops(scores, s["D"], softmax_ops=5) + 4 * s["H"] * s["S"] * s["S"]


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["B"], s["S"], s["H"], s["D"]), "bfloat16")
