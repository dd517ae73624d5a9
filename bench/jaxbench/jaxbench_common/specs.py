"""Entry-parameter specs of the workload interface ({"name", "shape", "dtype", "init"}) and the
bytes a workload moves (all inputs plus its one output)."""
import numpy as np

ITEMSIZE = {"bfloat16": 2, "float32": 4, "float16": 2, "int32": 4, "bool": 1}


def param(name, shape, dtype, init):
    return {"name": name, "shape": tuple(shape), "dtype": dtype, "init": init}


def normal(name, shape, dtype="float32", mean=0.0, std=1.0):
    return param(name, shape, dtype, {"kind": "normal", "mean": mean, "std": std})


def uniform(name, shape, low, high, dtype="float32"):
    return param(name, shape, dtype, {"kind": "uniform", "low": low, "high": high})


def randint(name, shape, low, high, dtype="int32"):
    return param(name, shape, dtype, {"kind": "randint", "low": low, "high": high})


def data(name, values, dtype="int32"):
    """A structured integer input (page table, lengths, group sizes) given by its values."""
    return param(name, values.shape, dtype, {"kind": "data", "values": values})


def weight(name, rows, cols, dtype="float32"):
    """A (rows, cols) weight with std 1/sqrt(rows), the fan-in, so x @ W stays O(1)."""
    return normal(name, (rows, cols), dtype, std=1.0 / float(np.sqrt(rows)))


def bias(name, size, dtype="float32"):
    """A (size,) vector ~ N(0, 0.1): biases, norm shifts, running means."""
    return normal(name, (size,), dtype, std=0.1)


def affine(prefix, size):
    """A norm's affine parameters: {prefix}_gamma ~ U[0.5, 1.5), {prefix}_beta ~ N(0, 0.1)."""
    return [uniform(f"{prefix}_gamma", (size,), 0.5, 1.5), bias(f"{prefix}_beta", size)]


def running_stats(prefix, size):
    """Inference BatchNorm statistics: {prefix}_mean ~ N(0, 0.1), {prefix}_var ~ U[0.5, 1.5)."""
    return [bias(f"{prefix}_mean", size), uniform(f"{prefix}_var", (size,), 0.5, 1.5)]


def io_bytes(params, out_shape, out_dtype="float32"):
    """bytes_moved(): the bytes of every entry parameter plus those of the output."""
    specs = [(p["shape"], p["dtype"]) for p in params] + [(out_shape, out_dtype)]
    return sum(int(np.prod(shape)) * ITEMSIZE[dtype] for shape, dtype in specs)
