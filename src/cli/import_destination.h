// Where `maxkernel import -o DIR` may write. With --force an existing DIR is replaced, which
// deletes it: that is only done to a task directory import itself could have written (issue 30,
// hole 6: `import --force -o ~` must not delete a home directory).
#pragma once

#include <string>

#include "support/status.h"

namespace mk::cli {

// OK when `dir` does not exist, or when `force` is set and `dir` is an empty directory or a task
// directory import recognizes: a real directory (not a symbolic link) holding the regular files
// task.yaml and module.hlo, and nothing else but a `data/` folder of regular `.npy` files (what
// the HLO and JAX importers write). Anything else is an InvalidArgument naming what is in the way, and
// nothing is touched.
Status CheckImportDestination(const std::string& dir, bool force);

}  // namespace mk::cli
