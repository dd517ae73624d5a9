#include "modes/search/graph_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mk::modes::search {

namespace {

constexpr size_t kMaxBeamWidth = 4096;
constexpr size_t kExploredLimit = 20000;

// Point counts saturate (DecisionGraph: 2^62) instead of wrapping.
uint64_t SatAdd(uint64_t a, uint64_t b) {
  constexpr uint64_t kMax = uint64_t{1} << 62;
  return a >= kMax || b >= kMax - a ? kMax : a + b;
}

bool Same(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s);
  return buf;
}

}  // namespace

bool GraphSearch::Worse::operator()(const Entry& a, const Entry& b) const {
  if (!Same(a.f, b.f)) return a.f > b.f;
  if (a.score != b.score) return a.score < b.score;
  if (a.distance != b.distance) return a.distance > b.distance;
  if (a.node.size() != b.node.size()) return a.node.size() < b.node.size();
  return a.seq > b.seq;
}

GraphSearch::GraphSearch(DecisionGraph graph, LowerBound bound, SearchOptions options, uint64_t seed)
    : graph_(std::move(graph)), bounds_{std::move(bound)}, options_(options), rng_(seed) {}

GraphSearch::GraphSearch(DecisionGraph graph, std::vector<LowerBound> bounds, SearchOptions options,
                         uint64_t seed)
    : graph_(std::move(graph)), bounds_(std::move(bounds)), options_(options), rng_(seed) {}

void GraphSearch::UseModel(FeatureMap features, std::optional<CostModel> prior) {
  const size_t columns = features.columns();
  UseModel([f = std::move(features)](const space::Candidate& c) { return f.Of(c); }, columns,
           std::move(prior));
}

void GraphSearch::UseModel(Featurizer features, size_t columns, std::optional<CostModel> prior) {
  features_ = std::move(features);
  feature_columns_ = columns;
  model_ = std::move(prior);
  model_is_prior_ = model_.has_value();
}

void GraphSearch::Score(std::vector<Entry>& entries) {
  if (!features_ || !model_ || entries.empty()) return;
  std::vector<float> rows;
  for (const Entry& e : entries) {
    std::vector<float> f = features_(graph_.ToCandidate(e.node));
    rows.insert(rows.end(), f.begin(), f.end());
  }
  Result<std::vector<float>> scores = model_->Predict(rows, feature_columns_);
  if (!scores.ok() || scores->size() != entries.size()) {
    model_error_ = scores.ok() ? "the model gave a score count that is not the row count"
                               : scores.status().message();
    model_.reset();  // ordered by distance from here on; the error is in Stats()
    for (Entry& e : entries) e.score = 0;
    return;
  }
  predicted_ += entries.size();
  for (size_t i = 0; i < entries.size(); ++i) entries[i].score = (*scores)[i];
}

void GraphSearch::Retrain() {
  RankingData data = run_rows_;
  data.relevance = RelevanceOfTimes(run_times_);
  data.group_sizes = {static_cast<unsigned>(run_times_.size())};
  CostModel::Options o;
  o.seed = rng_() & 0x7fffffff;  // XGBoost reads its seed as a signed integer
  Result<CostModel> m = CostModel::Train(data, o);
  if (!m.ok()) {
    model_error_ = m.status().message();
    return;
  }
  model_ = std::move(*m);
  model_error_.clear();
  model_is_prior_ = false;
  trained_rows_ = run_times_.size();
  ++retrained_;
  // The frontier's scores came from the old model: score it again.
  std::vector<Entry> all;
  while (!frontier_.empty()) {
    all.push_back(frontier_.top());
    frontier_.pop();
  }
  Score(all);
  for (auto& e : all) frontier_.push(std::move(e));
}

double GraphSearch::BoundOfNode(const Node& n) const {
  const int v = graph_.VariantOf(n);
  if (v >= 0) return bounds_[static_cast<size_t>(v)].Of(graph_.Fixed(n));
  // Fusion still open: the least of the bounds of the plans it may still become.
  if (root_bounds_.empty()) {
    for (size_t i = 0; i < graph_.variant_count(); ++i) {
      std::vector<std::map<std::string, int64_t>> fixed;
      for (const auto& s : graph_.variant(i).spaces) {
        std::map<std::string, int64_t> f;
        for (const auto& p : s.params) {
          if (p.values.size() == 1) f[p.name] = p.values[0];
        }
        fixed.push_back(std::move(f));
      }
      root_bounds_.push_back(bounds_[i].Of(fixed));
    }
  }
  double least = INFINITY;
  for (int u : graph_.VariantsUnder(n)) least = std::min(least, root_bounds_[static_cast<size_t>(u)]);
  return std::isfinite(least) ? least : 0;
}

