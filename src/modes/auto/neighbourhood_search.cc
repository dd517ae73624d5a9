#include "modes/auto/neighbourhood_search.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace mk::modes {

NeighbourhoodSearch::NeighbourhoodSearch(std::vector<space::KernelSpace> spaces,
                                         space::Candidate initial,
                                         std::vector<double> kernel_weights, uint64_t seed,
                                         double random_fraction)
    : spaces_(std::move(spaces)),
      initial_(std::move(initial)),
      weights_(std::move(kernel_weights)),
      random_fraction_(random_fraction),
      rng_(seed) {
  if (weights_.size() != spaces_.size()) weights_.assign(spaces_.size(), 1.0);
  // A kernel without parameters cannot move; one with zero weight still gets a small chance.
  for (size_t k = 0; k < spaces_.size(); ++k) {
    if (spaces_[k].params.empty()) weights_[k] = 0;
    else weights_[k] = std::max(weights_[k], 1e-9);
  }
}

std::string NeighbourhoodSearch::Key(const space::Candidate& candidate) const {
  return space::ToJson(candidate).dump();
}

bool NeighbourhoodSearch::Legal(const space::Candidate& candidate) const {
  for (size_t k = 0; k < spaces_.size(); ++k) {
    if (spaces_[k].Violated(candidate.For(k))) return false;
  }
  return true;
}

bool NeighbourhoodSearch::Tried(const space::Candidate& candidate) const {
  return tried_.count(Key(candidate)) > 0;
}

void NeighbourhoodSearch::Record(const space::Candidate& candidate, std::optional<double> time_s) {
  tried_.insert(Key(candidate));
  if (time_s && (!best_ || *time_s < best_time_)) {
    best_ = candidate;
    best_time_ = *time_s;
  }
}

uint64_t NeighbourhoodSearch::SpaceSize() const {
  constexpr uint64_t kCap = uint64_t{1} << 62;
  uint64_t size = 1;
  for (const auto& s : spaces_) {
    for (const auto& p : s.params) {
      uint64_t n = std::max<uint64_t>(1, p.values.size());
      size = size > kCap / n ? kCap : size * n;
    }
  }
  return size;
}

std::vector<space::Candidate> NeighbourhoodSearch::LocalMoves(const space::Candidate& from) const {
  std::vector<space::Candidate> moves;
  for (size_t k = 0; k < spaces_.size() && k < from.kernels.size(); ++k) {
    for (const auto& p : spaces_[k].params) {
      auto it = std::find(p.values.begin(), p.values.end(), from.kernels[k].Get(p.name, p.initial));
      if (it == p.values.end()) continue;
      size_t i = static_cast<size_t>(it - p.values.begin());
      for (int step : {-1, 1}) {
        if ((step < 0 && i == 0) || (step > 0 && i + 1 >= p.values.size())) continue;
        space::Candidate c = from;
        c.kernels[k].values[p.name] = p.values[i + static_cast<size_t>(step)];
        moves.push_back(std::move(c));
      }
    }
  }
  // Sweeps: one value of a parameter on every kernel that declares it.
  std::map<std::string, std::set<int64_t>> values_of;
  for (const auto& s : spaces_) {
    for (const auto& p : s.params) values_of[p.name].insert(p.values.begin(), p.values.end());
  }
  if (spaces_.size() > 1) {
    for (const auto& [name, values] : values_of) {
      for (int64_t v : values) {
        space::Candidate c = from;
        bool changed = false;
        for (size_t k = 0; k < spaces_.size() && k < c.kernels.size(); ++k) {
          for (const auto& p : spaces_[k].params) {
            if (p.name != name || std::find(p.values.begin(), p.values.end(), v) == p.values.end()) {
              continue;
            }
            changed |= c.kernels[k].Get(name, p.initial) != v;
            c.kernels[k].values[name] = v;
          }
        }
        if (changed) moves.push_back(std::move(c));
      }
    }
  }
  return moves;
}

size_t NeighbourhoodSearch::PickKernel() {
  double total = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  if (!(total > 0)) return 0;
  std::uniform_real_distribution<double> u(0, total);
  double x = u(rng_);
  for (size_t k = 0; k < weights_.size(); ++k) {
    if (x < weights_[k]) return k;
    x -= weights_[k];
  }
  return weights_.size() - 1;
}

std::optional<space::Candidate> NeighbourhoodSearch::RandomPerturbation(
    const space::Candidate& from) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    space::Candidate c = from;
    int changes = std::uniform_int_distribution<int>(2, 4)(rng_);
    for (int i = 0; i < changes; ++i) {
      size_t k = PickKernel();
      if (k >= spaces_.size() || spaces_[k].params.empty()) continue;
      const auto& params = spaces_[k].params;
      const auto& p = params[std::uniform_int_distribution<size_t>(0, params.size() - 1)(rng_)];
      c.kernels[k].values[p.name] =
          p.values[std::uniform_int_distribution<size_t>(0, p.values.size() - 1)(rng_)];
    }
    if (!Tried(c) && Legal(c)) return c;
  }
  return std::nullopt;
}

std::optional<space::Candidate> NeighbourhoodSearch::Next() {
  if (!Tried(initial_) && Legal(initial_)) return initial_;
  if (tried_.size() >= SpaceSize()) return std::nullopt;
  const space::Candidate& from = best_ ? *best_ : initial_;
  std::bernoulli_distribution explore(random_fraction_);
  if (!explore(rng_)) {
    std::vector<space::Candidate> moves = LocalMoves(from);
    std::vector<space::Candidate> fresh;
    std::vector<double> w;
    for (auto& m : moves) {
      if (Tried(m) || !Legal(m)) continue;
      // A move's weight: the summed weights of the kernels it changes.
      double weight = 0;
      for (size_t k = 0; k < m.kernels.size() && k < from.kernels.size(); ++k) {
        if (!(m.kernels[k] == from.kernels[k])) weight += weights_[k];
      }
      fresh.push_back(std::move(m));
      w.push_back(std::max(weight, 1e-12));
    }
    if (!fresh.empty()) {
      std::discrete_distribution<size_t> pick(w.begin(), w.end());
      return fresh[pick(rng_)];
    }
  }
  if (auto c = RandomPerturbation(from)) return c;
  // Nothing near the best is left and random draws keep hitting tried points: walk the space
  // in order (bounded, so a huge space cannot stall the driver) for one nobody tried.
  return FirstUntried(kEnumerationLimit);
}

std::optional<space::Candidate> NeighbourhoodSearch::FirstUntried(uint64_t limit) const {
  // Mixed-radix counter over every (kernel, parameter) domain.
  std::vector<std::pair<size_t, const space::ParamDomain*>> digits;
  for (size_t k = 0; k < spaces_.size(); ++k) {
    for (const auto& p : spaces_[k].params) {
      if (!p.values.empty()) digits.push_back({k, &p});
    }
  }
  std::vector<size_t> index(digits.size(), 0);
  for (uint64_t n = 0; n < limit; ++n) {
    space::Candidate c = initial_;
    for (size_t d = 0; d < digits.size(); ++d) {
      c.kernels[digits[d].first].values[digits[d].second->name] = digits[d].second->values[index[d]];
    }
    if (!Tried(c) && Legal(c)) return c;
    size_t d = 0;
    while (d < digits.size() && ++index[d] == digits[d].second->values.size()) index[d++] = 0;
    if (d == digits.size()) break;  // wrapped around: every point was visited
  }
  return std::nullopt;
}

}  // namespace mk::modes
