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
// In JSON mode (SetJsonErrors) it also prints the error as one JSON object on stdout, so that a
// caller parsing stdout always gets an object:
//   {"error": {"code": "invalid_argument", "message": "...", "exit_code": 2,
//              "file": "...", "line": 3, "col": 1}}
// (`file`, `line`, `col` only where known.) Codes: invalid_argument, not_found,
// unimplemented, internal, io, and usage (a bad command line).
int ReportError(const Status& status);
// A bad command line (unknown subcommand or option, missing argument): the message and a hint
// to use --help on stderr, the JSON object with code "usage" in JSON mode; returns kExitBadInput.
int ReportUsageError(const std::string& message);
// A command that ran but produced no acceptable result (exit 1, kExitFailed): "error: message"
// on stderr, and in JSON mode {"error": {"code": "failed", ...}} on stdout.
int ReportFailure(const std::string& message);
// Main turns JSON mode on when the command line has --json.
void SetJsonErrors(bool on);
// The JSON object ReportError prints: {"error": {...}}.
std::string ErrorJson(const Status& status, const char* code_name = nullptr);

// Runs `body` and stores its exit code in `result`; an error status is reported with
// ReportError, and an escaping exception (e.g. std::bad_alloc) becomes an internal error
// instead of terminating the process.
void RunCommand(CommandResult& result, const std::function<Result<int>()>& body);

// An input that must be a file: a directory is refused by name ("DIR: error: is a directory,
// not <what>"), because reading one gives an empty string that parsers report as empty input.
// A path that does not exist passes (the reader says it cannot open it).
Status CheckNotADirectory(const std::string& path, const std::string& what);

// Files to write as one unit: either all of them appear at their paths or none does. Each is
// written to a temporary file beside its destination and renamed into place once all were
// written; on failure everything written so far is removed. Destinations are overwritten.
struct OutputFile {
  std::string path;
  std::string contents;
};
Status WriteFilesAtomically(const std::vector<OutputFile>& files);

}  // namespace mk::cli
