// The TPU spec table: the same figures as bench/tpu/specs.json (which the Python test checks
// against the wheel), reachable by name, and the Target it gives.
#include "target/tpu_spec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace mk::target {
namespace {

nlohmann::json SpecsJson() {
  std::ifstream in(std::string(MK_SOURCE_DIR) + "/bench/tpu/specs.json");
  EXPECT_TRUE(in.good()) << "bench/tpu/specs.json missing";
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

TEST(TpuSpecTest, CxxTableMatchesSpecsJsonRowForRow) {
  const nlohmann::json j = SpecsJson();
  ASSERT_TRUE(j.is_object() && j["generations"].is_array());
  std::set<std::string> json_names, cxx_names;
  for (const TpuSpec& s : TpuSpecs()) cxx_names.insert(std::string(s.name));
  for (const nlohmann::json& g : j["generations"]) {
    const std::string name = g["name"];
    json_names.insert(name);
    const TpuSpec* s = FindTpuSpec(name);
    ASSERT_NE(s, nullptr) << name << " is in specs.json but not in tpu_spec.cc";
    SCOPED_TRACE(name);
    EXPECT_EQ(s->chip, g["chip"].get<std::string>());
    EXPECT_EQ(s->model, g["model"].get<std::string>());
    EXPECT_EQ(s->tensorcores_per_chip, g["tensorcores_per_chip"].get<int>());
    EXPECT_DOUBLE_EQ(s->peak_bf16_flops, g["peak_bf16_tflops"].get<double>() * 1e12);
    EXPECT_DOUBLE_EQ(s->hbm_bytes_per_s, g["hbm_tb_per_s"].get<double>() * 1e12);
    EXPECT_EQ(s->vmem_bytes, g["vmem_mib_per_core"].get<int64_t>() << 20);
    EXPECT_EQ(s->mxu_dim, g["mxu_dim"].get<int>());
    EXPECT_EQ(s->mxus_per_core, g["mxus_per_core"].get<int>());
    EXPECT_EQ(s->topology, g["topology"].get<std::string>());
    EXPECT_EQ(s->source, g["source"].get<std::string>());
  }
  EXPECT_EQ(json_names, cxx_names);
}

TEST(TpuSpecTest, TargetByNameGivesTpuTargetsFromTheTable) {
  for (const char* name : {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x"}) {
    Result<Target> t = TargetByName(name);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    EXPECT_EQ(t->name, name);
    EXPECT_EQ(t->kind, TargetKind::kTpu);
    EXPECT_GT(t->vmem_bytes, 0);
    EXPECT_TRUE(t->mxu_dim == 128 || t->mxu_dim == 256);
    EXPECT_FALSE(t->rates_measured);
  }
  Result<Target> v5e = TargetByName("tpu-v5e");
  ASSERT_TRUE(v5e.ok());
  EXPECT_DOUBLE_EQ(v5e->peak_flops_bf16, 197e12);
  EXPECT_DOUBLE_EQ(v5e->bandwidth_bytes_per_s, 820e9);
  EXPECT_EQ(v5e->vmem_bytes, 128 << 20);
  EXPECT_EQ(v5e->mxu_dim, 128);
  EXPECT_EQ(v5e->cores, 1);
  EXPECT_EQ(v5e->tpu_topology, "v5e:2x2");
  Result<Target> v6e = TargetByName("tpu-v6e");
  ASSERT_TRUE(v6e.ok());
  EXPECT_EQ(v6e->mxu_dim, 256);
  EXPECT_EQ(v6e->tpu_topology, "v6e:2x2");
  Result<Target> v5p = TargetByName("tpu-v5p");
  ASSERT_TRUE(v5p.ok());
  EXPECT_EQ(v5p->cores, 2);  // megacore
  EXPECT_EQ(v5p->vmem_bytes, 64 << 20);
}

TEST(TpuSpecTest, UnknownTargetNameListsEverySupportedName) {
  for (const char* bad : {"tpu-v3", "tpu", "TPU-v5e", "cuda-sm90", ""}) {
    Result<Target> t = TargetByName(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
    const std::string msg = t.status().ToString();
    for (const char* name : {"cpu", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x"}) {
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
    }
  }
}

// The derived clock reproduces the generations whose clocks are known, from the bf16 peak alone
// (the assumption stated in tpu_spec.h), and the VPU/EUP rates follow from it.
TEST(TpuSpecTest, DerivedClockMatchesKnownClocks) {
  auto clock = [](const char* name) { return TpuClockHz(*TargetByName(name)); };
  EXPECT_NEAR(clock("tpu-v4"), 1.05e9, 0.01e9);   // 275e12 / (2 * 4 * 128^2 * 2)
  EXPECT_NEAR(clock("tpu-v5e"), 1.50e9, 0.01e9);  // 197e12 / (4 * 128^2 * 2)
  EXPECT_NEAR(clock("tpu-v5p"), 1.75e9, 0.01e9);  // 459e12 / (2 * 4 * 128^2 * 2)
  const Target v5e = *TargetByName("tpu-v5e");
  // 1.503 GHz x 1024 elements x 4 slots; x 1024 for the EUP.
  EXPECT_NEAR(TpuVpuFlopsPerS(v5e), 197e12 / 131072 * 4096, 1e6);
  EXPECT_NEAR(TpuEupOpsPerS(v5e), 197e12 / 131072 * 1024, 1e6);
}

}  // namespace
}  // namespace mk::target
