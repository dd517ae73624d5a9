#include "modes/search/evolutionary.h"

#include <algorithm>
#include <map>

namespace mk::modes::search {

namespace {

size_t Uniform(size_t n, std::mt19937_64& rng) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

bool Coin(std::mt19937_64& rng) { return (rng() & 1) != 0; }

}  // namespace

Node Evolution::Random(std::mt19937_64& rng) const { return graph_.Random(rng); }

Node Evolution::Mutate(const Node& parent, std::mt19937_64& rng) const {
  Node child = parent;
  if (child.empty()) return child;
  // Every decision has at least two values (a single-valued parameter is not a decision).
  const size_t i = Uniform(child.size(), rng);
  if (i < graph_.fusion_depth()) {
    // A fusion decision: the other value, each kernel keeping what it had where it still exists.
    std::vector<int> fusion(child.begin(), child.begin() + static_cast<long>(graph_.fusion_depth()));
    fusion[i] = 1 - fusion[i];
    return graph_.WithFusion(child, fusion);
  }
  const int size = static_cast<int>(graph_.ValueCount(Node(child.begin(), child.begin() + static_cast<long>(i))));
  if (size < 2) return child;
  const int now = child[i];
  int next;
  if (Coin(rng)) {
    // One step up or down the ordered domain (bounced off its ends).
    next = Coin(rng) ? now + 1 : now - 1;
    if (next < 0) next = 1;
    if (next >= size) next = size - 2;
  } else {
    // Any other value: skip over the current one.
    next = static_cast<int>(Uniform(static_cast<size_t>(size - 1), rng));
    if (next >= now) ++next;
  }
  child[i] = next;
  return child;
}

Node Evolution::Crossover(const Node& a, const Node& b, std::mt19937_64& rng) const {
  const size_t f = graph_.fusion_depth();
  if (graph_.VariantOf(a) != graph_.VariantOf(b)) {
    // Other kernels: each fusion value from either parent, the parameters carried over from
    // one of them (by kernel id and name, where the new kernels have them).
    std::vector<int> fusion(f);
    for (size_t i = 0; i < f; ++i) fusion[i] = Coin(rng) ? b[i] : a[i];
    return graph_.WithFusion(Coin(rng) ? b : a, fusion);
  }
  Node child = a;
  const size_t n = std::min(a.size(), b.size());
  if (Coin(rng)) {
    // Per kernel: a kernel's parameters were tuned together, keep them together.
    std::map<int, int> from_b;
    for (size_t i = f; i < n; ++i) {
      const int kernel = graph_.KernelAfter(Node(a.begin(), a.begin() + static_cast<long>(i)));
      int& pick = from_b.emplace(kernel, -1).first->second;
      if (pick < 0) pick = Coin(rng) ? 1 : 0;
      if (pick == 1) child[i] = b[i];
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (Coin(rng)) child[i] = b[i];
    }
  }
  return child;
}

const Individual& Evolution::Tournament(const std::vector<Individual>& population,
                                        std::mt19937_64& rng) const {
  const Individual& x = population[Uniform(population.size(), rng)];
  const Individual& y = population[Uniform(population.size(), rng)];
  return x.time_s <= y.time_s ? x : y;
}

std::vector<Node> Evolution::Children(const std::vector<Individual>& population, size_t count,
                                      std::mt19937_64& rng) const {
  std::vector<Node> out;
  if (population.empty()) return out;
  out.reserve(count);
  for (size_t c = 0; c < count; ++c) {
    const Individual& a = Tournament(population, rng);
    if (population.size() >= 2 && Coin(rng)) {
      const Individual& b = Tournament(population, rng);
      Node child = Crossover(a.node, b.node, rng);
      // A crossover of two parents that agree is one of them: mutate it (and half the others).
      if (child == a.node || child == b.node || Coin(rng)) child = Mutate(child, rng);
      out.push_back(std::move(child));
    } else {
      out.push_back(Mutate(a.node, rng));
    }
  }
  return out;
}

}  // namespace mk::modes::search
