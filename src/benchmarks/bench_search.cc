#include "benchmarks/bench_search.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "agents/pipeline.h"
#include "agents/planner.h"
#include "benchmarks/bench.h"
#include "benchmarks/bench_jaxbench.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "modes/search/cost_model.h"
#include "modes/search/features.h"
#include "modes/search/graph_search.h"
#include "modes/search/plan_search.h"
#include "runtime/compiler.h"
#include "store/artifact_store.h"
#include "store/sqlite_store.h"
#include "support/rank_stats.h"
#include "task/task.h"

namespace mk::bench {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using modes::search::Algorithm;
using modes::search::CostModel;
using modes::search::DecisionGraph;
using modes::search::GraphSearch;
using modes::search::LowerBound;
using modes::search::RankingData;
using modes::search::SearchOptions;

constexpr const char* kSchema = "maxkernel.search_table/1";

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The points of a sub-space in odometer order (the last parameter varies fastest).
std::vector<std::map<std::string, int64_t>> Enumerate(const std::vector<SubspaceParam>& params) {
  std::vector<std::map<std::string, int64_t>> out = {{}};
  for (const SubspaceParam& p : params) {
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& partial : out) {
      for (int64_t v : p.values) {
        auto m = partial;
        m[p.name] = v;
        next.push_back(std::move(m));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string ValuesKey(const std::map<std::string, int64_t>& values) {
  std::string key;
  for (const auto& [name, v] : values) key += name + "=" + std::to_string(v) + ",";
  return key;
}

}  // namespace

// ---- the benchmark kernels (data) ----------------------------------------------------------

const std::vector<SearchKernelDef>& SearchKernels() {
  // Sub-spaces of 160-2,000 points over the parameters that move each family's time most; the
  // values are each a subset of the plan's declared domain at ci scale on x86-64 (checked when a
  // table is built). 12p's is its kernel's whole declared space (216 points: it has no more).
  static const std::vector<SearchKernelDef> kernels = {
      {"12p-rmsnorm",
       "12p",
       "row reduction / norm",
       0,
       {{"reduce_lanes", {1, 8, 16}},
        {"row_fuse", {0, 1}},
        {"threads", {1, 2}},
        {"tile_inner", {0, 1024, 4096}},
        {"unroll", {1, 2, 4}},
        {"vectorize", {0, 1}}},
       ""},
      {"41k-gemm-bias-relu",
       "41k",
       "GEMM with epilogue",
       0,
       // One thread: on a loaded 2-core machine a second thread's barrier waits turn a 100 us
       // GEMM into a 30 ms one, and the table would rank the scheduler, not the schedules.
       {{"threads", {1}},
        {"kc", {32, 64, 128, 256}},
        {"mc", {16, 32, 64}},
        {"unroll_k", {1, 2, 4, 8}},
        {"prefetch_ab", {0, 4, 8}},
        {"fuse_epilogue", {0, 1}}},
       ""},
      // The register tile (MR x NR accumulators against AVX2's 16 vector registers: large
      // tiles spill) with the K slice and the k-loop unroll: a sharper space than the cache
      // blocking above, where a fifth of the points lie within 3% of the best. 160 points, not
      // the 300: what the time on a loaded 2-core machine allowed (docs/BENCHMARKS.md);
      // kc 128 and mr 3 are the next to add (the build resumes).
      {"41k-gemm-register-tile",
       "41k",
       "GEMM with epilogue",
       0,
       {{"threads", {1}},
        {"mr", {1, 2, 4, 6, 8}},
        {"nr", {8, 16, 24, 32}},
        {"kc", {32, 256}},
        {"unroll_k", {1, 4}},
        {"fuse_epilogue", {0, 1}}},
       "avx2"},
      // The families the first three tables left out (issue 35, item 7). GEMM-like kernels on
      // one thread, as above. Values are powers of two (or small counts) that every x86-64
      // plan declares, so the tables can be built on any CPU model.
      {"18k-conv",
       "18k",
       "convolution (implicit GEMM) with epilogue",
       0,
       {{"threads", {1}},
        {"mr", {2, 4, 6, 8}},
        {"nr", {16, 32, 48}},
        {"kc", {16, 32, 64, 128}},
        {"unroll_k", {1, 4}},
        {"prefetch_ab", {0, 8}},
        {"fuse_epilogue", {0, 1}}},
       ""},
      // q.kT with its scale/mask epilogue: the first kernel of 1p's attention on CPU.
      {"1p-attention-scores",
       "1p",
       "attention block",
       1,
       {{"threads", {1}},
        {"mr", {2, 4, 6, 8}},
        {"nr", {16, 32, 48}},
        {"kc", {16, 32, 64, 128}},
        {"unroll_k", {1, 4}},
        {"prefetch_ab", {0, 8}},
        {"fuse_epilogue", {0, 1}}},
       ""},
      // The softmax after 50k's GEMM (row max, exp, row sum, divide in one row program): its
      // whole declared space but the vector width (216 points: it has no more on AVX2).
      {"50k-softmax",
       "50k",
       "softmax",
       1,
       {{"reduce_lanes", {1, 8, 16}},
        {"row_fuse", {0, 1}},
        {"threads", {1, 2}},
        {"tile_inner", {0, 1024, 4096}},
        {"unroll", {1, 2, 4}},
        {"vectorize", {0, 1}}},
       ""},
      // 11p's grouped matmul as the CPU runs it: one GEMM over the (row tile, group) visits.
      {"11p-grouped-gemm",
       "11p",
       "grouped GEMM",
       24,
       {{"threads", {1}},
        {"mr", {2, 4, 6, 8}},
        {"nr", {16, 32, 48}},
        {"kc", {16, 32, 64}},
        {"mc", {16, 32, 64}},
        {"unroll_k", {1, 4}},
        {"prefetch_ab", {0, 8}}},
       ""},
      // One of 17p's triangle-update GEMMs, whose operands are transposes of the pair tensor.
      {"17p-transpose-gemm",
       "17p",
       "transpose-heavy",
       4,
       {{"threads", {1}},
        {"mr", {2, 4, 8, 12}},
        {"nr", {16, 32, 48}},
        {"kc", {16, 32, 64, 128}},
        {"loop_order", {0, 1}},
        {"pack_b", {0, 1}},
        {"unroll_k", {1, 4}}},
       ""},
  };
  return kernels;
}

std::string SearchTableFolder(const std::string& cpu_model, const std::string& isa_level) {
  std::string slug;
  for (char c : cpu_model + " " + isa_level) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c));
    if (keep) {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return "bench/search/" + (slug.empty() ? std::string("unknown-cpu") : slug);
}

Result<SearchKernelDef> FindSearchKernel(const std::string& name) {
  std::string names;
  for (const SearchKernelDef& d : SearchKernels()) {
    if (d.name == name) return d;
    names += (names.empty() ? "" : ", ") + d.name;
  }
  return InvalidArgument("--only: '" + name + "' is not a search benchmark kernel (" + names + ")");
}

// ---- the table -----------------------------------------------------------------------------

uint64_t SearchTable::SpaceSize() const {
  uint64_t n = 1;
  for (const SubspaceParam& p : params) n *= p.values.size();
  return n;
}

space::Candidate SearchTable::CandidateOf(const std::map<std::string, int64_t>& values) const {
  space::Candidate c;
  c.kernels = initial;
  for (const auto& [name, v] : values) c.kernels[static_cast<size_t>(kernel)].values[name] = v;
  return c;
}

json ToJson(const SearchTable& t) {
  json params = json::array();
  for (const SubspaceParam& p : t.params) params.push_back({{"name", p.name}, {"values", p.values}});
  json kernels = json::array();
  for (size_t k = 0; k < t.costs.size(); ++k) {
    kernels.push_back({{"flops", t.costs[k].flops},
                       {"bytes", t.costs[k].bytes},
                       {"bf16", t.costs[k].bf16},
                       {"weight", k < t.weights.size() ? t.weights[k] : 0.0},
                       {"initial", space::ToJson(t.initial[k])}});
    if (t.costs[k].gemm_depth > 0) kernels.back()["gemm_depth"] = t.costs[k].gemm_depth;
  }
  json points = json::array();
  for (const TablePoint& p : t.points) {
    json j = {{"values", p.values}, {"status", p.status}};
    j["median_s"] = p.median_s ? json(*p.median_s) : json(nullptr);
    if (!p.message.empty()) j["message"] = p.message;
    if (!p.library.empty()) j["library"] = p.library;
    j["features"] = p.features;
    points.push_back(std::move(j));
  }
  return {{"schema", kSchema},
          {"name", t.name},
          {"task", {{"id", t.task_id}, {"scale", "ci"}, {"dir", t.task_dir}}},
          {"family", t.family},
          {"cpu", {{"model", t.cpu_model}, {"isa_level", t.isa_level}}},
          {"date", t.date},
          {"commit", t.commit},
          {"note", t.note},
          {"measured_with", t.measured_with},
          {"subspace", {{"kernel", t.kernel}, {"params", params}, {"points", t.SpaceSize()}}},
          {"kernels", kernels},
          {"rates",
           {{"f32_flops", t.rates.f32_flops},
            {"bf16_flops", t.rates.bf16_flops},
            {"bandwidth", t.rates.bandwidth},
            {"cores", t.rates.cores}}},
          {"feature_names", t.feature_names},
          {"complete", t.complete},
          {"points", points}};
}

Result<SearchTable> SearchTableFromJson(const json& j, const std::string& origin) {
  auto bad = [&](const std::string& what) {
    return InvalidArgument(origin + ": not a search table: " + what);
  };
  try {
    if (!j.is_object() || j.value("schema", "") != kSchema) return bad("schema is not " + std::string(kSchema));
    SearchTable t;
    t.path = origin;
    t.name = j.at("name").get<std::string>();
    t.task_id = j.at("task").at("id").get<std::string>();
    t.task_dir = j.at("task").value("dir", "");
    t.family = j.value("family", "");
    t.cpu_model = j.at("cpu").at("model").get<std::string>();
    t.isa_level = j.at("cpu").value("isa_level", "");
    t.date = j.value("date", "");
    t.commit = j.value("commit", "");
    t.note = j.value("note", "");
    t.measured_with = j.value("measured_with", json::object());
    t.complete = j.value("complete", false);
    const json& sub = j.at("subspace");
    t.kernel = sub.at("kernel").get<int>();
    for (const json& p : sub.at("params")) {
      SubspaceParam sp{p.at("name").get<std::string>(), p.at("values").get<std::vector<int64_t>>()};
      if (sp.values.empty()) return bad("parameter " + sp.name + " has no values");
      t.params.push_back(std::move(sp));
    }
    if (t.params.empty()) return bad("the sub-space has no parameters");
    for (const json& k : j.at("kernels")) {
      t.costs.push_back({k.at("flops").get<int64_t>(), k.at("bytes").get<int64_t>(),
                         k.value("bf16", false), k.value("gemm_depth", int64_t{0})});
      t.weights.push_back(k.value("weight", 0.0));
      space::Schedule s;
      for (const auto& [name, v] : k.at("initial").items()) s.values[name] = v.get<int64_t>();
      t.initial.push_back(std::move(s));
    }
    if (t.kernel < 0 || static_cast<size_t>(t.kernel) >= t.initial.size()) {
      return bad("subspace.kernel " + std::to_string(t.kernel) + " is not one of its " +
                 std::to_string(t.initial.size()) + " kernels");
    }
    const json& r = j.at("rates");
    t.rates.f32_flops = r.at("f32_flops").get<double>();
    t.rates.bf16_flops = r.value("bf16_flops", 0.0);
    t.rates.bandwidth = r.at("bandwidth").get<double>();
    t.rates.cores = r.value("cores", 1);
    t.feature_names = j.value("feature_names", std::vector<std::string>{});
    std::set<std::string> seen;
    for (const json& p : j.at("points")) {
      TablePoint tp;
      for (const auto& [name, v] : p.at("values").items()) tp.values[name] = v.get<int64_t>();
      tp.status = p.at("status").get<std::string>();
      if (p.contains("median_s") && !p["median_s"].is_null()) tp.median_s = p["median_s"].get<double>();
      tp.message = p.value("message", "");
      tp.library = p.value("library", "");
      // A missing feature is NaN in the model's rows and null in JSON.
      if (p.contains("features")) {
        for (const json& f : p["features"]) tp.features.push_back(f.is_null() ? NAN : f.get<float>());
      }
      if (tp.values.size() != t.params.size()) return bad("point " + ValuesKey(tp.values) + " does not set every parameter");
      for (const SubspaceParam& sp : t.params) {
        auto it = tp.values.find(sp.name);
        if (it == tp.values.end() ||
            std::find(sp.values.begin(), sp.values.end(), it->second) == sp.values.end()) {
          return bad("point " + ValuesKey(tp.values) + " lies outside the sub-space");
        }
      }
      if (!seen.insert(ValuesKey(tp.values)).second) return bad("point " + ValuesKey(tp.values) + " appears twice");
      if (tp.status == "correct" && !(tp.median_s && *tp.median_s > 0)) {
        return bad("correct point " + ValuesKey(tp.values) + " has no positive median_s");
      }
      if (!tp.features.empty() && !t.feature_names.empty() && tp.features.size() != t.feature_names.size()) {
        return bad("point " + ValuesKey(tp.values) + " has " + std::to_string(tp.features.size()) +
                   " features, the table names " + std::to_string(t.feature_names.size()));
      }
      t.points.push_back(std::move(tp));
    }
    if (t.complete && t.points.size() != t.SpaceSize()) {
      return bad("marked complete with " + std::to_string(t.points.size()) + " of " +
                 std::to_string(t.SpaceSize()) + " points");
    }
    return t;
  } catch (const json::exception& e) {
    return bad(e.what());
  }
}

Result<SearchTable> LoadSearchTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot read the search table");
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return InvalidArgument(path + ": not a search table: the file is not JSON");
  return SearchTableFromJson(j, path);
}

// ---- building a table ----------------------------------------------------------------------

namespace {

Status WriteTable(const SearchTable& t, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) return IoError("cannot write " + tmp);
    out << ToJson(t).dump(1) << "\n";
    if (!out) return IoError("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return IoError("cannot move " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Status CheckSubspace(const SearchKernelDef& def, const agents::Plan& plan) {
  if (def.kernel < 0 || static_cast<size_t>(def.kernel) >= plan.spaces.size()) {
    return InvalidArgument(def.name + ": the plan of " + def.task_id + " has " +
                           std::to_string(plan.spaces.size()) + " kernels, not kernel " +
                           std::to_string(def.kernel));
  }
  const space::KernelSpace& declared = plan.spaces[static_cast<size_t>(def.kernel)];
  for (const SubspaceParam& p : def.params) {
    auto it = std::find_if(declared.params.begin(), declared.params.end(),
                           [&](const space::ParamDomain& d) { return d.name == p.name; });
    std::string domain;
    if (it != declared.params.end()) {
      for (int64_t v : it->values) domain += (domain.empty() ? "" : ",") + std::to_string(v);
    }
    if (it == declared.params.end()) {
      return InvalidArgument(def.name + ": kernel " + std::to_string(def.kernel) + " of " +
                             def.task_id + " declares no parameter " + p.name);
    }
    for (int64_t v : p.values) {
      if (std::find(it->values.begin(), it->values.end(), v) == it->values.end()) {
        return InvalidArgument(def.name + ": " + p.name + "=" + std::to_string(v) +
                               " is not in the declared domain {" + domain + "}");
      }
    }
  }

  return Status::Ok();
}

Result<std::string> BuildSearchTable(const BuildTableOptions& o, agents::CpuEngine& engine,
                                     const BenchProgress& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  MK_ASSIGN_OR_RETURN(SearchKernelDef def, FindSearchKernel(o.name));
  if (!def.isa_level.empty() && def.isa_level != engine.target().isa_level) {
    return InvalidArgument(def.name + " is defined for " + def.isa_level + " code; this build is for " +
                           engine.target().isa_level + ": run it with MAXKERNEL_CPU_ISA=" + def.isa_level);
  }
  if (!(o.min_time_s > 0)) return InvalidArgument("--min-time must be > 0 seconds");
  JaxbenchOptions jo;
  jo.scale = "ci";
  jo.only = {def.task_id};
  jo.tasks_dir = o.tasks_dir;
  if (jo.tasks_dir.empty() && fs::exists(fs::path("bench/jaxbench") / def.task_id / "ci" / "task.yaml")) {
    jo.tasks_dir = "bench/jaxbench";
  }
  MK_ASSIGN_OR_RETURN(std::vector<std::string> dirs, JaxbenchTaskDirs(jo, progress));
  const std::string task_dir = fs::absolute(dirs[0]).lexically_normal().string();
  MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(task_dir));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*loaded.module));

  agents::PlanRequest preq;
  preq.module = loaded.module.get();
  preq.target = engine.target();
  MK_ASSIGN_OR_RETURN(agents::Plan plan, agents::RunPlanner(preq, engine.emitter()));
  MK_RETURN_IF_ERROR(CheckSubspace(def, plan));

  SearchTable t;
  std::error_code mkdir_error;
  fs::create_directories(o.out_dir, mkdir_error);
  if (mkdir_error) return IoError("cannot create " + o.out_dir + ": " + mkdir_error.message());
  const std::string path = (fs::path(o.out_dir) / (def.name + ".json")).string();
  std::map<std::string, TablePoint> done;
  if (fs::exists(path)) {
    Result<SearchTable> old = LoadSearchTable(path);
    if (!old.ok()) return old.status().WithContext("cannot resume (remove the file to start over)");
    if (old->cpu_model != engine.target().model) {
      return InvalidArgument(path + " was measured on " + old->cpu_model + ", this CPU is " +
                             engine.target().model + ": remove it to measure it here");
    }
    for (TablePoint& p : old->points) done[ValuesKey(p.values)] = std::move(p);
    say("resuming " + path + ": " + std::to_string(done.size()) + " points measured");
  }
  json header = BenchHeader("search", "maxkernel bench --suite search --build-table --only " + def.name, "", 0);
  t.name = def.name;
  t.task_id = def.task_id;
  t.task_dir = dirs[0];
  t.family = def.family;
  t.cpu_model = engine.target().model;
  t.isa_level = engine.target().isa_level;
  t.date = header.value("date", "");
  t.commit = header.value("commit", "");
  t.note = o.note;
  t.kernel = def.kernel;
  t.params = def.params;
  t.initial = plan.initial.kernels;
  t.costs = modes::search::CostsOfPlan(plan);
  double total = 0;
  for (const auto& k : plan.kernels) total += std::max(k.lower_bound_s, 0.0);
  for (const auto& k : plan.kernels) {
    t.weights.push_back(total > 0 ? std::max(k.lower_bound_s, 0.0) / total : 0.0);
  }
  t.rates.f32_flops = plan.target.peak_flops_f32;
  t.rates.bf16_flops = plan.target.peak_flops_bf16;
  t.rates.bandwidth = plan.target.bandwidth_bytes_per_s;
  t.rates.cores = plan.target.cores;
  t.feature_names = modes::search::FeatureMap::Names();
  t.measured_with = {{"pipeline", "plan, implement, build, test, profile (agents::Pipeline)"},
                     {"min_time_s", o.min_time_s},
                     {"test_seeds", o.test_seeds},
                     {"dedupe", "a point whose library (sha256) an earlier point built shares its time"},
                     {"loadavg_start", LoadAverage()}};
  const modes::search::FeatureMap features(plan);

  // The pipeline's store: private to the table builder, in the user's cache.
  const std::string store_dir = runtime::UserCacheDir("search-tables");
  MK_RETURN_IF_ERROR(runtime::EnsurePrivateDirectory(store_dir));
  MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(store_dir + "/" + def.name + ".db"));
  store::ArtifactStore artifacts(store_dir);
  store::TaskRecord tr;
  tr.directory = task_dir;
  MK_ASSIGN_OR_RETURN(tr.module_sha256, artifacts.Put(hlo::PrintModule(*loaded.module), "text/x-hlo"));
  tr.yaml = task::TaskToYaml(loaded.task);
  MK_ASSIGN_OR_RETURN(int64_t task_id, db->UpsertTask(tr));
  store::NewRun nr;
  nr.task_id = task_id;
  nr.mode = store::RunMode::kSearch;
  nr.target = engine.target().name;
  nr.config_json = json{{"search_table", def.name}}.dump();
  MK_ASSIGN_OR_RETURN(int64_t run_id, db->CreateRun(nr));
  agents::PipelineOptions po;
  po.test_seeds = o.test_seeds;
  po.protocol.min_seconds = o.min_time_s;
  po.diagnose = false;
  po.dedupe = true;
  po.reference_cache_dir = engine.compiler().options().cache_dir + "/oracle";
  agents::PipelineContext ctx{db.get(), &artifacts, &engine, nullptr};
  agents::Pipeline pipeline(ctx, loaded.task, *loaded.module, plan, po);
  // The libraries of resumed points: a point building one of them is their duplicate.
  int64_t seq = 0;
  for (const auto& [key, p] : done) {
    if (!p.library.empty()) pipeline.RememberLibrary(p.library, {seq, p.median_s});
    ++seq;
  }

  const auto all = Enumerate(def.params);
  size_t measured = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string key = ValuesKey(all[i]);
    if (auto it = done.find(key); it != done.end()) {
      t.points.push_back(it->second);
      continue;
    }
    const space::Candidate c = t.CandidateOf(all[i]);
    MK_ASSIGN_OR_RETURN(agents::CandidateOutcome out, pipeline.Evaluate(run_id, seq++, c));
    TablePoint p;
    p.values = all[i];
    p.features = features.Of(c);
    if (auto lib = out.artifacts.find("library"); lib != out.artifacts.end()) p.library = lib->second;
    if (out.status == "duplicate") {
      p.median_s = out.duplicate_median_s;
      p.status = p.median_s ? "correct" : "failed";
      p.message = "duplicate of an earlier point's library";
    } else {
      p.status = out.status;
      if (out.correct() && out.profile) p.median_s = out.profile->timing.median_s;
      if (out.correct() && !p.median_s) p.status = "profile_failed";
      p.message = out.message;
    }
    say("[" + std::to_string(i + 1) + "/" + std::to_string(all.size()) + "] " + key + " " +
        (p.median_s ? Num(*p.median_s * 1e6) + " us" : p.status + ": " + p.message) +
        (out.status == "duplicate" ? " (duplicate)" : ""));
    t.points.push_back(std::move(p));
    if (++measured % 10 == 0) {
      // The partial table, in enumeration order with the gaps left out: a kill loses < 10 points.
      SearchTable partial = t;
      for (size_t j = i + 1; j < all.size(); ++j) {
        if (auto it = done.find(ValuesKey(all[j])); it != done.end()) partial.points.push_back(it->second);
      }
      MK_RETURN_IF_ERROR(WriteTable(partial, path));
    }
  }
  t.complete = t.points.size() == all.size();
  t.measured_with["loadavg_finished"] = LoadAverage();
  MK_RETURN_IF_ERROR(WriteTable(t, path));
  (void)db->FinishRun(run_id, store::RunStatus::kSucceeded);
  return path;
}

