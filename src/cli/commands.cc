#include "cli/commands.h"

#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "cli/cli_util.h"
#include "target/isa_level.h"

namespace mk::cli {
namespace {

// Whether the command line asks for JSON output: then errors are JSON on stdout too. Scanned
// before parsing, so that a usage error (which CLI11 reports before any option is stored) is
// JSON as well; "--" ends the options.
bool AsksForJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return false;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

// After a failed parse: the first word that should have named a subcommand and does not, with
// the subcommands it could have named ("unknown subcommand 'nosuch'; valid: a, b"). CLI11 itself
// says only "A subcommand is required". Walks the words from the start: each one that names a
// subcommand of the current command descends into it; options end the walk (their values could
// look like anything), and so does a command that takes no subcommands.
std::optional<std::string> UnknownSubcommand(CLI::App& app, int argc, char** argv) {
  CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word.empty() || word[0] == '-') return std::nullopt;
    std::vector<CLI::App*> subs = current->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return std::nullopt;
    CLI::App* next = nullptr;
    for (CLI::App* sub : subs) {
      if (sub->check_name(word)) next = sub;
    }
    if (next != nullptr) {
      current = next;
      continue;
    }
    std::string valid;
    for (CLI::App* sub : subs) valid += (valid.empty() ? "" : ", ") + sub->get_name();
    std::string where = current == &app ? "maxkernel" : "maxkernel " + current->get_name();
    return "unknown subcommand '" + word + "' of " + where + "; valid subcommands: " + valid;
  }
  return std::nullopt;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"maxkernel: verified, fast compute kernels from JAX functions and HLO modules"};
  app.set_version_flag("--version", std::string("maxkernel ") + MK_VERSION);
  app.require_subcommand(1);
  CommandResult result;
  RegisterHloCommands(app, result);
  RegisterEvalCommand(app, result);
  RegisterSuiteCommands(app, result);
  RegisterEngineCommands(app, result);
  RegisterDoctorCommand(app, result);
  RegisterDebugCommands(app, result);
  RegisterOptimizeCommand(app, result);
  RegisterRunsCommands(app, result);
  RegisterExportCommand(app, result);
  RegisterBenchCommand(app, result);
  RegisterServeCommand(app, result);
  RegisterAuditCommands(app, result);
  SetJsonErrors(AsksForJson(argc, argv));
  // A misspelt ISA cap must not silently build for the host's full ISA.
  if (Result<std::optional<target::IsaLevel>> isa = target::RequestedIsaLevel(); !isa.ok()) {
    return ReportUsageError(isa.status().message());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      return app.exit(e) == 0 ? kExitOk : kExitBadInput;  // --help, --version
    }
    if (std::optional<std::string> unknown = UnknownSubcommand(app, argc, argv)) {
      return ReportUsageError(*unknown);
    }
    return ReportUsageError(e.what());
  }
  return result.exit_code;
}

}  // namespace mk::cli
