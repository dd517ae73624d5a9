"""9p: Llama-3.1-70B SwiGLU MLP (silu(x Wg) * (x Wu)) Wd in bfloat16."""
import numpy as np
import jax
import jax.numpy as jnp

ID = "9p"
NAME = "llama3_70b_swiglu_mlp"
OPERATOR = "mlp"
DESCRIPTION = ("SwiGLU feed-forward block: (silu(x Wg) * (x Wu)) Wd with x (B, S, E), Wg/Wu (E, "
               "M), Wd (M, E); bfloat16 weights, float32 accumulation and gating, bfloat16 "
               "output.")
TOLERANCE = {"atol": 1e-1, "rtol": 1e-1}
SCALES = {
    "ci": {"B": 1, "S": 64, "E": 256, "M": 384},
    "bench": {"B": 1, "S": 256, "E": 1024, "M": 2816},
    "full": {"B": 2, "S": 4096, "E": 8192, "M": 28672},
}

_ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def _nbytes(specs):
    return sum(int(np.prod(shape)) * _ITEMSIZE[dtype] for shape, dtype in specs)


def _weight(name, rows, cols):
    return {"name": name, "shape": (rows, cols), "dtype": "bfloat16",
            "init": {"kind": "normal", "mean": 0.0, "std": 1.0 / float(np.sqrt(rows))}}


def inputs(scale):
    s = SCALES[scale]
    return [
        {"name": "x", "shape": (s["B"], s["S"], s["E"]), "dtype": "bfloat16",
         "init": {"kind": "normal", "mean": 0.0, "std": 1.0}},
        _weight("w_gate", s["E"], s["M"]),
        _weight("w_up", s["E"], s["M"]),
        _weight("w_down", s["M"], s["E"]),
    ]


def function(scale):
    del scale

    def swiglu_mlp(x, w_gate, w_up, w_down):
        gate = jnp.matmul(x, w_gate, preferred_element_type=jnp.float32)
        up = jnp.matmul(x, w_up, preferred_element_type=jnp.float32)
        hidden = (jax.nn.sigmoid(gate) * gate * up).astype(x.dtype)
        return jnp.matmul(hidden, w_down, preferred_element_type=jnp.float32).astype(x.dtype)

    return swiglu_mlp


def flops(scale):
    s = SCALES[scale]
    tokens = s["B"] * s["S"]
    # Three GEMMs plus ~4 elementwise ops (sigmoid, two products, cast) per hidden element.
    return 3 * 2 * tokens * s["E"] * s["M"] + 4 * tokens * s["M"]


def bytes_moved(scale):
    s = SCALES[scale]
    out = ((s["B"], s["S"], s["E"]), "bfloat16")
    return _nbytes([(p["shape"], p["dtype"]) for p in inputs(scale)] + [out])
