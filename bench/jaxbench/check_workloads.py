#!/usr/bin/env python3
"""Checks the 50 jaxbench workloads against the workload interface and the scale budgets.

For every workload: import it by file path, generate its ci inputs with the suite's input
generator, run it under jax.jit on the CPU, and check that
  - every output is finite and bytes_moved() equals the bytes of the inputs plus the outputs,
  - the lowered HLO holds no custom-call (the interpreter and code generators only see plain HLO),
  - ci stays tiny (<= ~50 MFLOP and <= 16 MiB of data),
  - bench is CPU-sized (0.2-20 GFLOP, or 64-512 MiB moved for memory-bound workloads),
  - bench and full trace (jax.eval_shape, nothing is computed at those scales).
`--bench 8p,12p` additionally runs those workloads at bench scale and prints their time.
Exit status is non-zero when any check fails.
"""
import argparse
import importlib.util
import os
import sys
import time

import numpy as np
import jax
import jax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
CI_MAX_FLOPS = 55e6          # "~50 MFLOP", with a little slack for elementwise counts
CI_MAX_BYTES = 16 * MIB
BENCH_FLOPS = (0.2e9, 20e9)
BENCH_BYTES = (64 * MIB, 512 * MIB)
DTYPES = {"bfloat16": jnp.bfloat16, "float32": np.float32, "float16": np.float16,
          "int32": np.int32, "bool": np.bool_}
ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}

# ---------------------------------------------------------------------------------------------
# The suite's input generator (must match the C++ one bit for bit): splitmix64 counters.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_PARAM_MUL = np.uint64(0xD1B54A32D192ED03)
_CHUNK = 1 << 20


def splitmix64(x):
    """x: uint64 ndarray; arithmetic wraps mod 2^64 (numpy arrays wrap silently)."""
    x = x + _GOLDEN
    z = (x ^ (x >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def param_key(seed, p):
    seed_mixed = splitmix64(np.array([seed], dtype=np.uint64))
    salt = np.array([p + 1], dtype=np.uint64) * _PARAM_MUL
    return splitmix64(seed_mixed ^ salt)[0]


def unit_uniform(key, j):
    """u(j) in [0, 1) for a uint64 index array j."""
    bits = splitmix64(j + key) >> np.uint64(11)
    return bits.astype(np.float64) * (2.0 ** -53)


def _values_f64(init, key, start, count):
    j = np.arange(start, start + count, dtype=np.uint64)
    kind = init["kind"]
    if kind == "uniform":
        return init["low"] + (init["high"] - init["low"]) * unit_uniform(key, j)
    if kind == "normal":
        four = np.uint64(4)
        z = (((unit_uniform(key, four * j) + unit_uniform(key, four * j + np.uint64(1)))
              + unit_uniform(key, four * j + np.uint64(2)))
             + unit_uniform(key, four * j + np.uint64(3)) - 2.0) * 1.7320508075688772
        return init["mean"] + init["std"] * z
    raise ValueError(f"no float values for init kind {kind!r}")


def generate(param, index, seed=0):
    """Returns the numpy array for one entry parameter (dict from workload.inputs())."""
    shape, dtype, init = tuple(param["shape"]), param["dtype"], param["init"]
    if init["kind"] == "data":
        values = np.asarray(init["values"])
        if values.shape != shape:
            raise ValueError(f"{param['name']}: data shape {values.shape} != declared {shape}")
        return values.astype(DTYPES[dtype])
    key = param_key(seed, index)
    n = int(np.prod(shape))
    out = np.empty(n, dtype=DTYPES[dtype])
    for start in range(0, n, _CHUNK):
        count = min(_CHUNK, n - start)
        if init["kind"] == "randint" or dtype == "bool":
            low, high = (0, 2) if dtype == "bool" and init["kind"] != "randint" else (
                init["low"], init["high"])
            u = unit_uniform(key, np.arange(start, start + count, dtype=np.uint64))
            ints = low + np.floor(u * (high - low)).astype(np.int64)
            out[start:start + count] = ints.astype(DTYPES[dtype])
        else:
            f32 = _values_f64(init, key, start, count).astype(np.float32)
            out[start:start + count] = f32.astype(DTYPES[dtype])
    return out.reshape(shape)


# ---------------------------------------------------------------------------------------------
def workload_ids():
    ids = [d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "workload.py"))]
    return sorted(ids, key=lambda i: (int(i[:-1]), i) if i[:-1].isdigit() else (10**9, i))


