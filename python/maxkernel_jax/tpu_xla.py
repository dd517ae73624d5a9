"""XLA:TPU and Mosaic without a TPU: compile-only compiles for a TPU generation, through libtpu and
the compile-only devices `jax.experimental.topologies.get_topology_desc` gives.

What comes back is what the real compiler says: its own time estimate (`cost_analysis()`'s
optimal_seconds, flops, bytes accessed), its memory plan (`memory_analysis()`), or its error,
classified. Nothing here runs on a TPU: every time is XLA:TPU's *estimate*.
"""

import os
import time

from .errors import BridgeError

# Generation -> libtpu topology with compile-only devices (bench/tpu/specs.json has the same;
# python/tests/test_tpu_xla.py checks they agree). libtpu 0.0.42 names 7x "tpu7x".
TOPOLOGIES = {
    "v4": "v4:2x2x1",
    "v5e": "v5e:2x2",
    "v5p": "v5p:2x2x1",
    "v6e": "v6e:2x2",
    "7x": "tpu7x:2x2x1",
}


def quiet_libtpu_env():
    """Environment for using libtpu compile-only: the CPU platform for jax (it must not probe for
    TPUs), and an accelerator type so that libtpu does not warn about the missing hardware.
    Call before jax is imported; values already set are kept, except JAX_PLATFORMS."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    allow_shared_libtpu()
    os.environ.setdefault("TPU_ACCELERATOR_TYPE", "v5litepod-4")
    os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def allow_shared_libtpu():
    """libtpu takes a machine-wide lock (/tmp/libtpu_lockfile) when it loads, so a second process
    (a parallel bridge call, a test's subprocess) fails with "Internal error when accessing
    libtpu multi-process lockfile". The lock guards TPU chips; compile-only use touches none."""
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")


def generation_of(name: str) -> str:
    """'tpu-v5e' or 'v5e' -> 'v5e'; BridgeError for anything else."""
    gen = name[4:] if name.startswith("tpu-") else name
    if gen not in TOPOLOGIES:
        raise BridgeError(f"unknown TPU generation '{name}' (known: {', '.join(TOPOLOGIES)})")
    return gen


def libtpu_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("libtpu") is not None


def versions() -> dict:
    import importlib.metadata as md

    out = {}
    for dist in ("jax", "jaxlib", "libtpu"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


_DEVICES = {}


def device(generation: str):
    """The first compile-only device of the generation's topology (cached per process)."""
    gen = generation_of(generation)
    if gen not in _DEVICES:
        if not libtpu_available():
            raise BridgeError("libtpu is not installed: run scripts/setup.sh (it installs the "
                              "version jax's tpu extra pins)")
        allow_shared_libtpu()
        from jax.experimental import topologies

        _DEVICES[gen] = topologies.get_topology_desc(TOPOLOGIES[gen], "tpu").devices[0]
    return _DEVICES[gen]


def classify_error(exc: BaseException) -> dict:
    """A compile failure as {"kind", "message"}: kind is one of
    mosaic          Mosaic (the Pallas TPU compiler) refused the kernel
    vmem_exhausted  an allocation would exceed VMEM
    resource_exhausted  another memory space ran out
    not_implemented a primitive the Pallas TPU lowering does not have
    block_shape     a block shape breaking the (8,128) rule
    libtpu_missing  no libtpu to compile with
    compile_error   anything else the compiler said."""
    text = str(exc).strip() or type(exc).__name__
    name = type(exc).__name__
    low = text.lower()
    if isinstance(exc, BridgeError) and "libtpu is not installed" in text:
        kind = "libtpu_missing"
    elif "RESOURCE_EXHAUSTED" in text and "vmem" in low:
        kind = "vmem_exhausted"
    elif "RESOURCE_EXHAUSTED" in text:
        kind = "resource_exhausted"
    elif isinstance(exc, NotImplementedError) or "unimplemented primitive" in low:
        kind = "not_implemented"
    elif "Mosaic" in name or "mosaic" in low:
        kind = "mosaic"
    elif "block shape" in low and "divisible by 8 and 128" in low:
        kind = "block_shape"
    else:
        kind = "compile_error"
    # The first lines say what went wrong; libtpu can append pages of IR.
    lines = text.splitlines()
    message = "\n".join(lines[:6]) + ("\n..." if len(lines) > 6 else "")
    return {"kind": kind, "type": name, "message": message}


def _cost(cost) -> dict:
    if isinstance(cost, (list, tuple)):  # older jax: one dict per module
        cost = cost[0] if cost else {}
    cost = cost or {}
    pick = {"optimal_seconds": "optimal_seconds", "flops": "flops",
            "bytes_accessed": "bytes accessed", "transcendentals": "transcendentals"}
    return {k: float(cost[v]) for k, v in pick.items() if v in cost}


def _memory(stats) -> dict:
    if stats is None:
        return {}
    fields = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
              "temp_size_in_bytes", "generated_code_size_in_bytes")
    return {f.replace("_size_in_bytes", "_bytes"): int(getattr(stats, f))
            for f in fields if hasattr(stats, f)}


def _result(generation, compiled_cost, memory, started) -> dict:
    return {"ok": True, "generation": generation_of(generation), "estimate": "XLA:TPU",
            "cost": _cost(compiled_cost), "memory": _memory(memory),
            "compile_s": round(time.perf_counter() - started, 3)}


def compile_for_tpu(fn, args, generation: str) -> dict:
    """Compile jax function `fn` for one device of `generation`, compile-only. `args` are
    (shape, dtype) pairs or ShapeDtypeStructs. Returns {"ok": True, "cost": {...},
    "memory": {...}, ...} or {"ok": False, "error": classify_error(...)}; never raises for a
    compiler refusal."""
    started = time.perf_counter()
    try:
        import jax
        from jax.sharding import SingleDeviceSharding

        target_device = device(generation)
        sharding = SingleDeviceSharding(target_device)
        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)
                 if hasattr(a, "shape") else
                 jax.ShapeDtypeStruct(tuple(a[0]), a[1], sharding=sharding) for a in args]
        # The default device too: Pallas' Mosaic lowering asks it which chip it lowers for
        # (tpu_info.get_tpu_info: rank-1 blocks, sign), and with JAX_PLATFORMS=cpu it is the CPU.
        with jax.default_device(target_device):
            compiled = jax.jit(fn).lower(*specs).compile()
        return _result(generation, compiled.cost_analysis(), compiled.memory_analysis(), started)
    except BridgeError as e:
        if "unknown TPU generation" in str(e):
            raise
        return {"ok": False, "generation": generation, "error": classify_error(e)}
    except Exception as e:  # noqa: BLE001 - the compiler's refusal is the answer
        return {"ok": False, "generation": generation_of(generation), "error": classify_error(e)}


