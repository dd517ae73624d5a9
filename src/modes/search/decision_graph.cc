#include "modes/search/decision_graph.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <sstream>

namespace mk::modes::search {

namespace {

constexpr uint64_t kSaturate = uint64_t{1} << 62;

uint64_t SatMul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kSaturate / b ? kSaturate : a * b;
}

uint64_t SatAdd(uint64_t a, uint64_t b) { return a > kSaturate - b ? kSaturate : a + b; }

int IndexOf(const space::ParamDomain& d, int64_t value) {
  auto it = std::find(d.values.begin(), d.values.end(), value);
  return it == d.values.end() ? -1 : static_cast<int>(it - d.values.begin());
}

// Whether `mask`'s low `bits` bits are `prefix`'s values.
bool Extends(uint32_t mask, const Node& prefix, size_t bits) {
  for (size_t i = 0; i < bits; ++i) {
    if (((mask >> i) & 1u) != static_cast<uint32_t>(prefix[i])) return false;
  }
  return true;
}

}  // namespace

DecisionGraph::Variant DecisionGraph::MakeVariant(PlanVariant plan) {
  Variant v;
  v.plan = std::move(plan);
  const auto& spaces = v.plan.spaces;
  std::vector<int> order(spaces.size());
  std::iota(order.begin(), order.end(), 0);
  if (v.plan.weights.size() == spaces.size()) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return v.plan.weights[a] > v.plan.weights[b]; });
  }
  for (int k : order) {
    const auto& params = spaces[static_cast<size_t>(k)].params;
    for (size_t p = 0; p < params.size(); ++p) {
      if (params[p].values.size() < 2) continue;
      v.decisions.push_back({k, static_cast<int>(p)});
      const space::ParamDomain& d = params[p];
      int s = IndexOf(d, v.plan.start.For(static_cast<size_t>(k)).Get(d.name, d.initial));
      if (s < 0) s = std::max(0, IndexOf(d, d.initial));
      std::vector<int> idx(d.values.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(),
                       [s](int a, int b) { return std::abs(a - s) < std::abs(b - s); });
      v.child_order.push_back(std::move(idx));
      v.size = SatMul(v.size, d.values.size());
      v.size_approx *= static_cast<double>(d.values.size());
    }
  }
  return v;
}

DecisionGraph::DecisionGraph(std::vector<space::KernelSpace> spaces, std::vector<double> weights,
                             const space::Candidate& start) {
  PlanVariant plan;
  plan.fusion = start.fusion;
  plan.kernel_ids = start.kernel_ids;
  plan.spaces = std::move(spaces);
  plan.weights = std::move(weights);
  plan.start = start;
  variants_.push_back(MakeVariant(std::move(plan)));
  variant_of_ = {0};
}

DecisionGraph::DecisionGraph(std::vector<FusionDecision> fusion, std::vector<PlanVariant> variants,
                             std::vector<int> variant_of)
    : fusion_(std::move(fusion)), variant_of_(std::move(variant_of)) {
  for (auto& p : variants) variants_.push_back(MakeVariant(std::move(p)));
  // Each variant's canonical assignment: the one with the fewest flips (then the lowest mask).
  std::vector<uint32_t> masks(variant_of_.size());
  std::iota(masks.begin(), masks.end(), 0u);
  std::stable_sort(masks.begin(), masks.end(),
                   [](uint32_t a, uint32_t b) { return std::popcount(a) < std::popcount(b); });
  std::vector<bool> seen(variants_.size(), false);
  for (uint32_t m : masks) {
    const int v = variant_of_[m];
    if (seen[static_cast<size_t>(v)]) continue;
    seen[static_cast<size_t>(v)] = true;
    variants_[static_cast<size_t>(v)].mask = m;
  }
}

const space::ParamDomain& DecisionGraph::Domain(const Variant& v, const Decision& d) const {
  return v.plan.spaces[static_cast<size_t>(d.kernel)].params[static_cast<size_t>(d.param)];
}

const space::ParamDomain& DecisionGraph::domain(const Decision& d) const {
  return Domain(variants_[0], d);
}

