#include "agents/tester.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "agents/tester_reference_cache.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "interp/interpreter.h"
#include "task/inputs.h"

namespace mk::agents {

namespace {

using nlohmann::json;

constexpr double kBareModuleTolerance = 1e-5;

std::vector<int64_t> MultiIndex(const hlo::Shape& shape, int64_t linear) {
  std::vector<int64_t> index(shape.dims().size(), 0);
  for (size_t d = index.size(); d-- > 0;) {
    int64_t n = shape.dims()[d];
    if (n <= 0) break;
    index[d] = linear % n;
    linear /= n;
  }
  return index;
}

// Element `i` as a double: exact for every float type and for integers up to 2^53, which is
// all a tolerance comparison can use anyway.
double ElementAsDouble(const hlo::Literal& lit, int64_t i) {
  hlo::DType t = lit.dtype();
  if (hlo::IsFloat(t)) return lit.GetDouble(i);
  if (t == hlo::DType::kU64) return static_cast<double>(lit.GetUInt64(i));
  return static_cast<double>(lit.GetInt64(i));
}

bool AllBytesAre(const hlo::Literal& lit, uint8_t byte) {
  const uint8_t* p = lit.raw();
  for (size_t i = 0; i < lit.raw_size(); ++i) {
    if (p[i] != byte) return false;
  }
  return true;
}


std::vector<hlo::Literal> Leaves(hlo::Literal root) {
  std::vector<hlo::Literal> out;
  if (root.shape().is_tuple()) {
    for (hlo::Literal& e : root.mutable_elements()) out.push_back(std::move(e));
  } else {
    out.push_back(std::move(root));
  }
  return out;
}

std::vector<hlo::Shape> LeafShapes(const hlo::Shape& root) {
  if (root.is_tuple()) return root.tuple_shapes();
  return {root};
}

// The oracle's outputs for one seed: from the disk cache when a verified entry exists, else from
// the interpreter under the request's time limits (and then stored).
Result<std::vector<hlo::Literal>> Reference(const TestRequest& request, const hlo::Module& module,
                                            const std::vector<hlo::Literal>& args, uint64_t seed) {
  interp::InterpreterOptions iopts;
  ReferenceDiskCache disk(request.reference_cache_dir);
  std::string key = ReferenceDiskCache::Key(module, args, iopts.high_precision);
  std::vector<hlo::Shape> leaf_shapes = LeafShapes(module.entry()->root()->shape);
  if (auto cached = disk.Load(key, leaf_shapes)) return std::move(*cached);
  auto now = std::chrono::steady_clock::now();
  std::string limit;
  if (request.oracle_timeout_s > 0) {
    iopts.deadline = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(request.oracle_timeout_s));
    std::ostringstream text;
    text << " (limit " << request.oracle_timeout_s << " s)";
    limit = text.str();
  }
  if (request.deadline && (!iopts.deadline || *request.deadline < *iopts.deadline)) {
    iopts.deadline = request.deadline;
    limit = " (the time budget ran out)";
  }
  iopts.cancel = request.cancel;
  Result<hlo::Literal> expected = interp::Evaluate(module, args, iopts);
  if (!expected.ok()) {
    Status s = expected.status();
    if (s.code() == ErrorCode::kCancelled && !(request.cancel && request.cancel->load())) {
      s = Cancelled(s.message() + limit);
    }
    return s.WithContext("evaluating the reference for seed " + std::to_string(seed));
  }
  std::vector<hlo::Literal> leaves = Leaves(std::move(*expected));
  (void)disk.Store(key, leaves);  // a cache that cannot be written only costs a recomputation
  return leaves;
}

// The task and module a request names (exactly one of task_dir / module_path).
struct Subject {
  task::Task task;
  std::unique_ptr<hlo::Module> module;
};

Result<Subject> LoadSubject(const TestRequest& request) {
  if (request.task_dir.empty() == request.module_path.empty()) {
    return InvalidArgument("a test request names either a task directory or a module file");
  }
  Subject s;
  if (!request.task_dir.empty()) {
    MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(request.task_dir));
    s.task = std::move(loaded.task);
    s.module = std::move(loaded.module);
    MK_RETURN_IF_ERROR(hlo::VerifyModule(*s.module));
  } else {
    MK_ASSIGN_OR_RETURN(s.module, hlo::ParseModuleFile(request.module_path));
    MK_RETURN_IF_ERROR(hlo::VerifyModule(*s.module));
    MK_ASSIGN_OR_RETURN(s.task, TaskForModule(*s.module, request.module_path));
  }
  return s;
}

std::string Percent(int64_t part, int64_t whole) {
  std::ostringstream s;
  s << part << "/" << whole;
  return s.str();
}

}  // namespace

