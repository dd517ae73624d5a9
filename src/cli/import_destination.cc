#include "cli/import_destination.h"

#include <filesystem>

namespace mk::cli {

namespace fs = std::filesystem;

namespace {

// The first entry of `data` that import would not have written ("" when there is none).
std::string UnexpectedDataEntry(const fs::path& data) {
  std::error_code ec;
  for (fs::directory_iterator it(data, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (!it->is_regular_file(ec) || it->is_symlink(ec) || p.extension() != ".npy") {
      return "data/" + p.filename().string();
    }
  }
  return ec ? "data/ (unreadable: " + ec.message() + ")" : "";
}

}  // namespace

Status CheckImportDestination(const std::string& dir, bool force) {
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(dir, ec);
  if (!fs::exists(link)) return Status::Ok();
  if (!force) return InvalidArgument(dir + " already exists (pass --force to replace it)");
  const std::string refuse = "refusing to replace " + dir + " (--force replaces only a task "
                             "directory: task.yaml, module.hlo and data/*.npy): ";
  if (fs::is_symlink(link)) return InvalidArgument(refuse + "it is a symbolic link");
  if (!fs::is_directory(link)) return InvalidArgument(refuse + "it is not a directory");
  bool has_yaml = false, has_module = false, empty = true;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    empty = false;
    const std::string name = it->path().filename().string();
    const bool regular = !it->is_symlink(ec) && it->is_regular_file(ec);
    if (name == "task.yaml" && regular) {
      has_yaml = true;
    } else if (name == "module.hlo" && regular) {
      has_module = true;
    } else if (name == "data" && !it->is_symlink(ec) && it->is_directory(ec)) {
      std::string bad = UnexpectedDataEntry(it->path());
      if (!bad.empty()) return InvalidArgument(refuse + "it holds " + bad);
    } else {
      return InvalidArgument(refuse + "it holds " + name);
    }
  }
  if (ec) return IoError("cannot list " + dir + ": " + ec.message());
  if (!empty && (!has_yaml || !has_module)) {
    return InvalidArgument(refuse + "it has no " + (has_yaml ? "module.hlo" : "task.yaml"));
  }
  return Status::Ok();
}

}  // namespace mk::cli
