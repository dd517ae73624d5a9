#include "modes/search/decision_graph.h"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace mk::modes::search {

namespace {

constexpr uint64_t kSaturate = uint64_t{1} << 62;

uint64_t SatMul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kSaturate / b ? kSaturate : a * b;
}

int IndexOf(const space::ParamDomain& d, int64_t value) {
  auto it = std::find(d.values.begin(), d.values.end(), value);
  return it == d.values.end() ? -1 : static_cast<int>(it - d.values.begin());
}

}  // namespace

DecisionGraph::DecisionGraph(std::vector<space::KernelSpace> spaces, std::vector<double> weights,
                             const space::Candidate& start)
    : spaces_(std::move(spaces)) {
  std::vector<int> order(spaces_.size());
  std::iota(order.begin(), order.end(), 0);
  if (weights.size() == spaces_.size()) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return weights[a] > weights[b]; });
  }
  for (int k : order) {
    const auto& params = spaces_[k].params;
    for (size_t p = 0; p < params.size(); ++p) {
      if (params[p].values.size() < 2) continue;
      decisions_.push_back({k, static_cast<int>(p)});
      const space::ParamDomain& d = params[p];
      int s = IndexOf(d, start.For(k).Get(d.name, d.initial));
      if (s < 0) s = std::max(0, IndexOf(d, d.initial));
      std::vector<int> idx(d.values.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(),
                       [s](int a, int b) { return std::abs(a - s) < std::abs(b - s); });
      child_order_.push_back(std::move(idx));
    }
  }
}

const space::ParamDomain& DecisionGraph::domain(const Decision& d) const {
  return spaces_[d.kernel].params[d.param];
}

std::vector<std::map<std::string, int64_t>> DecisionGraph::Fixed(const Node& n) const {
  std::vector<std::map<std::string, int64_t>> fixed(spaces_.size());
  for (size_t k = 0; k < spaces_.size(); ++k) {
    for (const auto& p : spaces_[k].params) {
      if (p.values.size() == 1) fixed[k][p.name] = p.values[0];
    }
  }
  for (size_t i = 0; i < n.size() && i < decisions_.size(); ++i) {
    const space::ParamDomain& d = domain(decisions_[i]);
    fixed[decisions_[i].kernel][d.name] = d.values[static_cast<size_t>(n[i])];
  }
  return fixed;
}

const space::Constraint* DecisionGraph::Violated(const Node& n) const {
  if (n.empty() || n.size() > decisions_.size()) return nullptr;
  const int k = decisions_[n.size() - 1].kernel;
  const space::KernelSpace& ks = spaces_[static_cast<size_t>(k)];
  if (ks.constraints.empty()) return nullptr;
  space::Schedule fixed;
  for (const auto& p : ks.params) {
    if (p.values.size() == 1) fixed.values[p.name] = p.values[0];
  }
  for (size_t i = 0; i < n.size(); ++i) {
    if (decisions_[i].kernel != k) continue;
    const space::ParamDomain& d = domain(decisions_[i]);
    fixed.values[d.name] = d.values[static_cast<size_t>(n[i])];
  }
  return ks.Violated(fixed);
}

const space::Constraint* DecisionGraph::Violated(const space::Candidate& c) const {
  for (size_t k = 0; k < spaces_.size(); ++k) {
    if (const space::Constraint* v = spaces_[k].Violated(c.For(k))) return v;
  }
  return nullptr;
}

space::Candidate DecisionGraph::ToCandidate(const Node& n) const {
  space::Candidate c;
  c.kernels.resize(spaces_.size());
  for (size_t k = 0; k < spaces_.size(); ++k) {
    for (const auto& p : spaces_[k].params) c.kernels[k].values[p.name] = p.values.empty() ? p.initial : p.values[0];
  }
  for (size_t i = 0; i < decisions_.size(); ++i) {
    const space::ParamDomain& d = domain(decisions_[i]);
    const int v = i < n.size() ? n[i] : StartIndex(i);
    c.kernels[decisions_[i].kernel].values[d.name] = d.values[static_cast<size_t>(v)];
  }
  return c;
}

std::optional<Node> DecisionGraph::NodeOf(const space::Candidate& c) const {
  Node n;
  for (const Decision& dec : decisions_) {
    const space::ParamDomain& d = domain(dec);
    auto it = c.For(dec.kernel).values.find(d.name);
    if (it == c.For(dec.kernel).values.end()) return std::nullopt;
    const int i = IndexOf(d, it->second);
    if (i < 0) return std::nullopt;
    n.push_back(i);
  }
  return n;
}

uint64_t DecisionGraph::Completions(const Node& n) const {
  uint64_t total = 1;
  for (size_t i = n.size(); i < decisions_.size(); ++i) {
    total = SatMul(total, domain(decisions_[i]).values.size());
  }
  return total;
}

nlohmann::json DecisionGraph::ToJson() const {
  nlohmann::json decisions = nlohmann::json::array();
  for (size_t i = 0; i < decisions_.size(); ++i) {
    const space::ParamDomain& d = domain(decisions_[i]);
    decisions.push_back({{"kernel", decisions_[i].kernel},
                         {"param", d.name},
                         {"values", d.values},
                         {"start", d.values[static_cast<size_t>(StartIndex(i))]}});
  }
  nlohmann::json constraints = nlohmann::json::array();
  for (size_t k = 0; k < spaces_.size(); ++k) {
    for (const auto& c : spaces_[k].constraints) {
      constraints.push_back({{"kernel", k}, {"name", c.name}, {"reason", c.reason}});
    }
  }
  return {{"decisions", decisions}, {"constraints", constraints}, {"space_size", SpaceSize()}};
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
      const Decision& d = decisions_[n.size() - 1];
      dot << "  " << id(parent) << " -> " << id(n) << " [label="
          << quoted("k" + std::to_string(d.kernel) + "." + domain(d).name + "=" +
                    std::to_string(domain(d).values[static_cast<size_t>(n.back())]))
          << "];\n";
    }
  }
  dot << "}\n";
  return dot.str();
}

std::string CandidateKey(const space::Candidate& c) {
  std::string key;
  for (const auto& s : c.kernels) {
    for (const auto& [name, value] : s.values) key += name + "=" + std::to_string(value) + ",";
    key += ";";
  }
  return key;
}

}  // namespace mk::modes::search
