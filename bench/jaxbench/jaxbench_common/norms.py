"""Normalizations written out (no library norm layers): zero mean, unit (biased) variance."""
import jax
import jax.numpy as jnp


def normalize(v, axis, eps=1e-5):
    """(v - mean) / sqrt(var + eps) with the statistics over `axis` (an int or a tuple).

    InstanceNorm: the spatial axes; BatchNorm with training statistics: every axis but the
    channel one; LayerNorm: the last axis. The affine part, if any, is the caller's."""
    mean = jnp.mean(v, axis=axis, keepdims=True)
    var = jnp.mean(jnp.square(v - mean), axis=axis, keepdims=True)
    return (v - mean) * jax.lax.rsqrt(var + eps)


def group_norm(v, groups, gamma, beta, eps=1e-5):
    """GroupNorm of (N, C, *spatial): statistics per (sample, group of C/groups channels)."""
    n, c = v.shape[0], v.shape[1]
    g = normalize(v.reshape((n, groups, -1)), -1, eps).reshape(v.shape)
    per_channel = (1, c) + (1,) * (v.ndim - 2)
    return g * gamma.reshape(per_channel) + beta.reshape(per_channel)


def feature_group_norm(v, groups, gamma, beta, eps=1e-5):
    """GroupNorm over the feature axis of (M, N): statistics per (row, group of N/groups)."""
    rows, feats = v.shape
    g = normalize(v.reshape(rows, groups, feats // groups), -1, eps)
    return g.reshape(rows, feats) * gamma + beta


def batch_norm_inference(v, mean, var, gamma, beta, eps=1e-5):
    """BatchNorm with running statistics over the last (feature) axis, affine gamma/beta."""
    return (v - mean) * jax.lax.rsqrt(var + eps) * gamma + beta
