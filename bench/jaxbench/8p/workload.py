"""8p: Llama-3.1-70B dense matmul A @ B in bfloat16 with float32 accumulation."""
import numpy as np
import jax.numpy as jnp

ID = "8p"
NAME = "llama3_70b_dense_matmul"
OPERATOR = "gemm"
DESCRIPTION = ("Dense matmul C = A (M, K) @ B (K, N), bfloat16 inputs, float32 accumulation, "
               "bfloat16 output (the MLP up-projection shape of Llama-3.1-70B at full scale).")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 128, "K": 256, "N": 256},
    "bench": {"M": 1024, "K": 1024, "N": 2048},
    "full": {"M": 8192, "K": 8192, "N": 28672},
}

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def inputs(scale):
    s = SCALES[scale]
    return [
        {"name": "a", "shape": (s["M"], s["K"]), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        {"name": "b", "shape": (s["K"], s["N"]), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0 / float(np.sqrt(s["K"]))}},
    ]


def function(scale):
    del scale

    def dense_matmul(a, b):
        return jnp.matmul(a, b, preferred_element_type=jnp.float32).astype(a.dtype)

    return dense_matmul


def flops(scale):
    s = SCALES[scale]
    return 2 * s["M"] * s["K"] * s["N"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["M"], s["N"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
