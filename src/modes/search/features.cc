#include "modes/search/features.h"

#include <cmath>

#include "modes/search/plan_search.h"

namespace mk::modes::search {

namespace {

// The parameters the CPU emitters declare (codegen/cpu/*_space.cc). Sizes enter as log2.
struct Known {
  const char* name;
  bool log;
};
constexpr Known kParams[] = {
    {"threads", false},   {"vector_bits", true}, {"vectorize", false},  {"unroll", true},
    {"tile_inner", true}, {"row_fuse", false},   {"reduce_lanes", true}, {"gemm_blocked", false},
    {"amx", false},       {"mr", false},         {"nr", false},          {"kc", true},
    {"mc", true},         {"nc", true},          {"unroll_k", true},     {"prefetch_c", false},
    {"prefetch_ab", false}, {"pack_b", false},   {"pack_a", false},      {"inner", false},
    {"share_a", false},   {"thread_split", false}, {"loop_order", false}, {"fuse_epilogue", false},
};

float Log2(double v) { return static_cast<float>(std::log2(std::max(v, 1.0))); }

}  // namespace

const std::vector<std::string>& FeatureMap::Names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"log2_flops", "log2_bytes", "log2_intensity", "log2_bound_ns",
                                  "bound_over_root", "share_contraction", "share_reduction",
                                  "share_loop", "threads_over_cores"};
    for (const Known& k : kParams) n.push_back(std::string("param_") + k.name);
    for (const char* f : {"gemm_a_block_over_l2", "gemm_b_panel_over_l3", "gemm_tile_registers"}) {
      n.push_back(f);
    }
    return n;
  }();
  return names;
}

FeatureMap::FeatureMap(const agents::Plan& plan) : bound_(BoundOfPlan(plan)) {
  double total = 0;
  for (const auto& k : plan.kernels) total += std::max(k.lower_bound_s, 0.0);
  double heaviest = -1;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const auto& k = plan.kernels[i];
    const double w = total > 0 ? std::max(k.lower_bound_s, 0.0) / total : 1.0 / plan.kernels.size();
    weights_.push_back(w);
    families_.push_back(k.family);
    flops_ += static_cast<double>(k.flops);
    bytes_ += static_cast<double>(k.bytes);
    if (k.family == "contraction") {
      share_contraction_ += w;
      if (w > heaviest) heaviest = w, heaviest_gemm_ = static_cast<int>(i);
    } else if (k.family == "reduction") {
      share_reduction_ += w;
    } else if (k.family == "loop") {
      share_loop_ += w;
    }
  }
  root_bound_ = bound_.Of({});
  cores_ = std::max(1, plan.target.cores);
  l2_ = static_cast<double>(plan.target.l2_bytes);
  l3_ = static_cast<double>(plan.target.l3_bytes);
  vector_registers_ = plan.target.vector_registers;
  vector_bytes_ = plan.target.vector_bytes;
}

std::vector<float> FeatureMap::Of(const space::Candidate& c) const {
  std::vector<float> f;
  f.reserve(columns());
  std::vector<std::map<std::string, int64_t>> fixed;
  for (const auto& s : c.kernels) fixed.push_back(s.values);
  const double bound = bound_.Of(fixed);
  f.push_back(Log2(flops_));
  f.push_back(Log2(bytes_));
  f.push_back(static_cast<float>(std::log2(bytes_ > 0 ? std::max(flops_, 1.0) / bytes_ : 1.0)));
  f.push_back(Log2(bound * 1e9));
  f.push_back(static_cast<float>(root_bound_ > 0 ? bound / root_bound_ : 1.0));
  f.push_back(static_cast<float>(share_contraction_));
  f.push_back(static_cast<float>(share_reduction_));
  f.push_back(static_cast<float>(share_loop_));
  double threads = 0, threads_w = 0;
  for (size_t k = 0; k < weights_.size(); ++k) {
    if (auto t = c.For(k).values.find("threads"); t != c.For(k).values.end()) {
      threads += weights_[k] * static_cast<double>(t->second);
      threads_w += weights_[k];
    }
  }
  f.push_back(threads_w > 0 ? static_cast<float>(threads / threads_w / cores_) : NAN);
  for (const Known& p : kParams) {
    double sum = 0, w = 0;
    for (size_t k = 0; k < weights_.size(); ++k) {
      auto it = c.For(k).values.find(p.name);
      if (it == c.For(k).values.end()) continue;
      const double v = p.log ? std::log2(std::max<double>(static_cast<double>(it->second), 1.0))
                             : static_cast<double>(it->second);
      sum += weights_[k] * v;
      w += weights_[k];
    }
    f.push_back(w > 0 ? static_cast<float>(sum / w) : NAN);
  }
  // The heaviest GEMM's blocking (f32 operands: 4 bytes an element, a conservative size).
  float a_l2 = NAN, b_l3 = NAN, regs = NAN;
  if (heaviest_gemm_ >= 0) {
    const space::Schedule& s = c.For(static_cast<size_t>(heaviest_gemm_));
    const double mc = static_cast<double>(s.Get("mc", 0)), kc = static_cast<double>(s.Get("kc", 0));
    const double nc = static_cast<double>(s.Get("nc", 0)), mr = static_cast<double>(s.Get("mr", 0));
    const double nr = static_cast<double>(s.Get("nr", 0));
    if (mc > 0 && kc > 0 && l2_ > 0) a_l2 = static_cast<float>(mc * kc * 4 / l2_);
    if (nc > 0 && kc > 0 && l3_ > 0) b_l3 = static_cast<float>(nc * kc * 4 / l3_);
    // Accumulators: MR rows of NR columns, in vectors of vector_bytes / 4 lanes.
    if (mr > 0 && nr > 0) regs = static_cast<float>(mr * nr * 4 / vector_bytes_ / vector_registers_);
  }
  f.push_back(a_l2);
  f.push_back(b_l3);
  f.push_back(regs);
  return f;
}

}  // namespace mk::modes::search
