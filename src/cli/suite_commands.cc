#include "cli/commands.h"

namespace mk::cli {

void RegisterSuiteCommands(CLI::App&, CommandResult&) {}

}  // namespace mk::cli
