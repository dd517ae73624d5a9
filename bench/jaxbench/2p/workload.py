"""2p: Llama-3.1-405B grouped-query attention (causal, BSHD, bf16, softmax in f32)."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "2p"
NAME = "llama3_405b_gqa_attention"
OPERATOR = "attention"
DESCRIPTION = ("Causal grouped-query attention: Q (B, S, Hq, D) against K, V (B, S, Hkv, D), "
               "each KV head shared by Hq/Hkv = 16 query heads; scores and softmax in float32, "
               "output (B, S, Hq, D) bfloat16.")
TOLERANCE = {"atol": 5e-2, "rtol": 5e-2}
SCALES = {
    "ci": {"B": 1, "S": 128, "Hq": 16, "Hkv": 1, "D": 32},
    "bench": {"B": 1, "S": 512, "Hq": 32, "Hkv": 2, "D": 128},
    "full": {"B": 4, "S": 4096, "Hq": 128, "Hkv": 8, "D": 128},
}

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}
# Finite stand-in for -inf: a masked score must never turn a row into NaN.
_MASKED = -1e30


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def inputs(scale):
    s = SCALES[scale]
    unit = {"kind": "normal", "mean": 0.0, "std": 1.0}
    return [
        {"name": "q", "shape": (s["B"], s["S"], s["Hq"], s["D"]), "dtype": "bfloat16",
         "init": unit},
        {"name": "k", "shape": (s["B"], s["S"], s["Hkv"], s["D"]), "dtype": "bfloat16",
         "init": unit},
        {"name": "v", "shape": (s["B"], s["S"], s["Hkv"], s["D"]), "dtype": "bfloat16",
         "init": unit},
    ]


def function(scale):
    s = SCALES[scale]
    hkv, group, d = s["Hkv"], s["Hq"] // s["Hkv"], s["D"]
    inv_sqrt_d = 1.0 / float(np.sqrt(d))

    def causal_gqa(q, k, v):
        batch, seq = q.shape[0], q.shape[1]
        # Query head h uses KV head h // group: split Hq into (Hkv, group).
        qg = q.reshape(batch, seq, hkv, group, d)
        scores = jnp.einsum("bqhgd,bkhd->bhgqk", qg, k, preferred_element_type=jnp.float32)
        scores = scores * inv_sqrt_d
        q_pos = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 0)
        k_pos = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 1)
        scores = jnp.where(k_pos <= q_pos, scores, _MASKED)
        row_max = jnp.max(scores, axis=-1, keepdims=True)
        weights = jnp.exp(scores - row_max)
        probs = weights / jnp.sum(weights, axis=-1, keepdims=True)
        out = jnp.einsum("bhgqk,bkhd->bqhgd", probs.astype(q.dtype), v,
                         preferred_element_type=jnp.float32)
        return out.reshape(batch, seq, hkv * group, d).astype(q.dtype)

    return causal_gqa


def flops(scale):
    s = SCALES[scale]
    scores = s["B"] * s["Hq"] * s["S"] * s["S"]
    # QK^T and PV over the full (masked) score matrix, plus ~6 elementwise/reduction ops per score.
    return 2 * scores * s["D"] * 2 + 6 * scores


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["B"], s["S"], s["Hq"], s["D"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
