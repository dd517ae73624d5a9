// The instruction-set level code is generated and compiled for. By default it is the host's
// (the widest of avx2 < avx512 < avx512bf16 < amx the CPU has); MAXKERNEL_CPU_ISA lowers it, so
// an AVX-512 machine can build and test exactly what an AVX2-only one would. The level caps
// both sides of a kernel: the ISA features the emitters may use (Target::isa, vector width,
// registers) and the compiler's -march, since g++ under -march=native would otherwise emit
// AVX-512 for the plain C++ loops of a kernel whose emitters were told AVX2.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "support/status.h"

namespace mk::target {

enum class IsaLevel { kBaseline, kAvx2, kAvx512, kAvx512Bf16, kAmx };

// "avx2", "avx512", "avx512bf16", "amx" ("x86-64" for kBaseline: a CPU without AVX2+FMA).
const char* IsaLevelName(IsaLevel level);
// The names MAXKERNEL_CPU_ISA accepts; an error listing them for anything else.
Result<IsaLevel> ParseIsaLevel(const std::string& name);

// The widest level a CPU with these /proc/cpuinfo feature names (as Target::isa holds them)
// runs.
IsaLevel LevelOfFeatures(const std::vector<std::string>& features);

// MAXKERNEL_CPU_ISA, parsed: nullopt when unset or empty; an error naming the variable for a
// value it does not take.
Result<std::optional<IsaLevel>> RequestedIsaLevel();

// The features of `features` that code built for `level` may use (the AVX-512 family, BF16
// and the AMX tiles are dropped above the level).
std::vector<std::string> FeaturesAtLevel(const std::vector<std::string>& features, IsaLevel level);

// The compiler flags that build for `level` on a host whose own level is `host`: -march=native
// at the host's level (its tuning and every extension it has), else an explicit
// architecture: x86-64-v3 for avx2, x86-64-v4 (+ -mavx512bf16) for the AVX-512 levels, each
// with -mtune=native.
std::vector<std::string> MarchFlags(IsaLevel level, IsaLevel host);

}  // namespace mk::target