double GraphSearch::BoundOf(const space::Candidate& c) const {
  const int v = graph_.VariantOf(c);
  if (v < 0) return 0;  // not a plan of this graph: nothing is known, and 0 bounds anything
  std::vector<std::map<std::string, int64_t>> fixed;
  for (const auto& s : c.kernels) fixed.push_back(s.values);
  return bounds_[static_cast<size_t>(v)].Of(fixed);
}

double GraphSearch::PruneLimit() const {
  // bound_scale_ < 1 once a measurement came in under its bound: the bound is then scaled down
  // to every time seen (f * scale > best / epsilon), so it prunes nothing a measurement already
  // contradicts.
  return best_s_ ? *best_s_ / options_.epsilon / bound_scale_ : INFINITY;
}

GraphSearch::Entry GraphSearch::MakeEntry(Node n, int distance) {
  Entry e;
  e.f = BoundOfNode(n);
  e.distance = distance;
  e.node = std::move(n);
  e.seq = seq_++;
  return e;
}

std::string GraphSearch::PruneReason(const Node& n) const { return graph_.EdgeLabel(n); }

void GraphSearch::Prune(const Node& n, double f) {
  (void)f;
  const uint64_t points = graph_.Completions(n);
  pruned_points_ = SatAdd(pruned_points_, points);
  pruned_weight_ += graph_.CompletionsApprox(n);
  pruned_by_[PruneReason(n)] += points;
}

void GraphSearch::PruneIllegal(const Node& n, const space::Constraint& c) {
  // Beam walks the graph again with a wider beam: count each illegal subtree once.
  if (!illegal_.insert(n).second) return;
  const uint64_t points = graph_.Completions(n);
  pruned_points_ = SatAdd(pruned_points_, points);
  pruned_weight_ += graph_.CompletionsApprox(n);
  pruned_by_["constraint " + c.name] += points;
}

bool GraphSearch::Propose(const Node& n, space::Candidate& out) {
  space::Candidate c = graph_.ToCandidate(n);
  std::string key = CandidateKey(c);
  // A point pruned already (counted once) is not proposed, nor counted again.
  if (tried_.count(key) || illegal_.count(n) || bound_pruned_.count(n)) return false;
  // The evolutionary search's queue was ranked before the latest measurements, and its sweep is
  // unchecked: what the best measured time has put out of reach since is pruned, not measured.
  if (options_.algorithm == Algorithm::kEvolutionary && BoundOfNode(n) > PruneLimit()) {
    PrunePoint(n);
    return false;
  }
  tried_.insert(std::move(key));
  // Random and exhaustive points reach here unchecked (each once: it is now tried).
  if (const space::Constraint* v = graph_.Violated(c)) {
    PruneIllegal(n, *v);
    return false;
  }
  ++proposed_;
  out = std::move(c);
  return true;
}

void GraphSearch::Record(const space::Candidate& candidate, std::optional<double> time_s) {
  const std::string key = CandidateKey(candidate);
  tried_.insert(key);
  if (!time_s || !(*time_s > 0)) return;
  // The loop records a candidate as proposed and as completed: check each point once.
  if (!checked_.insert(key).second) return;
  const double b = BoundOf(candidate);
  checks_.push_back({b, *time_s});
  if (b > *time_s * (1 + 1e-9)) {
    violations_.push_back({{"bound_s", b}, {"measured_s", *time_s}, {"candidate", space::ToJson(candidate)}});
    // The peaks behind the bound are wrong for this machine now (a probe taken under load, a
    // faster clock): scale the bound down to what was measured, so pruning stays sound.
    bound_scale_ = std::min(bound_scale_, *time_s / b);
  }
  if (!best_s_ || *time_s < *best_s_) best_s_ = *time_s;
  if (options_.algorithm == Algorithm::kEvolutionary) {
    // The population: a point the implementer completed outside the graph's domains has no node.
    if (std::optional<Node> n = graph_.NodeOf(candidate)) {
      auto [it, added] = measured_.emplace(std::move(*n), *time_s);
      if (!added) it->second = std::min(it->second, *time_s);
    }
  }
  if (features_) {
    run_rows_.Add(features_(candidate), 0);
    run_times_.push_back(*time_s);
    if (run_times_.size() >= kMinRowsToTrain && run_times_.size() >= trained_rows_ + 2) Retrain();
  }
}

bool GraphSearch::Tried(const space::Candidate& candidate) const {
  return tried_.count(CandidateKey(candidate)) > 0;
}

