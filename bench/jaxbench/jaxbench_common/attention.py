"""Attention pieces: the causal mask, causal grouped-query attention, q/k/v specs, the page tables
and context lengths of the paged workloads, and the FLOP count over a score matrix."""
import math

import numpy as np
import jax
import jax.numpy as jnp

from . import specs
from .activations import softmax

# Finite stand-in for -inf: a masked score must never turn a row into NaN.
MASKED = -1e30


def causal_mask(seq):
    """(seq, seq) bool: query i sees key j <= i."""
    q_pos = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 0)
    k_pos = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 1)
    return k_pos <= q_pos


def qkv_inputs(batch, seq, q_heads, kv_heads, head_dim):
    """q (B, S, Hq, D), k and v (B, S, Hkv, D), bfloat16, unit normal."""
    q_shape = (batch, seq, q_heads, head_dim)
    kv_shape = (batch, seq, kv_heads, head_dim)
    return [specs.normal("q", q_shape, "bfloat16"), specs.normal("k", kv_shape, "bfloat16"),
            specs.normal("v", kv_shape, "bfloat16")]


def causal_gqa(q, k, v):
    """softmax(Q K^T / sqrt(D) + causal mask) V for Q (B, S, Hq, D) and K, V (B, S, Hkv, D): query
    head h uses KV head h // (Hq/Hkv). Scores and softmax in float32, probabilities cast to the
    input dtype for the PV product, output (B, S, Hq, D) in the input dtype."""
    batch, seq, q_heads, d = q.shape
    hkv = k.shape[2]
    group = q_heads // hkv
    inv_sqrt_d = 1.0 / float(np.sqrt(d))
    # Query head h uses KV head h // group: split Hq into (Hkv, group).
    qg = q.reshape(batch, seq, hkv, group, d)
    scores = jnp.einsum("bqhgd,bkhd->bhgqk", qg, k, preferred_element_type=jnp.float32)
    scores = scores * inv_sqrt_d
    probs = softmax(jnp.where(causal_mask(seq), scores, MASKED))
    out = jnp.einsum("bhgqk,bkhd->bqhgd", probs.astype(q.dtype), v,
                     preferred_element_type=jnp.float32)
    return out.reshape(batch, seq, hkv * group, d).astype(q.dtype)


def flops(scores, head_dim, softmax_ops=6):
    """QK^T and PV over `scores` entries of the full (masked) score matrix, every batch dimension
    included, plus ~softmax_ops elementwise/reduction ops per score."""
    return 2 * scores * head_dim * 2 + softmax_ops * scores


def spread_lengths(n, max_len, page):
    """n context lengths spread over [1, max_len], not page aligned, in a scrambled order."""
    spread = [max(1, (max_len * (i + 1)) // n - (i * 7) % page) for i in range(n)]
    stride = next(m for m in range(5, 5 + 2 * n) if math.gcd(m, n) == 1)
    return [spread[(i * stride) % n] for i in range(n)]


def page_table(seqs, pages_per_seq):
    """int32 (seqs, pages_per_seq): each sequence owns pages_per_seq pages of the pool, scattered
    by a stride permutation."""
    total = seqs * pages_per_seq
    mult = next(m for m in range(7919, 7919 + total + 2) if math.gcd(m, total) == 1)
    slots = np.arange(total, dtype=np.int64).reshape(seqs, pages_per_seq)
    return ((slots * mult) % total).astype(np.int32)