uint32_t DecisionGraph::MaskOf(const Node& n) const {
  uint32_t mask = 0;
  for (size_t i = 0; i < fusion_.size() && i < n.size(); ++i) {
    if (n[i] == 1) mask |= 1u << i;
  }
  return mask;
}

bool DecisionGraph::Canonical(uint32_t mask) const {
  return variants_[static_cast<size_t>(variant_of_[mask])].mask == mask;
}

int DecisionGraph::VariantOf(const Node& n) const {
  if (n.size() < fusion_.size()) return -1;
  return variant_of_[MaskOf(n)];
}

int DecisionGraph::VariantOf(const space::Candidate& c) const {
  if (fusion_.empty()) return c.fusion == variants_[0].plan.fusion ? 0 : -1;
  uint32_t mask = 0;
  for (const auto& [key, fuse] : c.fusion) {
    auto it = std::find_if(fusion_.begin(), fusion_.end(),
                           [&](const FusionDecision& d) { return d.key == key; });
    if (it == fusion_.end()) return -1;
    if (fuse != it->planner_fuses) mask |= 1u << (it - fusion_.begin());
  }
  return variant_of_[mask];
}

std::vector<int> DecisionGraph::VariantsUnder(const Node& n) const {
  if (n.size() >= fusion_.size()) {
    if (!Canonical(MaskOf(n))) return {};
    return {VariantOf(n)};
  }
  std::vector<int> out;
  for (const Variant& v : variants_) {
    if (Extends(v.mask, n, n.size()) && variant_of_[v.mask] == static_cast<int>(&v - variants_.data())) {
      out.push_back(static_cast<int>(&v - variants_.data()));
    }
  }
  return out;
}

bool DecisionGraph::Complete(const Node& n) const {
  const int v = VariantOf(n);
  return v >= 0 && n.size() == fusion_.size() + variants_[static_cast<size_t>(v)].decisions.size();
}

std::vector<int> DecisionGraph::ChildrenOf(const Node& n) const {
  if (n.size() < fusion_.size()) {
    std::vector<int> out;
    for (int value : {0, 1}) {
      Node child = n;
      child.push_back(value);
      if (!VariantsUnder(child).empty()) out.push_back(value);
    }
    return out;
  }
  const Variant& v = variants_[static_cast<size_t>(VariantOf(n))];
  return v.child_order[n.size() - fusion_.size()];
}

size_t DecisionGraph::ValueCount(const Node& n) const {
  if (n.size() < fusion_.size()) return 2;
  const Variant& v = variants_[static_cast<size_t>(VariantOf(n))];
  return Domain(v, v.decisions[n.size() - fusion_.size()]).values.size();
}

int DecisionGraph::StartChild(const Node& n) const {
  if (n.size() < fusion_.size()) return 0;
  return variants_[static_cast<size_t>(VariantOf(n))].child_order[n.size() - fusion_.size()].front();
}

Node DecisionGraph::StartNode() const {
  Node n(fusion_.size(), 0);
  for (const auto& order : variants_[static_cast<size_t>(variant_of_[0])].child_order) {
    n.push_back(order.front());
  }
  return n;
}

std::string DecisionGraph::EdgeLabel(const Node& n) const {
  if (n.empty()) return "root";
  if (n.size() <= fusion_.size()) {
    const FusionDecision& d = fusion_[n.size() - 1];
    const bool fuse = (n.back() == 0) == d.planner_fuses;
    return "fusion " + d.key + "=" + (fuse ? "fuse" : "apart");
  }
  const Variant& v = variants_[static_cast<size_t>(VariantOf(n))];
  const Decision& d = v.decisions[n.size() - 1 - fusion_.size()];
  const space::ParamDomain& dom = Domain(v, d);
  const size_t k = static_cast<size_t>(d.kernel);
  const std::string id = k < v.plan.kernel_ids.size() ? v.plan.kernel_ids[k] : std::to_string(k);
  return "kernel " + id + " " + dom.name + "=" + std::to_string(dom.values[static_cast<size_t>(n.back())]);
}

int DecisionGraph::KernelAfter(const Node& n) const {
  if (n.size() < fusion_.size()) return -1;
  return variants_[static_cast<size_t>(VariantOf(n))].decisions[n.size() - fusion_.size()].kernel;
}

