"""Where a task's computation comes from: a suite workload (bench/jaxbench/<id>/workload.py,
the interface in docs/TASKS.md) or a user's reference file (a JAX function plus INPUTS)."""

import hashlib
import importlib.util
import inspect
import os
import sys
import traceback

import numpy as np

from .errors import BridgeError
from .taskfile import WORKLOAD_DTYPES, hlo_dtype_of

WORKLOAD_FUNCTION = "function"  # source.function of suite workloads: call module.function(scale)
_REQUIRED = ("ID", "NAME", "OPERATOR", "TOLERANCE", "SCALES", "inputs", "function", "flops",
             "bytes_moved")


def load_module(path: str):
    """Imports a Python file by path; any failure becomes one BridgeError line."""
    if not os.path.isfile(path):
        raise BridgeError(f"{path}: no such file")
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:12]
    name = f"_mk_source_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BridgeError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - any import error is the user's file's problem
        where = traceback.extract_tb(e.__traceback__)[-1]
        raise BridgeError(f"{path}: does not import: {type(e).__name__}: {e} "
                          f"(at {where.filename}:{where.lineno})") from None
    sys.modules[name] = module
    return module


def is_workload(module) -> bool:
    return all(hasattr(module, a) for a in _REQUIRED)


def _check_workload(module, path):
    missing = [a for a in _REQUIRED if not hasattr(module, a)]
    if missing:
        raise BridgeError(f"{path}: not a suite workload, missing {', '.join(missing)}")


def _normalize_param(i, spec, path) -> dict:
    """A parameter spec of the workload interface -> the task's form (HLO dtype names)."""
    if not isinstance(spec, dict) or not {"name", "shape", "dtype", "init"} <= set(spec):
        raise BridgeError(f"{path}: input {i} must be a dict with name, shape, dtype, init")
    dtype = str(spec["dtype"])
    if dtype not in WORKLOAD_DTYPES:
        raise BridgeError(f"{path}: input {i} ('{spec['name']}') has unsupported dtype {dtype!r} "
                          f"(supported: {', '.join(WORKLOAD_DTYPES)})")
    init = dict(spec["init"])
    kind = init.get("kind")
    shape = tuple(int(d) for d in spec["shape"])
    hlo = WORKLOAD_DTYPES[dtype]
    if kind == "data":
        values = np.asarray(init.get("values"))
        if values.shape != shape:
            raise BridgeError(f"{path}: input '{spec['name']}': data values have shape "
                              f"{values.shape}, expected {shape}")
    elif kind not in ("normal", "uniform", "randint"):
        raise BridgeError(f"{path}: input '{spec['name']}': unknown init kind {kind!r}")
    return {"name": str(spec["name"]), "shape": shape, "dtype": hlo, "init": init}


def _default_init(hlo_dtype: str) -> dict:
    if hlo_dtype in ("f16", "bf16", "f32", "f64"):
        return {"kind": "normal", "mean": 0.0, "std": 1.0}
    if hlo_dtype == "pred":
        return {"kind": "randint", "low": 0, "high": 2}
    return {"kind": "randint", "low": 0, "high": 4}


