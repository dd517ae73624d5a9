"""6p: Llama-3.1-70B paged attention, decode step (one query token per sequence), GQA."""
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import attention  # noqa: E402
from jaxbench_common.activations import softmax  # noqa: E402
from jaxbench_common.specs import data, io_bytes, normal  # noqa: E402

ID = "6p"
NAME = "llama3_70b_paged_attention"
OPERATOR = "attention"
DESCRIPTION = ("Decode-time paged GQA: each sequence's K/V pages are gathered from a shared page "
               "pool (Hkv, pages, page_size, D) through an int32 page table, and its single "
               "query token (Hq heads, Hq/Hkv = 8 per KV head) attends to the first lengths[s] "
               "positions; softmax in float32, bfloat16 in and out.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"seqs": 8, "Hq": 16, "Hkv": 2, "D": 128, "page": 16, "pages_per_seq": 16},
    "bench": {"seqs": 32, "Hq": 32, "Hkv": 4, "D": 128, "page": 16, "pages_per_seq": 128},
    "full": {"seqs": 64, "Hq": 64, "Hkv": 8, "D": 128, "page": 16, "pages_per_seq": 256},
}


def inputs(scale):
    s = SCALES[scale]
    max_len = s["page"] * s["pages_per_seq"]
    lengths = np.array(attention.spread_lengths(s["seqs"], max_len, s["page"]), dtype=np.int32)
    pool = (s["Hkv"], s["seqs"] * s["pages_per_seq"], s["page"], s["D"])
    return [
        normal("q", (s["seqs"], s["Hq"], s["D"]), "bfloat16"),
        normal("k_pages", pool, "bfloat16"),
        normal("v_pages", pool, "bfloat16"),
        data("lengths", lengths),
        data("page_table", attention.page_table(s["seqs"], s["pages_per_seq"])),
    ]


def function(scale):
    s = SCALES[scale]
    hkv, group, d = s["Hkv"], s["Hq"] // s["Hkv"], s["D"]
    max_len = s["page"] * s["pages_per_seq"]
    inv_sqrt_d = 1.0 / float(np.sqrt(d))

    def paged_decode_attention(q, k_pages, v_pages, lengths, page_table):
        seqs = q.shape[0]
        # (Hkv, seqs, pages_per_seq, page, D) -> one contiguous context per sequence.
        k = jnp.take(k_pages, page_table, axis=1).reshape(hkv, seqs, max_len, d)
        v = jnp.take(v_pages, page_table, axis=1).reshape(hkv, seqs, max_len, d)
        qg = q.reshape(seqs, hkv, group, d)
        scores = jnp.einsum("shgd,hsld->shgl", qg, k, preferred_element_type=jnp.float32)
        scores = scores * inv_sqrt_d
        pos = jax.lax.broadcasted_iota(jnp.int32, (seqs, max_len), 1)
        live = pos < lengths[:, None]
        probs = softmax(jnp.where(live[:, None, None, :], scores, attention.MASKED))
        out = jnp.einsum("shgl,hsld->shgd", probs.astype(q.dtype), v,
                         preferred_element_type=jnp.float32)
        return out.reshape(seqs, hkv * group, d).astype(q.dtype)

    return paged_decode_attention


def flops(scale):
    s = SCALES[scale]
    # Every gathered position counts, the masked ones included.
    return attention.flops(s["seqs"] * s["Hq"] * s["page"] * s["pages_per_seq"], s["D"])


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["seqs"], s["Hq"], s["D"]), "bfloat16")