Node DecisionGraph::WithFusion(const Node& n, const std::vector<int>& fusion) const {
  uint32_t mask = 0;
  for (size_t i = 0; i < fusion_.size() && i < fusion.size(); ++i) {
    if (fusion[i] == 1) mask |= 1u << i;
  }
  const Variant& to = variants_[static_cast<size_t>(variant_of_[mask])];
  const space::Candidate from = ToCandidate(n);
  const int from_v = VariantOf(n);
  const std::vector<std::string> no_ids;
  const std::vector<std::string>& from_ids =
      from_v >= 0 ? variants_[static_cast<size_t>(from_v)].plan.kernel_ids : no_ids;
  Node out;
  for (size_t i = 0; i < fusion_.size(); ++i) out.push_back(static_cast<int>((to.mask >> i) & 1u));
  for (size_t i = 0; i < to.decisions.size(); ++i) {
    const Decision& d = to.decisions[i];
    const space::ParamDomain& dom = Domain(to, d);
    int value = to.child_order[i].front();
    const size_t k = static_cast<size_t>(d.kernel);
    if (k < to.plan.kernel_ids.size()) {
      auto same = std::find(from_ids.begin(), from_ids.end(), to.plan.kernel_ids[k]);
      if (same != from_ids.end()) {
        const space::Schedule& s = from.For(static_cast<size_t>(same - from_ids.begin()));
        if (auto it = s.values.find(dom.name); it != s.values.end()) {
          if (const int idx = IndexOf(dom, it->second); idx >= 0) value = idx;
        }
      }
    }
    out.push_back(value);
  }
  return out;
}

Node DecisionGraph::Random(std::mt19937_64& rng) const {
  Node n;
  while (!Complete(n)) {
    if (n.size() < fusion_.size()) {
      const std::vector<int> children = ChildrenOf(n);
      n.push_back(children[std::uniform_int_distribution<size_t>(0, children.size() - 1)(rng)]);
    } else {
      n.push_back(static_cast<int>(std::uniform_int_distribution<size_t>(0, ValueCount(n) - 1)(rng)));
    }
  }
  return n;
}

std::optional<Node> DecisionGraph::NextInOrder(const std::optional<Node>& n) const {
  auto first_leaf = [&](Node p) {
    while (!Complete(p)) {
      std::vector<int> children = ChildrenOf(p);
      p.push_back(*std::min_element(children.begin(), children.end()));
    }
    return p;
  };
  if (!n) return first_leaf({});
  for (size_t i = n->size(); i > 0; --i) {
    Node prefix(n->begin(), n->begin() + static_cast<std::ptrdiff_t>(i - 1));
    std::vector<int> children = ChildrenOf(prefix);
    std::sort(children.begin(), children.end());
    auto next = std::upper_bound(children.begin(), children.end(), (*n)[i - 1]);
    if (next == children.end()) continue;
    prefix.push_back(*next);
    return first_leaf(std::move(prefix));
  }
  return std::nullopt;
}

std::vector<std::map<std::string, int64_t>> DecisionGraph::Fixed(const Node& n) const {
  const int vi = VariantOf(n);
  const Variant& v = variants_[static_cast<size_t>(std::max(vi, 0))];
  std::vector<std::map<std::string, int64_t>> fixed(v.plan.spaces.size());
  for (size_t k = 0; k < v.plan.spaces.size(); ++k) {
    for (const auto& p : v.plan.spaces[k].params) {
      if (p.values.size() == 1) fixed[k][p.name] = p.values[0];
    }
  }
  if (vi < 0) return fixed;
  for (size_t i = fusion_.size(); i < n.size() && i - fusion_.size() < v.decisions.size(); ++i) {
    const Decision& d = v.decisions[i - fusion_.size()];
    const space::ParamDomain& dom = Domain(v, d);
    fixed[static_cast<size_t>(d.kernel)][dom.name] = dom.values[static_cast<size_t>(n[i])];
  }
  return fixed;
}

