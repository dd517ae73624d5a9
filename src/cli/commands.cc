#include "cli/commands.h"

#include <cstdio>
#include <iostream>

#include "target/isa_level.h"

namespace mk::cli {

int Main(int argc, char** argv) {
  // A misspelt ISA cap must not silently build for the host's full ISA.
  if (Result<std::optional<target::IsaLevel>> isa = target::RequestedIsaLevel(); !isa.ok()) {
    std::fprintf(stderr, "maxkernel: error: %s\n", isa.status().message().c_str());
    return kExitBadInput;
  }
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  return result.exit_code;
}

}  // namespace mk::cli
