"""13p: Llama-3.1-8B LM-head cross-entropy: GEMM to vocabulary logits, log-softmax, mean NLL."""
import os
import sys

import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common.activations import logsumexp  # noqa: E402
from jaxbench_common.specs import io_bytes, normal, randint, weight  # noqa: E402

ID = "13p"
NAME = "llama3_8b_cross_entropy"
OPERATOR = "loss"
DESCRIPTION = ("Fused LM-head cross-entropy: logits = h (T, H) @ W (H, V) in float32 from "
               "bfloat16 inputs, loss = mean over tokens of logsumexp(logits) - logits[label]; "
               "labels int32 in [0, V); scalar float32 output.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"T": 64, "H": 128, "V": 1024},
    "bench": {"T": 256, "H": 1024, "V": 8192},
    "full": {"T": 8192, "H": 4096, "V": 128256},
}


def inputs(scale):
    s = SCALES[scale]
    return [
        normal("hidden", (s["T"], s["H"]), "bfloat16"),
        weight("w_lm_head", s["H"], s["V"], "bfloat16"),
        randint("labels", (s["T"],), 0, s["V"]),
    ]


def function(scale):
    del scale

    def cross_entropy(hidden, w_lm_head, labels):
        logits = jnp.matmul(hidden, w_lm_head, preferred_element_type=jnp.float32)
        lse = logsumexp(logits, keepdims=False)
        vocab = jax.lax.broadcasted_iota(jnp.int32, logits.shape, 1)
        label_logit = jnp.sum(jnp.where(vocab == labels[:, None], logits, 0.0), axis=-1)
        return jnp.mean(lse - label_logit)

    return cross_entropy


def flops(scale):
    s = SCALES[scale]
    logits = s["T"] * s["V"]
    # LM-head GEMM plus ~6 ops per logit (max, subtract, exp, sum, label compare/select, sum).
    return 2 * s["T"] * s["H"] * s["V"] + 6 * logits


def bytes_moved(scale):
    return io_bytes(inputs(scale), ())