const space::Constraint* DecisionGraph::Violated(const Node& n) const {
  if (n.size() <= fusion_.size()) return nullptr;
  const Variant& v = variants_[static_cast<size_t>(VariantOf(n))];
  if (n.size() > fusion_.size() + v.decisions.size()) return nullptr;
  const int k = v.decisions[n.size() - 1 - fusion_.size()].kernel;
  const space::KernelSpace& ks = v.plan.spaces[static_cast<size_t>(k)];
  if (ks.constraints.empty()) return nullptr;
  space::Schedule fixed;
  for (const auto& p : ks.params) {
    if (p.values.size() == 1) fixed.values[p.name] = p.values[0];
  }
  for (size_t i = fusion_.size(); i < n.size(); ++i) {
    const Decision& d = v.decisions[i - fusion_.size()];
    if (d.kernel != k) continue;
    const space::ParamDomain& dom = Domain(v, d);
    fixed.values[dom.name] = dom.values[static_cast<size_t>(n[i])];
  }
  return ks.Violated(fixed);
}

const space::Constraint* DecisionGraph::Violated(const space::Candidate& c) const {
  const int vi = VariantOf(c);
  if (vi < 0) return nullptr;
  const auto& spaces = variants_[static_cast<size_t>(vi)].plan.spaces;
  for (size_t k = 0; k < spaces.size(); ++k) {
    if (const space::Constraint* v = spaces[k].Violated(c.For(k))) return v;
  }
  return nullptr;
}

space::Candidate DecisionGraph::ToCandidate(const Node& n) const {
  const Variant& v = variants_[static_cast<size_t>(variant_of_[MaskOf(n)])];
  space::Candidate c;
  c.fusion = v.plan.fusion;
  c.kernel_ids = v.plan.kernel_ids;
  c.kernels.resize(v.plan.spaces.size());
  for (size_t k = 0; k < v.plan.spaces.size(); ++k) {
    for (const auto& p : v.plan.spaces[k].params) {
      c.kernels[k].values[p.name] = p.values.empty() ? p.initial : p.values[0];
    }
  }
  // Parameters are n's only when its fusion values are its variant's canonical ones.
  const bool own = n.size() >= fusion_.size() && MaskOf(n) == v.mask;
  for (size_t i = 0; i < v.decisions.size(); ++i) {
    const Decision& d = v.decisions[i];
    const space::ParamDomain& dom = Domain(v, d);
    const size_t at = fusion_.size() + i;
    const int value = own && at < n.size() ? n[at] : v.child_order[i].front();
    c.kernels[static_cast<size_t>(d.kernel)].values[dom.name] = dom.values[static_cast<size_t>(value)];
  }
  return c;
}

std::optional<Node> DecisionGraph::NodeOf(const space::Candidate& c) const {
  const int vi = VariantOf(c);
  if (vi < 0) return std::nullopt;
  const Variant& v = variants_[static_cast<size_t>(vi)];
  Node n;
  for (size_t i = 0; i < fusion_.size(); ++i) n.push_back(static_cast<int>((v.mask >> i) & 1u));
  for (const Decision& dec : v.decisions) {
    const space::ParamDomain& d = Domain(v, dec);
    const space::Schedule& s = c.For(static_cast<size_t>(dec.kernel));
    auto it = s.values.find(d.name);
    if (it == s.values.end()) return std::nullopt;
    const int i = IndexOf(d, it->second);
    if (i < 0) return std::nullopt;
    n.push_back(i);
  }
  return n;
}

uint64_t DecisionGraph::Completions(const Node& n) const {
  if (n.size() < fusion_.size()) {
    uint64_t total = 0;
    for (int v : VariantsUnder(n)) total = SatAdd(total, variants_[static_cast<size_t>(v)].size);
    return total;
  }
  const uint32_t mask = MaskOf(n);
  if (!Canonical(mask)) return 0;
  const Variant& v = variants_[static_cast<size_t>(variant_of_[mask])];
  uint64_t total = 1;
  for (size_t i = n.size() - fusion_.size(); i < v.decisions.size(); ++i) {
    total = SatMul(total, Domain(v, v.decisions[i]).values.size());
  }
  return total;
}

