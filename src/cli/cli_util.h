// Pieces every subcommand shares: turning a Status into the one-line message and exit code the
// CLI promises, running a command body without letting an exception escape, and writing output
// files so that a failure never leaves a partial file behind.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "support/status.h"

namespace mk::cli {

// kExitBadInput for errors caused by the input (invalid argument, not found, I/O, unsupported),
// kExitFailed for internal errors (bugs in maxkernel) and for work stopped by a timeout
// (kCancelled), kExitEnvironment for an environment that cannot do the work (kEnvironment).
int ExitCodeFor(const Status& status);

// Prints `status` as one line on stderr ("file:line:col: error: ...") and returns its exit code.
int ReportError(const Status& status);

// Runs `body` and stores its exit code in `result`; an error status is reported with
// ReportError, and an escaping exception (e.g. std::bad_alloc) becomes an internal error
// instead of terminating the process.
void RunCommand(CommandResult& result, const std::function<Result<int>()>& body);

// Files to write as one unit: either all of them appear at their paths or none does. Each is
// written to a temporary file beside its destination and renamed into place once all were
// written; on failure everything written so far is removed. Destinations are overwritten.
struct OutputFile {
  std::string path;
  std::string contents;
};
Status WriteFilesAtomically(const std::vector<OutputFile>& files);

}  // namespace mk::cli
