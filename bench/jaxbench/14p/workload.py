"""14p: Mixtral ragged dot: a real ragged grouped GEMM with int32 group sizes."""
import os
import sys

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import grouped_matmul as gmm  # noqa: E402

ID = "14p"
NAME = "mixtral_ragged_dot"
OPERATOR = "grouped_gemm"
DESCRIPTION = ("Ragged dot (lax.ragged_dot semantics): rows of lhs (M, K) are split into G "
               "contiguous groups of the given int32 sizes (uneven, group 0 empty) and group g "
               "is multiplied by rhs[g] (K, N); rows past sum(group_sizes) are zero. Really "
               "ragged, unlike the public suite's fixed equal split; computed over (row tile, "
               "group) visits so the work is ~M*K*N. bfloat16 in/out, float32 accumulation.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 128, "K": 128, "N": 256, "G": 8, "tile_m": 16},
    "bench": {"M": 2048, "K": 1024, "N": 1024, "G": 8, "tile_m": 128},
    "full": {"M": 8192, "K": 4096, "N": 14336, "G": 8, "tile_m": 128},
}


def inputs(scale):
    return gmm.inputs(SCALES[scale])


def function(scale):
    tile_m = SCALES[scale]["tile_m"]

    def grouped_matmul(lhs, rhs, group_sizes):
        # Row r of the output is lhs[r] @ rhs[g] for the group g holding row r, over tile visits.
        return gmm.grouped_matmul(lhs, rhs, group_sizes, tile_m)

    return grouped_matmul


def flops(scale):
    return gmm.flops(SCALES[scale])


def bytes_moved(scale):
    return gmm.bytes_moved(SCALES[scale])
