#include "target/target.h"

#include "target/isa_level.h"
#include "target/tpu_spec.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace mk::target {

bool Target::Has(const std::string& feature) const {
  return std::find(isa.begin(), isa.end(), feature) != isa.end();
}

namespace {

std::string CpuInfoField(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "";
}

std::string FirstLine(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// "32768K", "1M", "512" (bytes); 0 for anything else.
int64_t ParseCacheSize(const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (...) {
    return 0;
  }
  const std::string unit = text.substr(used);
  if (v <= 0) return 0;
  if (unit.empty()) return v;
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (unit == "G") return v << 30;
  return 0;
}

// sysfs first, then sysconf, then the default.
int64_t CacheSize(int level, int sysconf_name, int64_t fallback) {
  if (int64_t v = SysfsCacheBytes("/sys/devices/system/cpu/cpu0/cache", level); v > 0) return v;
  long v = sysconf(sysconf_name);
  return v > 0 ? v : fallback;
}

}  // namespace

int64_t SysfsCacheBytes(const std::string& cache_dir, int level) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    if (FirstLine(entry.path() / "level") != std::to_string(level)) continue;
    const std::string type = FirstLine(entry.path() / "type");
    if (type != "Data" && type != "Unified") continue;
    if (int64_t bytes = ParseCacheSize(FirstLine(entry.path() / "size")); bytes > 0) return bytes;
  }
  return 0;
}

Target HostCpu() {
  Target t;
  t.name = "cpu";
  t.kind = TargetKind::kCpu;
  t.model = CpuInfoField("model name");
  std::istringstream flags(CpuInfoField("flags"));
  std::vector<std::string> all{std::istream_iterator<std::string>(flags), {}};
  for (const char* f : {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq",
                        "avx512_bf16", "avx512_fp16", "f16c", "amx_tile", "amx_bf16"}) {
    if (std::find(all.begin(), all.end(), f) != all.end()) t.isa.push_back(f);
  }
  const IsaLevel host_level = LevelOfFeatures(t.isa);
  IsaLevel level = host_level;
  if (Result<std::optional<IsaLevel>> requested = RequestedIsaLevel(); requested.ok() && *requested) {
    level = std::min(**requested, host_level);
  }
  t.isa = FeaturesAtLevel(t.isa, level);
  t.isa_level = IsaLevelName(level);
  t.cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  t.vector_bytes = t.Has("avx512f") ? 64 : t.Has("avx2") ? 32 : 16;
  t.vector_registers = t.Has("avx512f") ? 32 : 16;
  t.l1_bytes = CacheSize(1, _SC_LEVEL1_DCACHE_SIZE, t.l1_bytes);
  t.l2_bytes = CacheSize(2, _SC_LEVEL2_CACHE_SIZE, t.l2_bytes);
  t.l3_bytes = CacheSize(3, _SC_LEVEL3_CACHE_SIZE, t.l3_bytes);
  // Nominal peaks until a machine probe measures them: 2 FMA pipes x lanes x 2 flops x clock.
  double ghz = 0;
  try {
    ghz = std::stod(CpuInfoField("cpu MHz")) / 1000.0;
  } catch (...) {
    ghz = 2.0;
  }
  if (ghz <= 0) ghz = 2.0;
  double lanes_f32 = t.vector_bytes / 4.0;
  t.peak_flops_f32 = t.cores * ghz * 1e9 * 2 /*pipes*/ * lanes_f32 * 2 /*fma*/;
  t.peak_flops_bf16 = t.Has("avx512_bf16") ? 2 * t.peak_flops_f32 : t.peak_flops_f32;
  t.bandwidth_bytes_per_s = 20e9 * t.cores;
  t.compile_flags = {"-O3"};
  for (std::string& f : MarchFlags(level, host_level)) t.compile_flags.push_back(std::move(f));
  return t;
}

Result<Target> TargetByName(const std::string& name) {
  if (name == "cpu") return HostCpu();
  if (const TpuSpec* tpu = FindTpuSpec(name)) return TpuTarget(*tpu);
  return InvalidArgument("unknown or not yet supported target '" + name +
                         "' (supported: cpu, " + TpuTargetNames() + ")");
}

}  // namespace mk::target
