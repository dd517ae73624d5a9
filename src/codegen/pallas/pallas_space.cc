#include "codegen/pallas/pallas_space.h"

#include <algorithm>

#include "codegen/pallas/conv_plan.h"

namespace mk::codegen::pallas {

int64_t VmemBudget(const target::Target& target) {
  return target.vmem_bytes > 0 ? target.vmem_bytes : int64_t{16} << 20;
}

int64_t ScopedVmemLimit(const target::Target& target, int64_t vmem) {
  const int64_t wanted = std::max({2 * vmem, vmem + (int64_t{4} << 20), int64_t{16} << 20});
  return std::min(VmemBudget(target), wanted);
}

namespace {

const char* ParamDoc(const std::string& name) {
  if (name == "bm") return "rows of the output block (M), a multiple of 8 or all of M";
  if (name == "bn") return "columns of the output block (N), a multiple of 128 or all of N";
  if (name == "bk") return "depth of one MXU step (K), a multiple of 128 or all of K";
  return "rows per grid step; each step computes its rows whole";
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
  std::vector<std::vector<int64_t>*> cut;
  for (auto& dom : domains) cut.push_back(&dom);
  const std::string too_big = FitBlocksToVmem(
      cut, VmemBudget(target), [&](const std::vector<int64_t>& blocks) { return VmemBytes(d.plan, blocks); });
  if (!too_big.empty()) {
    d.plan.pallas = false;
    d.plan.glue_reason = too_big;
    return d;
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

std::string FitBlocksToVmem(const std::vector<std::vector<int64_t>*>& domains, int64_t budget,
                            const std::function<int64_t(const std::vector<int64_t>&)>& vmem) {
  auto largest = [&] {
    std::vector<int64_t> b;
    for (const auto* dom : domains) b.push_back(dom->back());
    return b;
  };
  while (vmem(largest()) > budget) {
    std::vector<int64_t>* pick = nullptr;
    for (auto* dom : domains) {
      if (dom->size() > 1 && (pick == nullptr || dom->back() > pick->back())) pick = dom;
    }
    if (pick == nullptr) {
      return "its smallest legal blocks need " + std::to_string(vmem(largest())) +
             " bytes of VMEM, over " + std::to_string(budget);
    }
    pick->pop_back();
  }
  return "";
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

}  // namespace mk::codegen::pallas
