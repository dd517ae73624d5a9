"""5p: Llama-3.1-70B flex attention: causal attention plus a per-head relative-position bias."""
import os
import sys

import numpy as np
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import attention  # noqa: E402
from jaxbench_common.activations import softmax  # noqa: E402
from jaxbench_common.attention import MASKED, causal_mask  # noqa: E402
from jaxbench_common.specs import io_bytes, normal  # noqa: E402

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


def inputs(scale):
    s = SCALES[scale]
    bias = normal("bias", (s["H"], s["S"], s["S"]), "bfloat16", std=0.5)
    return attention.qkv_inputs(s["B"], s["S"], s["H"], s["H"], s["D"]) + [bias]


def function(scale):
    s = SCALES[scale]
    inv_sqrt_d = 1.0 / float(np.sqrt(s["D"]))

    def biased_causal_mha(q, k, v, bias):
        seq = q.shape[1]
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
        scores = scores * inv_sqrt_d + bias.astype(jnp.float32)[None]
        probs = softmax(jnp.where(causal_mask(seq), scores, MASKED))
        out = jnp.einsum("bhqk,bkhd->bqhd", probs.astype(q.dtype), v,
                         preferred_element_type=jnp.float32)
        return out.astype(q.dtype)

    return biased_causal_mha


def flops(scale):
    s = SCALES[scale]
    # ~7 elementwise/reduction ops per score: the softmax's 6 and the bias add.
    return attention.flops(s["B"] * s["H"] * s["S"] * s["S"], s["D"], softmax_ops=7)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["B"], s["S"], s["H"], s["D"]), "bfloat16")
