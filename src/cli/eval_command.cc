#include "cli/commands.h"

namespace mk::cli {

void RegisterEvalCommand(CLI::App&, CommandResult&) {}

}  // namespace mk::cli