// ---- replay --------------------------------------------------------------------------------

namespace {

struct Variant {
  std::string name;
  Algorithm algorithm;
  bool model = false;
  bool prior = false;  // start from the model trained on the other tables
  // Start at each sub-space domain's median value instead of the planner's analytical one (the
  // replay's `--no-analytical-init`: the search alone, not the planner, is measured).
  bool median_start = false;
};

// The graph of a table's sub-space: every parameter of every kernel single-valued at its initial
// value, except the sub-space's, which take its domains.
DecisionGraph GraphOf(const SearchTable& t, bool median_start) {
  std::vector<space::KernelSpace> spaces;
  for (size_t k = 0; k < t.initial.size(); ++k) {
    space::KernelSpace s;
    for (const auto& [name, v] : t.initial[k].values) {
      space::ParamDomain d;
      d.name = name;
      d.values = {v};
      d.initial = v;
      if (static_cast<int>(k) == t.kernel) {
        for (const SubspaceParam& p : t.params) {
          if (p.name == name) d.values = p.values;
        }
      }
      s.params.push_back(std::move(d));
    }
    if (static_cast<int>(k) == t.kernel) {
      for (const SubspaceParam& p : t.params) {
        if (!t.initial[k].values.count(p.name)) s.params.push_back({p.name, p.values, p.values[0], ""});
      }
    }
    spaces.push_back(std::move(s));
  }
  space::Candidate start;
  start.kernels = t.initial;
  if (median_start) {
    for (const SubspaceParam& p : t.params) {
      start.kernels[static_cast<size_t>(t.kernel)].values[p.name] = p.values[(p.values.size() - 1) / 2];
    }
  }
  return DecisionGraph(std::move(spaces), t.weights, start);
}

// Rows of `t`'s correct points as one ranking group.
void AddGroup(const SearchTable& t, RankingData& data) {
  std::vector<double> times;
  std::vector<const TablePoint*> pts;
  for (const TablePoint& p : t.points) {
    if (p.median_s && !p.features.empty()) {
      times.push_back(*p.median_s);
      pts.push_back(&p);
    }
  }
  if (pts.empty()) return;
  data.columns = pts[0]->features.size();
  data.NewGroup();
  const std::vector<float> rel = modes::search::RelevanceOfTimes(times);
  for (size_t i = 0; i < pts.size(); ++i) data.Add(pts[i]->features, rel[i]);
}

struct RunResult {
  std::optional<int> needed;  // measurements until within the target
  double best_at_budget = NAN;
  double pruned_share = 0;
  bool admissible = true;
};

Result<RunResult> ReplayOne(const SearchTable& t, const Variant& v, uint64_t seed,
                            const std::optional<std::string>& prior_bytes, double target_s,
                            int budget) {
  std::map<std::string, const TablePoint*> index;
  for (const TablePoint& p : t.points) index[ValuesKey(p.values)] = &p;
  SearchOptions so;
  so.algorithm = v.algorithm;
  so.use_model = v.model;
  GraphSearch search(GraphOf(t, v.median_start), LowerBound(t.costs, t.rates), so, seed);
  auto values_of = [&t](const space::Candidate& c) {
    std::map<std::string, int64_t> values;
    const space::Schedule& s = c.For(static_cast<size_t>(t.kernel));
    for (const SubspaceParam& p : t.params) values[p.name] = s.Get(p.name, 0);
    return values;
  };
  if (v.model) {
    std::optional<CostModel> prior;
    if (v.prior && prior_bytes) {
      MK_ASSIGN_OR_RETURN(CostModel m, CostModel::Deserialize(*prior_bytes));
      prior = std::move(m);
    }
    const size_t columns = t.feature_names.size();
    search.UseModel(
        [&index, values_of, columns](const space::Candidate& c) {
          auto it = index.find(ValuesKey(values_of(c)));
          if (it == index.end() || it->second->features.size() != columns) {
            return std::vector<float>(columns, NAN);
          }
          return it->second->features;
        },
        columns, std::move(prior));
  }
  RunResult r;
  std::set<std::string> libraries;
  std::optional<double> best;
  int measured = 0;
  while (auto c = search.Next()) {
    auto it = index.find(ValuesKey(values_of(*c)));
    if (it == index.end()) {
      return Internal(t.path + ": the search proposed " + ValuesKey(values_of(*c)) +
                      ", a point the table does not hold");
    }
    const TablePoint& p = *it->second;
    // The same library as a point measured before costs nothing (as in the pipeline).
    if (p.library.empty() || libraries.insert(p.library).second) ++measured;
    search.Record(*c, p.median_s);
    if (p.median_s && (!best || *p.median_s < *best)) best = p.median_s;
    if (measured <= budget && best) r.best_at_budget = *best;
    if (!r.needed && best && *best <= target_s) r.needed = measured;
    if (r.needed && measured >= budget) break;
  }
  const json stats = search.Stats();
  r.pruned_share = stats.value("pruned_share", 0.0);
  r.admissible = stats["admissibility"].value("ok", true);
  return r;
}

}  // namespace