std::string FormatIndex(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

OutputCheck CompareOutput(const hlo::Literal& got, const hlo::Literal& want, double atol,
                          double rtol, uint8_t poison_byte) {
  OutputCheck c;
  c.shape = want.shape();
  c.atol = atol;
  c.rtol = rtol;
  if (!got.shape().SameAs(want.shape())) {
    c.status = "mismatch";
    c.message = "shape " + got.shape().ToString(false) + " instead of " +
                want.shape().ToString(false);
    return c;
  }
  int64_t n = want.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double g = ElementAsDouble(got, i), w = ElementAsDouble(want, i);
    bool g_nan = std::isnan(g), w_nan = std::isnan(w);
    c.nan_got += g_nan;
    c.nan_want += w_nan;
    bool ok;
    if (g_nan || w_nan) {
      ok = g_nan && w_nan;
    } else if (std::isinf(g) || std::isinf(w)) {
      ok = g == w;
    } else {
      double abs_err = std::fabs(g - w);
      c.max_abs_err = std::max(c.max_abs_err, abs_err);
      if (w != 0) c.max_rel_err = std::max(c.max_rel_err, abs_err / std::fabs(w));
      ok = abs_err <= atol + rtol * std::fabs(w);
    }
    if (!ok) {
      if (c.mismatches == 0) {
        c.first_mismatch = MultiIndex(want.shape(), i);
        c.first_got = g;
        c.first_want = w;
      }
      ++c.mismatches;
    }
  }
  if (c.mismatches == 0) return c;
  // A kernel that never wrote the buffer leaves exactly the poison behind; say so, it is a
  // different bug from a wrong value.
  if (n > 0 && AllBytesAre(got, poison_byte) && !AllBytesAre(want, poison_byte)) {
    c.status = "unwritten";
    c.message = "was not written (NaN poison left)";
    return c;
  }
  c.status = "mismatch";
  std::ostringstream m;
  m.precision(9);
  m << Percent(c.mismatches, n) << " elements out of tolerance; first at "
    << FormatIndex(*c.first_mismatch) << ": got " << c.first_got << ", want " << c.first_want;
  c.message = m.str();
  return c;
}

Result<task::Task> TaskForModule(const hlo::Module& module, const std::string& path) {
  const hlo::Computation* entry = module.entry();
  if (!entry || !entry->root()) return InvalidArgument(path + ": the module has no ENTRY");
  task::Task t;
  t.id = std::filesystem::path(path).stem().string();
  t.name = module.name;
  t.scale = "custom";
  t.atol = t.rtol = kBareModuleTolerance;
  for (const hlo::Instruction* p : entry->parameters()) {
    if (!p->shape.is_array() || !hlo::IsEvaluable(p->shape.dtype())) {
      return Unimplemented("entry parameter '" + p->name + "' has type " +
                               p->shape.ToString(false) + ", which maxkernel cannot generate",
                           p->loc);
    }
    task::InitSpec init;
    if (hlo::IsFloat(p->shape.dtype())) {
      init.kind = task::InitSpec::Kind::kNormal;
    } else {
      init.kind = task::InitSpec::Kind::kRandint;
      init.int_low = 0;
      init.int_high = p->shape.dtype() == hlo::DType::kPred ? 2 : 4;
    }
    t.parameters.push_back({p->name, hlo::Shape(p->shape.dtype(), p->shape.dims()), init});
  }
  const hlo::Shape& root = entry->root()->shape;
  std::vector<hlo::Shape> results = root.is_tuple() ? root.tuple_shapes()
                                                    : std::vector<hlo::Shape>{root};
  for (const hlo::Shape& r : results) {
    if (!r.is_array()) {
      return Unimplemented(path + ": nested tuple or token results are not supported");
    }
    t.outputs.push_back({hlo::Shape(r.dtype(), r.dims()), t.atol, t.rtol});
  }
  return t;
}

Result<TestReport> RunTester(const TestRequest& request, CpuEngine& engine) {
  CpuRunner runner(engine);
  return RunTester(request, runner);
}

