#include "cli/cli_util.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include <nlohmann/json.hpp>

#include "support/text_escape.h"

namespace mk::cli {
namespace {

Status WriteAll(int fd, const std::string& contents, const std::string& path) {
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status(ErrorCode::kIo, "write failed: " + std::string(std::strerror(errno)),
                    SourceLoc{path, 0, 0});
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status CheckNotADirectory(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return InvalidArgument("is a directory, not " + what, SourceLoc{path, 0, 0});
  }
  return Status::Ok();
}

int ExitCodeFor(const Status& status) {
  if (status.ok()) return kExitOk;
  if (status.code() == ErrorCode::kEnvironment) return kExitEnvironment;
  if (status.code() == ErrorCode::kCancelled) return kExitFailed;  // a timeout, not bad input
  return status.code() == ErrorCode::kInternal ? kExitFailed : kExitBadInput;
}

namespace {

bool g_json_errors = false;

const char* CodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kUnimplemented: return "unimplemented";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kEnvironment: return "environment";
    case ErrorCode::kCancelled: return "cancelled";
  }
  return "error";
}

}  // namespace

void SetJsonErrors(bool on) { g_json_errors = on; }

int ReportFailure(const std::string& message) {
  std::cerr << "error: " << TerminalText(message) << std::endl;
  if (g_json_errors) {
    nlohmann::json e = {{"code", "failed"}, {"message", message}, {"exit_code", kExitFailed}};
    std::cout << nlohmann::json{{"error", e}}.dump(-1, ' ', false,
                                                   nlohmann::json::error_handler_t::replace)
              << std::endl;
  }
  return kExitFailed;
}

std::string ErrorJson(const Status& status, const char* code_name) {
  nlohmann::json e = {{"code", code_name != nullptr ? code_name : CodeName(status.code())},
                      {"message", status.message()},
                      {"exit_code", ExitCodeFor(status)}};
  if (!status.loc().file.empty()) e["file"] = status.loc().file;
  if (status.loc().line > 0) e["line"] = status.loc().line;
  if (status.loc().col > 0) e["col"] = status.loc().col;
  // Messages can quote the user's bytes (a file's contents): never throw on invalid UTF-8.
  return nlohmann::json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int ReportError(const Status& status) {
  // Messages quote the user's bytes (a task id, a YAML parser's "unknown escape character: "
  // followed by the byte it met): no control character or ANSI sequence reaches the terminal.
  std::cerr << TerminalText(status.ToString()) << std::endl;
  if (g_json_errors) std::cout << ErrorJson(status) << std::endl;
  return ExitCodeFor(status);
}

int ReportUsageError(const std::string& message) {
  std::cerr << "error: " << TerminalText(message) << "\nRun with --help for more information."
            << std::endl;
  if (g_json_errors) std::cout << ErrorJson(InvalidArgument(message), "usage") << std::endl;
  return kExitBadInput;
}

void RunCommand(CommandResult& result, const std::function<Result<int>()>& body) {
  try {
    Result<int> rc = body();
    result.exit_code = rc.ok() ? *rc : ReportError(rc.status());
  } catch (const std::bad_alloc&) {
    result.exit_code = ReportError(Internal("out of memory"));
  } catch (const std::exception& e) {
    result.exit_code = ReportError(Internal(std::string("unexpected exception: ") + e.what()));
  }
}

Status WriteFilesAtomically(const std::vector<OutputFile>& files) {
  std::vector<std::string> temps;    // written, not yet renamed
  std::vector<std::string> renamed;  // already at their destination
  auto clean_up = [&]() {
    for (const std::string& t : temps) ::unlink(t.c_str());
    for (const std::string& r : renamed) ::unlink(r.c_str());
  };
  for (const OutputFile& file : files) {
    // The temporary lives in the destination's folder so that rename() is atomic.
    std::string tmpl = file.path + ".tmp-XXXXXX";
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    int fd = ::mkstemp(name.data());
    if (fd < 0) {
      Status s(ErrorCode::kIo, "cannot create: " + std::string(std::strerror(errno)),
               SourceLoc{file.path, 0, 0});
      clean_up();
      return s;
    }
    temps.emplace_back(name.data());
    // mkstemp creates mode 0600; give outputs the usual permissions (subject to the umask).
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    Status s = WriteAll(fd, file.contents, file.path);
    if (::close(fd) != 0 && s.ok()) {
      s = Status(ErrorCode::kIo, "close failed: " + std::string(std::strerror(errno)),
                 SourceLoc{file.path, 0, 0});
    }
    if (!s.ok()) {
      clean_up();
      return s;
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (::rename(temps[i].c_str(), files[i].path.c_str()) != 0) {
      Status s(ErrorCode::kIo, "cannot rename into place: " + std::string(std::strerror(errno)),
               SourceLoc{files[i].path, 0, 0});
      temps.erase(temps.begin(), temps.begin() + static_cast<std::ptrdiff_t>(i));
      clean_up();
      return s;
    }
    renamed.push_back(files[i].path);
  }
  return Status::Ok();
}

}  // namespace mk::cli
