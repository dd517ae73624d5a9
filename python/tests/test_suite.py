"""The committed suite artifacts are in sync with the workload files: bench/jaxbench/suite.json
and the ci task directories (bench/jaxbench/<id>/ci). Regenerate with
  python3 -m maxkernel_jax suite-index && python3 -m maxkernel_jax export-suite --scale ci"""

import json
import os

import pytest

from conftest import SUITE_DIR
from maxkernel_jax.export import build_task
from maxkernel_jax.sources import Source
from maxkernel_jax.suite import build_index, index_text, workload_paths
from maxkernel_jax.taskfile import task_to_yaml

IDS = [f"{i}p" for i in range(1, 18)] + [f"{i}k" for i in range(18, 51)]
REGENERATE = "regenerate: python3 -m maxkernel_jax suite-index / export-suite --scale ci"


def test_suite_has_the_50_workloads():
    ids = [os.path.basename(os.path.dirname(p)) for p in workload_paths(SUITE_DIR)]
    assert ids == IDS


def test_suite_index_in_sync():
    with open(os.path.join(SUITE_DIR, "suite.json"), encoding="utf-8") as f:
        committed = f.read()
    assert committed == index_text(SUITE_DIR), REGENERATE
    index = json.loads(committed)
    assert [w["id"] for w in index["workloads"]] == IDS
    for w in index["workloads"]:
        assert set(w["scales"]) == {"ci", "bench", "full"}, w["id"]
        for s in w["scales"].values():
            assert s["flops"] > 0 and s["bytes"] > 0, w["id"]
    assert len({w["name"] for w in index["workloads"]}) == 50


@pytest.mark.parametrize("wid", IDS)
def test_ci_task_in_sync(wid):
    task_dir = os.path.join(SUITE_DIR, wid, "ci")
    assert os.path.isfile(os.path.join(task_dir, "task.yaml")), REGENERATE
    src = Source(os.path.join(SUITE_DIR, wid, "workload.py"), None, "ci")
    task, text, data = build_task(src, task_dir)
    with open(os.path.join(task_dir, "task.yaml"), encoding="utf-8") as f:
        assert f.read() == task_to_yaml(task), REGENERATE
    with open(os.path.join(task_dir, "module.hlo"), encoding="utf-8") as f:
        assert f.read() == text, REGENERATE
    for rel, content in data.items():
        with open(os.path.join(task_dir, rel), "rb") as f:
            assert f.read() == content, REGENERATE
        assert len(content) < 64 * 1024  # the repository stays small: inputs come from seeds


def test_index_builder_sees_a_new_workload(tmp_path):
    # The sync check can fail: an index built from another folder differs.
    os.makedirs(tmp_path / "1p")
    with open(os.path.join(SUITE_DIR, "1p", "workload.py")) as f:
        (tmp_path / "1p" / "workload.py").write_text(f.read())
    assert [w["id"] for w in build_index(str(tmp_path))["workloads"]] == ["1p"]
