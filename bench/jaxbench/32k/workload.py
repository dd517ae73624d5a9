"""32k: two GEMMs with a sigmoid between them, logsumexp over the output features."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "32k"
NAME = "gemm_sigmoid_gemm_logsumexp"
OPERATOR = "mlp"
DESCRIPTION = ("out (M,) = logsumexp over features of (sigmoid(x W1 + b1) W2 + b2), x (M, K), W1 "
               "(K, N1), W2 (N1, N2), float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N1": 512, "N2": 128},
    "bench": {"M": 1024, "K": 1024, "N1": 2048, "N2": 512},
    "full": {"M": 16384, "K": 2048, "N1": 4096, "N2": 1024},
}

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def _f32(name, shape, std, mean=0.0):
    return {"name": name, "shape": shape, "dtype": "float32",
            "init": {"kind": "normal", "mean": mean, "std": std}}


def inputs(scale):
    s = SCALES[scale]
    m, k, n1, n2 = s["M"], s["K"], s["N1"], s["N2"]
    return [
        _f32("x", (m, k), 1.0),
        _f32("w1", (k, n1), 1.0 / float(np.sqrt(k))),
        _f32("b1", (n1,), 0.1),
        # sigmoid outputs are in (0, 1) with mean ~0.5: keep the second GEMM's sums O(1).
        _f32("w2", (n1, n2), 1.0 / float(np.sqrt(n1))),
        _f32("b2", (n2,), 0.1),
    ]


def function(scale):
    del scale

    def gemm_sigmoid_gemm_logsumexp(x, w1, b1, w2, b2):
        hidden = jax.nn.sigmoid(jnp.matmul(x, w1) + b1)
        y = jnp.matmul(hidden, w2) + b2
        top = jnp.max(y, axis=1, keepdims=True)
        return jnp.log(jnp.sum(jnp.exp(y - top), axis=1)) + top[:, 0]

    return gemm_sigmoid_gemm_logsumexp


def flops(scale):
    s = SCALES[scale]
    m = s["M"]
    # Two GEMMs, bias + sigmoid on the hidden layer, bias + ~4 logsumexp ops on the output.
    return 2 * m * s["N1"] * (s["K"] + s["N2"]) + 2 * m * s["N1"] + 5 * m * s["N2"]


def bytes_moved(scale):
    s = SCALES[scale]
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [((s["M"],), "float32")])
