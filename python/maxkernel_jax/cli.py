"""python3 -m maxkernel_jax COMMAND ...; bad input: one line on stderr and exit code 2."""

import argparse
import json
import os
import sys

from .errors import BridgeError

EXIT_BAD_INPUT = 2


def _quiet_jax():
    # XLA:CPU only, whatever the caller's environment says: with libtpu installed (TPU targets
    # compile with it, compile-only) jax would otherwise probe for TPUs and print errors. Also
    # silences the "no GPU/TPU found" notice.
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _parser():
    ap = argparse.ArgumentParser(prog="python3 -m maxkernel_jax",
                                 description="maxkernel's JAX bridge (docs/TASKS.md)")
    sub = ap.add_subparsers(dest="command", required=True)

    e = sub.add_parser("export", help="a workload or reference function -> task directory")
    e.add_argument("--workload", required=True, help="workload.py or a reference .py file")
    e.add_argument("--function", default=None, help="JAX function in a reference file")
    e.add_argument("--scale", default="ci")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--force", action="store_true", help="replace an existing task directory")
    e.add_argument("-o", "--out", required=True)

    for name, help_text in (("expected", "XLA:CPU outputs for the task's inputs (out0.npy ...)"),
                            ("inputs", "the task's generated inputs (in0.npy ...)")):
        c = sub.add_parser(name, help=help_text)
        c.add_argument("task")
        c.add_argument("--seed", type=int, default=None, help="default: the task's seed")
        c.add_argument("-o", "--out", required=True)

    t = sub.add_parser("time", help="XLA:CPU timing of a task (JSON on stdout)")
    t.add_argument("task")
    t.add_argument("--min-runs", type=int, default=10)
    t.add_argument("--min-time", type=float, default=1.0, help="seconds")
    t.add_argument("--warmup", type=int, default=2)
    t.add_argument("--max-time", type=float, default=300.0, help="seconds")
    t.add_argument("--record", action="store_true", help="also write it into task.yaml")
    t.add_argument("--threads", type=int, default=None,
                   help="run XLA:CPU on this many of the allowed CPUs (default: all of them)")

    i = sub.add_parser("suite-index", help="write bench/jaxbench/suite.json")
    i.add_argument("--root", default="bench/jaxbench")
    i.add_argument("-o", "--out", default=None, help="default: ROOT/suite.json; '-' for stdout")
    i.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")

    s = sub.add_parser("export-suite", help="export every workload at a scale")
    s.add_argument("--root", default="bench/jaxbench")
    s.add_argument("--scale", default="ci")
    s.add_argument("--only", default="", help="comma-separated ids")
    s.add_argument("-o", "--out", default=None, help="default: ROOT (tasks go to OUT/<id>/<scale>)")

    x = sub.add_parser("tpu-xla-cost",
                       help="XLA:TPU's own time estimate of a task's module.hlo (compile-only)")
    x.add_argument("--task", required=True, help="task directory (with module.hlo)")
    x.add_argument("--generation", default="v5e", help="v4, v5e, v5p, v6e or 7x")
    x.add_argument("--json", action="store_true", help="the whole result as JSON")

    c = sub.add_parser("pallas-compile",
                       help="compile an emitted Pallas module for a TPU generation (compile-only)")
    c.add_argument("--module", required=True, help="kernel.py written by the Pallas emitter")
    c.add_argument("--generation", default="v5e", help="v4, v5e, v5p, v6e or 7x")
    c.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    c.add_argument("--per-kernel", action="store_true",
                   help="compile each kernel function alone (which ones the compiler refuses)")

    r = sub.add_parser("pallas-run",
                       help="run an emitted Pallas module in TPU interpret mode (JSON report)")
    r.add_argument("--module", required=True, help="kernel.py written by the Pallas emitter")
    r.add_argument("--inputs", nargs="*", default=[], help="in0.npy ... in parameter order")
    r.add_argument("--out", required=True, help="folder for out0.npy ...")
    r.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    return ap