Result<json> ReplaySearchTables(const std::vector<SearchTable>& tables, const ReplayOptions& o) {
  if (tables.empty()) return InvalidArgument("no search tables to replay");
  if (o.seeds < 1) return InvalidArgument("--seeds must be at least 1");
  for (const SearchTable& t : tables) {
    if (t.cpu_model != o.host_cpu) {
      return InvalidArgument(t.path + " was measured on \"" + t.cpu_model + "\"; this CPU is \"" +
                             o.host_cpu +
                             "\": a replay is valid only on the CPU model the table was measured on");
    }
    if (!t.complete || t.points.size() != t.SpaceSize()) {
      return InvalidArgument(t.path + " is incomplete (" + std::to_string(t.points.size()) + " of " +
                             std::to_string(t.SpaceSize()) +
                             " points): finish it with --build-table --only " + t.name);
    }
  }
  json out = {{"label", "replay"},
              {"cpu", o.host_cpu},
              {"seeds", o.seeds},
              {"within", o.within},
              {"budget_share", o.budget_share},
              {"tables", json::array()}};
  for (size_t ti = 0; ti < tables.size(); ++ti) {
    const SearchTable& t = tables[ti];
    std::optional<double> best;
    int correct = 0;
    for (const TablePoint& p : t.points) {
      if (!p.median_s) continue;
      ++correct;
      if (!best || *p.median_s < *best) best = p.median_s;
    }
    json tj = {{"name", t.name},  {"task", t.task_id}, {"family", t.family},
               {"space_size", t.SpaceSize()}, {"correct", correct}, {"note", t.note},
               {"measured", t.date}};
    if (!best) {
      tj["error"] = "no correct point";
      out["tables"].push_back(tj);
      continue;
    }
    const double target_s = *best * (1 + o.within);
    int near = 0;
    for (const TablePoint& p : t.points) near += p.median_s && *p.median_s <= target_s;
    tj["best_s"] = *best;
    // The bound's usefulness (issue 35, item 3): bound / measured over every correct point.
    {
      // And the share of the space whose bound exceeds the best time: what the bound alone
      // prunes once the best is measured, before any model is asked.
      const LowerBound lb(t.costs, t.rates);
      std::vector<double> ratios;
      size_t above_best = 0;
      for (const TablePoint& p : t.points) {
        std::vector<std::map<std::string, int64_t>> fixed;
        for (const space::Schedule& s : t.CandidateOf(p.values).kernels) fixed.push_back(s.values);
        const double b = lb.Of(fixed);
        above_best += b > *best;
        if (p.median_s) ratios.push_back(b / *p.median_s);
      }
      tj["bound_over_measured_median"] = Median(ratios);
      tj["bound_prunes_share"] =
          static_cast<double>(above_best) / static_cast<double>(std::max<size_t>(1, t.points.size()));
    }
    tj["near_best_share"] = static_cast<double>(near) / static_cast<double>(t.SpaceSize());
    const int budget = std::max(1, static_cast<int>(std::ceil(o.budget_share * static_cast<double>(t.SpaceSize()))));
    tj["budget"] = budget;

    // Leave one table out: the model of every other table's rows.
    RankingData others;
    std::vector<std::string> trained_on;
    for (size_t oi = 0; oi < tables.size(); ++oi) {
      if (oi == ti) continue;
      const size_t before = others.group_sizes.size();
      AddGroup(tables[oi], others);
      if (others.group_sizes.size() > before) trained_on.push_back(tables[oi].name);
    }
    std::optional<std::string> prior_bytes;
    json ranking = {{"trained_on", trained_on}};
    if (!trained_on.empty()) {
      CostModel::Options mo;
      MK_ASSIGN_OR_RETURN(CostModel m, CostModel::Train(others, mo));
      MK_ASSIGN_OR_RETURN(prior_bytes, m.Serialize());
      std::vector<float> rows;
      std::vector<double> times;
      for (const TablePoint& p : t.points) {
        if (!p.median_s || p.features.size() != m.columns()) continue;
        rows.insert(rows.end(), p.features.begin(), p.features.end());
        times.push_back(*p.median_s);
      }
      MK_ASSIGN_OR_RETURN(std::vector<float> scores, m.Predict(rows, m.columns()));
      std::vector<double> predicted(scores.begin(), scores.end()), speed;
      for (double s : times) speed.push_back(-s);  // higher score = predicted faster
      ranking["spearman"] = SpearmanRho(predicted, speed);
      // One distinct score means the model cannot tell this table's points apart (e.g. it split
      // only on parameters this kernel does not declare): rho is then 0, not a weak ranking.
      ranking["distinct_scores"] = std::set<float>(scores.begin(), scores.end()).size();
      std::vector<size_t> by_score(times.size()), by_time(times.size());
      for (size_t i = 0; i < times.size(); ++i) by_score[i] = by_time[i] = i;
      std::sort(by_score.begin(), by_score.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
      std::sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) { return times[a] < times[b]; });
      const size_t k = std::min<size_t>(10, times.size());
      std::set<size_t> top(by_time.begin(), by_time.begin() + static_cast<long>(k));
      size_t hits = 0;
      for (size_t i = 0; i < k; ++i) hits += top.count(by_score[i]);
      ranking["top10_recall"] = k ? static_cast<double>(hits) / static_cast<double>(k) : 0.0;
    } else {
      ranking["note"] = "no other table to train on";
    }
    tj["ranking"] = ranking;

    // With another table to learn from, the model starts as the transfer (trained without this
    // table) and a cold start is reported beside it; alone, every model starts cold.
    std::vector<Variant> variants;
    if (prior_bytes) variants.push_back({"astar+model", Algorithm::kAstar, true, true});
    variants.push_back({"astar+model (cold)", Algorithm::kAstar, true, false});
    variants.push_back({"astar", Algorithm::kAstar, false, false});
    variants.push_back({prior_bytes ? "beam+model" : "beam+model (cold)", Algorithm::kBeam, true,
                        prior_bytes.has_value()});
    variants.push_back({prior_bytes ? "evolutionary+model" : "evolutionary+model (cold)",
                        Algorithm::kEvolutionary, true, prior_bytes.has_value()});
    variants.push_back({"evolutionary", Algorithm::kEvolutionary, false, false});
    variants.push_back({"random", Algorithm::kRandom, false, false});
    variants.push_back({prior_bytes ? "astar+model, median start" : "astar+model (cold), median start",
                        Algorithm::kAstar, true, prior_bytes.has_value(), true});
    variants.push_back({"astar, median start", Algorithm::kAstar, false, false, true});
    json algos = json::array();
    std::map<std::string, double> needed_median;
    for (const Variant& v : variants) {
      json needed = json::array(), at_budget = json::array();
      std::vector<double> needed_v, at_budget_v, pruned_v;
      bool admissible = true;
      for (int s = 0; s < o.seeds; ++s) {
        MK_ASSIGN_OR_RETURN(RunResult r, ReplayOne(t, v, static_cast<uint64_t>(s) + 1, prior_bytes, target_s, budget));
        // Never reached counts as more than the whole space, so the median stays honest.
        needed.push_back(r.needed ? json(*r.needed) : json(nullptr));
        needed_v.push_back(r.needed ? *r.needed : static_cast<double>(t.SpaceSize() + 1));
        at_budget.push_back(std::isnan(r.best_at_budget) ? json(nullptr) : json(r.best_at_budget / *best));
        at_budget_v.push_back(std::isnan(r.best_at_budget) ? INFINITY : r.best_at_budget / *best);
        pruned_v.push_back(r.pruned_share);
        admissible = admissible && r.admissible;
      }
      const double nm = Median(needed_v);
      needed_median[v.name] = nm;
      json a = {{"name", v.name},
                {"needed", needed},
                {"needed_median", nm > static_cast<double>(t.SpaceSize()) ? json(nullptr) : json(nm)},
                {"needed_share", nm / static_cast<double>(t.SpaceSize())},
                {"best_at_budget_over_best", at_budget},
                {"pruned_share_median", Median(pruned_v)},
                {"admissible", admissible}};
      const double ab = Median(at_budget_v);
      a["best_at_budget_over_best_median"] = std::isfinite(ab) ? json(ab) : json(nullptr);
      algos.push_back(std::move(a));
    }
    tj["algorithms"] = algos;
    const std::string lead = prior_bytes ? "astar+model" : "astar+model (cold)";
    tj["random_over_astar"] = needed_median["random"] / needed_median[lead];
    tj["random_over_astar_of"] = lead;
    // The planner's start may already be near the best: the search alone, from the medians.
    const std::string lead_median = lead + ", median start";
    tj["random_over_astar_median_start"] = needed_median["random"] / needed_median[lead_median];
    tj["targets"] = {
        {"within_3pct_at_5pct_of_space", needed_median[lead] <= budget},
        {"five_times_fewer_than_random", needed_median["random"] / needed_median[lead] >= 5},
        {"at_most_5pct_near_best", tj["near_best_share"].get<double>() <= 0.05}};
    out["tables"].push_back(std::move(tj));
  }
  return out;
}

