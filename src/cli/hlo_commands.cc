#include "cli/commands.h"

namespace mk::cli {

void RegisterHloCommands(CLI::App&, CommandResult&) {}

}  // namespace mk::cli
