// The `maxkernel` command line. Exit codes: 0 success, 1 a run that produced no result
// (e.g. a check that failed), 2 bad input or usage.
#pragma once

namespace mk::cli {

int Main(int argc, char** argv);

}  // namespace mk::cli
