"""43k: GEMM + bias, BatchNorm (inference), x scale, softmax."""
import os
import sys

import jax.numpy as jnp

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import gemm_epilogue as gemm  # noqa: E402
from jaxbench_common.activations import softmax  # noqa: E402
from jaxbench_common.norms import batch_norm_inference  # noqa: E402
from jaxbench_common.specs import affine, io_bytes, normal, running_stats  # noqa: E402

ID = "43k"
NAME = "gemm_batchnorm_scale_softmax"
OPERATOR = "gemm"
DESCRIPTION = ("out = softmax over features of scale * BN(x W + b), BN with running mean/var "
               "(inference), eps 1e-5, affine gamma/beta; scale is a (1,) parameter "
               "(logit_scale), float32.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 64, "K": 256, "N": 512},
    "bench": {"M": 512, "K": 2048, "N": 2048},
    "full": {"M": 4096, "K": 8192, "N": 8192},
}


def inputs(scale):
    s = SCALES[scale]
    return gemm.inputs(s, *running_stats("bn", s["N"]), *affine("bn", s["N"]),
                       normal("logit_scale", (1,), mean=1.0, std=0.1))


def function(scale):
    del scale

    def gemm_batchnorm_scale_softmax(x, w, b, bn_mean, bn_var, bn_gamma, bn_beta, logit_scale):
        y = jnp.matmul(x, w) + b
        y = batch_norm_inference(y, bn_mean, bn_var, bn_gamma, bn_beta)
        return softmax(y * logit_scale)

    return gemm_batchnorm_scale_softmax


def flops(scale):
    return gemm.flops(SCALES[scale], epilogue_ops=10)


def bytes_moved(scale):
    s = SCALES[scale]
    return io_bytes(inputs(scale), (s["M"], s["N"]))
