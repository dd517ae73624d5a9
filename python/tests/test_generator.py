"""The NumPy generator against the committed golden values that src/task/inputs_test.cc also
checks: the two implementations agree bit for bit exactly when both suites pass."""

import ml_dtypes
import numpy as np
import pytest

from maxkernel_jax.generator import generate, splitmix64, stream_key, unit_uniform

# (seed, param, dtype, init, first 6 element bits, wrapping sum of the first 1000 element bits)
GOLDEN = [
    (0, 0, "f32", {"kind": "normal", "mean": 0.0, "std": 1.0},
     [0x3e92b50c, 0xbfd050c0, 0xbf713f93, 0xbf8b5a09, 0xbb678102, 0x3df223f8], 2109978558503),
    (0, 1, "bf16", {"kind": "normal", "mean": 0.5, "std": 0.02},
     [0x3ee9, 0x3efb, 0x3eec, 0x3f00, 0x3f06, 0x3ef5], 16125850),
    (7, 2, "f16", {"kind": "uniform", "low": -1.0, "high": 1.0},
     [0x3448, 0x3adb, 0x38c1, 0xa44f, 0x3211, 0x2d4d], 29574017),
    (12345678901234, 3, "f32", {"kind": "uniform", "low": 0.0, "high": 10.0},
     [0x3ef89fea, 0x41099b58, 0x409f6e81, 0x4090a2e2, 0x41043b72, 0x40cd51a8], 1080951797663),
    (1, 0, "s32", {"kind": "randint", "low": -5, "high": 100}, [44, 20, 24, 35, 83, 21], 47530),
    (2, 4, "pred", {"kind": "randint", "low": 0, "high": 2}, [1, 1, 0, 1, 1, 1], 494),
    (18446744073709551615, 5, "bf16", {"kind": "normal", "mean": 0.0, "std": 3.0},
     [0xbf4f, 0x3f22, 0xbfdc, 0x407f, 0xbf98, 0xc020], 32782202),
]


def element_bits(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.float32:
        return a.view(np.uint32).astype(np.uint64)
    if a.dtype in (np.float16, np.dtype(ml_dtypes.bfloat16)):
        return a.view(np.uint16).astype(np.uint64)
    return a.astype(np.int64).astype(np.uint64)


def test_splitmix64_reference_sequence():
    # The published first outputs of splitmix64 seeded with 0.
    assert int(splitmix64(0)) == 0xE220A8397B1DCDAF
    assert int(splitmix64(0x9E3779B97F4A7C15)) == 0x6E789E6AA1B965F4


@pytest.mark.parametrize("seed,param,dtype,init,first6,sum1000", GOLDEN)
def test_golden_values(seed, param, dtype, init, first6, sum1000):
    small = generate((6,), dtype, init, seed, param)
    assert [int(x) for x in element_bits(small)] == first6
    big = generate((10, 100), dtype, init, seed, param)  # same row-major stream
    with np.errstate(over="ignore"):
        assert int(element_bits(big.reshape(-1)).sum(dtype=np.uint64)) == sum1000


def test_float_rounding_goes_through_float32():
    # bf16 values are RNE(RNE_f32(double)): equal to rounding the float32 values.
    init = {"kind": "normal", "mean": 0.0, "std": 1.0}
    f32 = generate((1000,), "f32", init, 5, 0)
    bf16 = generate((1000,), "bf16", init, 5, 0)
    np.testing.assert_array_equal(f32.astype(ml_dtypes.bfloat16).view(np.uint16),
                                  bf16.view(np.uint16))


def test_distributions_are_sane():
    z = generate((200000,), "f32", {"kind": "normal", "mean": 1.0, "std": 2.0}, 0, 0)
    assert abs(z.mean() - 1.0) < 0.03 and abs(z.std() - 2.0) < 0.03
    assert z.max() <= 1.0 + 2.0 * 2 * 3 ** 0.5  # Irwin-Hall support
    u = unit_uniform(stream_key(0, 0), np.arange(10000, dtype=np.uint64))
    assert u.min() >= 0.0 and u.max() < 1.0
    r = generate((5000,), "s32", {"kind": "randint", "low": 3, "high": 7}, 1, 1)
    assert set(np.unique(r).tolist()) == {3, 4, 5, 6}


def test_kind_must_fit_dtype():
    with pytest.raises(ValueError):
        generate((2,), "s32", {"kind": "normal"}, 0, 0)
    with pytest.raises(ValueError):
        generate((2,), "f32", {"kind": "randint", "low": 0, "high": 2}, 0, 0)
    with pytest.raises(ValueError):
        generate((2,), "c64", {"kind": "normal"}, 0, 0)