std::optional<space::Candidate> GraphSearch::Next() {
  // The start point (the planner's candidate, or the domains' medians) is measured first even
  // when a prior model (model_store.h) would order astar's frontier or beam's levels otherwise:
  // the run's result compares its best with its first candidate, which must be the start.
  // (Without a prior both reach the start first anyway: no model has been trained yet.)
  if (!start_offered_ && model_ && model_is_prior_ &&
      (options_.algorithm == Algorithm::kAstar || options_.algorithm == Algorithm::kBeam)) {
    start_offered_ = true;
    const Node start = graph_.StartNode();
    space::Candidate c;
    // An illegal start (the medians may break a joint constraint) is left to the walk to prune.
    if (!graph_.Violated(graph_.ToCandidate(start)) && Propose(start, c)) return c;
  }
  switch (options_.algorithm) {
    case Algorithm::kAstar: return NextAstar();
    case Algorithm::kBeam: return NextBeam();
    case Algorithm::kRandom: return NextRandom();
    case Algorithm::kExhaustive: return NextExhaustive();
    case Algorithm::kEvolutionary: return NextEvolutionary();
  }
  return std::nullopt;
}

std::optional<space::Candidate> GraphSearch::NextAstar() {
  if (!started_) {
    std::vector<Entry> root = {MakeEntry({}, 0)};
    Score(root);
    frontier_.push(std::move(root[0]));
    started_ = true;
  }
  while (!frontier_.empty()) {
    Entry e = frontier_.top();
    frontier_.pop();
    if (e.f > PruneLimit()) {
      Prune(e.node, e.f);
      continue;
    }
    if (graph_.Complete(e.node)) {
      space::Candidate c;
      if (Propose(e.node, c)) return c;
      continue;
    }
    ++expanded_;
    if (explored_.size() < kExploredLimit) explored_.push_back({e.node, "f " + Seconds(e.f) + " s"});
    const int start_child = graph_.StartChild(e.node);
    std::vector<Entry> children;
    for (int v : graph_.ChildrenOf(e.node)) {
      Node child = e.node;
      child.push_back(v);
      if (const space::Constraint* bad = graph_.Violated(child)) {
        PruneIllegal(child, *bad);
        continue;
      }
      Entry ce = MakeEntry(std::move(child), e.distance + (v != start_child ? 1 : 0));
      if (ce.f > PruneLimit()) {
        Prune(ce.node, ce.f);
        continue;
      }
      children.push_back(std::move(ce));
    }
    Score(children);  // only what survived the bound is shown to the model
    for (auto& c : children) frontier_.push(std::move(c));
    if (static_cast<int64_t>(frontier_.size()) > options_.max_frontier) {
      // Keep the better half: the rest is dropped unmeasured (counted apart from the pruned).
      std::vector<Entry> all;
      while (!frontier_.empty()) {
        all.push_back(frontier_.top());
        frontier_.pop();
      }
      const size_t keep = all.size() / 2;
      for (size_t j = keep; j < all.size(); ++j) dropped_points_ += graph_.Completions(all[j].node);
      all.resize(keep);
      for (auto& a : all) frontier_.push(std::move(a));
    }
  }
  return std::nullopt;
}

std::optional<space::Candidate> GraphSearch::NextBeam() {
  while (true) {
    while (!beam_queue_.empty()) {
      Node n = std::move(beam_queue_.front());
      beam_queue_.erase(beam_queue_.begin());
      space::Candidate c;
      if (Propose(n, c)) return c;
    }
    if (exhausted_) return std::nullopt;
    beam_width_ = beam_width_ ? 2 * beam_width_ : options_.beam_width;
    const size_t width = std::min(static_cast<size_t>(beam_width_), kMaxBeamWidth);
    bool truncated = false;
    std::vector<Entry> level = {MakeEntry({}, 0)};
    // Levels until every node is complete (variants of other fusion have other depths: a
    // complete node waits in the level while the others go on).
    while (std::any_of(level.begin(), level.end(), [&](const Entry& e) { return !graph_.Complete(e.node); })) {
      std::vector<Entry> next;
      for (Entry& e : level) {
        if (graph_.Complete(e.node)) {
          next.push_back(std::move(e));
          continue;
        }
        ++expanded_;
        const int start_child = graph_.StartChild(e.node);
        for (int v : graph_.ChildrenOf(e.node)) {
          Node child = e.node;
          child.push_back(v);
          if (const space::Constraint* bad = graph_.Violated(child)) {
            PruneIllegal(child, *bad);
            continue;
          }
          Entry ce = MakeEntry(std::move(child), e.distance + (v != start_child ? 1 : 0));
          if (ce.f > PruneLimit()) {
            Prune(ce.node, ce.f);
            continue;
          }
          next.push_back(std::move(ce));
        }
      }
      Score(next);
      std::sort(next.begin(), next.end(), [](const Entry& a, const Entry& b) { return Worse()(b, a); });
      if (next.size() > width) {
        truncated = true;
        next.resize(width);
      }
      level = std::move(next);
    }
    for (auto& e : level) beam_queue_.push_back(std::move(e.node));
    if (!truncated || width >= kMaxBeamWidth) exhausted_ = true;
  }
}

