"""Compiles an emitted Pallas module (kernel.py, src/codegen/pallas) for a TPU generation with the
real TPU compiler, compile-only (libtpu; no TPU attached): Mosaic lowers every pallas_call and
XLA:TPU compiles the glue around them, so what a TPU would refuse (a block breaking the (8,128)
rule, VMEM overflow, an op Mosaic cannot lower) is refused here.

`python3 -m maxkernel_jax pallas-compile --module kernel.py --generation v5e --json` prints
    {"ok": bool, "generation", "compile_s", "cost": {...}, "memory": {...},
     "error": {"kind", "message"}}
`cost` is XLA:TPU's cost analysis of the whole module. It is not used as a time: a pallas_call
has no cost estimate of its own here (none is passed), so the figure would describe the glue.
"""

from .errors import BridgeError


def compile_module(module_path: str, generation: str) -> dict:
    from .tpu_xla import allow_shared_libtpu, compile_for_tpu, libtpu_available, quiet_libtpu_env

    quiet_libtpu_env()
    allow_shared_libtpu()
    if not libtpu_available():
        raise BridgeError("libtpu is not installed (scripts/setup.sh installs it); "
                          "TPU targets cannot be compiled")
    from .pallas_check import load_module

    module = load_module(module_path)
    for name in ("PARAMETERS", "workload"):
        if not hasattr(module, name):
            raise BridgeError(f"{module_path}: not an emitted Pallas module (no {name})")
    module.INTERPRET = None  # compile for the chip, not for interpret mode
    import jax.numpy as jnp

    dtypes = {"pred": jnp.bool_, "s8": jnp.int8, "s16": jnp.int16, "s32": jnp.int32,
              "s64": jnp.int64, "u8": jnp.uint8, "u16": jnp.uint16, "u32": jnp.uint32,
              "u64": jnp.uint64, "f16": jnp.float16, "bf16": jnp.bfloat16, "f32": jnp.float32,
              "f64": jnp.float64}
    args = []
    for dtype, dims in module.PARAMETERS:
        if dtype not in dtypes:
            raise BridgeError(f"{module_path}: parameter type {dtype} has no JAX equivalent")
        args.append((tuple(dims), dtypes[dtype]))
    return compile_for_tpu(module.workload, args, generation)
