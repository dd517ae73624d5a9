"""11p: Qwen3-235B MoE grouped matmul (megablox): one GEMM per contiguous row group."""
import os
import sys

_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/jaxbench
if _SUITE not in sys.path:  # loaded by file path: make the shared `jaxbench_common` package importable
    sys.path.insert(0, _SUITE)
from jaxbench_common import grouped_matmul as gmm  # noqa: E402

ID = "11p"
NAME = "qwen3_235b_grouped_matmul"
OPERATOR = "grouped_gemm"
DESCRIPTION = ("Grouped GEMM over expert-sorted rows: rows of lhs (M, K) are split into G "
               "contiguous groups whose sizes come as an int32 input (some empty), and group g "
               "is multiplied by rhs[g] (K, N); rows past sum(group_sizes) are zero. Computed "
               "megablox-style over (row tile, group) visits, so the work is ~M*K*N, not G times "
               "that. bfloat16 in/out, float32 accumulation.")
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
SCALES = {
    "ci": {"M": 512, "K": 64, "N": 64, "G": 128, "tile_m": 16},
    "bench": {"M": 4096, "K": 512, "N": 256, "G": 128, "tile_m": 32},
    "full": {"M": 32768, "K": 4096, "N": 1536, "G": 128, "tile_m": 128},
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
