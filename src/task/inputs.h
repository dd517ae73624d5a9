// The input generator: a task's inputs for a seed, reproducible bit for bit in C++ (here) and in
// NumPy (python/maxkernel_jax/generator.py). The spec is in docs/TASKS.md; both implementations
// are checked against the same committed golden values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/literal.h"
#include "support/status.h"
#include "task/task.h"

namespace mk::task {

uint64_t SplitMix64(uint64_t x);
// The per-parameter stream key: splitmix64(splitmix64(seed) ^ ((p + 1) * 0xD1B54A32D192ED03)).
uint64_t StreamKey(uint64_t seed, uint64_t param_index);
// u(j): a double in [0, 1) with 53 random bits.
double UniformUnit(uint64_t key, uint64_t j);

// The double value of element i before rounding to the parameter's type (float kinds) or the
// int64 value (randint). Exposed for tests.
double NormalValue(uint64_t key, uint64_t i, double mean, double std);
double UniformValue(uint64_t key, uint64_t i, double low, double high);
int64_t RandintValue(uint64_t key, uint64_t i, int64_t low, int64_t high);

// Generates parameter `param_index` (not a "data" one) of shape `shape` for `seed`.
Result<hlo::Literal> GenerateParameter(const hlo::Shape& shape, const InitSpec& init,
                                       uint64_t seed, uint64_t param_index);

// All inputs of a task for `seed`, in parameter order. "data" parameters are read from the
// task's data/*.npy (their dtype and shape must match the parameter exactly). Checks
// CheckBuffersFitInMemory first.
Result<std::vector<hlo::Literal>> GenerateInputs(const Task& task, uint64_t seed);

// A shape can be valid and still impossible to run: f32[1000000000000] is 4 TB. The task's
// parameters and outputs together must fit in this machine's physical memory, else
// InvalidArgument (exit 2) saying how many bytes they need, instead of an allocation failure
// (which the CLI reports as an internal error, exit 1) later.
Status CheckBuffersFitInMemory(const Task& task);

}  // namespace mk::task
