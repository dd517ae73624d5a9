// For the CLI's end-to-end tests: run a program (the real maxkernel binary, by default) and
// capture its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/subprocess.h"

namespace mk::cli::testing {

struct Ran {
  int exit_code = -1;  // a crash shows as 128 + signal, so every test notices it
  std::string out, err;
};

inline Ran RunCommand(const std::vector<std::string>& argv) {
  Ran r;
  auto p = RunProcess(argv);
  EXPECT_TRUE(p.ok()) << "cannot start " << (argv.empty() ? "" : argv[0]) << ": "
                      << p.status().ToString();
  if (!p.ok()) return r;
  r.exit_code = p->signaled ? 128 + p->term_signal : p->exit_code;
  r.out = std::move(p->out);
  r.err = std::move(p->err);
  return r;
}

// Runs MK_BINARY (the maxkernel under test) with `args`.
inline Ran RunMaxkernel(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {MK_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

}  // namespace mk::cli::testing
