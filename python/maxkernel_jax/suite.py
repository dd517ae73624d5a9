"""The 50-workload suite: its index (bench/jaxbench/suite.json) and bulk export."""

import glob
import json
import os
import re

from .errors import BridgeError
from .export import export
from .sources import is_workload, load_module

SCALES = ("ci", "bench", "full")


def _id_key(wid: str):
    m = re.match(r"(\d+)(\D*)$", wid)
    return (int(m.group(1)), m.group(2)) if m else (1 << 30, wid)


def workload_paths(root: str) -> list[str]:
    """bench/jaxbench/<id>/workload.py, in suite order (1p .. 17p, 18k .. 50k)."""
    paths = glob.glob(os.path.join(root, "*", "workload.py"))
    return sorted(paths, key=lambda p: _id_key(os.path.basename(os.path.dirname(p))))


def build_index(root: str) -> dict:
    """id, name, operator, description, tolerance, and FLOPs/bytes at every scale."""
    entries = []
    for path in workload_paths(root):
        m = load_module(path)
        if not is_workload(m):
            raise BridgeError(f"{path}: does not implement the workload interface")
        scales = {}
        for s in SCALES:
            if s in m.SCALES:
                scales[s] = {"flops": int(m.flops(s)), "bytes": int(m.bytes_moved(s))}
        entries.append({
            "id": str(m.ID),
            "name": str(m.NAME),
            "operator": str(m.OPERATOR),
            "description": str(getattr(m, "DESCRIPTION", "")),
            "tolerance": {k: float(v) for k, v in dict(m.TOLERANCE).items()},
            "workload": os.path.relpath(path, root),
            "scales": scales,
        })
    return {"format": 1, "generated_by": "python3 -m maxkernel_jax suite-index",
            "workloads": entries}


def index_text(root: str) -> str:
    return json.dumps(build_index(root), indent=1, sort_keys=False) + "\n"


def export_suite(root: str, scale: str, only=None, out_root=None, force=True, log=print) -> list:
    """Exports every (or each `only`) workload at `scale` to OUT/<id>/<scale>; returns failures
    as (id, message) without stopping at the first."""
    wanted = set(only) if only else None
    failures = []
    done = set()
    for path in workload_paths(root):
        wid = os.path.basename(os.path.dirname(path))
        if wanted is not None and wid not in wanted:
            continue
        done.add(wid)
        out = os.path.join(out_root or root, wid, scale)
        try:
            export(path, None, scale, out, force=force)
            log(f"exported {wid} -> {out}")
        except BridgeError as e:
            failures.append((wid, str(e)))
            log(f"FAILED {wid}: {e}")
    if wanted is not None:
        for wid in sorted(wanted - done, key=_id_key):
            failures.append((wid, f"no workload {wid} under {root}"))
    return failures