double DecisionGraph::CompletionsApprox(const Node& n) const {
  if (n.size() < fusion_.size()) {
    double total = 0;
    for (int v : VariantsUnder(n)) total += variants_[static_cast<size_t>(v)].size_approx;
    return total;
  }
  const uint32_t mask = MaskOf(n);
  if (!Canonical(mask)) return 0;
  const Variant& v = variants_[static_cast<size_t>(variant_of_[mask])];
  double total = 1;
  for (size_t i = n.size() - fusion_.size(); i < v.decisions.size(); ++i) {
    total *= static_cast<double>(Domain(v, v.decisions[i]).values.size());
  }
  return total;
}

nlohmann::json DecisionGraph::ToJson() const {
  const Variant& planner = variants_[static_cast<size_t>(variant_of_[0])];
  auto id_of = [](const Variant& v, int k) {
    const size_t i = static_cast<size_t>(k);
    return i < v.plan.kernel_ids.size() ? v.plan.kernel_ids[i] : std::to_string(k);
  };
  nlohmann::json decisions = nlohmann::json::array();
  for (size_t i = 0; i < planner.decisions.size(); ++i) {
    const Decision& d = planner.decisions[i];
    const space::ParamDomain& dom = Domain(planner, d);
    decisions.push_back({{"kernel", d.kernel},
                         {"kernel_id", id_of(planner, d.kernel)},
                         {"param", dom.name},
                         {"values", dom.values},
                         {"start", dom.values[static_cast<size_t>(planner.child_order[i].front())]}});
  }
  nlohmann::json constraints = nlohmann::json::array();
  for (size_t k = 0; k < planner.plan.spaces.size(); ++k) {
    for (const auto& c : planner.plan.spaces[k].constraints) {
      constraints.push_back({{"kernel", k}, {"name", c.name}, {"reason", c.reason}});
    }
  }
  nlohmann::json fusion = nlohmann::json::array();
  for (const FusionDecision& f : fusion_) {
    fusion.push_back({{"key", f.key}, {"planner_fuses", f.planner_fuses}, {"description", f.description}});
  }
  nlohmann::json variants = nlohmann::json::array();
  for (size_t v = 0; v < variants_.size(); ++v) {
    if (!Canonical(variants_[v].mask) || variant_of_[variants_[v].mask] != static_cast<int>(v)) continue;
    nlohmann::json kernels = nlohmann::json::array();
    for (size_t k = 0; k < variants_[v].plan.spaces.size(); ++k) {
      kernels.push_back(id_of(variants_[v], static_cast<int>(k)));
    }
    variants.push_back({{"fusion", variants_[v].plan.fusion},
                        {"kernels", kernels},
                        {"space_size", variants_[v].size},
                        {"space_size_approx", variants_[v].size_approx}});
  }
  return {{"fusion", fusion},         {"variants", variants},
          {"decisions", decisions},   {"constraints", constraints},
          {"space_size", SpaceSize()}};
}

std::string DecisionGraph::ToDot(const std::vector<std::pair<Node, std::string>>& nodes) const {
  auto id = [](const Node& n) {
    std::string s = "n";
    for (int v : n) s += "_" + std::to_string(v);
    return s;
  };
  auto quoted = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += (c == '\n' ? ' ' : c);
    }
    return out + "\"";
  };
  std::ostringstream dot;
  dot << "digraph search {\n  node [shape=box, fontsize=10];\n";
  for (const auto& [n, label] : nodes) {
    dot << "  " << id(n) << " [label=" << quoted(label) << "];\n";
    if (!n.empty()) {
      Node parent(n.begin(), n.end() - 1);
      dot << "  " << id(parent) << " -> " << id(n) << " [label=" << quoted(EdgeLabel(n)) << "];\n";
    }
  }
  dot << "}\n";
  return dot.str();
}

std::string CandidateKey(const space::Candidate& c) {
  std::string key;
  for (const auto& [choice, fuse] : c.fusion) key += choice + (fuse ? "=fuse," : "=apart,");
  key += "|";
  for (const auto& s : c.kernels) {
    for (const auto& [name, value] : s.values) key += name + "=" + std::to_string(value) + ",";
    key += ";";
  }
  return key;
}

}  // namespace mk::modes::search
