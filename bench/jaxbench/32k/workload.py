"""32k: two GEMMs with a sigmoid between them, logsumexp over the output features."""
import os
import sys

import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common.activations import logsumexp  # noqa: E402
from jaxbench_common.specs import bias, io_bytes, normal, weight  # noqa: E402

ID = "32k"
NAME = "gemm_sigmoid_gemm_logsumexp"
OPERATOR = "mlp"
DESCRIPTION = ("out (M,) = logsumexp over features of (sigmoid(x W1 + b1) W2 + b2), x (M, K), W1 "
               "(K, N1), W2 (N1, N2), float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N1": 512, "N2": 128},
    "bench": {"M": 1024, "K": 1024, "N1": 2048, "N2": 512},
    "full": {"M": 16384, "K": 2048, "N1": 4096, "N2": 1024},
}


def inputs(scale):
    s = SCALES[scale]
    m, k, n1, n2 = s["M"], s["K"], s["N1"], s["N2"]
    return [
        normal("x", (m, k)),
        weight("w1", k, n1),
        bias("b1", n1),
        # sigmoid outputs are in (0, 1) with mean ~0.5: keep the second GEMM's sums O(1).
        weight("w2", n1, n2),
        bias("b2", n2),
    ]


def function(scale):
    del scale

    def gemm_sigmoid_gemm_logsumexp(x, w1, b1, w2, b2):
        hidden = jax.nn.sigmoid(jnp.matmul(x, w1) + b1)
        y = jnp.matmul(hidden, w2) + b2
        return logsumexp(y, keepdims=False)

    return gemm_sigmoid_gemm_logsumexp


def flops(scale):
    s = SCALES[scale]
    m = s["M"]
    # Two GEMMs, bias + sigmoid on the hidden layer, bias + ~4 logsumexp ops on the output.
    return 2 * m * s["N1"] * (s["K"] + s["N2"]) + 2 * m * s["N1"] + 5 * m * s["N2"]


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"],))
