#include "benchmarks/bench_search.h"
#include "task/task.h"
#include "codegen/cpu/cpu_emitter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "modes/search/lower_bound.h"
#include "modes/search/model_store.h"
#include "target/target.h"

namespace mk::bench {
namespace {

using nlohmann::json;

// A hand-made table: one kernel, a in {1,2,3,4} x b in {1..5} (20 points), start a=1, b=1.
// Times grow with the distance from (2,1), the best; the bound (1 FLOP, 1 byte at huge rates)
// prunes nothing. Points (1,4) and (1,5) built the same library: the second costs nothing.
json SyntheticTable(const std::string& name, const std::string& cpu, double scale) {
  json points = json::array();
  for (int a = 1; a <= 4; ++a) {
    for (int b = 1; b <= 5; ++b) {
      const double t = scale * (1.0 + 0.5 * std::abs(a - 2) + 0.3 * (b - 1));
      json p = {{"values", {{"a", a}, {"b", b}}},
                {"status", "correct"},
                {"median_s", t},
                // The third feature is missing (NaN, null in JSON), as a FeatureMap leaves the
                // parameters a kernel does not declare.
                {"features", {json(static_cast<float>(std::abs(a - 2))), json(static_cast<float>(b)), json(nullptr)}}};
      p["library"] = (a == 1 && b >= 4) ? std::string("lib-1-4") : "lib-" + std::to_string(a) + "-" + std::to_string(b);
      points.push_back(p);
    }
  }
  return {{"schema", "maxkernel.search_table/1"},
          {"name", name},
          {"task", {{"id", "synthetic"}, {"dir", ""}}},
          {"family", "test"},
          {"cpu", {{"model", cpu}, {"isa_level", "avx2"}}},
          {"subspace",
           {{"kernel", 0}, {"params", {{{"name", "a"}, {"values", {1, 2, 3, 4}}}, {{"name", "b"}, {"values", {1, 2, 3, 4, 5}}}}}}},
          {"kernels", {{{"flops", 1}, {"bytes", 1}, {"weight", 1.0}, {"initial", {{"a", 1}, {"b", 1}}}}}},
          {"rates", {{"f32_flops", 1e15}, {"bandwidth", 1e15}, {"cores", 1}}},
          {"feature_names", {"a_off", "b", "missing"}},
          {"complete", true},
          {"points", points}};
}

const json* Algo(const json& table, const std::string& name) {
  for (const json& a : table["algorithms"]) {
    if (a["name"] == name) return &a;
  }
  return nullptr;
}

TEST(BenchSearch, ReplayOfASyntheticTableGivesTheExpectedCounts) {
  auto t = SearchTableFromJson(SyntheticTable("one", "Test CPU", 1e-6), "one.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ReplayOptions o;
  o.host_cpu = "Test CPU";
  o.seeds = 5;
  auto r = ReplaySearchTables({*t}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["label"], "replay");
  const json& tj = (*r)["tables"][0];
  EXPECT_EQ(tj["space_size"], 20);
  EXPECT_DOUBLE_EQ(tj["best_s"].get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(tj["near_best_share"].get<double>(), 1.0 / 20);  // only (2,1) is within 3%
  EXPECT_EQ(tj["budget"], 1);                                        // ceil(5% of 20)
  // The bound: 1 FLOP and 1 byte at 1e15/s = 1e-15 s, against times from 1 us (best) to 3.2 us;
  // the 10th and 11th of the 20 sorted times are both 2.1 us.
  EXPECT_NEAR(tj["bound_over_measured_median"].get<double>(), 1e-15 / 2.1e-6, 1e-3 * 1e-15 / 2.1e-6);
  // Plain A* walks a widening ring around the start: (1,1), then (1,2..5) (deeper nodes first),
  // then (2,1). (1,5) is (1,4)'s library: 5 measurements, each seed alike.
  const json* astar = Algo(tj, "astar");
  ASSERT_NE(astar, nullptr);
  for (const json& n : (*astar)["needed"]) EXPECT_EQ(n, 5);
  EXPECT_DOUBLE_EQ((*astar)["needed_median"].get<double>(), 5);
  // At a budget of 1 measurement A* has the start: (1,1) at 1.5x the best.
  EXPECT_DOUBLE_EQ((*astar)["best_at_budget_over_best_median"].get<double>(), 1.5);
  EXPECT_TRUE((*astar)["admissible"].get<bool>());
  // From the domains' medians (a=2, b=3): (2,3), then its ring at depth 2 in child order
  // (b 2, 4, 1): (2,1), the best, is the 4th measurement.
  const json* median = Algo(tj, "astar, median start");
  ASSERT_NE(median, nullptr);
  for (const json& n : (*median)["needed"]) EXPECT_EQ(n, 4);
  EXPECT_NE(Algo(tj, "astar+model (cold), median start"), nullptr);
  // Random needs between 1 and 19 (20 points, one shared library) measurements on every seed.
  const json* random = Algo(tj, "random");
  ASSERT_NE(random, nullptr);
  ASSERT_EQ((*random)["needed"].size(), 5u);
  for (const json& n : (*random)["needed"]) {
    ASSERT_TRUE(n.is_number());
    EXPECT_GE(n.get<int>(), 1);
    EXPECT_LE(n.get<int>(), 19);
  }
  // The evolutionary search has its rows: it starts at the start, (1,1) (the best at a budget of
  // one), then breeds; it reaches the best on every seed, within the 19 distinct libraries.
  for (const char* name : {"evolutionary", "evolutionary+model (cold)"}) {
    const json* evo = Algo(tj, name);
    ASSERT_NE(evo, nullptr) << name;
    ASSERT_EQ((*evo)["needed"].size(), 5u) << name;
    for (const json& n : (*evo)["needed"]) {
      ASSERT_TRUE(n.is_number()) << name;
      EXPECT_GE(n.get<int>(), 2) << name;
      EXPECT_LE(n.get<int>(), 19) << name;
    }
    EXPECT_DOUBLE_EQ((*evo)["best_at_budget_over_best_median"].get<double>(), 1.5) << name;
    EXPECT_TRUE((*evo)["admissible"].get<bool>()) << name;
  }
  EXPECT_EQ(Algo(tj, "evolutionary+model"), nullptr);
  EXPECT_NE(FormatSearchReplay(*r).find("evolutionary+model (cold)"), std::string::npos);
  // One table: no transfer model; the cold-start model leads the comparison with random.
  EXPECT_EQ(Algo(tj, "astar+model"), nullptr);
  EXPECT_NE(Algo(tj, "astar+model (cold)"), nullptr);
  EXPECT_NE(Algo(tj, "beam+model (cold)"), nullptr);
  EXPECT_EQ(tj["random_over_astar_of"], "astar+model (cold)");
  EXPECT_FALSE(tj["ranking"].contains("spearman"));
  EXPECT_NE(FormatSearchReplay(*r).find("astar"), std::string::npos);
}

TEST(BenchSearch, LeaveOneTableOutRanksTheHeldOutTable) {
  auto one = SearchTableFromJson(SyntheticTable("one", "Test CPU", 1e-6), "one.json");
  auto two = SearchTableFromJson(SyntheticTable("two", "Test CPU", 3e-5), "two.json");
  ASSERT_TRUE(one.ok() && two.ok());
  ReplayOptions o;
  o.host_cpu = "Test CPU";
  o.seeds = 2;
  auto r = ReplaySearchTables({*one, *two}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const json& tj : (*r)["tables"]) {
    const json& rk = tj["ranking"];
    ASSERT_EQ(rk["trained_on"].size(), 1u);
    EXPECT_NE(rk["trained_on"][0], tj["name"]);
    // The same law in both tables: a model of one ranks the other well.
    EXPECT_GT(rk["spearman"].get<double>(), 0.8) << tj["name"];
    EXPECT_GE(rk["top10_recall"].get<double>(), 0.5);
    EXPECT_NE(Algo(tj, "astar+model"), nullptr);
    EXPECT_NE(Algo(tj, "beam+model"), nullptr);
    EXPECT_NE(Algo(tj, "evolutionary+model"), nullptr);
    EXPECT_EQ(tj["random_over_astar_of"], "astar+model");
  }
}

TEST(BenchSearch, ATableFromAnotherCpuIsRefused) {
  auto t = SearchTableFromJson(SyntheticTable("one", "Other CPU 9000", 1e-6), "bench/search/one.json");
  ASSERT_TRUE(t.ok());
  ReplayOptions o;
  o.host_cpu = "Test CPU";
  auto r = ReplaySearchTables({*t}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bench/search/one.json"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("Other CPU 9000"), std::string::npos);
  EXPECT_NE(r.status().message().find("valid only on the CPU model"), std::string::npos);
}

TEST(BenchSearch, AnIncompleteTableIsRefusedForReplay) {
  json j = SyntheticTable("one", "Test CPU", 1e-6);
  j["complete"] = false;
  j["points"].erase(j["points"].size() - 1);
  auto t = SearchTableFromJson(j, "one.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ReplayOptions o;
  o.host_cpu = "Test CPU";
  auto r = ReplaySearchTables({*t}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("incomplete (19 of 20"), std::string::npos) << r.status().message();
}

TEST(BenchSearch, ADamagedTableFileIsAClearError) {
  const auto dir = std::filesystem::temp_directory_path() / ("mk-search-table-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string truncated = (dir / "truncated.json").string();
  std::ofstream(truncated) << SyntheticTable("one", "Test CPU", 1e-6).dump().substr(0, 200);
  auto a = LoadSearchTable(truncated);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find(truncated), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("not JSON"), std::string::npos);

  json j = SyntheticTable("one", "Test CPU", 1e-6);
  j["points"][3]["values"]["a"] = 7;  // outside the sub-space
  const std::string outside = (dir / "outside.json").string();
  std::ofstream(outside) << j.dump();
  auto b = LoadSearchTable(outside);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find(outside), std::string::npos);
  EXPECT_NE(b.status().message().find("outside the sub-space"), std::string::npos) << b.status().message();

  json k = SyntheticTable("one", "Test CPU", 1e-6);
  k.erase("rates");
  auto c = SearchTableFromJson(k, "norates.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("norates.json"), std::string::npos);

  auto missing = LoadSearchTable((dir / "absent.json").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.json"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(BenchSearch, EachCpuModelsTablesHaveAFolderOfTheirOwn) {
  EXPECT_EQ(SearchTableFolder("AMD EPYC", "avx2"), "bench/search/amd-epyc-avx2");
  EXPECT_EQ(SearchTableFolder("Intel(R) Xeon(R) Processor", "avx512"),
            "bench/search/intel-r-xeon-r-processor-avx512");
  EXPECT_EQ(SearchTableFolder("../../etc", ""), "bench/search/etc");  // never leaves the folder
  EXPECT_EQ(SearchTableFolder("", ""), "bench/search/unknown-cpu");
  EXPECT_NE(SearchTableFolder("AMD EPYC", "avx2"), SearchTableFolder("AMD EPYC", "avx512"));
}

TEST(BenchSearch, TheBenchmarkKernelsAreWellFormed) {
  ASSERT_GE(SearchKernels().size(), 2u);
  for (const SearchKernelDef& d : SearchKernels()) {
    uint64_t points = 1;
    for (const SubspaceParam& p : d.params) {
      ASSERT_FALSE(p.values.empty()) << d.name;
      EXPECT_TRUE(std::is_sorted(p.values.begin(), p.values.end())) << d.name << " " << p.name;
      points *= p.values.size();
    }
    // The issue asks for 300-2,000; the first tables have 160-288 (docs/BENCHMARKS.md says why).
    EXPECT_GE(points, 150u) << d.name;
    EXPECT_LE(points, 2000u) << d.name;
    EXPECT_TRUE(FindSearchKernel(d.name).ok());
  }
  EXPECT_FALSE(FindSearchKernel("no-such-kernel").ok());
}

// Every benchmark kernel's sub-space is declared by its task's plan on this CPU (the kernel, its
// parameters, each value in the domain), so its table can be built here, whatever the CPU.
TEST(BenchSearch, EveryBenchmarkKernelsSubspaceIsDeclaredByItsPlanHere) {
  codegen::cpu::CpuEmitter emitter;
  for (const SearchKernelDef& d : SearchKernels()) {
    const std::string dir = std::string(MK_SOURCE_DIR) + "/bench/jaxbench/" + d.task_id + "/ci";
    auto loaded = task::LoadTaskWithModule(dir);
    ASSERT_TRUE(loaded.ok()) << d.name << ": " << loaded.status().ToString();
    agents::PlanRequest req;
    req.module = loaded->module.get();
    req.target = target::HostCpu();
    if (!d.isa_level.empty()) {
      // Planned as MAXKERNEL_CPU_ISA=<level> would, where this CPU runs that level.
      const char* old = std::getenv("MAXKERNEL_CPU_ISA");
      const std::string saved = old ? old : "";
      setenv("MAXKERNEL_CPU_ISA", d.isa_level.c_str(), 1);
      req.target = target::HostCpu();
      if (old) setenv("MAXKERNEL_CPU_ISA", saved.c_str(), 1); else unsetenv("MAXKERNEL_CPU_ISA");
      if (req.target.isa_level != d.isa_level) continue;  // this CPU does not run that level
    }
    auto plan = agents::RunPlanner(req, emitter);
    ASSERT_TRUE(plan.ok()) << d.name << ": " << plan.status().ToString();
    EXPECT_TRUE(CheckSubspace(d, *plan).ok()) << CheckSubspace(d, *plan).message();
  }
  SearchKernelDef bad = SearchKernels().front();
  bad.params.front().values = {3, 5, 7};
  const std::string dir = std::string(MK_SOURCE_DIR) + "/bench/jaxbench/" + bad.task_id + "/ci";
  auto loaded = task::LoadTaskWithModule(dir);
  ASSERT_TRUE(loaded.ok());
  agents::PlanRequest req;
  req.module = loaded->module.get();
  req.target = target::HostCpu();
  auto plan = agents::RunPlanner(req, emitter);
  ASSERT_TRUE(plan.ok());
  const Status refused = CheckSubspace(bad, *plan);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("not in the declared domain"), std::string::npos) << refused.message();
}

// Item 3's proof by test: on the CPU model and ISA a committed table was measured on, the lower
// bound is at most the measured time of every one of its points. Elsewhere the table says
// nothing about this machine, and the test skips it.
TEST(BenchSearch, TheBoundIsAdmissibleOnEveryCommittedTableOfThisCpu) {
  const target::Target host = target::HostCpu();
  const std::filesystem::path dir = std::filesystem::path(MK_SOURCE_DIR) / "bench" / "search";
  int checked = 0;
  std::vector<std::string> skipped;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    auto t = LoadSearchTable(entry.path().string());
    ASSERT_TRUE(t.ok()) << t.status().message();
    if (t->cpu_model != host.model || t->isa_level != host.isa_level) {
      skipped.push_back(t->name + " (" + t->cpu_model + ", " + t->isa_level + ")");
      continue;
    }
    const modes::search::LowerBound bound(t->costs, t->rates);
    for (const TablePoint& p : t->points) {
      if (!p.median_s) continue;
      std::vector<std::map<std::string, int64_t>> fixed;
      for (const space::Schedule& s : t->CandidateOf(p.values).kernels) fixed.push_back(s.values);
      EXPECT_LE(bound.Of(fixed), *p.median_s) << t->name << " " << nlohmann::json(p.values).dump();
      ++checked;
    }
  }
  if (checked == 0) {
    std::string list;
    for (const std::string& s : skipped) list += " " + s;
    GTEST_SKIP() << "no committed search table was measured on this CPU (" << host.model << ", "
                 << host.isa_level << "):" << list;
  }
}

}  // namespace
}  // namespace mk::bench

namespace mk::bench {
namespace {

// The suite's model (`bench --suite search --save-model FILE`) is a model file a search loads
// with --model, and it ranks the tables' points the way they were measured.
TEST(SuiteModel, TrainedOnEveryTableAndLoadableAsASearchPrior) {
  auto one = SearchTableFromJson(SyntheticTable("one", "Test CPU", 1e-6), "one.json");
  auto two = SearchTableFromJson(SyntheticTable("two", "Test CPU", 3e-5), "two.json");
  ASSERT_TRUE(one.ok() && two.ok());
  auto bytes = TrainSuiteModel({*one, *two});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const std::string path = ::testing::TempDir() + "/suite-model.json";
  std::ofstream(path, std::ios::binary) << *bytes;
  auto model = modes::search::LoadModelFile(path, 3);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  // The best point (a=2, b=1: features 0, 1) against the worst (a=4, b=5: features 2, 5).
  auto scores = model->Predict({0, 1, NAN, 2, 5, NAN}, 3);
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  EXPECT_GT((*scores)[0], (*scores)[1]);

  EXPECT_FALSE(TrainSuiteModel({}).ok());
}

}  // namespace
}  // namespace mk::bench
