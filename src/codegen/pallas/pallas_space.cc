#include "codegen/pallas/pallas_space.h"

#include <algorithm>

#include "codegen/pallas/conv_plan.h"

namespace mk::codegen::pallas {

int64_t VmemBudget(const target::Target& target) {
  return target.vmem_bytes > 0 ? target.vmem_bytes : int64_t{16} << 20;
}

namespace {

const char* ParamDoc(const std::string& name) {
  if (name == "bm") return "rows of the output block (M), a multiple of 8 or all of M";
  if (name == "bn") return "columns of the output block (N), a multiple of 128 or all of N";
  if (name == "bk") return "depth of one MXU step (K), a multiple of 128 or all of K";
  return "rows per grid step; each step computes its rows whole";
}

// The analytical choice: the largest legal block up to 512 (an MXU-friendly tile that keeps
// several grid steps for the pipeline), else the smallest legal one.
int64_t InitialBlock(const std::vector<int64_t>& legal) {
  int64_t best = legal.front();
  for (int64_t b : legal) {
    if (b <= 512) best = b;
  }
  return best;
}

}  // namespace

KernelDecision Decide(const analysis::Kernel& kernel, const target::Target& target) {
  KernelDecision d;
  d.plan = PlanBlocks(kernel);
  if (!d.plan.pallas) return d;
  std::vector<std::vector<int64_t>> domains;
  for (size_t a = 0; a < d.plan.axes.size(); ++a) {
    std::vector<int64_t> legal = LegalBlocks(d.plan.axes[a]);
    // MXU-aligned tiles: N and K blocks whole multiples of the MXU's side (256 on v6e), or the
    // whole dimension; a 128 block on a 256 MXU would leave half of it idle.
    const bool mxu_axis = static_cast<int>(a) == d.plan.axis_n || static_cast<int>(a) == d.plan.axis_k;
    if (mxu_axis && target.mxu_dim > 0) {
      const int64_t side = target.mxu_dim;
      const int64_t extent = d.plan.axes[a].extent;
      std::erase_if(legal, [&](int64_t b) { return b != extent && b % side != 0; });
    }
    domains.push_back(std::move(legal));
  }
  const int64_t budget = VmemBudget(target);
  auto largest = [&] {
    std::vector<int64_t> b;
    for (const auto& dom : domains) b.push_back(dom.back());
    return b;
  };
  while (VmemBytes(d.plan, largest()) > budget) {
    // Shrink the axis with the largest block that still has a smaller one.
    int pick = -1;
    for (size_t a = 0; a < domains.size(); ++a) {
      if (domains[a].size() > 1 && (pick < 0 || domains[a].back() > domains[static_cast<size_t>(pick)].back())) {
        pick = static_cast<int>(a);
      }
    }
    if (pick < 0) {
      std::vector<int64_t> smallest;
      for (const auto& dom : domains) smallest.push_back(dom.front());
      d.plan.pallas = false;
      d.plan.glue_reason = "its smallest legal blocks need " +
                           std::to_string(VmemBytes(d.plan, smallest)) + " bytes of VMEM, over " +
                           std::to_string(budget);
      return d;
    }
    domains[static_cast<size_t>(pick)].pop_back();
  }
  for (size_t a = 0; a < d.plan.axes.size(); ++a) {
    const auto& ax = d.plan.axes[a];
    if (ax.param.empty()) continue;
    const int64_t initial = d.plan.conv && static_cast<int>(a) == d.plan.axis_m
                                ? InitialConvRows(d.plan, domains[a], kConvInitialMaxM)
                                : InitialBlock(domains[a]);
    d.space.params.push_back({ax.param, domains[a], initial, ParamDoc(ax.param)});
  }
  return d;
}

}  // namespace mk::codegen::pallas
