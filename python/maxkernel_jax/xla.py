"""A task's inputs as arrays, XLA:CPU's outputs for them, and XLA:CPU timing (the baseline)."""

import datetime
import os
import platform
import time

import numpy as np

from .cpus import allowed_cpus
from .errors import BridgeError
from .generator import FLOAT_DTYPES, NUMPY_DTYPES, generate
from .sources import source_of_task


def task_inputs(task: dict, seed: int) -> list[np.ndarray]:
    """The task's inputs at `seed`, exactly as src/task/inputs.cc makes them."""
    arrays = []
    for p_index, p in enumerate(task["parameters"]):
        init = p["init"]
        if init["kind"] == "data":
            path = os.path.join(task["dir"], init["file"])
            try:
                a = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise BridgeError(f"{path}: cannot read data input '{p['name']}': {e}") from None
            if tuple(a.shape) != tuple(p["shape"]):
                raise BridgeError(f"{path}: shape {a.shape} but parameter '{p['name']}' is {p['shape']}")
            arrays.append(a.astype(NUMPY_DTYPES[p["dtype"]]))
        else:
            try:
                arrays.append(generate(p["shape"], p["dtype"], init, task["seed"] if seed is None
                                       else seed, p_index))
            except ValueError as e:
                raise BridgeError(f"parameter '{p['name']}': {e}") from None
    return arrays


def save_inputs(task: dict, seed: int, out_dir: str) -> list[str]:
    """in0.npy, in1.npy, ...: floats as float32 (bf16/f16 widen exactly), ints/bools as is."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for i, a in enumerate(task_inputs(task, seed)):
        if a.dtype.name in ("bfloat16", "float16"):
            a = a.astype(np.float32)
        path = os.path.join(out_dir, f"in{i}.npy")
        np.save(path, a, allow_pickle=False)
        paths.append(path)
    return paths


def _flat_outputs(result) -> list:
    import jax

    return jax.tree_util.tree_leaves(result)


def compile_hlo_text(text: str, where: str = "module.hlo"):
    """XLA:CPU's executable for HLO text, compiled by jaxlib as jax.jit compiles a function:
    the text is parsed by XLA's own HLO parser, converted to StableHLO and compiled for the
    first CPU device. Returns run(*arrays) -> list of output arrays (not yet ready)."""
    import jax
    from jax._src import xla_bridge
    from jax._src.lib import xla_client as xc

    try:
        from jaxlib import _jax
        module = xc.hlo.hlo_module_from_text(text)
        stablehlo = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
        backend = xla_bridge.get_backend("cpu")
        device = backend.local_devices()[0]
        exe = backend.compile_and_load(stablehlo, xc.DeviceList((device,)), xc.CompileOptions())
    except (ImportError, AttributeError) as e:
        raise BridgeError(f"this jaxlib cannot compile HLO text ({type(e).__name__}: {e})") from None
    except Exception as e:  # noqa: BLE001 - XLA refusing the module is bad input
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BridgeError(f"{where}: XLA:CPU cannot compile it: {msg}") from None

    def run(*arrays):
        bufs = [jax.device_put(a, device) for a in arrays]
        results = exe.execute_sharded(bufs)
        return [outs[0] for outs in results.disassemble_into_single_device_arrays()]

    return run


def _module_runner(task: dict):
    """run(*arrays) -> list of outputs: the task's module.hlo as XLA:CPU compiles it (a task
    imported from HLO has no JAX function)."""
    path = os.path.join(task["dir"], "module.hlo")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BridgeError(f"{path}: cannot read: {e}") from None
    return compile_hlo_text(text, path)


def task_runner(task: dict):
    """(run(*arrays) -> list of outputs, what runs): the task's JAX function under jax.jit when
    it has one, else its module.hlo compiled by XLA:CPU directly."""
    import jax

    if (task.get("source") or {}).get("workload"):
        fn = jax.jit(source_of_task(task).fn)
        return (lambda *a: _flat_outputs(fn(*a))), "jax-function"
    return _module_runner(task), "module.hlo"


def xla_outputs(task: dict, seed: int) -> list[np.ndarray]:
    """XLA:CPU's outputs of the task (its JAX function, or its module.hlo when it has none) on
    the task's inputs at `seed`."""
    run, _ = task_runner(task)
    args = task_inputs(task, seed)
    try:
        outs = run(*args)
    except Exception as e:  # noqa: BLE001
        raise BridgeError(f"XLA:CPU failed to run the task: {type(e).__name__}: {e}") from None
    return [np.asarray(o) for o in outs]


def save_expected(task: dict, seed: int, out_dir: str) -> list[str]:
    """out0.npy, ...: float outputs as float32, like `maxkernel eval` writes them."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for i, o in enumerate(xla_outputs(task, seed)):
        if o.dtype.name in ("bfloat16", "float16", "float64"):
            o = o.astype(np.float32)
        path = os.path.join(out_dir, f"out{i}.npy")
        np.save(path, o, allow_pickle=False)
        paths.append(path)
    return paths


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def time_task(task: dict, min_runs: int = 10, min_time_s: float = 1.0, warmup: int = 2,
              max_time_s: float = 300.0) -> dict:
    """XLA:CPU timing of the task's JAX function (or of its module.hlo, for a task imported
    from HLO): warm-up, then runs until both `min_runs` and `min_time_s` are reached (or
    `max_time_s` passes); median and 10th/90th percentiles."""
    import jax

    fn, what = task_runner(task)
    args = [jax.device_put(a) for a in task_inputs(task, task["seed"])]
    try:
        for _ in range(max(1, warmup)):
            jax.block_until_ready(fn(*args))
    except Exception as e:  # noqa: BLE001
        raise BridgeError(f"XLA:CPU failed to run the task: {type(e).__name__}: {e}") from None
    samples = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
        if (len(samples) >= min_runs and elapsed >= min_time_s) or elapsed >= max_time_s:
            break
    s = np.asarray(samples)
    flops = int(task.get("flops", 0))
    median = float(np.median(s))
    return {
        "id": task.get("id"),
        "scale": task.get("scale"),
        "engine": "xla-cpu",
        "compiled": what,
        "median_s": median,
        "p10_s": float(np.percentile(s, 10)),
        "p90_s": float(np.percentile(s, 90)),
        "min_s": float(s.min()),
        "runs": int(s.size),
        "gflops": (flops / median / 1e9) if flops and median > 0 else None,
        "cpu": cpu_model(),
        "threads": allowed_cpus(),
        "jax_version": jax.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


__all__ = ["task_inputs", "save_inputs", "compile_hlo_text", "task_runner", "xla_outputs",
           "save_expected", "time_task", "FLOAT_DTYPES"]
