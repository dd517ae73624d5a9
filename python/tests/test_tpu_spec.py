"""bench/tpu/specs.json (the data src/target/tpu_spec.cc is checked against) against what the
jax/libtpu wheel says about each generation (pltpu.get_tpu_info_for_chip, per TensorCore)."""

import json
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench", "tpu", "specs.json")

with open(SPECS, encoding="utf-8") as f:
    GENERATIONS = json.load(f)["generations"]

# The published figure and the wheel's chip total agree to this (v6e: 918 vs 920 TFLOP/s;
# 7x: 2,307 vs 2,310).
REL_TOL = 0.01


def _pltpu():
    return pytest.importorskip("jax.experimental.pallas.tpu",
                               reason="jax with Pallas TPU is not installed")


def _chip_totals(g):
    pltpu = _pltpu()
    chip = pltpu.ChipVersion(g["chip"])
    info = pltpu.get_tpu_info_for_chip(chip, 1)  # per TensorCore
    cores = chip.num_physical_tensor_cores_per_chip
    return chip, info, cores


@pytest.mark.parametrize("g", GENERATIONS, ids=[g["name"] for g in GENERATIONS])
def test_table_agrees_with_the_wheel(g):
    chip, info, cores = _chip_totals(g)
    assert cores == g["tensorcores_per_chip"]
    assert info.vmem_capacity_bytes == g["vmem_mib_per_core"] << 20
    assert info.mxu_column_size == g["mxu_dim"]
    assert info.num_mxus == g["mxus_per_core"]
    wheel = {"peak_bf16_tflops": info.bf16_ops_per_second * cores / 1e12,
             "hbm_tb_per_s": info.mem_bw_bytes_per_second * cores / 1e12}
    for key, got in wheel.items():
        # A known difference is recorded with the wheel's own figure, so a change on either
        # side still fails here.
        expected = g["wheel_differs"].get(key, g[key])
        assert got == pytest.approx(expected, rel=REL_TOL), (
            f"{g['name']} {key}: wheel {got:.4g}, specs.json {expected:.4g}")


def test_known_differences_really_differ():
    # A wheel_differs entry that matches the published figure is stale: drop it.
    for g in GENERATIONS:
        for key, wheel_value in g["wheel_differs"].items():
            assert abs(wheel_value - g[key]) > REL_TOL * g[key], (g["name"], key)


def test_every_topology_gives_compile_only_devices():
    pytest.importorskip("libtpu", reason="libtpu is not installed (scripts/setup.sh installs it)")
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")  # see tpu_xla.allow_shared_libtpu
    from jax.experimental import topologies

    for g in GENERATIONS:
        if not g["topology"]:
            continue
        topo = topologies.get_topology_desc(g["topology"], "tpu")
        assert len(topo.devices) >= 1, g["topology"]
