// `maxkernel compile` and `maxkernel check`: the CPU engine (agents/engine.h) from the command
// line. compile writes a usable library (source, .so, C header, example, plan); check is the
// tester agent (agents/tester.h). docs/CLI.md documents both.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "agents/engine.h"
#include "export/library_export.h"
#include "agents/tester.h"
#include "agents/tpu_fallback.h"
#include "agents/tpu_runner.h"
#include "support/text_escape.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "support/regular_file.h"
#include "support/sha256.h"
#include "target/target.h"
#include "task/task.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;

Status CheckTarget(const std::string& target) {
  if (target == "cpu") return Status::Ok();
  return Unimplemented("target '" + target + "' is not available yet (available: cpu)");
}

Result<std::string> ReadWholeFile(const std::string& path) { return ReadRegularFile(path); }

// A task directory or an HLO module file, parsed and verified; `name` is what the library is
// called (the task's name, else its id, else the module's name).
struct CompileInput {
  std::unique_ptr<hlo::Module> module;
  std::string name;
};

Result<CompileInput> LoadCompileInput(const std::string& path) {
  CompileInput in;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(path));
    in.module = std::move(loaded.module);
    in.name = !loaded.task.name.empty() ? loaded.task.name : loaded.task.id;
  } else {
    MK_ASSIGN_OR_RETURN(in.module, hlo::ParseModuleFile(path));
    in.name = in.module->name;
  }
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*in.module));
  if (in.name.empty()) in.name = fs::path(path).stem().string();
  in.name = exports::LibraryName(in.name);
  return in;
}

// ---- compile --------------------------------------------------------------------------------

struct CompileOptions {
  std::string input;
  std::string target = "cpu";
  std::string out;
  bool json = false;
  bool no_glue_fallback = false;
};

// One line per kernel that fell back to XLA glue because the TPU compiler refused its call.
void PrintFallbacks(const std::vector<agents::GlueFallback>& fallbacks) {
  for (const auto& f : fallbacks) {
    std::cout << "fell back to XLA glue: " << f.function << " (the TPU compiler refused its pallas_call: "
              << OneLineText(f.reason) << ")\n";
  }
}

// `compile --target tpu-*`: the Pallas module of the planner's initial candidate (kernel.py, its
// kernel map, the plan), built by libtpu compile-only for that generation, with the kernels it
// refuses fallen back to XLA glue (agents/tpu_fallback.h).
Result<int> RunTpuCompile(const CompileOptions& o, target::Target tpu) {
  MK_ASSIGN_OR_RETURN(CompileInput input, LoadCompileInput(o.input));
  agents::TpuRunner runner(std::move(tpu));
  Result<agents::TpuBuilt> built_module =
      agents::LowerAndBuildWithGlueFallback(runner, *input.module, o.no_glue_fallback ? 0 : 4);
  Result<codegen::Implementation> impl =
      built_module.ok() ? Result<codegen::Implementation>(built_module->implementation) : runner.Lower(*input.module);
  if (!impl.ok()) return impl.status();
  std::vector<OutputFile> out;
  nlohmann::json files;
  for (const codegen::SourceFile& f : impl->sources) {
    out.push_back({(fs::path(o.out) / f.name).string(), f.text});
    files[f.name] = out.back().path;
  }
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec || !fs::is_directory(o.out, ec)) {
    return Status(ErrorCode::kIo, "cannot create output directory", SourceLoc{o.out, 0, 0});
  }
  MK_RETURN_IF_ERROR(WriteFilesAtomically(out));
  // The toolchain's error (no libtpu), now that the module is written for a look.
  if (!built_module.ok()) return built_module.status();
  const agents::BuildOutcome& built = built_module->build;
  if (o.json) {
    nlohmann::json j = {{"files", files},
                        {"name", input.name},
                        {"target", o.target},
                        {"implementation_hash", impl->hash},
                        {"compiled", built.ok},
                        {"compile", runner.last_compile()},
                        {"glue_fallback", agents::ToJson(*built_module)["fallbacks"]}};
    if (!built.ok) j["error"] = built.message;
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const auto& f : out) std::cout << "wrote " << f.path << "\n";
    PrintFallbacks(built_module->fallbacks);
    std::cout << "compiled for " << o.target << " by libtpu (compile-only): "
              << (built.ok ? "ok" : "refused") << "\n";
    if (!built.ok) std::cerr << built.message << std::endl;
  }
  return built.ok ? kExitOk : kExitFailed;
}

