"""A user-style reference file: a JAX function plus example INPUTS (not a suite workload)."""

import jax.numpy as jnp
import numpy as np

TOLERANCE = {"atol": 1e-3, "rtol": 1e-3}


def gelu_mlp(x, w):
    """GELU(x @ w)."""
    return jnp.tanh(x @ w)


INPUTS = [np.zeros((4, 8), np.float32), np.zeros((8, 3), np.float32)]


def with_specs(a, b):
    return a + b.astype(a.dtype)


def broken(x, w):
    return x @ w.T  # shapes do not agree: a lowering error


def not_a_function():
    pass


INPUTS_BY_NAME = None
