// `maxkernel hlo check` and `maxkernel hlo fmt`.
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "hlo/module.h"
#include "hlo/opcode.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

namespace mk::cli {
namespace {

struct CheckOptions {
  std::string file;
  bool json = false;
};

struct FmtOptions {
  std::string file;
  std::string output;
};

struct ModuleSummary {
  std::string name;
  int64_t computations = 0;
  int64_t instructions = 0;
  std::vector<std::string> parameters;  // entry parameter shapes, in parameter-number order
  std::string result;                   // entry root shape
  std::map<std::string, int64_t> op_counts;  // by opcode name, over every computation
};

ModuleSummary Summarize(const hlo::Module& module) {
  ModuleSummary s;
  s.name = module.name;
  s.computations = static_cast<int64_t>(module.computations().size());
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions()) {
      ++s.instructions;
      ++s.op_counts[std::string(hlo::OpcodeName(inst->opcode))];
    }
  }
  if (const hlo::Computation* entry = module.entry()) {
    for (const hlo::Instruction* p : entry->parameters()) {
      s.parameters.push_back(p->shape.ToString(false));
    }
    if (entry->root() != nullptr) s.result = entry->root()->shape.ToString(false);
  }
  return s;
}

std::string Signature(const ModuleSummary& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.parameters.size(); ++i) {
    if (i > 0) out += ", ";
    out += s.parameters[i];
  }
  return out + ") -> " + s.result;
}

Result<std::unique_ptr<hlo::Module>> ParseHloFile(const std::string& path) {
  MK_RETURN_IF_ERROR(CheckNotADirectory(path, "an HLO text file"));
  return hlo::ParseModuleFile(path);
}

Result<std::unique_ptr<hlo::Module>> LoadVerifiedModule(const std::string& path) {
  MK_ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> module, ParseHloFile(path));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*module));
  return module;
}

Result<int> RunCheck(const CheckOptions& opts) {
  MK_ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> module, LoadVerifiedModule(opts.file));
  ModuleSummary s = Summarize(*module);
  if (opts.json) {
    nlohmann::json j;
    j["file"] = opts.file;
    j["ok"] = true;
    j["module"] = s.name;
    j["computations"] = s.computations;
    j["instructions"] = s.instructions;
    j["entry"] = {{"parameters", s.parameters}, {"result", s.result}};
    j["ops"] = s.op_counts;
    // Replace rather than throw on bytes that are not UTF-8 (names come from the user's file).
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  std::cout << opts.file << ": ok\n"
            << "module:       " << s.name << "\n"
            << "computations: " << s.computations << "\n"
            << "instructions: " << s.instructions << "\n"
            << "entry:        " << Signature(s) << "\n"
            << "ops:         ";
  for (const auto& [op, count] : s.op_counts) std::cout << " " << op << "=" << count;
  std::cout << "\n";
  return kExitOk;
}

Result<int> RunFmt(const FmtOptions& opts) {
  // No verification: fmt should also tidy modules that the verifier would reject.
  MK_ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> module, ParseHloFile(opts.file));
  std::string text = hlo::PrintModule(*module);
  if (opts.output.empty()) {
    std::cout << text << std::flush;
  } else {
    MK_RETURN_IF_ERROR(WriteFilesAtomically({{opts.output, text}}));
  }
  return kExitOk;
}

}  // namespace

void RegisterHloCommands(CLI::App& app, CommandResult& result) {
  CLI::App* hlo = app.add_subcommand("hlo", "Inspect and reformat HLO modules");
  hlo->require_subcommand(1);

  auto check_opts = std::make_shared<CheckOptions>();
  CLI::App* check =
      hlo->add_subcommand("check", "Parse and verify an HLO module, then print a summary");
  check->add_option("file", check_opts->file, "HLO text file")->required();
  check->add_flag("--json", check_opts->json, "Print the summary as one JSON object");
  check->callback([check_opts, &result] {
    RunCommand(result, [&] { return RunCheck(*check_opts); });
  });

  auto fmt_opts = std::make_shared<FmtOptions>();
  CLI::App* fmt = hlo->add_subcommand("fmt", "Print an HLO module in canonical form");
  fmt->add_option("file", fmt_opts->file, "HLO text file")->required();
  fmt->add_option("-o,--output", fmt_opts->output, "Write to this file instead of stdout");
  fmt->callback([fmt_opts, &result] {
    RunCommand(result, [&] { return RunFmt(*fmt_opts); });
  });
}

}  // namespace mk::cli
