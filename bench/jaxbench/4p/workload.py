"""4p: Llama-3.1-70B causal GQA with a block-sparse causal mask (BSHD, bf16)."""
import os
import sys

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import attention  # noqa: E402
from jaxbench_common.specs import io_bytes  # noqa: E402

ID = "4p"
NAME = "llama3_70b_sparse_attention"
OPERATOR = "attention"
DESCRIPTION = ("Causal grouped-query attention (Q (B, S, Hq, D), K/V (B, S, Hkv, D), Hq/Hkv = "
               "8). 'Sparse' is the block-sparse form of the causal mask: key blocks above the "
               "diagonal are fully masked and may be skipped; the values equal dense causal GQA. "
               "Scores and softmax in float32, output bfloat16.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"B": 1, "S": 128, "Hq": 8, "Hkv": 1, "D": 64},
    "bench": {"B": 1, "S": 1024, "Hq": 8, "Hkv": 1, "D": 128},
    "full": {"B": 4, "S": 4096, "Hq": 64, "Hkv": 8, "D": 128},
}


def inputs(scale):
    s = SCALES[scale]
    return attention.qkv_inputs(s["B"], s["S"], s["Hq"], s["Hkv"], s["D"])


def function(scale):
    del scale
    # softmax(Q K^T / sqrt(D) + causal mask) V; query head h reads KV head h // (Hq / Hkv).
    return attention.causal_gqa


def flops(scale):
    s = SCALES[scale]
    return attention.flops(s["B"] * s["Hq"] * s["S"] * s["S"], s["D"])


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["B"], s["S"], s["Hq"], s["D"]), "bfloat16")