Result<std::string> TrainSuiteModel(const std::vector<SearchTable>& tables) {
  RankingData data;
  for (const SearchTable& t : tables) {
    const size_t columns = data.columns;
    AddGroup(t, data);
    if (columns && data.columns != columns) {
      return InvalidArgument(t.path + ": its feature rows have " + std::to_string(data.columns) +
                             " columns where the other tables have " + std::to_string(columns));
    }
  }
  if (data.group_sizes.empty()) return NotFound("no table has a correct point to train on");
  MK_ASSIGN_OR_RETURN(CostModel m, CostModel::Train(data, CostModel::Options{}));
  return m.SerializeXgboost();
}

std::string FormatSearchReplay(const json& r) {
  std::ostringstream out;
  out << "maxkernel bench --suite search — " << r.value("label", "") << " on " << r.value("cpu", "")
      << ", " << r.value("seeds", 0) << " seeds; needed = measurements until within "
      << Num(100 * r.value("within", 0.0)) << "% of the table's best (median over seeds)\n";
  for (const json& t : r["tables"]) {
    out << "\n" << t.value("name", "") << " (" << t.value("family", "") << "): "
        << t.value("space_size", 0) << " points, " << t.value("correct", 0) << " correct";
    if (t.contains("error")) {
      out << ": " << t["error"].get<std::string>() << "\n";
      continue;
    }
    out << ", best " << Num(t["best_s"].get<double>() * 1e6) << " us, "
        << Num(100 * t["near_best_share"].get<double>()) << "% of points within "
        << Num(100 * r.value("within", 0.0)) << "%; budget " << t.value("budget", 0) << " ("
        << Num(100 * r.value("budget_share", 0.0)) << "% of the space); bound/measured "
        << Num(t.value("bound_over_measured_median", 0.0)) << " (median); the bound alone prunes "
        << Num(100 * t.value("bound_prunes_share", 0.0)) << "% of the points (bound > best)\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-34s %10s %9s %14s %8s %s\n", "algorithm", "needed",
                  "share", "best@budget", "pruned", "admissible");
    out << line;
    for (const json& a : t["algorithms"]) {
      const std::string needed = a["needed_median"].is_null() ? "not reached" : Num(a["needed_median"].get<double>());
      const std::string at = a["best_at_budget_over_best_median"].is_null()
                                 ? "-"
                                 : Num(a["best_at_budget_over_best_median"].get<double>()) + "x";
      std::snprintf(line, sizeof line, "  %-34s %10s %8s%% %14s %7s%% %s\n",
                    a.value("name", "").c_str(), needed.c_str(),
                    Num(100 * a.value("needed_share", 0.0)).c_str(), at.c_str(),
                    Num(100 * a.value("pruned_share_median", 0.0)).c_str(),
                    a.value("admissible", false) ? "yes" : "NO");
      out << line;
    }
    out << "  random/" << t.value("random_over_astar_of", "") << ": "
        << Num(t.value("random_over_astar", 0.0)) << "x fewer measurements; from the medians: "
        << Num(t.value("random_over_astar_median_start", 0.0)) << "x\n";
    const json& rk = t["ranking"];
    if (rk.contains("spearman")) {
      std::string on;
      for (const auto& n : rk["trained_on"]) on += (on.empty() ? "" : ", ") + n.get<std::string>();
      out << "  model trained on " << on << ": Spearman " << Num(rk["spearman"].get<double>())
          << ", top-10 recall " << Num(rk["top10_recall"].get<double>()) << " ("
          << rk.value("distinct_scores", 0) << " distinct scores)\n";
    } else {
      out << "  model ranking: " << rk.value("note", "") << "\n";
    }
  }
  return out.str();
}

}  // namespace mk::bench
