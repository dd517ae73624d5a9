// Runs a program (no shell) with a timeout, capturing stdout and stderr.
#pragma once

#include <string>
#include <vector>

#include "support/status.h"

namespace mk {

struct ProcessResult {
  int exit_code = -1;     // valid when !signaled && !timed_out
  bool signaled = false;  // killed by a signal (term_signal says which)
  int term_signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;
};

// argv[0] is looked up on PATH. timeout_s <= 0 means no timeout. Returns an error only when the
// program could not be started at all.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s = 0,
                                 const std::string& working_dir = "");

}  // namespace mk
