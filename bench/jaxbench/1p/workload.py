"""1p: causal multi-head softmax attention (BSHD layout, bf16, softmax in f32)."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "1p"
NAME = "mha_causal_attention"
OPERATOR = "attention"
DESCRIPTION = ("Causal multi-head attention softmax(Q K^T / sqrt(D) + causal mask) V with Q, K, "
               "V of shape (B, S, H, D) in bfloat16; scores and softmax in float32, "
               "probabilities cast to bfloat16 for the PV product.")
TOLERANCE = {"atol": 5e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"B": 1, "S": 128, "H": 4, "D": 64},
    "bench": {"B": 1, "S": 1024, "H": 8, "D": 128},
    "full": {"B": 4, "S": 4096, "H": 64, "D": 128},
}

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}
# Finite stand-in for -inf: a masked score must never turn a row into NaN.
_MASKED = -1e30


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def inputs(scale):
    s = SCALES[scale]
    shape = (s["B"], s["S"], s["H"], s["D"])
    unit = {"kind": "normal", "mean": 0.0, "std": 1.0}
    return [{"name": n, "shape": shape, "dtype": "bfloat16", "init": unit} for n in ("q", "k", "v")]


def function(scale):
    s = SCALES[scale]
    inv_sqrt_d = 1.0 / float(np.sqrt(s["D"]))

    def causal_mha(q, k, v):
        seq = q.shape[1]
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
        scores = scores * inv_sqrt_d
        q_pos = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 0)
        k_pos = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 1)
        scores = jnp.where(k_pos <= q_pos, scores, _MASKED)
        row_max = jnp.max(scores, axis=-1, keepdims=True)
        weights = jnp.exp(scores - row_max)
        probs = weights / jnp.sum(weights, axis=-1, keepdims=True)
        out = jnp.einsum("bhqk,bkhd->bqhd", probs.astype(q.dtype), v,
                         preferred_element_type=jnp.float32)
        return out.astype(q.dtype)

    return causal_mha


def flops(scale):
    s = SCALES[scale]
    scores = s["B"] * s["H"] * s["S"] * s["S"]
    # QK^T and PV over the full (masked) score matrix, plus ~6 elementwise/reduction ops per score.
    return 2 * scores * s["D"] * 2 + 6 * scores


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["B"], s["S"], s["H"], s["D"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
