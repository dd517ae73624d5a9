// A small Prometheus metrics registry (standard library only). The optimize command fills one
// and writes it with WriteTextfile for node_exporter's textfile collector; the server will later
// serve the same ExpositionText() at /metrics. docs/REPORTS_AND_METRICS.md has the metric list.
//
// Families (Counter, Gauge, Histogram) have a name, help text and label names; each distinct
// tuple of label values is one child, created on first use:
//
//   MetricsRegistry registry;
//   MK_ASSIGN_OR_RETURN(HistogramFamily* agent_s,
//       registry.AddHistogram("maxkernel_agent_execution_duration_seconds", "...",
//                             {"task", "agent", "status"}));
//   agent_s->WithLabels({"12p", "tester", "success"}).Observe(0.42);
//
// Everything is thread-safe. Family and child pointers stay valid as long as the registry.
// Metrics observe a run and must never stop it, so nothing here aborts: a bad name is an error
// value at registration, and a wrong number of label values (a programming error) is an error
// from TryWithLabels, or a detached child that is never exported from WithLabels.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/status.h"

namespace mk {

// Label values in the order of the family's label names.
using LabelValues = std::vector<std::string>;

// A value that only goes up (resets only when the process restarts).
class Counter {
 public:
  void Inc() { Add(1); }
  // Negative and NaN increments are dropped: a counter never goes down.
  void Add(double amount);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Inc() { Add(1); }
  void Dec() { Add(-1); }
  void Add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations into buckets with fixed upper bounds (plus the implicit +Inf bucket) and
// keeps their sum. One mutex per child keeps a snapshot consistent: the +Inf bucket always
// equals the count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;  // finite, increasing
    std::vector<uint64_t> cumulative;  // per bound: observations <= bound
    uint64_t count = 0;                // all observations (the +Inf bucket)
    double sum = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> upper_bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> per_bucket_;  // non-cumulative; the last slot is (last bound, +Inf)
  double sum_ = 0;
};

enum class MetricType { kCounter, kGauge, kHistogram };
const char* MetricTypeName(MetricType type);  // "counter", "gauge", "histogram"

// What families share: name, help, label names and the children keyed by label values.
template <typename Child>
class MetricFamily {
 public:
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // The child for these label values, created on first use. An error when the number of values
  // differs from the number of label names.
  Result<Child*> TryWithLabels(const LabelValues& values);
  // The same, for call sites whose label count is fixed in the code: a wrong count gives a
  // detached child that is never exported (and never crashes the run it observes).
  Child& WithLabels(const LabelValues& values);
  // Label-less families have one child, exported from the start (as 0).
  Child& Get() { return WithLabels({}); }

  // Children sorted by label values (stable output).
  std::vector<std::pair<LabelValues, const Child*>> Children() const;

 private:
  friend class MetricsRegistry;
  MetricFamily(std::string name, std::string help, std::vector<std::string> label_names,
               std::vector<double> buckets)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        buckets_(std::move(buckets)) {}
  std::unique_ptr<Child> MakeChild() const;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> buckets_;  // histograms only
  mutable std::mutex mu_;
  std::map<LabelValues, std::unique_ptr<Child>> children_;
  std::unique_ptr<Child> detached_;  // WithLabels' answer to a wrong label count
};

using CounterFamily = MetricFamily<Counter>;
using GaugeFamily = MetricFamily<Gauge>;
using HistogramFamily = MetricFamily<Histogram>;

// Bucket bounds for durations in seconds, from 5 ms (a cached build, a tiny kernel's test) to
// 10 minutes (a whole optimize run's time budget).
std::vector<double> DefaultDurationBuckets();

// `[a-zA-Z_:][a-zA-Z0-9_:]*`
bool IsValidMetricName(const std::string& name);
// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with "__" (reserved for Prometheus itself).
bool IsValidLabelName(const std::string& name);

// Escapes a label value for the text format: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);
// Formats a sample value: integers without a fraction, others in the shortest form that reads
// back exactly, and "+Inf", "-Inf", "NaN".
std::string FormatMetricValue(double value);

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registering a name again with the same type, help and label names (and buckets) returns the
  // existing family, so two pieces of code can declare the metric they share; anything else
  // under a taken name is an error, as are invalid names, a label name used twice, a histogram
  // label "le", and bucket bounds that are not finite and strictly increasing.
  Result<CounterFamily*> AddCounter(const std::string& name, const std::string& help,
                                    const std::vector<std::string>& label_names = {});
  Result<GaugeFamily*> AddGauge(const std::string& name, const std::string& help,
                                const std::vector<std::string>& label_names = {});
  Result<HistogramFamily*> AddHistogram(const std::string& name, const std::string& help,
                                        const std::vector<std::string>& label_names = {},
                                        std::vector<double> buckets = DefaultDurationBuckets());

  // The Prometheus text exposition format (version 0.0.4): families sorted by name, each with
  // # HELP and # TYPE lines and its children sorted by label values. A family with label names
  // but no children yet is left out (it has no samples).
  std::string ExpositionText() const;

  // node_exporter's textfile-collector convention: writes `path.tmp.<pid>` in the same
  // directory, then renames it over `path`, so a scraper sees the old file or the new one, never
  // a partial one. (The collector reads only files ending in ".prom".)
  Status WriteTextfile(const std::string& path) const;

 private:
  struct Entry {
    MetricType type;
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<GaugeFamily> gauge;
    std::unique_ptr<HistogramFamily> histogram;
  };
  Status CheckNew(const std::string& name, MetricType type,
                  const std::vector<std::string>& label_names) const;

  mutable std::mutex mu_;
  std::map<std::string, Entry> families_;  // by name: the exposition order
};

}  // namespace mk
