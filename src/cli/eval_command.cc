// `maxkernel eval MODULE.hlo --input A.npy ... --out DIR`: runs a module on .npy inputs and
// writes its outputs as DIR/out0.npy, DIR/out1.npy, ... External checks drive exactly this
// interface (docs/CLI.md), so its flags, file names and JSON keys must stay stable.
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agents/engine.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "hlo/literal_npy.h"
#include "hlo/module.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "interp/interpreter.h"
#include "support/npy.h"

namespace mk::cli {
namespace {

struct EvalOptions {
  std::string module_path;
  std::vector<std::string> inputs;
  std::string out_dir;
  std::string engine = "interp";
  std::string precision = "default";
  bool json = false;
};

struct EncodedOutput {
  std::string path;
  hlo::Shape shape;
  std::string npy_descr;
  std::string bytes;
};

Result<std::vector<hlo::Literal>> ReadInputs(const hlo::Computation& entry,
                                             const EvalOptions& opts) {
  size_t want = entry.parameters().size();
  if (opts.inputs.size() != want) {
    return InvalidArgument("the entry computation '" + entry.name + "' takes " +
                               std::to_string(want) + " parameter" + (want == 1 ? "" : "s") +
                               " but " + std::to_string(opts.inputs.size()) + " --input file" +
                               (opts.inputs.size() == 1 ? " was" : "s were") + " given",
                           SourceLoc{opts.module_path, 0, 0});
  }
  std::vector<hlo::Literal> args;
  for (size_t i = 0; i < want; ++i) {
    const hlo::Instruction* param = entry.parameter(i);
    MK_ASSIGN_OR_RETURN(hlo::Literal lit,
                        hlo::ReadLiteralNpy(opts.inputs[i], param->shape,
                                            "parameter " + std::to_string(i) + " ('" +
                                                param->name + "')"));
    args.push_back(std::move(lit));
  }
  return args;
}

// Encodes every output in memory first, so a value we cannot write fails before any file exists.
Result<std::vector<EncodedOutput>> EncodeOutputs(const hlo::Literal& root, const std::string& dir) {
  std::vector<const hlo::Literal*> values;
  if (root.shape().is_tuple()) {
    for (const hlo::Literal& e : root.elements()) values.push_back(&e);
  } else {
    values.push_back(&root);
  }
  std::vector<EncodedOutput> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i]->shape().is_array()) {
      return Unimplemented("output " + std::to_string(i) + " is " +
                           values[i]->shape().ToString(false) +
                           "; only arrays and tuples of arrays can be written as .npy files");
    }
    MK_ASSIGN_OR_RETURN(npy::NpyArray array, hlo::LiteralToNpy(*values[i]));
    MK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, npy::EncodeNpy(array));
    EncodedOutput e;
    e.path = (std::filesystem::path(dir) / ("out" + std::to_string(i) + ".npy")).string();
    e.shape = values[i]->shape();
    e.npy_descr = std::string(npy::NpyTypeDescr(array.type));
    e.bytes.assign(bytes.begin(), bytes.end());
    out.push_back(std::move(e));
  }
  return out;
}

// Creates `dir` (and missing parents); `created` tells whether the leaf did not exist before.
Status MakeOutputDir(const std::string& dir, bool& created) {
  std::error_code ec;
  created = !std::filesystem::exists(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status(ErrorCode::kIo, "cannot create output directory: " + ec.message(),
                  SourceLoc{dir, 0, 0});
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status(ErrorCode::kIo, "output path exists and is not a directory",
                  SourceLoc{dir, 0, 0});
  }
  return Status::Ok();
}

// `--engine cpu`: the generated program (agents/engine.h), run once in the sandbox. `seconds`
// is the kernel's own run time. A kernel that fails to build, crashes or hangs is our bug, not
// bad input: an internal error (exit 1).
Result<hlo::Literal> EvaluateOnCpu(const hlo::Module& module,
                                   const std::vector<hlo::Literal>& args, double& seconds) {
  agents::CpuEngine engine;
  MK_ASSIGN_OR_RETURN(agents::LoweredModule lowered, engine.Lower(module));
  Result<runtime::CompiledLibrary> lib = engine.Build(lowered.impl);
  if (!lib.ok()) return Internal(lib.status().ToString());
  runtime::ExecuteOptions exec;
  MK_ASSIGN_OR_RETURN(runtime::Execution ran, engine.Run(*lib, lowered.impl, args, exec));
  if (!ran.outcome.ok()) return Internal(agents::DescribeOutcome(ran.outcome, exec.timeout_s));
  seconds = ran.outcome.times_s.empty() ? 0 : ran.outcome.times_s.front();
  return agents::RootValue(*lowered.module, std::move(ran.outputs));
}