def load(wid):
    path = os.path.join(HERE, wid, "workload.py")
    spec = importlib.util.spec_from_file_location(f"jaxbench_{wid}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_args(w, scale, seed=0):
    return [jnp.asarray(generate(p, i, seed)) for i, p in enumerate(w.inputs(scale))]


def abstract_args(w, scale):
    return [jax.ShapeDtypeStruct(tuple(p["shape"]), DTYPES[p["dtype"]]) for p in w.inputs(scale)]


def io_bytes(w, scale):
    """Bytes of inputs plus outputs, from the declared inputs and the traced output shapes."""
    params = w.inputs(scale)
    outs = jax.eval_shape(w.function(scale), *abstract_args(w, scale))
    total = sum(int(np.prod(p["shape"])) * ITEMSIZE[p["dtype"]] for p in params)
    total += sum(int(np.prod(o.shape)) * o.dtype.itemsize for o in jax.tree_util.tree_leaves(outs))
    return total


def time_call(fn, args, min_seconds=0.3, max_reps=50):
    jax.block_until_ready(fn(*args))  # compile + warm up
    times = []
    start = time.perf_counter()
    while len(times) < max_reps and (time.perf_counter() - start < min_seconds or len(times) < 3):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def check_interface(w, wid):
    problems = []
    for attr in ("ID", "NAME", "OPERATOR", "DESCRIPTION", "TOLERANCE", "SCALES"):
        if not hasattr(w, attr):
            problems.append(f"missing {attr}")
    if getattr(w, "ID", None) != wid:
        problems.append(f"ID {getattr(w, 'ID', None)!r} != folder {wid!r}")
    if set(getattr(w, "SCALES", {})) != {"ci", "bench", "full"}:
        problems.append("SCALES must be exactly ci, bench, full")
    if set(getattr(w, "TOLERANCE", {})) != {"atol", "rtol"}:
        problems.append("TOLERANCE must have atol and rtol")
    for scale in ("ci", "bench", "full"):
        for p in w.inputs(scale):
            if p["dtype"] not in DTYPES:
                problems.append(f"{scale}/{p['name']}: dtype {p['dtype']}")
            if p["init"]["kind"] not in ("normal", "uniform", "randint", "data"):
                problems.append(f"{scale}/{p['name']}: init {p['init']['kind']}")
    return problems


def check_one(w, wid, bench_run):
    problems = check_interface(w, wid)
    row = {"id": wid, "name": w.NAME, "op": w.OPERATOR}
    ci_flops, ci_bytes = w.flops("ci"), w.bytes_moved("ci")
    if ci_flops > CI_MAX_FLOPS:
        problems.append(f"ci flops {ci_flops / 1e6:.1f}M > {CI_MAX_FLOPS / 1e6:.0f}M")
    if ci_bytes > CI_MAX_BYTES:
        problems.append(f"ci bytes {ci_bytes / MIB:.1f}MiB > 16MiB")
    b_flops, b_bytes = w.flops("bench"), w.bytes_moved("bench")
    flops_ok = BENCH_FLOPS[0] <= b_flops <= BENCH_FLOPS[1]
    bytes_ok = BENCH_BYTES[0] <= b_bytes <= BENCH_BYTES[1]
    if not (flops_ok or bytes_ok):
        problems.append(f"bench {b_flops / 1e9:.2f} GFLOP / {b_bytes / MIB:.0f} MiB out of range")
    for scale in ("ci", "bench", "full"):
        traced = io_bytes(w, scale)
        if traced != w.bytes_moved(scale):
            problems.append(f"{scale} bytes_moved {w.bytes_moved(scale)} != traced {traced}")

    fn = jax.jit(w.function("ci"))
    args = make_args(w, "ci")
    hlo = fn.lower(*args).as_text(dialect="hlo")
    if "custom-call" in hlo or "custom_call" in hlo:
        problems.append("custom-call in lowered HLO")
    outs = jax.tree_util.tree_leaves(fn(*args))
    for k, o in enumerate(outs):
        arr = np.asarray(o.astype(jnp.float32) if o.dtype == jnp.bfloat16 else o)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            problems.append(f"output {k} not finite")
        if arr.dtype.kind == "f" and arr.size > 1 and float(np.std(arr)) == 0.0:
            problems.append(f"output {k} constant (degenerate)")
    row["ci_ms"] = time_call(fn, args, min_seconds=0.05, max_reps=5) * 1e3
    row.update(ci_mflop=ci_flops / 1e6, ci_mib=ci_bytes / MIB, b_gflop=b_flops / 1e9,
               b_mib=b_bytes / MIB, f_gflop=w.flops("full") / 1e9)
    if bench_run:
        bfn = jax.jit(w.function("bench"))
        bargs = make_args(w, "bench")
        row["bench_ms"] = time_call(bfn, bargs) * 1e3
        bouts = jax.tree_util.tree_leaves(bfn(*bargs))
        if not all(np.all(np.isfinite(np.asarray(o, dtype=np.float32))) for o in bouts):
            problems.append("bench output not finite")
        if not 5.0 <= row["bench_ms"] <= 2000.0:
            problems.append(f"bench time {row['bench_ms']:.1f} ms outside 5 ms - 2 s")
    row["problems"] = problems
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", default="", help="comma-separated ids (default: all)")
    parser.add_argument("--bench", default="",
                        help="comma-separated ids to also run at bench scale")
    opts = parser.parse_args()
    ids = [i for i in opts.ids.split(",") if i] or workload_ids()
    bench_ids = {i for i in opts.bench.split(",") if i}
    print(f"{'id':>4} {'name':<34} {'op':<10} {'ci MFLOP':>9} {'ci MiB':>7} {'ci ms':>7} "
          f"{'b GFLOP':>8} {'b MiB':>7} {'full GFLOP':>11} {'b ms':>7}  status")
    failures = 0
    for wid in ids:
        try:
            row = check_one(load(wid), wid, wid in bench_ids)
        except Exception as e:  # a workload that cannot even be checked is a failure, not a crash
            failures += 1
            print(f"{wid:>4} ERROR {type(e).__name__}: {str(e)[:300]}")
            continue
        failures += bool(row["problems"])
        bench_ms = f"{row['bench_ms']:7.1f}" if "bench_ms" in row else f"{'-':>7}"
        status = "ok" if not row["problems"] else "FAIL: " + "; ".join(row["problems"])
        print(f"{wid:>4} {row['name']:<34.34} {row['op']:<10.10} {row['ci_mflop']:9.2f} "
              f"{row['ci_mib']:7.2f} {row['ci_ms']:7.2f} {row['b_gflop']:8.2f} {row['b_mib']:7.1f} "
              f"{row['f_gflop']:11.1f} {bench_ms}  {status}", flush=True)
    print(f"\n{len(ids) - failures}/{len(ids)} workloads pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