def compile_hlo_for_tpu(text: str, generation: str, where: str = "module.hlo") -> dict:
    """HLO text (a task's module.hlo) compiled by XLA:TPU for one device of `generation`, as
    compile_for_tpu reports it. The text is parsed by XLA's HLO parser and converted to
    StableHLO, as xla.compile_hlo_text does for XLA:CPU."""
    started = time.perf_counter()
    try:
        dev = device(generation)
        from jax._src.interpreters import mlir
        from jax._src.lib import xla_client as xc
        from jax._src.lib.mlir import ir
        from jaxlib import _jax
    except BridgeError as e:
        if "unknown TPU generation" in str(e):
            raise
        return {"ok": False, "generation": generation, "error": classify_error(e)}
    except (ImportError, AttributeError) as e:
        raise BridgeError(f"this jaxlib cannot compile HLO text for TPU ({e})") from None
    try:
        module = xc.hlo.hlo_module_from_text(text)
    except Exception as e:  # noqa: BLE001 - unparsable HLO is bad input
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise BridgeError(f"{where}: not HLO text XLA can parse: {first}") from None
    try:
        stablehlo = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
        with mlir.make_ir_context():
            mod = ir.Module.parse(stablehlo)
            exe = dev.client.compile(mod, xc.DeviceList((dev,)), xc.CompileOptions())
        return _result(generation, exe.cost_analysis(), exe.get_compiled_memory_stats(), started)
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "generation": generation_of(generation), "error": classify_error(e)}


def task_xla_cost(task: dict, generation: str) -> dict:
    """XLA:TPU's compile of the task's reference (module.hlo) for `generation`: its
    optimal_seconds is the only XLA-on-TPU baseline there is without a TPU (an estimate)."""
    path = os.path.join(task["dir"], "module.hlo")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BridgeError(f"{path}: cannot read: {e}") from None
    out = compile_hlo_for_tpu(text, generation, path)
    out["task"] = task.get("id", os.path.basename(task["dir"]))
    out["versions"] = versions()
    return out


__all__ = ["TOPOLOGIES", "quiet_libtpu_env", "allow_shared_libtpu", "generation_of", "libtpu_available", "versions",
           "device", "classify_error", "compile_for_tpu", "compile_hlo_for_tpu",
           "task_xla_cost"]