std::optional<space::Candidate> GraphSearch::NextRandom() {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    Node n = graph_.Random(rng_);
    space::Candidate c;
    if (Propose(n, c)) return c;
  }
  return NextExhaustive();  // a nearly covered space: sweep what is left
}

std::optional<space::Candidate> GraphSearch::NextExhaustive() {
  while (!exhausted_) {
    cursor_ = graph_.NextInOrder(cursor_);
    if (!cursor_) {
      exhausted_ = true;
      break;
    }
    space::Candidate c;
    if (Propose(*cursor_, c)) return c;
  }
  return std::nullopt;
}

nlohmann::json GraphSearch::Stats() const {
  // Frontier nodes the best time has put out of reach since they were queued are pruned too.
  uint64_t pruned = pruned_points_;
  double pruned_weight = pruned_weight_;
  std::map<std::string, uint64_t> pruned_by = pruned_by_;
  auto copy = frontier_;
  size_t frontier = 0;
  while (!copy.empty()) {
    if (copy.top().f > PruneLimit()) {
      const uint64_t points = graph_.Completions(copy.top().node);
      pruned = SatAdd(pruned, points);
      pruned_weight += graph_.CompletionsApprox(copy.top().node);
      uint64_t& by = pruned_by[PruneReason(copy.top().node)];
      by = SatAdd(by, points);
    } else {
      ++frontier;
    }
    copy.pop();
  }
  std::vector<std::pair<std::string, uint64_t>> by(pruned_by.begin(), pruned_by.end());
  std::sort(by.begin(), by.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  nlohmann::json pruned_by_json = nlohmann::json::array();
  for (size_t i = 0; i < by.size() && i < 10; ++i) {
    pruned_by_json.push_back({{"decision", by[i].first}, {"points", by[i].second}});
  }
  std::vector<double> ratios;
  for (const auto& [b, m] : checks_) ratios.push_back(b / m);
  std::sort(ratios.begin(), ratios.end());
  nlohmann::json median = nullptr;
  if (!ratios.empty()) {
    const size_t n = ratios.size();
    median = n % 2 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
  }
  const uint64_t space = graph_.SpaceSize();
  const nlohmann::json graph_json = graph_.ToJson();
  return {{"algorithm", AlgorithmName(options_.algorithm)},
          {"options", ToJson(options_)},
          {"space_size", space},
          {"decisions", graph_.depth()},
          {"fusion_decisions", graph_json["fusion"]},
          {"variants", graph_json["variants"]},
          {"proposed", proposed_},
          {"expanded", expanded_},
          {"frontier", frontier},
          {"pruned_points", pruned},
          {"space_size_approx", graph_.SpaceSizeApprox()},
          {"pruned_share", space ? std::min(1.0, pruned_weight / graph_.SpaceSizeApprox()) : 0.0},
          {"pruned_by", pruned_by_json},
          {"dropped_points", dropped_points_},
          {"best_s", best_s_ ? nlohmann::json(*best_s_) : nlohmann::json(nullptr)},
          {"generations", generations_},
          {"predicted", predicted_},
          {"model", features_ ? nlohmann::json{{"kind", "xgboost rank:pairwise"},
                                               {"features", feature_columns_},
                                               {"trained_on_run_rows", trained_rows_},
                                               {"retrained", retrained_},
                                               {"prior", model_is_prior_},
                                               {"error", model_error_.empty() ? nlohmann::json(nullptr)
                                                                              : nlohmann::json(model_error_)}}
                              : nlohmann::json(nullptr)},
          {"admissibility",
           {{"checked", checks_.size()},
            {"violations", violations_},
            {"ok", violations_.empty()},
            {"bound_scale", bound_scale_},
            {"median_bound_over_measured", median}}}};
}

std::string GraphSearch::ExploredDot(size_t limit) const {
  std::vector<std::pair<Node, std::string>> nodes(explored_.begin(),
                                                  explored_.begin() + std::min(limit, explored_.size()));
  return graph_.ToDot(nodes);
}

}  // namespace mk::modes::search
