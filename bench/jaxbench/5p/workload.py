"""5p: Llama-3.1-70B flex attention: causal attention plus a per-head relative-position bias."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "5p"
NAME = "llama3_70b_flex_attention"
OPERATOR = "attention"
DESCRIPTION = ("Causal multi-head attention with an additive score bias: softmax(Q K^T / sqrt(D) "
               "+ bias[h] + causal mask) V, Q/K/V (B, S, H, D) and bias (H, S, S) in bfloat16; "
               "scores and softmax in float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
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
    params = [{"name": n, "shape": shape, "dtype": "bfloat16", "init": unit}
              for n in ("q", "k", "v")]
    params.append({"name": "bias", "shape": (s["H"], s["S"], s["S"]), "dtype": "bfloat16",
                   "init": {"kind": "normal", "mean": 0.0, "std": 0.5}})
    return params


def function(scale):
    s = SCALES[scale]
    inv_sqrt_d = 1.0 / float(np.sqrt(s["D"]))

    def biased_causal_mha(q, k, v, bias):
        seq = q.shape[1]
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
        scores = scores * inv_sqrt_d + bias.astype(jnp.float32)[None]
        q_pos = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 0)
        k_pos = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 1)
        scores = jnp.where(k_pos <= q_pos, scores, _MASKED)
        row_max = jnp.max(scores, axis=-1, keepdims=True)
        weights = jnp.exp(scores - row_max)
        probs = weights / jnp.sum(weights, axis=-1, keepdims=True)
        out = jnp.einsum("bhqk,bkhd->bqhd", probs.astype(q.dtype), v,
                         preferred_element_type=jnp.float32)
        return out.astype(q.dtype)

    return biased_causal_mha


def flops(scale):
    s = SCALES[scale]
    scores = s["B"] * s["H"] * s["S"] * s["S"]
    # QK^T and PV over the full (masked) score matrix, plus ~7 elementwise/reduction ops per score.
    return 2 * scores * s["D"] * 2 + 7 * scores


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["B"], s["S"], s["H"], s["D"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
