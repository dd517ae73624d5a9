"""pallas-run (maxkernel_jax/pallas_check.py): a deliberately racy block spec is reported as a
race, a clean one is not, and an out-of-bounds block index is reported as such. (The command line
and its JSON are exercised end to end by src/codegen/pallas/pallas_emitter_test.cc.)"""

import textwrap

import numpy as np
import pytest

pytest.importorskip("jax.experimental.pallas.tpu")

from maxkernel_jax.pallas_check import run  # noqa: E402

# A module in the emitter's shape (INTERPRET, PARAMETERS, workload). `OUT_INDEX` is the output
# block index map: "(g0, 0)" gives each step its own rows; "(0, 0)" makes every step of the
# "parallel" axis write the same block, a race between the two simulated cores.
MODULE = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

PARAMETERS = [("f32", (32, 128))]
INTERPRET = None


def _body(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def workload(x):
    x = jnp.asarray(x, jnp.float32)
    return pl.pallas_call(
        _body, grid=(4,),
        in_specs=[pl.BlockSpec((8, 128), lambda g0: (g0, 0))],
        out_specs=pl.BlockSpec(OUT_BLOCK, lambda g0: OUT_INDEX),
        out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=False if INTERPRET is None else INTERPRET,
    )(x)
'''


def _write(tmp_path, out_block, out_index):
    text = MODULE.replace("OUT_BLOCK", out_block).replace("OUT_INDEX", out_index)
    path = tmp_path / "kernel.py"
    path.write_text(textwrap.dedent(text))
    x = np.arange(32 * 128, dtype=np.float32).reshape(32, 128)
    np.save(tmp_path / "in0.npy", x)
    return str(path), [str(tmp_path / "in0.npy")], x


def test_clean_blocks_run_and_write_outputs(tmp_path):
    module, inputs, x = _write(tmp_path, "(8, 128)", "(g0, 0)")
    report = run(module, inputs, str(tmp_path / "out"))
    assert report["ok"], report
    assert report["races"] == []
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "out0.npy"), x * 2)


def test_parallel_steps_writing_one_block_are_a_race(tmp_path):
    module, inputs, _ = _write(tmp_path, "(8, 128)", "(0, 0)")
    report = run(module, inputs, str(tmp_path / "out"))
    assert not report["ok"]
    assert report["error"]["kind"] == "race", report
    assert report["races"] and "RACE DETECTED" in report["races"][0]


def test_a_block_index_past_the_array_is_out_of_bounds(tmp_path):
    module, inputs, _ = _write(tmp_path, "(8, 128)", "(g0 + 1, 0)")
    report = run(module, inputs, str(tmp_path / "out"))
    assert not report["ok"]
    assert report["error"]["kind"] == "out_of_bounds", report


def test_a_module_that_does_not_import_is_a_failed_candidate(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text("INTERPRET = None\ndef workload(x):\n    return x +\n")
    np.save(tmp_path / "in0.npy", np.zeros((2,), np.float32))
    report = run(str(path), [str(tmp_path / "in0.npy")], str(tmp_path / "out"))
    assert not report["ok"]
    assert report["error"]["kind"] == "exception"
    assert "SyntaxError" in report["error"]["message"]
