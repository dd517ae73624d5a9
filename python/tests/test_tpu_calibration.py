"""The calibration set (python -m maxkernel_jax.tpu_calibration) and the committed files it wrote
(bench/tpu/calibration-<gen>.json), which src/target/tpu_calibration_test.cc fits on."""

import collections
import json
import os

import pytest

from conftest import REPO
from maxkernel_jax import tpu_calibration


def test_at_least_60_shapes_of_every_kind():
    shapes = tpu_calibration.shapes()
    kinds = collections.Counter(s["kind"] for s in shapes)
    assert len(shapes) >= 60
    assert set(kinds) == {"matmul", "reduce", "chain"} and min(kinds.values()) >= 10
    assert len({s["name"] for s in shapes}) == len(shapes)
    assert {s["dtype"] for s in shapes} == {"bf16", "f32"}


def test_chain_counts_follow_its_ops():
    for s in tpu_calibration.shapes():
        if s["kind"] != "chain":
            continue
        ops = [tpu_calibration.CHAIN_OPS[o] for o in s["ops"]]
        assert s["vpu_ops"] == sum(v for v, _ in ops)
        assert s["transcendental_ops"] == sum(t for _, t in ops)
        assert s["inputs"] == (2 if set(s["ops"]) & {"add", "mul", "fma"} else 1)


@pytest.mark.parametrize("gen", ["v5e", "v6e"])
def test_committed_calibration_is_the_current_set(gen):
    with open(os.path.join(REPO, "bench", "tpu", f"calibration-{gen}.json"),
              encoding="utf-8") as f:
        data = json.load(f)
    assert data["generation"] == gen and not data["failures"]
    assert data["versions"]["libtpu"] and data["versions"]["jax"]
    committed = {s["name"]: s for s in data["samples"]}
    current = {s["name"]: s for s in tpu_calibration.shapes()}
    assert committed.keys() == current.keys(), "rerun python -m maxkernel_jax.tpu_calibration"
    for name, s in committed.items():
        assert {k: v for k, v in s.items() if k != "xla"} == current[name]
        assert s["xla"]["optimal_seconds"] > 0
        if s["kind"] == "matmul":  # XLA:TPU counts the flops we think it does
            assert s["xla"]["flops"] == 2 * s["m"] * s["n"] * s["k"]
