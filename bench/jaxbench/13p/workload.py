"""13p: Llama-3.1-8B LM-head cross-entropy: GEMM to vocabulary logits, log-softmax, mean NLL."""
import numpy as np
import jax
import jax.numpy as jnp

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

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def inputs(scale):
    s = SCALES[scale]
    return [
        {"name": "hidden", "shape": (s["T"], s["H"]), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        {"name": "w_lm_head", "shape": (s["H"], s["V"]), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0 / float(np.sqrt(s["H"]))}},
        {"name": "labels", "shape": (s["T"],), "dtype": "int32",
         "init": {"kind": "randint", "low": 0, "high": s["V"]}},
    ]


def function(scale):
    del scale

    def cross_entropy(hidden, w_lm_head, labels):
        logits = jnp.matmul(hidden, w_lm_head, preferred_element_type=jnp.float32)
        row_max = jnp.max(logits, axis=-1, keepdims=True)
        lse = jnp.log(jnp.sum(jnp.exp(logits - row_max), axis=-1)) + row_max[:, 0]
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
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [((), "float32")])