Result<int> RunCompile(const CompileOptions& o) {
  if (o.target != "cpu") {
    MK_ASSIGN_OR_RETURN(target::Target t, target::TargetByName(o.target));
    if (t.kind == target::TargetKind::kTpu) return RunTpuCompile(o, std::move(t));
  }
  MK_RETURN_IF_ERROR(CheckTarget(o.target));
  MK_ASSIGN_OR_RETURN(CompileInput input, LoadCompileInput(o.input));
  agents::CpuEngine engine;
  MK_ASSIGN_OR_RETURN(agents::LoweredModule lowered, engine.Lower(*input.module));
  // The shipped library exports <name>_kernel / <name>_abi_version (library_export.h), so that
  // several compiled libraries link into one program; module.cc stays the kernel as maxkernel
  // builds it (mk_kernel), which `check --source` takes.
  Result<runtime::CompiledLibrary> lib =
      exports::BuildExportedLibrary(engine.compiler(), input.name, lowered.impl);
  if (!lib.ok()) {
    // Generated code the compiler rejects is our bug, not the user's input (exit 1).
    return Status(ErrorCode::kInternal, lib.status().message(), lib.status().loc());
  }
  MK_ASSIGN_OR_RETURN(std::string so_bytes, ReadWholeFile(lib->so_path));

  const std::string& name = input.name;
  fs::path dir(o.out);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return Status(ErrorCode::kIo, "cannot create output directory", SourceLoc{o.out, 0, 0});
  }
  std::string plan_text = lowered.plan.Summary() + "\n";
  for (const analysis::Kernel& k : lowered.plan.kernels) {
    plan_text += "== " + k.name + " (" + analysis::KernelFamilyName(k.family) + ")\n" +
                 k.ToHloText() + "\n";
  }
  struct Named {
    std::string key, file, contents;
  };
  std::vector<Named> files = {
      {"source", "module.cc", lowered.impl.sources.at(0).text},
      {"library", "libmaxkernel_" + name + ".so", so_bytes},
      {"header", name + ".h", exports::CHeaderFor(name, *lowered.module, lowered.impl)},
      {"example", "example.c", exports::CExampleFor(name, lowered.impl)},
      {"plan", "plan.txt", plan_text},
  };
  std::vector<OutputFile> out;
  for (const Named& f : files) out.push_back({(dir / f.file).string(), f.contents});
  MK_RETURN_IF_ERROR(WriteFilesAtomically(out));

  if (o.json) {
    nlohmann::json j;
    for (const Named& f : files) j["files"][f.key] = (dir / f.file).string();
    j["name"] = name;
    j["target"] = o.target;
    j["implementation_hash"] = lowered.impl.hash;
    j["library_sha256"] = Sha256Hex(so_bytes);
    j["cache_hit"] = lib->cache_hit;
    j["kernels"] = lowered.plan.kernels.size();
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const Named& f : files) std::cout << "wrote " << (dir / f.file).string() << "\n";
    std::cout << "implementation " << lowered.impl.hash << " (" << lowered.plan.kernels.size()
              << " kernels)\n";
  }
  return kExitOk;
}

// ---- check ----------------------------------------------------------------------------------

struct CheckOptions {
  std::string input;
  std::string target = "cpu";
  int seeds = 3;
  std::optional<double> atol, rtol;
  double timeout_s = 60;
  std::string source;  // a replacement for the generated module.cc (e.g. a hand-edited one)
  bool json = false;
  bool no_glue_fallback = false;
};

