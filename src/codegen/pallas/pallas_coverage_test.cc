// The compute-heavy part of every workload runs in a pallas_call: every dot, convolution,
// reduce and reduce-window of each ci task of the suite (bench/jaxbench, calls inlined as the engine does, the
// planner's default plan, each kernel's initial schedule) is computed inside the body of a
// kernel that runs "pallas" (listed in its ops_in_pallas), or is on the allowlist below with the
// reason it is not. Emitting only: nothing runs, no Python needed.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/fusion_plan.h"
#include "codegen/pallas/pallas_emitter.h"
#include "codegen/pallas/pallas_test_util.h"
#include "hlo/call_inliner.h"
#include "hlo/parser.h"

namespace mk::codegen::pallas {
namespace {

// An op allowed outside a pallas_call: the task, its op kind, the instruction, why.
struct Allowed {
  const char* task;
  const char* op;
  const char* instruction;
  const char* reason;
};

// Every entry is a cumulative sum (JAX's cumsum: a reduce-window over a whole axis with low
// padding), a scan that has no pallas_call form yet; none is where the workload's FLOPs are.
const Allowed kAllowed[] = {
    {"11p", "reduce-window", "jit_cumsum_.2.call.1.reduce_window_sum.7",
     "cumsum of the 128 s32 group sizes (grouped GEMM group offsets): a scan, no pallas_call form yet"},
    {"11p", "reduce-window", "jit_cumsum_.3.call.1.reduce_window_sum.7",
     "cumsum of the 128 s32 row-tile counts (grouped GEMM visit schedule): a scan, no pallas_call form yet"},
    {"14p", "reduce-window", "jit_cumsum_.2.call.1.reduce_window_sum.7",
     "cumsum of the 8 s32 group sizes (ragged dot group offsets): a scan, no pallas_call form yet"},
    {"14p", "reduce-window", "jit_cumsum_.3.call.1.reduce_window_sum.7",
     "cumsum of the 8 s32 row-tile counts (ragged dot visit schedule): a scan, no pallas_call form yet"},
    {"16p", "reduce-window", "jit_cumsum_.1.call.1.reduce_window_sum.7",
     "cumsum of dt*A over the 128 positions of a chunk (Mamba-2 SSD decay): a scan, no pallas_call form yet"},
};

bool Counted(hlo::Opcode op) {
  return op == hlo::Opcode::kDot || op == hlo::Opcode::kConvolution || op == hlo::Opcode::kReduce ||
         op == hlo::Opcode::kReduceWindow;
}

TEST(PallasCoverageTest, EveryDotConvolutionAndReduceOfTheCiTasksRunsInAPallasKernel) {
  namespace fs = std::filesystem;
  const fs::path suite = fs::path(MK_SOURCE_DIR) / "bench" / "jaxbench";
  std::map<std::pair<std::string, std::string>, const Allowed*> allowed;
  for (const Allowed& a : kAllowed) allowed[{a.task, a.instruction}] = &a;
  std::set<std::pair<std::string, std::string>> used;
  int tasks = 0, counted = 0, in_pallas = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(suite, ec)) {
    const fs::path hlo_path = entry.path() / "ci" / "module.hlo";
    if (!fs::exists(hlo_path)) continue;
    const std::string task = entry.path().filename().string();
    ++tasks;
    auto parsed = hlo::ParseModuleFile(hlo_path.string());
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    auto m = hlo::InlineCalls(**parsed);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    analysis::FusionOptions tpu_fusion;  // as agents::FusionOptionsFor gives a TPU target
    tpu_fusion.fuse_lane_reshapes = false;
    auto plan = analysis::PlanFusion(**m, tpu_fusion);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const auto t = testing::TpuV5e();
    auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, t), t);
    ASSERT_TRUE(impl.ok()) << task << ": " << impl.status().ToString();
    const auto map = nlohmann::json::parse(impl->sources.at(1).text);
    ASSERT_EQ(map.at("kernels").size(), plan->kernels.size());
    // Where each instruction is computed: its kernel's map entry, and whether in the body.
    std::map<const hlo::Instruction*, std::string> where;
    for (size_t ki = 0; ki < plan->kernels.size(); ++ki) {
      const auto& k = plan->kernels[ki];
      const auto& km = map.at("kernels")[ki];
      std::set<std::string> body;
      for (const auto& op : km.at("ops_in_pallas")) body.insert(op.get<std::string>());
      // "fused": computed inside another kernel's pallas_call (flash attention).
      const bool in_a_call = km.at("runs") == "pallas" || km.at("runs") == "fused";
      for (const hlo::Instruction* i : k.instructions) {
        if (in_a_call && body.count(i->name)) {
          where[i] = "";
        } else if (in_a_call) {
          where[i] = "in glue before the pallas_call of " + k.name;
        } else {
          where[i] = "in glue kernel " + k.name + " (" + km.at("reason").get<std::string>() + ")";
        }
      }
    }
    for (const auto& inst : (*m)->entry()->instructions()) {
      if (!Counted(inst->opcode)) continue;
      ++counted;
      auto w = where.find(inst.get());
      const std::string place = w == where.end() ? "in no kernel of the plan" : w->second;
      auto a = allowed.find({task, inst->name});
      if (place.empty()) {
        ++in_pallas;
        EXPECT_EQ(a, allowed.end()) << task << " " << inst->name
                                    << " now runs in a pallas_call: drop it from the allowlist";
        continue;
      }
      if (a != allowed.end() && a->second->op == hlo::OpcodeName(inst->opcode)) {
        used.insert(a->first);
        continue;
      }
      ADD_FAILURE() << task << ": " << hlo::OpcodeName(inst->opcode) << " %" << inst->name << " runs "
                    << place;
    }
  }
  if (tasks == 0) GTEST_SKIP() << "no ci tasks under " << suite;
  EXPECT_EQ(tasks, 50);
  for (const Allowed& a : kAllowed) {
    EXPECT_TRUE(used.count({a.task, a.instruction})) << "allowlist entry " << a.task << " " << a.instruction
                                                     << " matches no op outside a pallas_call";
  }
  // The suite has hundreds of these ops: a plan that lost them all would pass vacuously.
  EXPECT_GT(in_pallas, 100) << in_pallas << " of " << counted;
}

}  // namespace
}  // namespace mk::codegen::pallas
