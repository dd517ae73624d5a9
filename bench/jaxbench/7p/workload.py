"""7p: Llama-3.1-70B ragged paged attention: mixed decode and prefill tokens over paged KV, GQA."""
import math

import numpy as np
import jax
import jax.numpy as jnp

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

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}
_MASKED = -1e30  # finite stand-in for -inf so no row (not even an inactive slot's) becomes NaN


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


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
    max_len, n_dec, n_chunks = _max_len(s), s["decodes"], s["chunks"]
    stride = next(m for m in range(5, 5 + 2 * n_dec) if math.gcd(m, n_dec) == 1)
    spread = [max(1, (max_len * (i + 1)) // n_dec - (i * 7) % s["page"]) for i in range(n_dec)]
    decodes = [spread[(i * stride) % n_dec] for i in range(n_dec)]
    room = max_len - s["chunk_len"]
    chunks = [s["chunk_len"] + (c * room) // max(1, n_chunks - 1) for c in range(n_chunks)]
    lens = decodes + chunks + [s["prefill_len"]]
    return np.array(lens + [0] * (s["slots"] - len(lens)), dtype=np.int32)


def _cu_q_lens(s):
    return np.concatenate([[0], np.cumsum(_q_lens(s))]).astype(np.int32)


def _page_table(s):
    total = s["slots"] * s["pages_per_seq"]
    mult = next(m for m in range(7919, 7919 + total + 2) if math.gcd(m, total) == 1)
    slots = np.arange(total, dtype=np.int64).reshape(s["slots"], s["pages_per_seq"])
    return ((slots * mult) % total).astype(np.int32)


def inputs(scale):
    s = SCALES[scale]
    unit = {"kind": "normal", "mean": 0.0, "std": 1.0}
    pool = (s["Hkv"], s["slots"] * s["pages_per_seq"], s["page"], s["D"])
    return [
        {"name": "q", "shape": (_tokens(s), s["Hq"], s["D"]), "dtype": "bfloat16", "init": unit},
        {"name": "k_pages", "shape": pool, "dtype": "bfloat16", "init": unit},
        {"name": "v_pages", "shape": pool, "dtype": "bfloat16", "init": unit},
        {"name": "kv_lens", "shape": (s["slots"],), "dtype": "int32",
         "init": {"kind": "data", "values": _kv_lens(s)}},
        {"name": "page_table", "shape": (s["slots"], s["pages_per_seq"]), "dtype": "int32",
         "init": {"kind": "data", "values": _page_table(s)}},
        {"name": "cu_q_lens", "shape": (s["slots"] + 1,), "dtype": "int32",
         "init": {"kind": "data", "values": _cu_q_lens(s)}},
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
        scores = jnp.where(live[:, None, None, :, :], scores, _MASKED)
        weights = jnp.exp(scores - jnp.max(scores, axis=-1, keepdims=True))
        probs = weights / jnp.sum(weights, axis=-1, keepdims=True)
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
    scores = s["slots"] * s["Hq"] * _max_q(s) * _max_len(s)
    # The reference pads every slot to max_q queries over the whole paged context and masks:
    # QK^T and PV over that padded score block, ~6 softmax ops per score.
    return 2 * scores * s["D"] * 2 + 6 * scores


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((_tokens(s), s["Hq"], s["D"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
