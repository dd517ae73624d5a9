#include "cli/commands.h"

namespace mk::cli {

void RegisterExportCommand(CLI::App& app, CommandResult& result) {
  (void)app;
  (void)result;
}

}  // namespace mk::cli