// `check --target tpu-*`: the Pallas module in TPU interpret mode against the interpreter,
// built by libtpu compile-only for that generation, and its modelled time.
Result<int> RunTpuCheck(const CheckOptions& o, agents::TestRequest request, target::Target tpu) {
  if (!o.source.empty()) return InvalidArgument("--source replaces a CPU module.cc; not for " + o.target);
  agents::TpuRunner runner(std::move(tpu));
  // Lowered here, not inside the tester, so that the checked implementation is the one modelled.
  MK_ASSIGN_OR_RETURN(CompileInput input, LoadCompileInput(o.input));
  // Built first, so that a kernel the compiler refuses falls back to glue before the check (the
  // tester's own build is then the same one). Without a toolchain, the tester reports it.
  Result<agents::TpuBuilt> built_module =
      agents::LowerAndBuildWithGlueFallback(runner, *input.module, o.no_glue_fallback ? 0 : 4);
  Result<codegen::Implementation> impl =
      built_module.ok() ? Result<codegen::Implementation>(built_module->implementation) : runner.Lower(*input.module);
  // (When lowering fails the tester tries once more and reports "lower-failed".)
  if (impl.ok()) request.implementation = *impl;
  MK_ASSIGN_OR_RETURN(agents::TestReport report, agents::RunTester(request, runner));
  nlohmann::json modelled = nullptr;
  if (report.passed()) {
    MK_ASSIGN_OR_RETURN(agents::TpuModelledTime t, agents::ModelTpuImplementation(*impl, runner.target()));
    modelled = agents::ToJson(t);
  }
  if (o.json) {
    nlohmann::json j = agents::ToJson(report);
    j["tpu"] = {{"compile", runner.last_compile()}, {"model", modelled},
                {"glue_fallback", built_module.ok() ? agents::ToJson(*built_module)["fallbacks"] : nlohmann::json::array()}};
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << agents::FormatReport(report);
    if (built_module.ok()) PrintFallbacks(built_module->fallbacks);
    if (report.status != "lower-failed") {
      std::cout << "compiled for " << o.target << " by libtpu (compile-only): "
                << (report.status == "build-failed" ? "refused" : "ok") << "\n";
    }
    if (!modelled.is_null()) {
      std::printf("modelled time %.3g s (%d pallas_call kernels, %d in XLA glue); no TPU measured it\n",
                  modelled["modelled_s"].get<double>(), modelled["pallas_kernels"].get<int>(),
                  modelled["glue_kernels"].get<int>());
    }
  }
  if (report.status == "lower-failed") {
    if (!o.json) std::cerr << report.message << std::endl;
    return kExitBadInput;
  }
  if (report.status == "build-failed" && !o.json) std::cerr << report.message << std::endl;
  return report.passed() ? kExitOk : kExitFailed;
}

