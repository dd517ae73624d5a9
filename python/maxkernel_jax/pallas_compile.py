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


# Written to stderr (flushed) before each kernel of a per-kernel compile: when libtpu aborts the
# process on a failed CHECK, the last such line names the kernel it died on. After each kernel,
# KERNEL_RESULT and its result as one JSON line, so the results before a crash survive it.
KERNEL_MARK = "maxkernel: compiling "
KERNEL_RESULT = "maxkernel: compiled "


def _load(module_path: str):
    from .tpu_xla import allow_shared_libtpu, libtpu_available, quiet_libtpu_env

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
    return module


def compile_module(module_path: str, generation: str) -> dict:
    from .tpu_xla import compile_for_tpu

    module = _load(module_path)
    return compile_for_tpu(module.workload, _parameter_args(module, module_path), generation)


def compile_kernels(module_path: str, generation: str) -> dict:
    """Each kernel function of the module (kernel_<id>) compiled alone, in plan order, with the
    shapes the workload gives its inputs (traced abstractly): which kernels the compiler
    refuses, and why. {"ok", "generation", "kernels": [{"function", "ok", "error"}]}. Before
    each compile a line `maxkernel: compiling kernel_<id>` goes to stderr, flushed, so a
    compiler that aborts the process still says which kernel it died on."""
    import json
    import sys

    import jax

    from .tpu_xla import compile_for_tpu

    module = _load(module_path)
    names = sorted((n for n in dir(module) if n.startswith("kernel_") and n[7:].isdigit()),
                   key=lambda n: int(n[7:]))
    shapes, originals = {}, {}
    for name in names:
        fn = originals[name] = getattr(module, name)

        def recorder(*a, _fn=fn, _name=name):
            shapes.setdefault(_name, [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in a])
            return _fn(*a)

        setattr(module, name, recorder)
    specs = [jax.ShapeDtypeStruct(shape, dtype)
             for shape, dtype in _parameter_args(module, module_path)]
    jax.eval_shape(module.workload, *specs)
    kernels = []
    for name in names:
        if name not in shapes:
            continue  # not called by the workload
        print(KERNEL_MARK + name, file=sys.stderr, flush=True)
        r = compile_for_tpu(originals[name], shapes[name], generation)
        kernels.append({"function": name, "ok": r["ok"], "error": r.get("error")})
        print(KERNEL_RESULT + json.dumps(kernels[-1]), file=sys.stderr, flush=True)
    return {"ok": all(k["ok"] for k in kernels), "generation": generation, "kernels": kernels}


def _parameter_args(module, module_path: str) -> list:
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
    return args
