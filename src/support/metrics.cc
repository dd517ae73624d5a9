#include "support/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

namespace mk {

// ---- values ----------------------------------------------------------------------------------

void Counter::Add(double amount) {
  if (!(amount >= 0)) return;  // also drops NaN
  value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), per_bucket_(upper_bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  // The first bucket whose bound is >= value ("le" is inclusive); NaN lands in +Inf only.
  size_t i = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
             upper_bounds_.begin();
  if (std::isnan(value)) i = upper_bounds_.size();
  std::lock_guard<std::mutex> lock(mu_);
  ++per_bucket_[i];
  sum_ += value;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.upper_bounds = upper_bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t running = 0;
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    running += per_bucket_[i];
    s.cumulative.push_back(running);
  }
  s.count = running + per_bucket_.back();
  s.sum = sum_;
  return s;
}

const char* MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

// ---- families --------------------------------------------------------------------------------

template <typename Child>
std::unique_ptr<Child> MetricFamily<Child>::MakeChild() const {
  return std::make_unique<Child>();
}
template <>
std::unique_ptr<Histogram> MetricFamily<Histogram>::MakeChild() const {
  return std::make_unique<Histogram>(buckets_);
}

template <typename Child>
Result<Child*> MetricFamily<Child>::TryWithLabels(const LabelValues& values) {
  if (values.size() != label_names_.size()) {
    return InvalidArgument("metric " + name_ + " has " + std::to_string(label_names_.size()) +
                           " label(s), got " + std::to_string(values.size()) + " value(s)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Child>& slot = children_[values];
  if (!slot) slot = MakeChild();
  return slot.get();
}

template <typename Child>
Child& MetricFamily<Child>::WithLabels(const LabelValues& values) {
  Result<Child*> child = TryWithLabels(values);
  if (child.ok()) return **child;
  std::lock_guard<std::mutex> lock(mu_);
  if (!detached_) detached_ = MakeChild();
  return *detached_;
}

template <typename Child>
std::vector<std::pair<LabelValues, const Child*>> MetricFamily<Child>::Children() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<LabelValues, const Child*>> out;
  for (const auto& [values, child] : children_) out.emplace_back(values, child.get());
  return out;
}

template class MetricFamily<Counter>;
template class MetricFamily<Gauge>;
template class MetricFamily<Histogram>;

std::vector<double> DefaultDurationBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

// ---- names and text --------------------------------------------------------------------------

namespace {

bool IsNameStart(char c, bool allow_colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
}
bool IsNameChar(char c, bool allow_colon) {
  return IsNameStart(c, allow_colon) || (c >= '0' && c <= '9');
}
bool IsValidName(const std::string& name, bool allow_colon) {
  if (name.empty() || !IsNameStart(name[0], allow_colon)) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return IsNameChar(c, allow_colon); });
}

// HELP text escapes only backslash and newline (quotes are literal there).
std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// `{a="x",b="y"}` plus an optional extra pair (a histogram bucket's le); "" without labels.
std::string LabelText(const std::vector<std::string>& names, const LabelValues& values,
                      const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra_name + "=\"" + extra_value + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

template <typename Family>
void AppendHeader(std::string& out, const Family& family, MetricType type) {
  out += "# HELP " + family.name() + " " + EscapeHelp(family.help()) + "\n";
  out += "# TYPE " + family.name() + " " + MetricTypeName(type) + "\n";
}

template <typename Family>
void AppendScalarFamily(std::string& out, const Family& family, MetricType type) {
  auto children = family.Children();
  if (children.empty()) return;
  AppendHeader(out, family, type);
  for (const auto& [values, child] : children) {
    out += family.name() + LabelText(family.label_names(), values) + " " +
           FormatMetricValue(child->Value()) + "\n";
  }
}

void AppendHistogramFamily(std::string& out, const HistogramFamily& family) {
  auto children = family.Children();
  if (children.empty()) return;
  AppendHeader(out, family, MetricType::kHistogram);
  const std::string& name = family.name();
  for (const auto& [values, child] : children) {
    Histogram::Snapshot s = child->Read();
    for (size_t i = 0; i < s.upper_bounds.size(); ++i) {
      out += name + "_bucket" +
             LabelText(family.label_names(), values, "le", FormatMetricValue(s.upper_bounds[i])) +
             " " + std::to_string(s.cumulative[i]) + "\n";
    }
    out += name + "_bucket" + LabelText(family.label_names(), values, "le", "+Inf") + " " +
           std::to_string(s.count) + "\n";
    std::string labels = LabelText(family.label_names(), values);
    out += name + "_sum" + labels + " " + FormatMetricValue(s.sum) + "\n";
    out += name + "_count" + labels + " " + std::to_string(s.count) + "\n";
  }
}

const char* const kHistogramSuffixes[] = {"_bucket", "_sum", "_count"};

}  // namespace

bool IsValidMetricName(const std::string& name) { return IsValidName(name, true); }

bool IsValidLabelName(const std::string& name) {
  return IsValidName(name, false) && name.rfind("__", 0) != 0;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Shortest round-trip form ("0.005", "1e-06", "42"): what Prometheus' parser reads back exactly.
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return std::to_string(value);
  return std::string(buf, end);
}

// ---- registry --------------------------------------------------------------------------------

