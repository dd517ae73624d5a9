"""8p: Llama-3.1-70B dense matmul A @ B in bfloat16 with float32 accumulation."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common.specs import io_bytes, normal, weight  # noqa: E402

ID = "8p"
NAME = "llama3_70b_dense_matmul"
OPERATOR = "gemm"
DESCRIPTION = ("Dense matmul C = A (M, K) @ B (K, N), bfloat16 inputs, float32 accumulation, "
               "bfloat16 output (the MLP up-projection shape of Llama-3.1-70B at full scale).")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 128, "K": 256, "N": 256},
    "bench": {"M": 1024, "K": 1024, "N": 2048},
    "full": {"M": 8192, "K": 8192, "N": 28672},
}


def inputs(scale):
    s = SCALES[scale]
    return [normal("a", (s["M"], s["K"]), "bfloat16"), weight("b", s["K"], s["N"], "bfloat16")]


def function(scale):
    del scale

    def dense_matmul(a, b):
        return jnp.matmul(a, b, preferred_element_type=jnp.float32).astype(a.dtype)

    return dense_matmul


def flops(scale):
    s = SCALES[scale]
    return 2 * s["M"] * s["K"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]), "bfloat16")
