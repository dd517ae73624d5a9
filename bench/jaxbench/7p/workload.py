"""7p: Llama-3.1-70B ragged paged attention: mixed decode and prefill tokens over paged KV, GQA."""
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

ID = "7p"
NAME = "llama3_70b_ragged_paged_attention"
OPERATOR = "attention"
DESCRIPTION = ("Ragged paged GQA over a flat batch of query tokens (T, Hq, D): slot s owns "
               "tokens cu_q_lens[s]:cu_q_lens[s+1] (decodes of 1 token, prefill chunks, one "
               "fresh prefill; empty slots are inactive), its K/V come from a shared page pool "
               "through an int32 page table, and query i of a slot sits at position kv_len - "
               "q_len + i and sees positions <= its own. Softmax in float32, bfloat16 in and "
               "out.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"slots": 8, "decodes": 4, "chunks": 2, "chunk_len": 16, "prefill_len": 12,
           "Hq": 8, "Hkv": 1, "D": 64, "page": 16, "pages_per_seq": 8},
    "bench": {"slots": 16, "decodes": 8, "chunks": 3, "chunk_len": 128, "prefill_len": 100,
              "Hq": 8, "Hkv": 1, "D": 128, "page": 16, "pages_per_seq": 64},
    "full": {"slots": 64, "decodes": 48, "chunks": 7, "chunk_len": 512, "prefill_len": 464,
             "Hq": 64, "Hkv": 8, "D": 128, "page": 16, "pages_per_seq": 256},
}


def _max_len(s):
    return s["page"] * s["pages_per_seq"]


def _max_q(s):
    return max(1, s["chunk_len"], s["prefill_len"])


def _q_lens(s):
    lens = [1] * s["decodes"] + [s["chunk_len"]] * s["chunks"] + [s["prefill_len"]]
    return lens + [0] * (s["slots"] - len(lens))


def _tokens(s):
    return sum(_q_lens(s))


def _kv_lens(s):
    """Decode contexts spread over [1, max_len]; chunk c continues a prompt with a growing
    context before it; the fresh prefill sees only itself; inactive slots have 0."""
    max_len, n_chunks = _max_len(s), s["chunks"]
    decodes = attention.spread_lengths(s["decodes"], max_len, s["page"])
    room = max_len - s["chunk_len"]
    chunks = [s["chunk_len"] + (c * room) // max(1, n_chunks - 1) for c in range(n_chunks)]
    lens = decodes + chunks + [s["prefill_len"]]
    return np.array(lens + [0] * (s["slots"] - len(lens)), dtype=np.int32)


def _cu_q_lens(s):
    return np.concatenate([[0], np.cumsum(_q_lens(s))]).astype(np.int32)


def inputs(scale):
    s = SCALES[scale]
    pool = (s["Hkv"], s["slots"] * s["pages_per_seq"], s["page"], s["D"])
    return [
        normal("q", (_tokens(s), s["Hq"], s["D"]), "bfloat16"),
        normal("k_pages", pool, "bfloat16"),
        normal("v_pages", pool, "bfloat16"),
        data("kv_lens", _kv_lens(s)),
        data("page_table", attention.page_table(s["slots"], s["pages_per_seq"])),
        data("cu_q_lens", _cu_q_lens(s)),
    ]


def function(scale):
    s = SCALES[scale]
    hkv, group, d = s["Hkv"], s["Hq"] // s["Hkv"], s["D"]
    max_len, max_q, slots = _max_len(s), _max_q(s), s["slots"]
    inv_sqrt_d = 1.0 / float(np.sqrt(d))

    def ragged_paged_attention(q, k_pages, v_pages, kv_lens, page_table, cu_q_lens):
        tokens = q.shape[0]
        q_lens = cu_q_lens[1:] - cu_q_lens[:-1]
        # Pad each slot's queries to max_q rows; padding rows read token 0 and are dropped later.
        row = jax.lax.broadcasted_iota(jnp.int32, (slots, max_q), 1)
        token = jnp.where(row < q_lens[:, None], cu_q_lens[:-1, None] + row, 0)
        qp = jnp.take(q, token, axis=0).reshape(slots, max_q, hkv, group, d)
        k = jnp.take(k_pages, page_table, axis=1).reshape(hkv, slots, max_len, d)
        v = jnp.take(v_pages, page_table, axis=1).reshape(hkv, slots, max_len, d)
        scores = jnp.einsum("sqhgd,hsld->shgql", qp, k, preferred_element_type=jnp.float32)
        scores = scores * inv_sqrt_d
        q_pos = (kv_lens - q_lens)[:, None] + row  # absolute position of each query row
        k_pos = jax.lax.broadcasted_iota(jnp.int32, (slots, max_q, max_len), 2)
        live = (k_pos <= q_pos[:, :, None]) & (k_pos < kv_lens[:, None, None])
        # The finite mask value keeps even an inactive slot's rows from becoming NaN.
        probs = softmax(jnp.where(live[:, None, None, :, :], scores, attention.MASKED))
        out = jnp.einsum("shgql,hsld->sqhgd", probs.astype(q.dtype), v,
                         preferred_element_type=jnp.float32).astype(q.dtype)
        # Back to the flat token order: token t belongs to the last slot starting at or before t.
        t = jax.lax.broadcasted_iota(jnp.int32, (tokens,), 0)
        slot = jnp.sum((cu_q_lens[None, 1:] <= t[:, None]).astype(jnp.int32), axis=1)
        slot = jnp.minimum(slot, slots - 1)
        flat = slot * max_q + (t - jnp.take(cu_q_lens, slot))
        out = out.reshape(slots * max_q, hkv * group, d)
        return jnp.take(out, flat, axis=0)

    return ragged_paged_attention


def flops(scale):
    s = SCALES[scale]
    # The reference pads every slot to max_q queries over the whole paged context and masks:
    # the FLOPs are those of that padded score block.
    return attention.flops(s["slots"] * s["Hq"] * _max_q(s) * _max_len(s), s["D"])


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (_tokens(s), s["Hq"], s["D"]), "bfloat16")
