#include "target/isa_level.h"

#include <algorithm>
#include <cstdlib>

namespace mk::target {

namespace {

bool HasFeature(const std::vector<std::string>& features, const char* name) {
  return std::find(features.begin(), features.end(), name) != features.end();
}

}  // namespace

const char* IsaLevelName(IsaLevel level) {
  switch (level) {
    case IsaLevel::kBaseline: return "x86-64";
    case IsaLevel::kAvx2: return "avx2";
    case IsaLevel::kAvx512: return "avx512";
    case IsaLevel::kAvx512Bf16: return "avx512bf16";
    case IsaLevel::kAmx: return "amx";
  }
  return "x86-64";
}

Result<IsaLevel> ParseIsaLevel(const std::string& name) {
  for (IsaLevel l : {IsaLevel::kAvx2, IsaLevel::kAvx512, IsaLevel::kAvx512Bf16, IsaLevel::kAmx}) {
    if (name == IsaLevelName(l)) return l;
  }
  return InvalidArgument("MAXKERNEL_CPU_ISA='" + name +
                         "' is not an ISA level (expected avx2, avx512, avx512bf16 or amx)");
}

IsaLevel LevelOfFeatures(const std::vector<std::string>& f) {
  if (!HasFeature(f, "avx2") || !HasFeature(f, "fma")) return IsaLevel::kBaseline;
  // x86-64-v4's set: what the AVX-512 emitters and g++ -march=x86-64-v4 assume together.
  if (!HasFeature(f, "avx512f") || !HasFeature(f, "avx512bw") || !HasFeature(f, "avx512vl") ||
      !HasFeature(f, "avx512dq")) {
    return IsaLevel::kAvx2;
  }
  if (!HasFeature(f, "avx512_bf16")) return IsaLevel::kAvx512;
  if (!HasFeature(f, "amx_tile") || !HasFeature(f, "amx_bf16")) return IsaLevel::kAvx512Bf16;
  return IsaLevel::kAmx;
}

Result<std::optional<IsaLevel>> RequestedIsaLevel() {
  const char* env = std::getenv("MAXKERNEL_CPU_ISA");
  if (env == nullptr || *env == '\0') return std::optional<IsaLevel>();
  MK_ASSIGN_OR_RETURN(IsaLevel level, ParseIsaLevel(env));
  return std::optional<IsaLevel>(level);
}

std::vector<std::string> FeaturesAtLevel(const std::vector<std::string>& features, IsaLevel level) {
  std::vector<std::string> kept;
  for (const std::string& f : features) {
    const bool avx512 = f.rfind("avx512", 0) == 0;
    const bool bf16 = f == "avx512_bf16";
    const bool amx = f.rfind("amx", 0) == 0;
    if (avx512 && level < IsaLevel::kAvx512) continue;
    if (bf16 && level < IsaLevel::kAvx512Bf16) continue;
    // fp16 arithmetic is not part of any level below the host's own.
    if (f == "avx512_fp16" && level < IsaLevel::kAmx) continue;
    if (amx && level < IsaLevel::kAmx) continue;
    if ((f == "avx2" || f == "fma") && level < IsaLevel::kAvx2) continue;
    kept.push_back(f);
  }
  return kept;
}

std::vector<std::string> MarchFlags(IsaLevel level, IsaLevel host) {
  if (level >= host) return {"-march=native"};
  switch (level) {
    case IsaLevel::kBaseline: return {"-march=x86-64", "-mtune=native"};
    case IsaLevel::kAvx2: return {"-march=x86-64-v3", "-mtune=native"};
    case IsaLevel::kAvx512: return {"-march=x86-64-v4", "-mtune=native"};
    case IsaLevel::kAvx512Bf16:
    case IsaLevel::kAmx: return {"-march=x86-64-v4", "-mavx512bf16", "-mtune=native"};
  }
  return {"-march=native"};
}

}  // namespace mk::target
