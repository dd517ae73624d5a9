#include "support/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mk {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

}  // namespace

Result<int> OpenRegularFile(const std::string& path, Symlinks symlinks) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever. It only matters for
  // the open itself here; a regular file's reads never block on it.
  const int nofollow = symlinks == Symlinks::kRefuse ? O_NOFOLLOW : 0;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | nofollow);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = "cannot open: " + std::string(std::strerror(err));
    if (err == ENOENT) return Status(ErrorCode::kNotFound, msg, SourceLoc{path, 0, 0});
    return Status(ErrorCode::kIo, msg, SourceLoc{path, 0, 0});
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status(ErrorCode::kIo, "cannot stat: " + std::string(std::strerror(err)),
                  SourceLoc{path, 0, 0});
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(std::string("is ") + KindOf(st.st_mode) + ", not a regular file",
                           SourceLoc{path, 0, 0});
  }
  // Back to blocking reads, as every reader expects.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Result<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes,
                                    const std::string& what, Symlinks symlinks) {
  MK_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path, symlinks));
  struct stat st {};
  if (::fstat(fd, &st) != 0) st.st_size = 0;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    return InvalidArgument("is " + std::to_string(size) + " bytes, more than the " +
                               std::to_string(max_bytes) + " bytes " + what + " may have",
                           SourceLoc{path, 0, 0});
  }
  std::string contents;
  contents.resize(static_cast<size_t>(size));
  size_t done = 0;
  while (true) {
    if (done == contents.size()) {
      // The file grew after fstat (or is a /proc-style file reporting size 0): keep reading,
      // still within the limit.
      if (contents.size() >= max_bytes) {
        char probe;
        ssize_t n = ::read(fd, &probe, 1);
        if (n > 0) {
          ::close(fd);
          return InvalidArgument("is more than the " + std::to_string(max_bytes) + " bytes " +
                                     what + " may have",
                                 SourceLoc{path, 0, 0});
        }
        break;
      }
      const uint64_t grown = std::min<uint64_t>(max_bytes, contents.size() + 65536);
      contents.resize(static_cast<size_t>(grown));
    }
    ssize_t n = ::read(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status(ErrorCode::kIo, "read failed: " + std::string(std::strerror(err)),
                    SourceLoc{path, 0, 0});
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  contents.resize(done);
  return contents;
}

}  // namespace mk