Result<TestReport> RunTester(const TestRequest& request, TargetRunner& runner) {
  if (request.num_seeds < 1 && request.seeds.empty()) {
    return InvalidArgument("at least one seed is needed (got " +
                           std::to_string(request.num_seeds) + ")");
  }
  if (!(request.timeout_s > 0)) return InvalidArgument("the run timeout must be positive");
  if ((request.atol && !(*request.atol >= 0)) || (request.rtol && !(*request.rtol >= 0))) {
    return InvalidArgument("tolerances must be non-negative numbers");
  }
  MK_ASSIGN_OR_RETURN(Subject subject, LoadSubject(request));
  // Before anything slow (lowering, the compiler): a 4 TB parameter is bad input, not a crash.
  MK_RETURN_IF_ERROR(task::CheckBuffersFitInMemory(subject.task));
  TestReport report;
  report.task_id = subject.task.id;
  report.module_name = subject.module->name;
  report.target = runner.target_name();

  // The implementation: the caller's, or the target's. The oracle runs on the module as given.
  codegen::Implementation impl;
  if (request.implementation) {
    impl = *request.implementation;
  } else {
    Result<codegen::Implementation> lowered = runner.Lower(*subject.module);
    if (!lowered.ok()) {
      report.status = "lower-failed";
      report.message = lowered.status().ToString();
      return report;
    }
    impl = std::move(*lowered);
  }
  const hlo::Module& module = *subject.module;
  report.implementation_hash = impl.hash;
  MK_ASSIGN_OR_RETURN(BuildOutcome built, runner.Build(impl));
  if (!built.ok) {
    report.status = "build-failed";
    report.message = built.message;
    return report;
  }
  report.source_path = built.source_path;

  std::vector<uint64_t> seeds = request.seeds;
  if (seeds.empty()) {
    for (int i = 0; i < request.num_seeds; ++i) seeds.push_back(subject.task.seed + i);
  }
  bool stop = false;
  for (uint64_t seed : seeds) {
    SeedResult sr;
    sr.seed = seed;
    if (stop) {
      sr.status = "skipped";
      sr.message = "not run: an earlier seed timed out";
      report.seeds.push_back(std::move(sr));
      continue;
    }
    MK_ASSIGN_OR_RETURN(std::vector<hlo::Literal> args, task::GenerateInputs(subject.task, seed));
    auto start = std::chrono::steady_clock::now();
    MK_ASSIGN_OR_RETURN(RunResult ran, runner.Run(impl, args, request.timeout_s));
    sr.run_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!ran.ok()) {
      sr.status = ran.status;
      sr.message = ran.message;
      stop = ran.status == "timed-out";
      report.seeds.push_back(std::move(sr));
      continue;
    }
    std::vector<hlo::Literal> want;
    auto cached = request.reference_cache ? request.reference_cache->find(seed)
                                          : decltype(request.reference_cache->end()){};
    if (request.reference_cache && cached != request.reference_cache->end()) {
      want = cached->second;
    } else {
      MK_ASSIGN_OR_RETURN(want, Reference(request, module, args, seed));
      if (request.reference_cache) (*request.reference_cache)[seed] = want;
    }
    if (want.size() != ran.outputs.size()) {
      return Internal("the implementation has " + std::to_string(ran.outputs.size()) +
                      " outputs, the module " + std::to_string(want.size()));
    }
    for (size_t o = 0; o < want.size(); ++o) {
      double atol = subject.task.atol, rtol = subject.task.rtol;
      if (o < subject.task.outputs.size()) {
        atol = subject.task.outputs[o].atol;
        rtol = subject.task.outputs[o].rtol;
      }
      if (request.atol) atol = *request.atol;
      if (request.rtol) rtol = *request.rtol;
      OutputCheck c = CompareOutput(ran.outputs[o], want[o], atol, rtol, runner.poison_byte());
      c.index = static_cast<int>(o);
      if (!c.passed()) {
        sr.status = "mismatch";
        if (sr.message.empty()) sr.message = "output " + std::to_string(o) + " " + c.message;
      }
      sr.outputs.push_back(std::move(c));
    }
    report.seeds.push_back(std::move(sr));
  }
  for (const SeedResult& sr : report.seeds) {
    if (!sr.passed()) {
      report.status = "failed";
      if (report.message.empty()) report.message = "seed " + std::to_string(sr.seed) + ": " + sr.message;
    }
  }
  return report;
}

std::string FormatReport(const TestReport& report) {
  std::ostringstream s;
  s.precision(3);
  std::string what = report.task_id.empty() ? report.module_name : report.task_id;
  if (report.status == "build-failed" || report.status == "lower-failed") {
    s << what << ": " << report.status << ": " << report.message << "\n";
    return s.str();
  }
  for (const SeedResult& sr : report.seeds) {
    if (sr.outputs.empty()) {
      s << "seed " << sr.seed << ": " << sr.status << ": " << sr.message << "\n";
      continue;
    }
    for (const OutputCheck& c : sr.outputs) {
      s << "seed " << sr.seed << " output " << c.index << " " << c.shape.ToString(false) << ": "
        << (c.passed() ? "pass" : "FAIL") << "  max_abs_err " << std::scientific
        << c.max_abs_err << "  max_rel_err " << c.max_rel_err << std::defaultfloat;
      if (c.first_mismatch) s << "  first mismatch " << FormatIndex(*c.first_mismatch);
      if (!c.passed()) s << "  (output " << c.index << " " << c.message << ")";
      s << "\n";
    }
  }
  s << what << ": " << (report.passed() ? "passed" : "FAILED") << " (" << report.seeds.size()
    << " seed" << (report.seeds.size() == 1 ? "" : "s") << ", target " << report.target << ")\n";
  return s.str();
}

}  // namespace mk::agents
