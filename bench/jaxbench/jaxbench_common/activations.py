"""Elementwise activations and row reductions, written out so they lower to plain HLO."""
import jax
import jax.numpy as jnp


def gelu(v):
    """Exact (erf) GELU, PyTorch's default."""
    return 0.5 * v * (1.0 + jax.lax.erf(v * 0.7071067811865476))


def softplus(v):
    """log(1 + exp(v)), written overflow-free."""
    return jnp.maximum(v, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(v)))


def mish(v):
    """x * tanh(softplus(x))."""
    return v * jnp.tanh(softplus(v))


def swish(v):
    """v * sigmoid(v) (SiLU)."""
    return v * jax.nn.sigmoid(v)


def hardswish(v):
    """v * relu6(v + 3) / 6."""
    return v * jnp.clip(v + 3.0, 0.0, 6.0) / 6.0


def softmax(v):
    """Softmax over the last axis, shifted by the row max."""
    e = jnp.exp(v - jnp.max(v, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def logsumexp(v, axis=-1, keepdims=True):
    """log(sum(exp(v))) over `axis`, shifted by the max so it cannot overflow."""
    top = jnp.max(v, axis=axis, keepdims=True)
    total = jnp.sum(jnp.exp(v - top), axis=axis, keepdims=keepdims)
    return jnp.log(total) + (top if keepdims else jnp.squeeze(top, axis))
