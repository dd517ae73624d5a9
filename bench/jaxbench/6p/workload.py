"""6p: Llama-3.1-70B paged attention, decode step (one query token per sequence), GQA."""
import math

import numpy as np
import jax
import jax.numpy as jnp

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

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}
_MASKED = -1e30  # finite stand-in for -inf so no row can become NaN


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def _lengths(s):
    """Context lengths spread over [1, max_len], not page aligned, in a scrambled order."""
    n, max_len = s["seqs"], s["page"] * s["pages_per_seq"]
    spread = [max(1, (max_len * (i + 1)) // n - (i * 7) % s["page"]) for i in range(n)]
    stride = next(m for m in range(5, 5 + 2 * n) if math.gcd(m, n) == 1)
    return np.array([spread[(i * stride) % n] for i in range(n)], dtype=np.int32)


def _page_table(s):
    """Each sequence owns pages_per_seq pages of the pool, scattered by a stride permutation."""
    total = s["seqs"] * s["pages_per_seq"]
    mult = next(m for m in range(7919, 7919 + total + 2) if math.gcd(m, total) == 1)
    slots = np.arange(total, dtype=np.int64).reshape(s["seqs"], s["pages_per_seq"])
    return ((slots * mult) % total).astype(np.int32)


def inputs(scale):
    s = SCALES[scale]
    total_pages = s["seqs"] * s["pages_per_seq"]
    unit = {"kind": "normal", "mean": 0.0, "std": 1.0}
    pool = (s["Hkv"], total_pages, s["page"], s["D"])
    return [
        {"name": "q", "shape": (s["seqs"], s["Hq"], s["D"]), "dtype": "bfloat16", "init": unit},
        {"name": "k_pages", "shape": pool, "dtype": "bfloat16", "init": unit},
        {"name": "v_pages", "shape": pool, "dtype": "bfloat16", "init": unit},
        {"name": "lengths", "shape": (s["seqs"],), "dtype": "int32",
         "init": {"kind": "data", "values": _lengths(s)}},
        {"name": "page_table", "shape": (s["seqs"], s["pages_per_seq"]), "dtype": "int32",
         "init": {"kind": "data", "values": _page_table(s)}},
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
        scores = jnp.where(live[:, None, None, :], scores, _MASKED)
        weights = jnp.exp(scores - jnp.max(scores, axis=-1, keepdims=True))
        probs = weights / jnp.sum(weights, axis=-1, keepdims=True)
        out = jnp.einsum("shgl,hsld->shgd", probs.astype(q.dtype), v,
                         preferred_element_type=jnp.float32)
        return out.reshape(seqs, hkv * group, d).astype(q.dtype)

    return paged_decode_attention


def flops(scale):
    s = SCALES[scale]
    scores = s["seqs"] * s["Hq"] * s["page"] * s["pages_per_seq"]
    # QK^T and PV over every gathered position (masked ones included), ~6 softmax ops per score.
    return 2 * scores * s["D"] * 2 + 6 * scores


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["seqs"], s["Hq"], s["D"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
