#include "store/data_dir.h"

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <vector>

namespace mk::store {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> NonEmpty(const EnvLookup& env, const char* name) {
  std::optional<std::string> value = env(name);
  if (value.has_value() && value->empty()) return std::nullopt;
  return value;
}

std::optional<std::string> HomeFromPasswordDatabase() {
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr || found->pw_dir == nullptr || found->pw_dir[0] == '\0') {
    return std::nullopt;
  }
  return std::string(found->pw_dir);
}

Result<fs::path> Absolute(const fs::path& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) return IoError("cannot make " + path.string() + " absolute: " + ec.message());
  return absolute.lexically_normal();
}

}  // namespace

std::optional<std::string> ProcessEnv(const char* name) {
  const char* value = ::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Result<DataDir> ResolveDataDir(const std::string& db_override, const EnvLookup& env) {
  fs::path root;
  if (auto home = NonEmpty(env, "MAXKERNEL_HOME")) {
    root = *home;
  } else if (auto xdg = NonEmpty(env, "XDG_DATA_HOME"); xdg && fs::path(*xdg).is_absolute()) {
    // The XDG spec says to ignore a relative XDG_DATA_HOME.
    root = fs::path(*xdg) / "maxkernel";
  } else {
    std::optional<std::string> user_home = NonEmpty(env, "HOME");
    if (!user_home) user_home = HomeFromPasswordDatabase();
    if (!user_home) {
      return InvalidArgument(
          "cannot find a data directory: set MAXKERNEL_HOME (or HOME) or pass --db");
    }
    root = fs::path(*user_home) / ".local" / "share" / "maxkernel";
  }
  DataDir dir;
  MK_ASSIGN_OR_RETURN(dir.root, Absolute(root));
  if (!db_override.empty()) {
    MK_ASSIGN_OR_RETURN(dir.db_path, Absolute(db_override));
    dir.db_overridden = true;
  } else {
    dir.db_path = dir.root / kDefaultDbName;
  }
  return dir;
}

Status EnsureDataDir(const DataDir& dir) {
  std::error_code ec;
  bool created = fs::create_directories(dir.root, ec);
  if (ec) return IoError("cannot create data directory " + dir.root.string() + ": " + ec.message());
  if (created) {
    fs::permissions(dir.root, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return IoError("cannot restrict " + dir.root.string() + ": " + ec.message());
  }
  if (dir.db_overridden) {
    fs::path parent = dir.db_path.parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec)) {
      return InvalidArgument("--db " + dir.db_path.string() + ": directory " + parent.string() +
                             " does not exist");
    }
  }
  return Status::Ok();
}

}  // namespace mk::store