def argument_names(fn, count: int) -> list[str]:
    """The names of `fn`'s first `count` positional arguments (`x`, `w1` ...), what the user
    calls its parameters; `*args` continues as args_0, args_1 ...; `arg{i}` where Python does
    not say (builtins, some wrappers). The C++ importer makes them C/Python identifiers."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [f"arg{i}" for i in range(count)]
    names, star = [], None
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            star = p.name
            break
    extra = count - len(names)
    if extra > 0:
        names += [f"{star}_{k}" if star else f"arg{len(names) + k}" for k in range(extra)]
    return names[:count]


def _param_from_example(i, example, path, name=None) -> dict:
    """An example array of a reference file's INPUTS -> a parameter with a default generator,
    named `name` (the function's argument name)."""
    shape = tuple(int(d) for d in getattr(example, "shape", ()))
    dtype = getattr(example, "dtype", None)
    if dtype is None:
        raise BridgeError(f"{path}: INPUTS[{i}] is neither a parameter dict nor an array")
    hlo = hlo_dtype_of(dtype)
    if hlo not in ("f16", "bf16", "f32", "s32", "pred"):
        raise BridgeError(f"{path}: INPUTS[{i}] has unsupported dtype {np.dtype(dtype).name}")
    return {"name": name or f"arg{i}", "shape": shape, "dtype": hlo, "init": _default_init(hlo)}


class Source:
    """A resolved computation: the JAX function, its parameters and metadata at one scale."""

    def __init__(self, path, function_name, scale):
        self.path = path
        self.function_name = function_name
        self.scale = scale
        self.module = load_module(path)
        m = self.module
        if function_name in (None, WORKLOAD_FUNCTION) and is_workload(m):
            self.kind = "workload"
            self.function_name = WORKLOAD_FUNCTION
            if scale not in m.SCALES:
                raise BridgeError(f"{path}: unknown scale {scale!r} "
                                  f"(this workload has {', '.join(m.SCALES)})")
            try:
                self.fn = m.function(scale)
                specs = list(m.inputs(scale))
                self.flops = int(m.flops(scale))
                self.bytes = int(m.bytes_moved(scale))
            except BridgeError:
                raise
            except Exception as e:  # noqa: BLE001
                raise BridgeError(f"{path}: the workload failed at scale {scale}: "
                                  f"{type(e).__name__}: {e}") from None
            self.params = [_normalize_param(i, s, path) for i, s in enumerate(specs)]
            self.id, self.name = str(m.ID), str(m.NAME)
            self.operator = str(m.OPERATOR)
            self.description = str(getattr(m, "DESCRIPTION", ""))
            self.tolerance = {k: float(v) for k, v in dict(m.TOLERANCE).items()}
            return
        if function_name is None:
            raise BridgeError(f"{path}: not a suite workload; pass --function NAME to name the "
                              "JAX function to import")
        self.kind = "reference"
        self.scale = "custom"  # a reference file has no named scales
        fn = getattr(m, function_name, None)
        if fn is None or not callable(fn):
            raise BridgeError(f"{path}: no function named '{function_name}'")
        self.fn = fn
        inputs = getattr(m, "INPUTS", None)
        if isinstance(inputs, dict):
            inputs = inputs.get(function_name)
        if callable(inputs):
            inputs = inputs()
        if inputs is None:
            raise BridgeError(f"{path}: define INPUTS (a list of example arrays or parameter "
                              f"dicts) for '{function_name}'; see docs/TASKS.md")
        params = []
        inputs = list(inputs)
        names = argument_names(fn, len(inputs))
        for i, item in enumerate(inputs):
            if isinstance(item, dict):
                params.append(_normalize_param(i, item, path))
            else:
                params.append(_param_from_example(i, item, path, names[i]))
        self.params = params
        base = os.path.splitext(os.path.basename(path))[0]
        self.id = str(getattr(m, "ID", f"{base}_{function_name}"))
        self.name = str(getattr(m, "NAME", function_name))
        self.operator = str(getattr(m, "OPERATOR", ""))
        self.description = str(getattr(m, "DESCRIPTION", (fn.__doc__ or "").strip()))
        self.tolerance = {k: float(v) for k, v in
                          dict(getattr(m, "TOLERANCE", {"atol": 1e-2, "rtol": 1e-2})).items()}
        self.flops = int(getattr(m, "FLOPS", 0))
        self.bytes = 0  # filled in by the exporter from the shapes


def source_of_task(task: dict) -> Source:
    """The Source a task was exported from (source.workload is relative to the task dir)."""
    src = task.get("source") or {}
    path = src.get("workload")
    if not path:
        raise BridgeError(f"task {task.get('id')} has no JAX source (imported from HLO?); "
                          "XLA timing needs the JAX function")
    if not os.path.isabs(path):
        path = os.path.normpath(os.path.join(task["dir"], path))
    return Source(path, src.get("function") or None, task.get("scale"))
