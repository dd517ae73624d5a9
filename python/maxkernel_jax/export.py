"""export: a Source at a scale -> a task directory, written all-or-nothing."""

import io
import os
import re
import shutil
import tempfile

import numpy as np

from .errors import BridgeError
from .generator import NUMPY_DTYPES
from .sources import Source
from .taskfile import hlo_dtype_of, task_to_yaml


def _jax():
    import jax

    return jax


def lower_to_hlo(fn, params) -> tuple[str, list[dict]]:
    """HLO text before XLA's optimizations, and the outputs' shapes and dtypes."""
    jax = _jax()
    args = [jax.ShapeDtypeStruct(p["shape"], NUMPY_DTYPES[p["dtype"]]) for p in params]
    try:
        lowered = jax.jit(fn).lower(*args)
        text = lowered.as_text(dialect="hlo")
        out_info = jax.tree_util.tree_leaves(lowered.out_info)
    except BridgeError:
        raise
    except Exception as e:  # noqa: BLE001 - a JAX error while tracing/lowering is bad input
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise BridgeError(f"JAX lowering failed: {type(e).__name__}: {msg}") from None
    if "custom-call" in text or "custom_call" in text:
        raise BridgeError("the lowered module contains a custom-call, which maxkernel cannot "
                          "evaluate (use plain jax.numpy / lax ops)")
    outputs = [{"shape": tuple(int(d) for d in o.shape), "dtype": hlo_dtype_of(o.dtype)}
               for o in out_info]
    if not outputs:
        raise BridgeError("the function returns no arrays")
    return text, outputs


def _npy_bytes(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _data_file_name(name: str, used: set) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "param"
    base, k = stem, 1
    while stem in used:
        k += 1
        stem = f"{base}_{k}"
    used.add(stem)
    return f"data/{stem}.npy"


def _repo_root(path: str):
    d = os.path.dirname(path)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _dominant_dtype(params, outputs) -> str:
    for p in params:
        if p["dtype"] in ("bf16", "f16", "f32", "f64"):
            return p["dtype"]
    return outputs[0]["dtype"]


def build_task(src: Source, out_dir: str, seed: int = 0) -> tuple[dict, str, dict]:
    """(task dict, module text, {relative data path: npy bytes})."""
    text, outputs = lower_to_hlo(src.fn, src.params)
    tol = {"atol": float(src.tolerance.get("atol", 1e-2)),
           "rtol": float(src.tolerance.get("rtol", 1e-2))}
    params, data, used = [], {}, set()
    for p in src.params:
        init = dict(p["init"])
        if init["kind"] == "data":
            values = np.asarray(init.pop("values"))
            want = NUMPY_DTYPES[p["dtype"]]
            if values.dtype != want:
                if not np.can_cast(values.dtype, want, casting="same_kind") or \
                        not np.array_equal(values.astype(want).astype(values.dtype), values):
                    raise BridgeError(f"input '{p['name']}': data values of dtype {values.dtype} "
                                      f"do not fit {p['dtype']}")
                values = values.astype(want)
            rel = _data_file_name(p["name"], used)
            data[rel] = _npy_bytes(np.ascontiguousarray(values))
            init = {"kind": "data", "file": rel}
        params.append({"name": p["name"], "shape": p["shape"], "dtype": p["dtype"], "init": init})
    nbytes = src.bytes or sum(
        int(np.prod(x["shape"], dtype=np.int64)) * NUMPY_DTYPES[x["dtype"]].itemsize
        for x in list(params) + outputs)
    workload_path = os.path.abspath(src.path)
    final = os.path.abspath(out_dir)
    # Relative when the task lives in the same repository as its source (committed suite tasks
    # stay relocatable), absolute otherwise.
    root = _repo_root(workload_path)
    inside = root is not None and os.path.commonpath([root, final]) == root
    source_path = os.path.relpath(workload_path, final) if inside else workload_path
    task = {
        "id": src.id,
        "name": src.name,
        "description": src.description,
        "operator": src.operator,
        "source": {"workload": source_path, "function": src.function_name},
        "scale": src.scale or "custom",
        "dtype": _dominant_dtype(params, outputs),
        "seed": seed,
        "parameters": params,
        "outputs": [dict(o, **tol) for o in outputs],
        "tolerance": tol,
        "flops": src.flops,
        "bytes": nbytes,
    }
    return task, text, data


def check_replaceable(out_dir: str) -> None:
    """--force deletes the old directory, so it only replaces what an export could have written
    (the rule of `maxkernel import`, src/cli/import_destination.cc): an empty directory, or one
    holding task.yaml and module.hlo and nothing else but data/*.npy. Anything else is refused."""
    refuse = (f"refusing to replace {out_dir} (--force replaces only a task directory: "
              "task.yaml, module.hlo and data/*.npy): ")
    if os.path.islink(out_dir):
        raise BridgeError(refuse + "it is a symbolic link")
    if not os.path.isdir(out_dir):
        raise BridgeError(refuse + "it is not a directory")
    entries = sorted(os.listdir(out_dir))
    for name in entries:
        path = os.path.join(out_dir, name)
        regular = os.path.isfile(path) and not os.path.islink(path)
        if name in ("task.yaml", "module.hlo") and regular:
            continue
        if name == "data" and os.path.isdir(path) and not os.path.islink(path):
            for sub in sorted(os.listdir(path)):
                p = os.path.join(path, sub)
                if not sub.endswith(".npy") or os.path.islink(p) or not os.path.isfile(p):
                    raise BridgeError(refuse + f"it holds data/{sub}")
            continue
        raise BridgeError(refuse + f"it holds {name}")
    for need in ("task.yaml", "module.hlo"):
        if entries and need not in entries:
            raise BridgeError(refuse + f"it has no {need}")


def write_task_dir(out_dir: str, files: dict, force: bool = False) -> None:
    """Writes {relative name: bytes|str} to a temporary sibling directory, then renames it into
    place: a failure leaves no half-written task."""
    final = os.path.abspath(out_dir)
    if os.path.lexists(final):
        if not force:
            raise BridgeError(f"{out_dir} already exists (pass --force to replace it)")
        check_replaceable(final)
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(final)}.tmp-", dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a task dir is an ordinary one
    try:
        for name, content in files.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(path, mode) as f:
                f.write(content)
        if os.path.exists(final):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(final)}.old-", dir=parent)
            os.rename(final, os.path.join(old, "task"))
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def export(path: str, function_name, scale: str, out_dir: str, force: bool = False,
           seed: int = 0) -> dict:
    src = Source(path, function_name, scale)
    task, text, data = build_task(src, out_dir, seed)
    files = {"task.yaml": task_to_yaml(task), "module.hlo": text}
    files.update(data)
    write_task_dir(out_dir, files, force)
    return task
