"""Runs an emitted Pallas module (kernel.py, src/codegen/pallas) in TPU interpret mode on the CPU.

`python3 -m maxkernel_jax pallas-run --module kernel.py --inputs in0.npy ... --out DIR --json`
loads the module from its path, sets its INTERPRET to interpret-mode parameters with race
detection on two simulated cores (a race between steps of a "parallel" grid dimension is found
only with two), runs `workload` on the inputs, and writes out0.npy ... in the project's .npy
convention (floats of every width as float32, other types as they are). The JSON report:
    {"ok": bool, "races": [text of each race], "outputs": [paths],
     "error": {"kind": "race" | "out_of_bounds" | "trace" | "exception", "message": ...}}
A race is a failure: the outputs are still written, for the debugger to compare.
"""

import contextlib
import importlib.util
import io
import os
import sys
import traceback

# Before jax is imported anywhere: with libtpu installed, jax would otherwise probe for TPUs.
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from .errors import BridgeError  # noqa: E402


def _interpret_params(pltpu):
    return pltpu.InterpretParams(detect_races=True, num_cores_or_threads=2,
                                 out_of_bounds_reads="raise", uninitialized_memory="nan")


def load_module(path):
    """The emitted module at `path`, imported under a private name (not on sys.path)."""
    if not os.path.isfile(path):
        raise BridgeError(f"{path}: no such module")
    spec = importlib.util.spec_from_file_location("maxkernel_pallas_module", path)
    if spec is None or spec.loader is None:
        raise BridgeError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("workload", "INTERPRET"):
        if not hasattr(module, name):
            raise BridgeError(f"{path}: not an emitted Pallas module (no {name})")
    return module


def _race_texts(printed):
    """The race reports interpret mode printed ("RACE DETECTED" and the lines that follow)."""
    races, current = [], None
    for line in printed.splitlines():
        if line.startswith("RACE DETECTED"):
            if current:
                races.append("\n".join(current))
            current = [line]
        elif current is not None and line.startswith(" "):
            current.append(line)
        elif current is not None:
            races.append("\n".join(current))
            current = None
    if current:
        races.append("\n".join(current))
    return races


def _error_kind(exc):
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, IndexError) and "Out-of-bounds" in str(exc):
        return "out_of_bounds"
    if "Out-of-bounds" in text:
        return "out_of_bounds"
    trace_types = ("TypeError", "ValueError", "NotImplementedError", "LoweringException",
                   "TracerBoolConversionError", "ConcretizationTypeError")
    if type(exc).__name__ in trace_types:
        return "trace"
    return "exception"


def _to_npy(np, value):
    import jax.numpy as jnp

    arr = np.asarray(value)
    if jnp.issubdtype(arr.dtype, jnp.floating) and arr.dtype != np.float64:
        arr = np.asarray(arr.astype(np.float32))
    return arr


def run(module_path, input_paths, out_dir):
    """Runs the module; returns the JSON report (a dict)."""
    import numpy as np

    report = {"ok": False, "races": [], "outputs": [], "error": None}
    try:
        module = load_module(module_path)
    except BridgeError:
        raise
    except Exception as e:  # noqa: BLE001 - a module that does not import is a failed candidate
        report["error"] = {"kind": "exception",
                           "message": f"importing {module_path}: {type(e).__name__}: {e}",
                           "traceback": traceback.format_exc(limit=8)}
        return report
    params = getattr(module, "PARAMETERS", None)
    if params is not None and len(params) != len(input_paths):
        raise BridgeError(f"{module_path} takes {len(params)} inputs, {len(input_paths)} given")
    inputs = []
    for p in input_paths:
        try:
            inputs.append(np.load(p, allow_pickle=False))
        except (OSError, ValueError) as e:
            raise BridgeError(f"{p}: {e}") from e
    if params is not None:
        for i, ((dtype, dims), arr) in enumerate(zip(params, inputs)):
            if tuple(arr.shape) != tuple(dims):
                raise BridgeError(f"input {i}: shape {tuple(arr.shape)}, the module takes "
                                  f"{dtype}{list(dims)}")

    import jax
    from jax.experimental.pallas import tpu as pltpu

    try:  # where jax 0.10 keeps the race detector's verdict (PLATFORM.md); the printed reports
        # ("RACE DETECTED ...") are read as well, so another layout still reports races.
        from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ipc
    except ImportError:
        ipc = None

    module.INTERPRET = _interpret_params(pltpu)
    printed = io.StringIO()
    outputs = None
    try:
        with contextlib.redirect_stdout(printed):
            outputs = module.workload(*inputs)
            outputs = jax.block_until_ready(outputs)
    except Exception as e:  # noqa: BLE001 - every failure of the candidate is reported
        report["error"] = {"kind": _error_kind(e),
                           "message": f"{type(e).__name__}: {e}",
                           "traceback": traceback.format_exc(limit=8)}
    finally:
        found = bool(getattr(getattr(ipc, "races", None), "races_found", False))
        pltpu.reset_tpu_interpret_mode_state()
    report["races"] = _race_texts(printed.getvalue())
    if found and not report["races"]:
        report["races"] = ["RACE DETECTED (no report was printed)"]
    if outputs is not None:
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        os.makedirs(out_dir, exist_ok=True)
        for i, value in enumerate(outputs):
            path = os.path.join(out_dir, f"out{i}.npy")
            np.save(path, _to_npy(np, value), allow_pickle=False)
            report["outputs"].append(path)
    if report["races"] and report["error"] is None:
        report["error"] = {"kind": "race", "message": report["races"][0]}
    report["ok"] = report["error"] is None
    return report
