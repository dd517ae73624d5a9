"""The calibration set of the TPU performance model: plain ops (matmuls, row reductions,
elementwise chains), each compiled by XLA:TPU compile-only for one generation, with XLA:TPU's own
estimate of its time (cost_analysis()'s optimal_seconds). Nothing is measured on a TPU.

    python3 -m maxkernel_jax.tpu_calibration --generation v5e -o bench/tpu/calibration-v5e.json

The C++ side (src/target/tpu_calibration.h) maps each sample to a TpuKernelShape with a default
blocking and fits the model's constants on half of them.
"""

import argparse
import datetime
import json
import os
import sys

# Elementwise ops of a chain: name -> (VPU flops per element, transcendentals per element).
CHAIN_OPS = {
    "add": (1, 0), "mul": (1, 0), "fma": (2, 0), "max0": (1, 0),
    "exp": (0, 1), "tanh": (0, 1), "rsqrt": (2, 1), "log1p": (1, 1),
}


def _chain_fn(ops, jnp):
    import jax

    def apply(x, y):
        for op in ops:
            x = {"add": lambda v: v + y, "mul": lambda v: v * y,
                 "fma": lambda v: v * y + 1.0, "max0": lambda v: jnp.maximum(v, 0),
                 "exp": jnp.exp, "tanh": jnp.tanh,
                 "rsqrt": lambda v: jax.lax.rsqrt(jnp.abs(v) + 1.0),
                 "log1p": lambda v: jnp.log1p(jnp.abs(v))}[op](x)
        return x
    return apply


def shapes():
    """The calibration samples' descriptions (no jax needed): 66 in all."""
    out = []
    mm = [(128, 128, 128), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024),
          (2048, 2048, 2048), (4096, 4096, 4096), (8, 4096, 4096), (64, 2048, 2048),
          (4096, 128, 4096), (4096, 4096, 128), (1024, 4096, 1024), (2048, 512, 8192),
          (384, 640, 896), (1000, 1000, 1000), (200, 300, 500), (8192, 1024, 1024),
          (256, 8192, 256), (128, 1024, 16384), (3072, 768, 768), (768, 3072, 768)]
    for dtype in ("bf16", "f32"):
        picks = mm if dtype == "bf16" else mm[::2]
        for m, n, k in picks:
            out.append({"name": f"matmul_{dtype}_{m}x{n}x{k}", "kind": "matmul", "dtype": dtype,
                        "m": m, "n": n, "k": k})
    red = [(8, 1024), (1024, 1024), (4096, 4096), (16384, 512), (512, 16384), (65536, 128),
           (128, 65536), (2048, 8192)]
    for dtype in ("f32", "bf16"):
        for op in ("sum", "max"):
            for rows, cols in (red if op == "sum" and dtype == "f32" else red[1::2]):
                out.append({"name": f"reduce_{op}_{dtype}_{rows}x{cols}", "kind": "reduce",
                            "dtype": dtype, "op": op, "rows": rows, "cols": cols})
    chains = [["add"], ["mul", "add"], ["fma", "max0", "mul"], ["exp"], ["tanh", "mul"],
              ["fma", "exp", "add", "rsqrt"], ["log1p", "mul", "tanh", "add", "max0", "fma"]]
    sizes = [(1024, 1024), (4096, 4096), (256, 128), (8192, 2048)]
    for i, ops in enumerate(chains):
        for j, (rows, cols) in enumerate(sizes):
            if (i + j) % 2:
                continue
            dtype = "bf16" if (i + j) % 4 == 2 else "f32"
            out.append({"name": f"chain_{'_'.join(ops)}_{dtype}_{rows}x{cols}", "kind": "chain",
                        "dtype": dtype, "rows": rows, "cols": cols, "ops": ops,
                        "vpu_ops": sum(CHAIN_OPS[o][0] for o in ops),
                        "transcendental_ops": sum(CHAIN_OPS[o][1] for o in ops),
                        # y is read only by the ops that take it (XLA drops an unused one).
                        "inputs": 2 if set(ops) & {"add", "mul", "fma"} else 1})
    return out


def sample_fn(s):
    """(fn, args) of one sample, args as (shape, dtype) pairs."""
    import jax.numpy as jnp

    dtype = {"bf16": jnp.bfloat16, "f32": jnp.float32}[s["dtype"]]
    if s["kind"] == "matmul":
        return (lambda a, b: a @ b), [((s["m"], s["k"]), dtype), ((s["k"], s["n"]), dtype)]
    if s["kind"] == "reduce":
        op = {"sum": jnp.sum, "max": jnp.max}[s["op"]]
        return (lambda x: op(x, axis=-1)), [((s["rows"], s["cols"]), dtype)]
    shape = (s["rows"], s["cols"])
    return _chain_fn(s["ops"], jnp), [(shape, dtype), (shape, dtype)]


def collect(generation, log=None):
    from .tpu_xla import compile_for_tpu, generation_of, versions

    gen = generation_of(generation)
    samples, failures = [], []
    for s in shapes():
        fn, args = sample_fn(s)
        r = compile_for_tpu(fn, args, gen)
        if not r["ok"] or "optimal_seconds" not in r["cost"]:
            failures.append({"name": s["name"], "error": r.get("error", "no optimal_seconds")})
            if log:
                log(f"{s['name']}: FAILED {r.get('error')}")
            continue
        samples.append(dict(s, xla=r["cost"]))
        if log:
            log(f"{s['name']}: {r['cost']['optimal_seconds']:.3e} s (compile {r['compile_s']} s)")
    return {"about": "XLA:TPU's own estimates (cost_analysis, compile-only with libtpu) of plain "
                     "ops; no TPU ran any of them. Written by python3 -m "
                     "maxkernel_jax.tpu_calibration.",
            "generation": gen, "versions": versions(),
            "date": datetime.date.today().isoformat(),
            "samples": samples, "failures": failures}


def main(argv=None):
    from .tpu_xla import quiet_libtpu_env

    quiet_libtpu_env()
    ap = argparse.ArgumentParser(prog="python3 -m maxkernel_jax.tpu_calibration")
    ap.add_argument("--generation", default="v5e")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args(argv)
    data = collect(args.generation, log=lambda m: print(m, file=sys.stderr))
    tmp = f"{args.out}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    print(f"{len(data['samples'])} samples, {len(data['failures'])} failures -> {args.out}",
          file=sys.stderr)
    return 0 if data["samples"] and not data["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