Result<int> RunEval(const EvalOptions& opts) {
  if (opts.engine != "interp" && opts.engine != "cpu") {
    return Unimplemented("engine '" + opts.engine +
                         "' is not available yet (available: interp, cpu)");
  }
  if (opts.engine == "cpu" && opts.precision == "high") {
    return Unimplemented("--precision high is only available with --engine interp");
  }
  MK_ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> module, hlo::ParseModuleFile(opts.module_path));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*module));
  const hlo::Computation* entry = module->entry();
  if (entry == nullptr) {
    return InvalidArgument("module has no ENTRY computation", SourceLoc{opts.module_path, 0, 0});
  }
  MK_ASSIGN_OR_RETURN(std::vector<hlo::Literal> args, ReadInputs(*entry, opts));

  double seconds = 0;
  hlo::Literal root;
  if (opts.engine == "cpu") {
    MK_ASSIGN_OR_RETURN(root, EvaluateOnCpu(*module, args, seconds));
  } else {
    interp::InterpreterOptions interp_opts;
    interp_opts.high_precision = opts.precision == "high";
    interp_opts.on_note = [](const std::string& note) { std::cerr << "note: " << note << "\n"; };
    auto start = std::chrono::steady_clock::now();
    MK_ASSIGN_OR_RETURN(root, interp::Evaluate(*module, args, interp_opts));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  MK_ASSIGN_OR_RETURN(std::vector<EncodedOutput> outputs, EncodeOutputs(root, opts.out_dir));
  bool created_dir = false;
  MK_RETURN_IF_ERROR(MakeOutputDir(opts.out_dir, created_dir));
  std::vector<OutputFile> files;
  for (const EncodedOutput& o : outputs) files.push_back({o.path, o.bytes});
  Status written = WriteFilesAtomically(files);
  if (!written.ok()) {
    if (created_dir) ::rmdir(opts.out_dir.c_str());  // only succeeds if it is still empty
    return written;
  }

  if (opts.json) {
    nlohmann::json j;
    j["outputs"] = nlohmann::json::array();
    for (const EncodedOutput& o : outputs) {
      j["outputs"].push_back({{"path", o.path},
                              {"shape", o.shape.dims()},
                              {"dtype", std::string(hlo::DTypeName(o.shape.dtype()))},
                              {"npy_dtype", o.npy_descr}});
    }
    j["engine"] = opts.engine;
    j["seconds"] = seconds;
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const EncodedOutput& o : outputs) {
      std::cout << "wrote " << o.path << " (" << o.shape.ToString(false) << ")\n";
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterEvalCommand(CLI::App& app, CommandResult& result) {
  auto opts = std::make_shared<EvalOptions>();
  CLI::App* eval = app.add_subcommand(
      "eval", "Evaluate an HLO module on .npy inputs and write its outputs as .npy files");
  eval->add_option("module", opts->module_path, "HLO text file")->required();
  eval->add_option("--input", opts->inputs,
                   "A .npy file for the next entry parameter (repeat, in parameter order)")
      ->allow_extra_args(false);  // one file per --input, so a positional after it stays one
  eval->add_option("--out", opts->out_dir, "Directory for out0.npy, out1.npy, ... (created)")
      ->required();
  eval->add_option("--engine", opts->engine,
                   "Evaluation engine: interp (the reference interpreter) or cpu (generated code)");
  eval->add_option("--precision", opts->precision,
                   "Accumulation precision: default (f32) or high (f64)")
      ->check(CLI::IsMember({"default", "high"}));
  eval->add_flag("--json", opts->json, "Print a JSON summary of the outputs");
  eval->callback([opts, &result] { RunCommand(result, [&] { return RunEval(*opts); }); });
}

}  // namespace mk::cli