Result<int> RunCheck(const CheckOptions& o) {
  std::optional<target::Target> tpu;
  if (o.target != "cpu") {
    MK_ASSIGN_OR_RETURN(target::Target t, target::TargetByName(o.target));
    if (t.kind != target::TargetKind::kTpu) MK_RETURN_IF_ERROR(CheckTarget(o.target));
    tpu = std::move(t);
  }
  if (o.seeds < 1) return InvalidArgument("--seeds must be at least 1");
  agents::TestRequest request;
  std::error_code ec;
  if (fs::is_directory(o.input, ec)) request.task_dir = o.input;
  else request.module_path = o.input;
  request.num_seeds = o.seeds;
  request.atol = o.atol;
  request.rtol = o.rtol;
  request.timeout_s = o.timeout_s;
  // The oracle runs in this process: it gets the same limit as one run of the kernel.
  request.oracle_timeout_s = o.timeout_s;
  if (tpu) return RunTpuCheck(o, std::move(request), std::move(*tpu));
  agents::CpuEngine engine;
  request.reference_cache_dir = engine.compiler().options().cache_dir + "/oracle";
  if (!o.source.empty()) {
    // The buffer ABI is the module's; only the source text is replaced.
    MK_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(o.source));
    MK_ASSIGN_OR_RETURN(CompileInput input, LoadCompileInput(o.input));
    MK_ASSIGN_OR_RETURN(agents::LoweredModule lowered, engine.Lower(*input.module));
    codegen::Implementation impl = lowered.impl;
    impl.sources.at(0).text = text;
    std::string key;
    for (const auto& s : impl.sources) key += s.name + "\n" + s.text;
    for (const auto& f : impl.flags) key += f + "\n";
    impl.hash = Sha256Hex(key);
    request.implementation = std::move(impl);
  }
  MK_ASSIGN_OR_RETURN(agents::TestReport report, agents::RunTester(request, engine));
  if (o.json) {
    std::cout << agents::ToJson(report).dump(-1, ' ', false,
                                             nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << agents::FormatReport(report);
  }
  if (report.status == "lower-failed") {
    // An op without an emitter: an unsupported feature of valid input (CLI.md: exit 2).
    if (!o.json) std::cerr << report.message << std::endl;
    return kExitBadInput;
  }
  if (report.status == "build-failed" && !o.json) std::cerr << report.message << std::endl;
  return report.passed() ? kExitOk : kExitFailed;
}

}  // namespace

void RegisterEngineCommands(CLI::App& app, CommandResult& result) {
  auto c = std::make_shared<CompileOptions>();
  CLI::App* compile = app.add_subcommand(
      "compile", "Generate and compile a kernel library (source, .so, C header, example, plan)");
  compile->add_option("input", c->input, "Task directory or HLO module file")->required();
  compile->add_option("--target", c->target,
                      "Target to generate for: cpu (source, library, header, example, plan), or "
                      "tpu-v4|v5e|v5p|v6e|7x (kernel.py, kernel_map.json; compiled by libtpu, "
                      "compile-only: exit 1 when it refuses)");
  compile->add_option("-o,--out", c->out, "Output directory (created)")->required();
  compile->add_flag("--json", c->json, "Print the written paths and hashes as JSON");
  compile->add_flag("--no-glue-fallback", c->no_glue_fallback,
                    "tpu: keep every pallas_call the compiler refuses (by default each is re-emitted "
                    "as XLA glue and the module rebuilt; the refusals are listed either way)");
  compile->callback([c, &result] { RunCommand(result, [&] { return RunCompile(*c); }); });

  auto k = std::make_shared<CheckOptions>();
  CLI::App* check = app.add_subcommand(
      "check", "Test the generated kernel against the interpreter on fresh random inputs");
  check->add_option("input", k->input, "Task directory or HLO module file")->required();
  check->add_option("--target", k->target,
                    "Target to check: cpu, or tpu-v4|tpu-v5e|tpu-v5p|tpu-v6e|tpu-7x (the Pallas "
                    "module in TPU interpret mode, compiled by libtpu compile-only)");
  check->add_option("--seeds", k->seeds, "Number of input seeds (default 3)");
  check->add_option("--atol", k->atol, "Absolute tolerance for every output (default: the task's)");
  check->add_option("--rtol", k->rtol, "Relative tolerance for every output (default: the task's)");
  check->add_option("--timeout", k->timeout_s, "Seconds one run of the kernel, and one interpretation of the reference, may take (default 60)")
      ->check(CLI::PositiveNumber);
  check->add_option("--source", k->source,
                    "Check this C++ file instead of the generated module.cc (same buffer ABI)");
  check->add_flag("--json", k->json, "Print the test report as JSON");
  check->add_flag("--no-glue-fallback", k->no_glue_fallback,
                  "tpu: a pallas_call the compiler refuses fails the check instead of falling back "
                  "to XLA glue");
  check->callback([k, &result] { RunCommand(result, [&] { return RunCheck(*k); }); });
}

}  // namespace mk::cli
