"""Helpers shared by the jaxbench workloads (bench/jaxbench/<id>/workload.py).

Workloads are loaded by file path, not as package modules, so each one makes this package
importable itself by putting its suite folder (bench/jaxbench, the parent of its own folder) on
sys.path, then `from jaxbench_common import attention, specs, ...` (see bench/jaxbench/README.md).

Every helper emits exactly the JAX ops the workloads used to write out inline, in the same order,
so the lowered HLO of a workload does not depend on whether a piece of it lives here.

  specs          entry-parameter specs (normal/uniform/data inits, weights, biases, affine norm
                 parameters) and bytes_moved() from the specs plus the output
  activations    GELU (erf), mish, swish, softplus, HardSwish, softmax, logsumexp
  norms          normalization over axes (instance/batch/layer norm), GroupNorm, inference BN
  attention      causal mask, causal GQA, q/k/v specs, page tables and context lengths, FLOPs
  grouped_matmul the ragged grouped GEMM of 11p and 14p (megablox-style tile visits)
  conv           stride-1 'valid' Conv2D/Conv3D (NCHW / NCDHW) specs, output sizes and FLOPs
  gemm_epilogue  the x (M, K) @ W (K, N) + b scaffolding of the KernelBench GEMM workloads
"""
