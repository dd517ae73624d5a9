#include "agents/tpu_fallback.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "codegen/pallas/pallas_emitter.h"

namespace mk::agents {

using nlohmann::json;

json ToJson(const GlueFallback& f) {
  return {{"kernel_id", f.kernel_id}, {"function", f.function}, {"reason", f.reason}};
}

json ToJson(const TpuBuilt& b) {
  json fallbacks = json::array();
  for (const auto& f : b.fallbacks) fallbacks.push_back(ToJson(f));
  return {{"compiled", b.build.ok},
          {"message", b.build.message},
          {"builds", b.builds},
          {"stopped_by_time", b.stopped_by_time},
          {"fallbacks", fallbacks},
          {"implementation_hash", b.implementation.hash}};
}

std::map<int64_t, std::string> RefusedKernels(const json& kernels) {
  std::map<int64_t, std::string> out;
  if (!kernels.is_array()) return out;
  static const std::string kPrefix = "kernel_";
  for (const json& k : kernels) {
    if (!k.is_object() || k.value("ok", true)) continue;
    const std::string fn = k.value("function", std::string());
    if (fn.rfind(kPrefix, 0) != 0 || fn.size() == kPrefix.size()) continue;
    char* end = nullptr;
    const long long id = std::strtoll(fn.c_str() + kPrefix.size(), &end, 10);
    if (*end != '\0' || id < 0) continue;
    const json err = k.value("error", json::object());
    std::string why = err.is_object() ? err.value("kind", std::string("error")) : std::string("error");
    if (why == "compiler_crash") {
      why = "the compiler crashed on it";
    } else if (err.is_object()) {
      const std::string m = err.value("message", std::string());
      why += ": " + m.substr(0, m.find('\n'));
    }
    out[id] = why.size() > 300 ? why.substr(0, 300) + "..." : why;
  }
  return out;
}

namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s", s);
  return buf;
}

}  // namespace

Result<TpuBuilt> BuildWithGlueFallback(TpuRunner& runner, const analysis::FusionPlan& plan,
                                       space::Candidate candidate, int max_rounds, double max_seconds,
                                       const std::function<double()>& clock) {
  const std::function<double()> now = clock ? clock : std::function<double()>(SteadySeconds);
  std::map<int64_t, std::string> refused;
  TpuBuilt out;
  const double start = now();
  for (int round = 0;; ++round) {
    const double round_start = now();
    codegen::pallas::PallasEmitter emitter(refused);
    MK_ASSIGN_OR_RETURN(out.implementation, emitter.Emit(plan, candidate, runner.target()));
    MK_ASSIGN_OR_RETURN(out.build, runner.Build(out.implementation));
    ++out.builds;
    out.candidate = candidate;
    if (out.build.ok || round >= max_rounds) break;
    // Fall back from every refused kernel not already in glue; stop when there is none (the
    // module fails as a whole, or only in a kernel that is glue already).
    // Only a kernel that runs in a pallas_call can fall back (the kernel map, in plan order).
    MK_ASSIGN_OR_RETURN(std::string map_text, SourceNamed(out.implementation, "kernel_map.json"));
    const json map = json::parse(map_text, nullptr, false);
    const json entries = map.is_object() ? map.value("kernels", json::array()) : json::array();
    std::vector<std::pair<int64_t, std::string>> next;
    for (const auto& [id, why] : RefusedKernels(runner.last_compile().value("kernels", json::array()))) {
      if (static_cast<size_t>(id) >= plan.kernels.size()) continue;
      const size_t at = static_cast<size_t>(id);  // a kernel's id is its place in the plan
      if (at >= entries.size() || entries[at].value("runs", std::string()) != "pallas") continue;
      if (candidate.For(at).Get(codegen::pallas::kGlueFallbackKey, 0) >= 2) continue;
      next.emplace_back(id, why);
    }
    if (next.empty()) break;
    // Another round costs about what this one did: stop before it would pass the cap, and say so
    // (the refusal stays the build's message; nothing is hidden).
    const double spent = now() - start, last = now() - round_start;
    if (spent + last > max_seconds) {
      out.stopped_by_time = true;
      out.build.message += "; the glue fallback stopped after " + std::to_string(out.builds) +
                           " build(s) in " + Seconds(spent) + ": another round (the last took " +
                           Seconds(last) + ") would pass its cap of " + Seconds(max_seconds) +
                           ", so " + std::to_string(next.size()) + " refused kernel(s) did not fall back";
      break;
    }
    for (const auto& [id, why] : next) {
      if (candidate.kernels.size() <= static_cast<size_t>(id)) candidate.kernels.resize(id + 1);
      space::Schedule& s = candidate.kernels[static_cast<size_t>(id)];
      const int64_t level = s.Get(codegen::pallas::kGlueFallbackKey, 0);
      // One step: an attention call splits into its kernels first (1), a kernel becomes glue
      // (1, or 2 for an attention anchor refused again alone); the emitter tells them apart.
      s.values[codegen::pallas::kGlueFallbackKey] = level + 1;
      refused[id] = why;
      out.fallbacks.push_back({id, "kernel_" + std::to_string(id), why});
    }
  }
  return out;
}

Result<TpuBuilt> LowerAndBuildWithGlueFallback(TpuRunner& runner, const hlo::Module& module,
                                               int max_rounds, double max_seconds,
                                               const std::function<double()>& clock) {
  MK_ASSIGN_OR_RETURN(TpuPlanned planned, PlanForTpu(module, runner.target()));
  return BuildWithGlueFallback(runner, planned.plan, std::move(planned.initial), max_rounds,
                               max_seconds, clock);
}

}  // namespace mk::agents
