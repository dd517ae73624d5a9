"""16p: Mamba-2-2.7B state-space duality (SSD) block in its quadratic (attention-like) form."""
import os
import sys

import jax
import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common.activations import softplus  # noqa: E402
from jaxbench_common.specs import io_bytes, normal, uniform  # noqa: E402

ID = "16p"
NAME = "mamba2_2_7b_ssd"
OPERATOR = "ssm"
DESCRIPTION = ("Mamba-2 SSD, quadratic form: dt = softplus(dt_raw), A = -exp(A_log), L[i,j] = "
               "exp(cumsum(dt*A)_i - cumsum(dt*A)_j) for i >= j (else 0); y = ((C B^T) * L) (dt "
               "* x) per head with C, B (B, S, H, N=state) as Q, K and x (B, S, H, D) as V; then "
               "y is RMS-normalized over D (float32 statistics, no weight). bfloat16 tensors "
               "except A_log float32; decay math in float32.")
TOLERANCE = {"atol": 5e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"B": 1, "S": 128, "H": 4, "D": 32, "N": 64},
    "bench": {"B": 1, "S": 1024, "H": 8, "D": 64, "N": 128},
    "full": {"B": 4, "S": 4096, "H": 64, "D": 64, "N": 128},
}
NORM_EPS = 1e-5


def inputs(scale):
    s = SCALES[scale]
    b, t, h = s["B"], s["S"], s["H"]
    return [
        normal("x", (b, t, h, s["D"]), "bfloat16"),
        # softplus(N(-4, 1)) ~ 0.002..0.13: step sizes in Mamba-2's usual range.
        normal("dt_raw", (b, t, h), "bfloat16", mean=-4.0),
        uniform("A_log", (h,), 0.0, 2.0),
        normal("B", (b, t, h, s["N"]), "bfloat16"),
        normal("C", (b, t, h, s["N"]), "bfloat16"),
    ]


def function(scale):
    del scale

    def ssd(x, dt_raw, a_log, b_mat, c_mat):
        seq = x.shape[1]
        dt = softplus(dt_raw.astype(jnp.float32))
        log_decay = jnp.cumsum(dt * -jnp.exp(a_log)[None, None, :], axis=1)    # (B, S, H)
        cs = jnp.transpose(log_decay, (0, 2, 1))                              # (B, H, S)
        i = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 0)
        j = jax.lax.broadcasted_iota(jnp.int32, (seq, seq), 1)
        # Mask before exp: above the diagonal the difference is positive and could overflow.
        segment = jnp.where((i >= j)[None, None], cs[:, :, :, None] - cs[:, :, None, :], -1e30)
        decay = jnp.exp(segment)                                              # (B, H, S, S)
        scores = jnp.einsum("bihn,bjhn->bhij", c_mat, b_mat, preferred_element_type=jnp.float32)
        mixed = (scores * decay).astype(x.dtype)
        xdt = (x.astype(jnp.float32) * dt[:, :, :, None]).astype(x.dtype)
        y = jnp.einsum("bhij,bjhd->bihd", mixed, xdt, preferred_element_type=jnp.float32)
        y = y * jax.lax.rsqrt(jnp.mean(y * y, axis=-1, keepdims=True) + NORM_EPS)
        return y.astype(x.dtype)

    return ssd


def flops(scale):
    s = SCALES[scale]
    pairs = s["B"] * s["H"] * s["S"] * s["S"]
    # C B^T and the mixing GEMM over the full masked (i, j) matrix, ~5 ops per pair (difference,
    # select, exp, product, cast); the per-token dt/cumsum/norm work is ~10 ops per x element.
    return 2 * pairs * (s["N"] + s["D"]) + 5 * pairs + 10 * s["B"] * s["S"] * s["H"] * s["D"]


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["B"], s["S"], s["H"], s["D"]), "bfloat16")
