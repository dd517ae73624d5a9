// Reading a file the user named. Such a path may be a FIFO, a character device or a socket:
// opening a FIFO for reading blocks until a writer appears, and reading /dev/zero never ends.
// Every user-given input (HLO modules, task.yaml, data/*.npy, suite files) goes through here:
// the open never blocks (O_NONBLOCK), and anything that is not a regular file is refused by
// name before a byte is read.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "support/status.h"

namespace mk {

// Whether a symlink named as the file is followed (a user's input: a link to a regular file is a
// regular file) or refused (the caches' own files: a link planted in them is never read).
enum class Symlinks { kFollow, kRefuse };

// Opens `path` for reading (O_CLOEXEC) and returns the descriptor, which the caller closes.
// Errors carry the path as their file: NotFound when it does not exist, InvalidArgument when it
// is a directory, FIFO, device or socket ("is a FIFO, not a regular file"), Io otherwise (a
// refused symlink included).
Result<int> OpenRegularFile(const std::string& path, Symlinks symlinks = Symlinks::kFollow);

// The whole contents of the regular file `path`. A file larger than `max_bytes` is refused
// with InvalidArgument before it is read ("is N bytes, more than the M bytes ..."), so that a
// huge input cannot exhaust memory; `what` names the kind of file in that message.
Result<std::string> ReadRegularFile(const std::string& path,
                                    uint64_t max_bytes = std::numeric_limits<uint64_t>::max(),
                                    const std::string& what = "an input file",
                                    Symlinks symlinks = Symlinks::kFollow);

}  // namespace mk
