"""The cross-check: for every committed ci task, the interpreter (`maxkernel eval`) and XLA:CPU
(the workload's JAX function) agree within the task's tolerances on the seed-0 inputs.
A disagreement is an interpreter bug (or a documented XLA exception)."""

import glob
import os
import subprocess

import numpy as np
import pytest

from conftest import SUITE_DIR, maxkernel_bin
from maxkernel_jax.taskfile import load_task
from maxkernel_jax.xla import save_inputs, xla_outputs

TASKS = sorted(glob.glob(os.path.join(SUITE_DIR, "*", "ci", "task.yaml")))
IDS = [os.path.basename(os.path.dirname(os.path.dirname(t))) for t in TASKS]


def compare(got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> str:
    """'' if |got - want| <= atol + rtol * |want| everywhere (NaN only where want is NaN)."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    same_inf = np.isinf(w) & (g == w)
    ok = (np.abs(g - w) <= atol + rtol * np.abs(w)) | both_nan | same_inf
    if ok.all():
        return ""
    bad = np.argwhere(~ok)
    first = tuple(int(i) for i in bad[0])
    err = np.abs(g - w)[~ok]
    worst = float(np.nanmax(err)) if not np.isnan(err).all() else float("nan")
    return (f"{bad.shape[0]} of {ok.size} elements out of tolerance (atol {atol}, rtol {rtol}); "
            f"first at {first}: interp {g[first]} vs xla {w[first]}; max |err| {worst}")


@pytest.mark.parametrize("task_yaml", TASKS, ids=IDS)
def test_interpreter_matches_xla(task_yaml, tmp_path):
    binary = maxkernel_bin()
    if not os.access(binary, os.X_OK):
        pytest.skip(f"no maxkernel binary at {binary} (set MAXKERNEL_BIN)")
    task = load_task(os.path.dirname(task_yaml))
    inputs = save_inputs(task, 0, str(tmp_path / "in"))
    cmd = [binary, "eval", os.path.join(task["dir"], "module.hlo")]
    for path in inputs:
        cmd += ["--input", path]
    cmd += ["--out", str(tmp_path / "out")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"maxkernel eval failed: {r.stderr.strip()}"
    want = xla_outputs(task, 0)
    assert len(want) == len(task["outputs"])
    problems = []
    for i, (w, spec) in enumerate(zip(want, task["outputs"])):
        got = np.load(tmp_path / "out" / f"out{i}.npy")
        msg = compare(got, np.asarray(w), spec["atol"], spec["rtol"])
        if msg:
            problems.append(f"output {i}: {msg}")
    assert not problems, "; ".join(problems)


def test_compare_can_fail():
    want = np.array([1.0, 2.0, np.nan])
    assert compare(want.copy(), want, 0.0, 0.0) == ""
    assert "1 of 3" in compare(np.array([1.0, 2.1, np.nan]), want, 0.01, 0.01)
    assert "1 of 3" in compare(np.array([1.0, 2.0, 0.0]), want, 0.01, 0.01)
    assert "shape" in compare(np.zeros(2), want, 1, 1)
