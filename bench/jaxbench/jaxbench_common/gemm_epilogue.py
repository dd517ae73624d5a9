"""The scaffolding of the KernelBench GEMM + epilogue workloads: y = x (M, K) @ W (K, N) + b in
float32, followed by each workload's own elementwise/reduction epilogue.

Sizes are a dict with M, K and N."""
from . import specs


def inputs(s, *extra):
    """x (M, K) ~ N(0, 1), w (K, N) with std 1/sqrt(K), b (N,) ~ N(0, 0.1), then `extra`
    parameter specs; all float32."""
    m, k, n = s["M"], s["K"], s["N"]
    return [specs.normal("x", (m, k)), specs.weight("w", k, n), specs.bias("b", n), *extra]


def flops(s, epilogue_ops):
    """The GEMM plus ~epilogue_ops elementwise/reduction ops per (M, N) element."""
    return 2 * s["M"] * s["K"] * s["N"] + epilogue_ops * s["M"] * s["N"]
