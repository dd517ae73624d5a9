"""The C++ commands of the suite (src/cli/suite_commands.cc), driven through the real binary:
import (Python and HLO), suite list/export, baseline."""

import json
import os

import yaml

from conftest import REFERENCE, SUITE_DIR, TINY_WORKLOAD, run_mk

ADD_HLO = """HloModule add_mul, entry_computation_layout={(f32[2,3]{1,0}, s32[4]{0})->(f32[2,3]{1,0}, s32[4]{0})}

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  i = s32[4]{0} parameter(1)
  y = f32[2,3]{1,0} add(x, x)
  ROOT t = (f32[2,3]{1,0}, s32[4]{0}) tuple(y, i)
}
"""


def test_suite_list(mk_bin):
    r = run_mk(mk_bin, "suite", "list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "50 workloads"
    assert len(lines) == 52  # header + 50 + count
    row = next(line for line in lines if line.startswith("12p "))
    assert "llama3_70b_rmsnorm" in row and "FLOP" in row
    r = run_mk(mk_bin, "suite", "list", "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert isinstance(listed, dict) and set(listed) == {"workloads"}
    with open(os.path.join(SUITE_DIR, "suite.json")) as f:
        assert listed["workloads"] == json.load(f)["workloads"]


def test_suite_list_bad_index(mk_bin, tmp_path):
    (tmp_path / "suite.json").write_text("{not json")
    r = run_mk(mk_bin, "suite", "list", "--suite-dir", str(tmp_path))
    assert r.returncode == 2 and "not a suite index" in r.stderr
    r = run_mk(mk_bin, "suite", "list", "--suite-dir", str(tmp_path / "none"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_import_hlo_dump(mk_bin, tmp_path):
    dump = tmp_path / "add_mul.hlo"
    dump.write_text(ADD_HLO)
    out = tmp_path / "task"
    r = run_mk(mk_bin, "import", str(dump), "-o", str(out))
    assert r.returncode == 0, r.stderr
    with open(out / "task.yaml") as f:
        t = yaml.safe_load(f)
    assert t["id"] == "add_mul" and t["name"] == "add_mul" and "source" not in t
    assert t["parameters"][0] == {"name": "x", "shape": [2, 3], "dtype": "f32",
                                  "init": {"kind": "normal", "mean": 0.0, "std": 1.0}}
    assert t["parameters"][1]["init"] == {"kind": "randint", "low": 0, "high": 4}
    assert [o["dtype"] for o in t["outputs"]] == ["f32", "s32"]
    assert t["bytes"] == 2 * (24 + 16)
    assert (out / "module.hlo").read_text() == ADD_HLO
    # No JAX source: no XLA baseline, a clear message.
    r = run_mk(mk_bin, "baseline", str(out), "--xla")
    assert r.returncode == 2 and "no JAX source" in r.stderr


def test_import_bad_hlo_leaves_nothing(mk_bin, tmp_path):
    dump = tmp_path / "bad.hlo"
    dump.write_text(ADD_HLO.replace("add(x, x)", "frobnicate(x, x)"))
    r = run_mk(mk_bin, "import", str(dump), "-o", str(tmp_path / "task"))
    assert r.returncode == 2
    assert "bad.hlo:" in r.stderr and "frobnicate" in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["bad.hlo"]


def test_import_python_and_baseline(mk_bin, tmp_path):
    out = tmp_path / "tiny"
    r = run_mk(mk_bin, "import", TINY_WORKLOAD, "--scale", "ci", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == ["data", "module.hlo", "task.yaml"]
    assert sorted(os.listdir(tmp_path)) == ["tiny"]  # no staging directory left
    r = run_mk(mk_bin, "import", TINY_WORKLOAD, "-o", str(out))
    assert r.returncode == 2 and "already exists" in r.stderr

    r = run_mk(mk_bin, "baseline", str(out), "--xla", "--min-runs", "3", "--min-time", "0.05")
    assert r.returncode == 0, r.stderr
    assert "median" in r.stdout and "recorded in" in r.stdout
    with open(out / "task.yaml") as f:
        t = yaml.safe_load(f)
    assert t["baseline"]["engine"] == "xla-cpu" and t["baseline"]["median_s"] > 0
    assert t["baseline"]["runs"] >= 3
    assert t["parameters"][2]["init"] == {"kind": "data", "file": "data/idx.npy"}  # kept

    r = run_mk(mk_bin, "baseline", str(out), "--xla", "--json", "--no-record", "--min-runs", "3",
               "--min-time", "0.05")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["recorded"] is False and j["p10_s"] <= j["median_s"] <= j["p90_s"]
    r = run_mk(mk_bin, "baseline", str(out))
    assert r.returncode == 2 and "--xla" in r.stderr


def test_import_python_errors(mk_bin, tmp_path):
    for args, message in [
        ([REFERENCE, "--function", "missing"], "no function named 'missing'"),
        ([REFERENCE, "--function", "broken"], "JAX lowering failed"),
        ([str(tmp_path / "none.py")], "no such file"),
    ]:
        r = run_mk(mk_bin, "import", *args, "-o", str(tmp_path / "t"))
        assert r.returncode == 2, r.stderr
        assert message in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "t").exists()
    assert os.listdir(tmp_path) == []


def test_suite_export_only(mk_bin, tmp_path):
    r = run_mk(mk_bin, "suite", "export", "--only", "12p,30k", "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["12p", "30k"]
    with open(os.path.join(SUITE_DIR, "12p", "ci", "module.hlo")) as f:
        assert (tmp_path / "12p" / "ci" / "module.hlo").read_text() == f.read()
    r = run_mk(mk_bin, "suite", "export", "--only", "99z", "-o", str(tmp_path))
    assert r.returncode == 2 and "99z" in r.stderr
