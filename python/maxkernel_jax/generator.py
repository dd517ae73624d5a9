"""The input generator, vectorized in NumPy; bit-for-bit equal to src/task/inputs.cc.

The spec (docs/TASKS.md): splitmix64 streams keyed by (seed, parameter index); uniform and
4-term Irwin-Hall "normal" values computed in IEEE double, rounded to float32 and then to the
parameter's dtype with round-to-nearest-even. Only + - * and floor are used, so NumPy and C++
agree to the last bit (no libm calls whose rounding could differ).
"""

import ml_dtypes
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_KEYMUL = np.uint64(0xD1B54A32D192ED03)
_SQRT3 = 1.7320508075688772

# HLO element type name -> NumPy dtype of the parameter.
NUMPY_DTYPES = {
    "pred": np.dtype(np.bool_),
    "s8": np.dtype(np.int8),
    "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32),
    "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
FLOAT_DTYPES = {"f16", "bf16", "f32", "f64"}


def splitmix64(x):
    """splitmix64 of a uint64 scalar or array (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def stream_key(seed: int, param_index: int) -> np.uint64:
    with np.errstate(over="ignore"):
        mult = np.uint64((param_index + 1) % (1 << 64)) * _KEYMUL
    return np.uint64(splitmix64(splitmix64(np.uint64(seed % (1 << 64))) ^ mult))


def unit_uniform(key: np.uint64, j: np.ndarray) -> np.ndarray:
    """u(j) in [0, 1) as float64, 53 random bits."""
    with np.errstate(over="ignore"):
        h = splitmix64(np.uint64(key) + j.astype(np.uint64))
    return (h >> np.uint64(11)).astype(np.float64) * (2.0 ** -53)


def raw_values(key: np.uint64, n: int, init: dict) -> np.ndarray:
    """Float64 values (normal/uniform) or int64 values (randint) before any dtype rounding."""
    i = np.arange(n, dtype=np.uint64)
    kind = init["kind"]
    if kind == "normal":
        four = np.uint64(4)
        s = ((unit_uniform(key, four * i) + unit_uniform(key, four * i + np.uint64(1)))
             + unit_uniform(key, four * i + np.uint64(2))) + unit_uniform(key, four * i + np.uint64(3))
        z = (s - 2.0) * _SQRT3
        return float(init.get("mean", 0.0)) + float(init.get("std", 1.0)) * z
    if kind == "uniform":
        low, high = float(init.get("low", 0.0)), float(init.get("high", 1.0))
        return low + (high - low) * unit_uniform(key, i)
    if kind == "randint":
        low, high = int(init["low"]), int(init["high"])
        span = float(high) - float(low)
        return np.floor(unit_uniform(key, i) * span).astype(np.int64) + np.int64(low)
    raise ValueError(f"init kind {kind!r} is not generated (expected normal, uniform or randint)")


def generate(shape, dtype: str, init: dict, seed: int, param_index: int) -> np.ndarray:
    """One parameter's values; `dtype` is an HLO name (bf16, f32, s32, pred, ...)."""
    if dtype not in NUMPY_DTYPES:
        raise ValueError(f"unsupported parameter dtype {dtype!r}")
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    key = stream_key(seed, param_index)
    kind = init["kind"]
    is_float = dtype in FLOAT_DTYPES
    if kind in ("normal", "uniform"):
        if not is_float:
            raise ValueError(f"init {kind!r} needs a float dtype, got {dtype}")
        v = raw_values(key, n, init).astype(np.float32)  # RNE
        return v.astype(NUMPY_DTYPES[dtype]).reshape(shape)
    if kind == "randint":
        if is_float:
            raise ValueError(f"init 'randint' needs an integer or pred dtype, got {dtype}")
        v = raw_values(key, n, init)
        if dtype == "pred":
            return (v != 0).reshape(shape)
        return v.astype(NUMPY_DTYPES[dtype]).reshape(shape)
    raise ValueError(f"init kind {kind!r} is not generated")