Status MetricsRegistry::CheckNew(const std::string& name, MetricType type,
                                 const std::vector<std::string>& label_names) const {
  if (!IsValidMetricName(name)) {
    return InvalidArgument("invalid metric name '" + name + "' (want [a-zA-Z_:][a-zA-Z0-9_:]*)");
  }
  std::set<std::string> seen;
  for (const std::string& label : label_names) {
    if (!IsValidLabelName(label)) {
      return InvalidArgument("metric " + name + ": invalid label name '" + label +
                             "' (want [a-zA-Z_][a-zA-Z0-9_]*, not starting with __)");
    }
    if (type == MetricType::kHistogram && label == "le") {
      return InvalidArgument("metric " + name + ": a histogram cannot have a label named le");
    }
    if (!seen.insert(label).second) {
      return InvalidArgument("metric " + name + ": label " + label + " given twice");
    }
  }
  // A histogram's series names (x_bucket, x_sum, x_count) must not collide with another family.
  for (const char* suffix : kHistogramSuffixes) {
    if (type == MetricType::kHistogram && families_.count(name + suffix)) {
      return InvalidArgument("metric " + name + ": its series " + name + suffix +
                             " collides with an existing metric");
    }
    std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      auto it = families_.find(name.substr(0, name.size() - s.size()));
      if (it != families_.end() && it->second.type == MetricType::kHistogram) {
        return InvalidArgument("metric " + name + " collides with a series of histogram " +
                               it->first);
      }
    }
  }
  return Status::Ok();
}

namespace {

// The error for a name registered again with a different shape.
Status Conflict(const std::string& name, const char* what) {
  return InvalidArgument("metric " + name + " is already registered with a different " + what);
}

template <typename Family>
Status SameShape(const Family& f, const std::string& help,
                 const std::vector<std::string>& label_names) {
  if (f.help() != help) return Conflict(f.name(), "help text");
  if (f.label_names() != label_names) return Conflict(f.name(), "set of label names");
  return Status::Ok();
}

}  // namespace

Result<CounterFamily*> MetricsRegistry::AddCounter(const std::string& name,
                                                   const std::string& help,
                                                   const std::vector<std::string>& label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = families_.find(name); it != families_.end()) {
    if (it->second.type != MetricType::kCounter) return Conflict(name, "type");
    MK_RETURN_IF_ERROR(SameShape(*it->second.counter, help, label_names));
    return it->second.counter.get();
  }
  MK_RETURN_IF_ERROR(CheckNew(name, MetricType::kCounter, label_names));
  Entry& e = families_[name];
  e.type = MetricType::kCounter;
  e.counter.reset(new CounterFamily(name, help, label_names, {}));
  if (label_names.empty()) e.counter->Get();
  return e.counter.get();
}

Result<GaugeFamily*> MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                                               const std::vector<std::string>& label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = families_.find(name); it != families_.end()) {
    if (it->second.type != MetricType::kGauge) return Conflict(name, "type");
    MK_RETURN_IF_ERROR(SameShape(*it->second.gauge, help, label_names));
    return it->second.gauge.get();
  }
  MK_RETURN_IF_ERROR(CheckNew(name, MetricType::kGauge, label_names));
  Entry& e = families_[name];
  e.type = MetricType::kGauge;
  e.gauge.reset(new GaugeFamily(name, help, label_names, {}));
  if (label_names.empty()) e.gauge->Get();
  return e.gauge.get();
}

Result<HistogramFamily*> MetricsRegistry::AddHistogram(const std::string& name,
                                                       const std::string& help,
                                                       const std::vector<std::string>& label_names,
                                                       std::vector<double> buckets) {
  // A trailing +Inf is implicit in every histogram; accept it written out.
  if (!buckets.empty() && buckets.back() == INFINITY) buckets.pop_back();
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!std::isfinite(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1]))) {
      return InvalidArgument("metric " + name +
                             ": bucket bounds must be finite and strictly increasing");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = families_.find(name); it != families_.end()) {
    if (it->second.type != MetricType::kHistogram) return Conflict(name, "type");
    MK_RETURN_IF_ERROR(SameShape(*it->second.histogram, help, label_names));
    if (it->second.histogram->buckets_ != buckets) return Conflict(name, "set of buckets");
    return it->second.histogram.get();
  }
  MK_RETURN_IF_ERROR(CheckNew(name, MetricType::kHistogram, label_names));
  Entry& e = families_[name];
  e.type = MetricType::kHistogram;
  e.histogram.reset(new HistogramFamily(name, help, label_names, std::move(buckets)));
  if (label_names.empty()) e.histogram->Get();
  return e.histogram.get();
}

std::string MetricsRegistry::ExpositionText() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, e] : families_) {
    switch (e.type) {
      case MetricType::kCounter: AppendScalarFamily(out, *e.counter, e.type); break;
      case MetricType::kGauge: AppendScalarFamily(out, *e.gauge, e.type); break;
      case MetricType::kHistogram: AppendHistogramFamily(out, *e.histogram); break;
    }
  }
  return out;
}

Status MetricsRegistry::WriteTextfile(const std::string& path) const {
  const std::string text = ExpositionText();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  // 0644: the collector usually runs as another user.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot create " + tmp + ": " + std::strerror(errno));
  auto fail = [&](const std::string& what) {
    Status s = IoError(what + " " + tmp + ": " + std::strerror(errno));
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write");
    done += static_cast<size_t>(n);
  }
  // Durable before it becomes visible: after a crash the file is the old one or the new one.
  if (::fsync(fd) != 0) return fail("cannot sync");
  if (::close(fd) != 0) {
    Status s = IoError("cannot close " + tmp + ": " + std::strerror(errno));
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = IoError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

}  // namespace mk
