"""9p: Llama-3.1-70B SwiGLU MLP (silu(x Wg) * (x Wu)) Wd in bfloat16."""
import os
import sys

import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common.specs import io_bytes, normal, weight  # noqa: E402

ID = "9p"
NAME = "llama3_70b_swiglu_mlp"
OPERATOR = "mlp"
DESCRIPTION = ("SwiGLU feed-forward block: (silu(x Wg) * (x Wu)) Wd with x (B, S, E), Wg/Wu (E, "
               "M), Wd (M, E); bfloat16 weights, float32 accumulation and gating, bfloat16 "
               "output.")
TOLERANCE = {"atol": 1e-1, "rtol": 1e-1}
SCALES = {
    "ci": {"B": 1, "S": 64, "E": 256, "M": 384},
    "bench": {"B": 1, "S": 256, "E": 1024, "M": 2816},
    "full": {"B": 2, "S": 4096, "E": 8192, "M": 28672},
}


def inputs(scale):
    s = SCALES[scale]
    return [
        normal("x", (s["B"], s["S"], s["E"]), "bfloat16"),
        weight("w_gate", s["E"], s["M"], "bfloat16"),
        weight("w_up", s["E"], s["M"], "bfloat16"),
        weight("w_down", s["M"], s["E"], "bfloat16"),
    ]


def function(scale):
    del scale

    def swiglu_mlp(x, w_gate, w_up, w_down):
        gate = jnp.matmul(x, w_gate, preferred_element_type=jnp.float32)
        up = jnp.matmul(x, w_up, preferred_element_type=jnp.float32)
        hidden = (jax.nn.sigmoid(gate) * gate * up).astype(x.dtype)
        return jnp.matmul(hidden, w_down, preferred_element_type=jnp.float32).astype(x.dtype)

    return swiglu_mlp


def flops(scale):
    s = SCALES[scale]
    tokens = s["B"] * s["S"]
    # Three GEMMs plus ~4 elementwise ops (sigmoid, two products, cast) per hidden element.
    return 3 * 2 * tokens * s["E"] * s["M"] + 4 * tokens * s["M"]


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["B"], s["S"], s["E"]), "bfloat16")
