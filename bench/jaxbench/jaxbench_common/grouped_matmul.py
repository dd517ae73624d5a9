"""The ragged grouped GEMM of 11p and 14p: rows of lhs (M, K) split into G contiguous groups of
int32 sizes, group g times rhs[g] (K, N), computed megablox-style over (row tile, group) visits.

Sizes are a dict with M, K, N, G and tile_m (the row tile)."""
import numpy as np
import jax
import jax.numpy as jnp

from . import specs


def group_sizes(s):
    """Skewed, deterministic sizes summing to M; groups 0, 17, 34, ... are empty."""
    weights = np.array([(g * 37) % 17 for g in range(s["G"])], dtype=np.int64)
    sizes = (s["M"] * weights) // weights.sum()
    sizes[int(np.argmax(weights))] += s["M"] - sizes.sum()
    return sizes.astype(np.int32)


def inputs(s):
    """lhs (M, K), rhs (G, K, N) bfloat16 and the int32 group sizes (G,)."""
    return [
        specs.normal("lhs", (s["M"], s["K"]), "bfloat16"),
        specs.normal("rhs", (s["G"], s["K"], s["N"]), "bfloat16",
                     std=1.0 / float(np.sqrt(s["K"]))),
        specs.data("group_sizes", group_sizes(s)),
    ]


def visits(m, tile_m, groups):
    # A group spanning t row tiles costs t visits and tile boundaries are shared by at most two
    # groups, so M/tile_m + G - 1 visits always cover every (tile, group) pair.
    return m // tile_m + groups - 1


def grouped_matmul(lhs, rhs, group_sizes, tile_m):
    """out[r] = lhs[r] @ rhs[g] for the group g holding row r (float32 accumulation, lhs dtype
    out); rows past sum(group_sizes) are zero. Each visit multiplies one full row tile by one
    group's weight and masks the rows outside the group."""
    (m, k), (n_groups, n) = lhs.shape, (rhs.shape[0], rhs.shape[2])
    if m % tile_m:
        raise ValueError("M must be a multiple of tile_m")
    tiles, n_visits = m // tile_m, visits(m, tile_m, n_groups)
    ends = jnp.cumsum(group_sizes)
    starts = ends - group_sizes
    first_tile = jax.lax.div(starts, tile_m)  # sizes are non-negative: truncation == floor
    last_tile = jax.lax.div(ends - 1, tile_m)  # only used where the group is non-empty
    tiles_of_group = jnp.where(group_sizes > 0, last_tile - first_tile + 1, 0)
    visit_end = jnp.cumsum(tiles_of_group)
    visit_start = visit_end - tiles_of_group
    v = jax.lax.broadcasted_iota(jnp.int32, (n_visits,), 0)
    # Visit v belongs to the first group whose visit range ends after v.
    group = jnp.sum((visit_end[None, :] <= v[:, None]).astype(jnp.int32), axis=1)
    valid = group < n_groups
    group = jnp.minimum(group, n_groups - 1)
    tile = jnp.take(first_tile, group) + v - jnp.take(visit_start, group)
    tile = jnp.clip(tile, 0, tiles - 1)
    lhs_tiles = jnp.take(lhs.reshape(tiles, tile_m, k), tile, axis=0)   # (V, tile_m, K)
    weights = jnp.take(rhs, group, axis=0)                              # (V, K, N)
    part = jnp.einsum("vmk,vkn->vmn", lhs_tiles, weights, preferred_element_type=jnp.float32)
    row = tile[:, None] * tile_m + jax.lax.broadcasted_iota(jnp.int32, (n_visits, tile_m), 1)
    keep = (valid[:, None] & (row >= jnp.take(starts, group)[:, None])
            & (row < jnp.take(ends, group)[:, None]))
    part = jnp.where(keep[:, :, None], part, 0.0)
    out = jnp.zeros((tiles, tile_m, n), jnp.float32).at[tile].add(part)
    return out.reshape(tiles * tile_m, n).astype(lhs.dtype)


def flops(s):
    # Every visit multiplies a full row tile (rows of other groups are masked afterwards), so the
    # reference does (M/tile_m + G - 1) * tile_m * K * N multiply-adds; the useful part is M*K*N.
    return 2 * visits(s["M"], s["tile_m"], s["G"]) * s["tile_m"] * s["K"] * s["N"]


def bytes_moved(s):
    return specs.io_bytes(inputs(s), (s["M"], s["N"]), "bfloat16")