def _tpu_xla_cost(args) -> int:
    # libtpu compile-only: jax on its CPU platform, libtpu quiet about the missing TPU.
    from .tpu_xla import quiet_libtpu_env

    quiet_libtpu_env()
    from .taskfile import load_task
    from .tpu_xla import task_xla_cost

    result = task_xla_cost(load_task(args.task), args.generation)
    if args.json:
        print(json.dumps(result))
    elif result["ok"]:
        cost = result["cost"]
        print(f"{cost.get('optimal_seconds', float('nan')):.6g} s (XLA:TPU estimate for "
              f"{result['generation']}, not a measurement)")
    if not result["ok"]:
        err = result["error"]
        if not args.json:
            print(f"error: XLA:TPU cannot compile {args.task} for {args.generation} "
                  f"({err['kind']}): {err['message'].splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


def _run(args) -> int:
    if args.command == "tpu-xla-cost":
        return _tpu_xla_cost(args)
    if args.command == "export":
        from .export import export

        task = export(args.workload, args.function, args.scale, args.out, force=args.force,
                      seed=args.seed)
        print(f"exported {task['id']} ({task['scale']}) -> {args.out}", file=sys.stderr)
        return 0
    if args.command in ("expected", "inputs", "time"):
        if args.command == "time" and args.threads is not None:
            # Before JAX starts: XLA:CPU sizes its thread pools from the CPUs it may run on.
            from .cpus import limit_cpus

            limit_cpus(args.threads)
        from .taskfile import load_task
        from .xla import save_expected, save_inputs, time_task

        task = load_task(args.task)
        if args.command == "inputs":
            for p in save_inputs(task, args.seed, args.out):
                print(p)
            return 0
        if args.command == "expected":
            for p in save_expected(task, args.seed, args.out):
                print(p)
            return 0
        result = time_task(task, args.min_runs, args.min_time, args.warmup, args.max_time)
        if args.record:
            from .taskfile import write_task_yaml

            task["baseline"] = {k: result[k] for k in ("engine", "median_s", "p10_s", "p90_s",
                                                       "runs", "cpu", "jax_version", "date")}
            write_task_yaml(args.task, task)
        print(json.dumps(result))
        return 0
    if args.command == "suite-index":
        from .suite import index_text

        text = index_text(args.root)
        out = args.out or os.path.join(args.root, "suite.json")
        if args.check:
            try:
                with open(out, encoding="utf-8") as f:
                    current = f.read()
            except OSError:
                current = None
            if current != text:
                print(f"{out} is out of date: run python3 -m maxkernel_jax suite-index",
                      file=sys.stderr)
                return 1
            return 0
        if out == "-":
            sys.stdout.write(text)
        else:
            tmp = f"{out}.tmp-{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, out)
        return 0
    if args.command == "export-suite":
        from .suite import export_suite

        only = [x for x in args.only.split(",") if x] or None
        failures = export_suite(args.root, args.scale, only, args.out,
                                log=lambda m: print(m, file=sys.stderr))
        if failures:
            print(f"{len(failures)} workload(s) failed to export: "
                  + ", ".join(w for w, _ in failures), file=sys.stderr)
            return EXIT_BAD_INPUT
        return 0
    if args.command == "pallas-compile":
        from .pallas_compile import compile_kernels, compile_module

        if args.per_kernel:
            result = compile_kernels(args.module, args.generation)
            if args.json:
                print(json.dumps(result))
            else:
                for k in result["kernels"]:
                    if not k["ok"]:
                        print(f"{k['function']}: {k['error']['kind']}: "
                              f"{k['error']['message'].splitlines()[0]}", file=sys.stderr)
            return 0 if result["ok"] or args.json else 1
        result = compile_module(args.module, args.generation)
        if args.json:
            print(json.dumps(result))
        elif not result["ok"]:
            print(f"error: {args.module} does not compile for {args.generation} "
                  f"({result['error']['kind']}): {result['error']['message'].splitlines()[0]}",
                  file=sys.stderr)
        return 0 if result["ok"] or args.json else 1
    if args.command == "pallas-run":
        from .pallas_check import run as pallas_run

        report = pallas_run(args.module, args.inputs, args.out)
        if args.json:
            print(json.dumps(report))
        else:
            state = "ok" if report["ok"] else f"failed ({report['error']['kind']})"
            print(f"{args.module}: {state}", file=sys.stderr)
        # With --json the report carries the verdict; without it, the exit code does.
        return 0 if report["ok"] or args.json else 1
    raise BridgeError(f"unknown command {args.command}")


def main(argv=None) -> int:
    _quiet_jax()
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except BridgeError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
