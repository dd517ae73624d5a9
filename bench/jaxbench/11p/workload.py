"""11p: Qwen3-235B MoE grouped matmul (megablox): one GEMM per contiguous row group."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "11p"
NAME = "qwen3_235b_grouped_matmul"
OPERATOR = "grouped_gemm"
DESCRIPTION = ("Grouped GEMM over expert-sorted rows: rows of lhs (M, K) are split into G "
               "contiguous groups whose sizes come as an int32 input (some empty), and group g "
               "is multiplied by rhs[g] (K, N); rows past sum(group_sizes) are zero. Computed "
               "megablox-style over (row tile, group) visits, so the work is ~M*K*N, not G times "
               "that. bfloat16 in/out, float32 accumulation.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 512, "K": 64, "N": 64, "G": 128, "tile_m": 16},
    "bench": {"M": 4096, "K": 512, "N": 256, "G": 128, "tile_m": 32},
    "full": {"M": 32768, "K": 4096, "N": 1536, "G": 128, "tile_m": 128},
}

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def _group_sizes(s):
    """Skewed, deterministic sizes summing to M; groups 0, 17, 34, ... are empty."""
    weights = np.array([(g * 37) % 17 for g in range(s["G"])], dtype=np.int64)
    sizes = (s["M"] * weights) // weights.sum()
    sizes[int(np.argmax(weights))] += s["M"] - sizes.sum()
    return sizes.astype(np.int32)


def inputs(scale):
    s = SCALES[scale]
    return [
        {"name": "lhs", "shape": (s["M"], s["K"]), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        {"name": "rhs", "shape": (s["G"], s["K"], s["N"]), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0 / float(np.sqrt(s["K"]))}},
        {"name": "group_sizes", "shape": (s["G"],), "dtype": "int32",
         "init": {"kind": "data", "values": _group_sizes(s)}},
    ]


def _visits(s):
    # A group spanning t row tiles costs t visits and tile boundaries are shared by at most two
    # groups, so M/tile_m + G - 1 visits always cover every (tile, group) pair.
    return s["M"] // s["tile_m"] + s["G"] - 1


def function(scale):
    s = SCALES[scale]
    tile_m, tiles, visits, n_groups = s["tile_m"], s["M"] // s["tile_m"], _visits(s), s["G"]
    if s["M"] % tile_m:
        raise ValueError("M must be a multiple of tile_m")

    def grouped_matmul(lhs, rhs, group_sizes):
        k, n = lhs.shape[1], rhs.shape[2]
        ends = jnp.cumsum(group_sizes)
        starts = ends - group_sizes
        first_tile = jax.lax.div(starts, tile_m)  # sizes are non-negative: truncation == floor
        last_tile = jax.lax.div(ends - 1, tile_m)  # only used where the group is non-empty
        tiles_of_group = jnp.where(group_sizes > 0, last_tile - first_tile + 1, 0)
        visit_end = jnp.cumsum(tiles_of_group)
        visit_start = visit_end - tiles_of_group
        v = jax.lax.broadcasted_iota(jnp.int32, (visits,), 0)
        # Visit v belongs to the first group whose visit range ends after v.
        group = jnp.sum((visit_end[None, :] <= v[:, None]).astype(jnp.int32), axis=1)
        valid = group < n_groups
        group = jnp.minimum(group, n_groups - 1)
        tile = jnp.take(first_tile, group) + v - jnp.take(visit_start, group)
        tile = jnp.clip(tile, 0, tiles - 1)
        lhs_tiles = jnp.take(lhs.reshape(tiles, tile_m, k), tile, axis=0)   # (V, tile_m, K)
        weights = jnp.take(rhs, group, axis=0)                              # (V, K, N)
        part = jnp.einsum("vmk,vkn->vmn", lhs_tiles, weights, preferred_element_type=jnp.float32)
        row = tile[:, None] * tile_m + jax.lax.broadcasted_iota(jnp.int32, (visits, tile_m), 1)
        keep = (valid[:, None] & (row >= jnp.take(starts, group)[:, None])
                & (row < jnp.take(ends, group)[:, None]))
        part = jnp.where(keep[:, :, None], part, 0.0)
        out = jnp.zeros((tiles, tile_m, n), jnp.float32).at[tile].add(part)
        return out.reshape(tiles * tile_m, n).astype(lhs.dtype)

    return grouped_matmul


def flops(scale):
    s = SCALES[scale]
    # Every visit multiplies a full row tile (rows of other groups are masked afterwards), so the
    # reference does (M/tile_m + G - 1) * tile_m * K * N multiply-adds; the useful part is M*K*N.
    return 2 * _visits(s) * s["tile_m"] * s["K"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], s["N"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
