// The auto driver's proposer (`optimize`): a budgeted random + local
// neighbourhood search over the declared parameters of every kernel (issue 5, item 2).
//
//   1. the plan's initial candidate (the analytical point) first;
//   2. then, mostly, a *local move* from the best correct candidate so far: one parameter of one
//      kernel to an adjacent value of its domain, or one parameter set to the same value on every
//      kernel that declares it (a "sweep": threads=2 everywhere). Kernels are chosen in
//      proportion to their weight (their share of the module's lower bound), so the kernels
//      that dominate the time are tuned first;
//   3. sometimes (random_fraction) a *random perturbation*: 2-4 parameters of the best changed to
//      random values of their domains, to leave a local optimum;
//   4. when neither finds an untried point, the first untried one in enumeration order (so a
//      small space is always covered completely before the search reports exhaustion).
// Candidates already tried (in this run, or in the run being resumed) are never proposed again,
// nor is one that violates a kernel's joint constraint (space::KernelSpace::constraints).
// Deterministic for a given seed and history.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "modes/proposer.h"
#include "space/schedule.h"

namespace mk::modes {

class NeighbourhoodSearch final : public Proposer {
 public:
  // `kernel_weights` (one per space; any non-negative scale) may be empty: equal weights.
  NeighbourhoodSearch(std::vector<space::KernelSpace> spaces, space::Candidate initial,
                      std::vector<double> kernel_weights, uint64_t seed,
                      double random_fraction = 0.25);

  // An evaluated candidate: its time when it was correct and measured, nullopt when it failed.
  void Record(const space::Candidate& candidate, std::optional<double> time_s) override;

  // The next untried candidate, or nullopt when no untried one can be reached.
  std::optional<space::Candidate> Next() override;

  bool Tried(const space::Candidate& candidate) const override;
  size_t tried_count() const { return tried_.size(); }
  // Number of points in the whole space (saturating at 2^62).
  uint64_t SpaceSize() const;

 private:
  std::string Key(const space::Candidate& candidate) const;
  // No kernel's schedule violates one of its space's constraints.
  bool Legal(const space::Candidate& candidate) const;
  std::vector<space::Candidate> LocalMoves(const space::Candidate& from) const;
  std::optional<space::Candidate> RandomPerturbation(const space::Candidate& from);
  size_t PickKernel();
  // The first untried point in enumeration order among the first `limit` points.
  std::optional<space::Candidate> FirstUntried(uint64_t limit) const;
  static constexpr uint64_t kEnumerationLimit = 1 << 16;

  std::vector<space::KernelSpace> spaces_;
  space::Candidate initial_;
  std::vector<double> weights_;
  double random_fraction_;
  std::mt19937_64 rng_;
  std::set<std::string> tried_;
  std::optional<space::Candidate> best_;
  double best_time_ = 0;
};

}  // namespace mk::modes
