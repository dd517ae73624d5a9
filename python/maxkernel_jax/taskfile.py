"""task.yaml: the schema (docs/TASKS.md), written in the same layout as the C++ writer
(src/task/task.cc TaskToYaml) so that a task round-trips between the two sides."""

import json
import math
import os

import ml_dtypes
import numpy as np
import yaml

from .errors import BridgeError

FORMAT = 1

# Workload interface dtype names -> HLO element type names.
WORKLOAD_DTYPES = {
    "bfloat16": "bf16",
    "float32": "f32",
    "float16": "f16",
    "int32": "s32",
    "bool": "pred",
}

_NUMPY_TO_HLO = {
    "bool": "pred", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
}


def hlo_dtype_of(dtype) -> str:
    """HLO name of a NumPy/JAX dtype; BridgeError for types maxkernel does not evaluate."""
    name = np.dtype(dtype).name
    if name not in _NUMPY_TO_HLO:
        raise BridgeError(f"unsupported dtype {name} (supported: {', '.join(_NUMPY_TO_HLO)})")
    return _NUMPY_TO_HLO[name]


def _q(s) -> str:
    return json.dumps(str(s), ensure_ascii=False)


def _num(v) -> str:
    v = float(v)
    if math.isnan(v):
        return ".nan"
    if math.isinf(v):
        return ".inf" if v > 0 else "-.inf"
    r = repr(v)
    if "." not in r:  # YAML 1.1 needs the dot to read a float: 1e-05 -> 1.0e-05
        mant, _, exp = r.partition("e")
        r = mant + ".0" + ("e" + exp if exp else "")
    return r


def _dims(shape) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def _init(init: dict) -> str:
    kind = init["kind"]
    if kind == "normal":
        return f"{{kind: normal, mean: {_num(init.get('mean', 0.0))}, std: {_num(init.get('std', 1.0))}}}"
    if kind == "uniform":
        return f"{{kind: uniform, low: {_num(init.get('low', 0.0))}, high: {_num(init.get('high', 1.0))}}}"
    if kind == "randint":
        return f"{{kind: randint, low: {int(init['low'])}, high: {int(init['high'])}}}"
    if kind == "data":
        return f"{{kind: data, file: {_q(init['file'])}}}"
    raise BridgeError(f"unknown init kind {kind!r}")


def task_to_yaml(task: dict) -> str:
    """task: the dict form read by load_task (see docs/TASKS.md for every key)."""
    out = [
        "# maxkernel task (schema: docs/TASKS.md). Inputs are regenerated from `seed` and each",
        "# parameter's `init`; edit shapes/inits/tolerances freely, then run `maxkernel eval`.",
        f"format: {FORMAT}",
        f"id: {_q(task['id'])}",
        f"name: {_q(task.get('name', ''))}",
        f"description: {_q(task.get('description', ''))}",
        f"operator: {_q(task.get('operator', ''))}",
    ]
    src = task.get("source")
    if src:
        out.append(f"source: {{workload: {_q(src.get('workload', ''))}, function: {_q(src.get('function', ''))}}}")
    out += [
        f"scale: {_q(task.get('scale', ''))}",
        f"dtype: {_q(task.get('dtype', ''))}",
        f"seed: {int(task.get('seed', 0))}",
        "parameters:",
    ]
    for p in task["parameters"]:
        out += [
            f"  - name: {_q(p['name'])}",
            f"    shape: {_dims(p['shape'])}",
            f"    dtype: {p['dtype']}",
            f"    init: {_init(p['init'])}",
        ]
    out.append("outputs:")
    for o in task["outputs"]:
        out.append(f"  - {{shape: {_dims(o['shape'])}, dtype: {o['dtype']}, "
                   f"atol: {_num(o['atol'])}, rtol: {_num(o['rtol'])}}}")
    tol = task["tolerance"]
    out += [
        f"tolerance: {{atol: {_num(tol['atol'])}, rtol: {_num(tol['rtol'])}}}",
        f"flops: {int(task.get('flops', 0))}",
        f"bytes: {int(task.get('bytes', 0))}",
    ]
    b = task.get("baseline")
    if b:
        out += ["baseline:", f"  engine: {_q(b.get('engine', 'xla-cpu'))}"]
        for k in ("median_s", "p10_s", "p90_s"):
            out.append(f"  {k}: {_num(b[k])}")
        out.append(f"  runs: {int(b.get('runs', 0))}")
        for k in ("cpu", "jax_version", "date"):
            out.append(f"  {k}: {_q(b.get(k, ''))}")
    return "\n".join(out) + "\n"


def load_task(task_dir: str) -> dict:
    """Reads TASK_DIR/task.yaml into a dict with defaults filled and numbers normalized."""
    path = os.path.join(task_dir, "task.yaml")
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except FileNotFoundError:
        raise BridgeError(f"no task.yaml in {task_dir}") from None
    except yaml.YAMLError as e:
        raise BridgeError(f"{path}: malformed YAML: {e}") from None
    if not isinstance(raw, dict) or "parameters" not in raw or "outputs" not in raw:
        raise BridgeError(f"{path}: not a maxkernel task (needs parameters and outputs)")
    if int(raw.get("format", 1)) != FORMAT:
        raise BridgeError(f"{path}: unsupported task format {raw.get('format')}")
    tol = raw.get("tolerance") or {}
    atol, rtol = float(tol.get("atol", 1e-2)), float(tol.get("rtol", 1e-2))
    task = dict(raw)
    task["dir"] = task_dir
    task["seed"] = int(raw.get("seed", 0))
    task["tolerance"] = {"atol": atol, "rtol": rtol}
    params = []
    for i, p in enumerate(raw["parameters"] or []):
        try:
            init = dict(p["init"])
            for k in ("mean", "std"):
                if k in init and init["kind"] == "normal":
                    init[k] = float(init[k])
            if init["kind"] == "uniform":
                for k in ("low", "high"):
                    if k in init:
                        init[k] = float(init[k])
            params.append({"name": str(p["name"]), "shape": tuple(int(d) for d in p["shape"]),
                           "dtype": str(p["dtype"]), "init": init})
        except (KeyError, TypeError, ValueError) as e:
            raise BridgeError(f"{path}: parameter {i} is malformed ({e})") from None
    task["parameters"] = params
    outputs = []
    for o in raw["outputs"] or []:
        outputs.append({"shape": tuple(int(d) for d in o["shape"]), "dtype": str(o["dtype"]),
                        "atol": float(o.get("atol", atol)), "rtol": float(o.get("rtol", rtol))})
    task["outputs"] = outputs
    return task


def write_task_yaml(task_dir: str, task: dict) -> None:
    """Rewrites TASK_DIR/task.yaml atomically (temporary file + rename)."""
    path = os.path.join(task_dir, "task.yaml")
    tmp = f"{path}.tmp-{os.getpid()}"
    clean = {k: v for k, v in task.items() if k != "dir"}
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(task_to_yaml(clean))
    os.replace(tmp, path)


def numpy_dtype(hlo_name: str):
    from .generator import NUMPY_DTYPES

    if hlo_name not in NUMPY_DTYPES:
        raise BridgeError(f"unsupported dtype {hlo_name!r}")
    return NUMPY_DTYPES[hlo_name]


__all__ = ["WORKLOAD_DTYPES", "hlo_dtype_of", "task_to_yaml", "load_task", "write_task_yaml",
           "numpy_dtype", "ml_dtypes"]
