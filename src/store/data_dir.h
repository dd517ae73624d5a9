// Where maxkernel keeps its state: the database and the artifacts.
//
//   $MAXKERNEL_HOME                       when set (and not empty)
//   $XDG_DATA_HOME/maxkernel              else, when XDG_DATA_HOME is an absolute path
//   $HOME/.local/share/maxkernel          else (the home directory from the password database
//                                         when HOME is unset)
//
// The database is DIR/maxkernel.db unless `--db PATH` names another file; artifacts are always
// under DIR/artifacts/.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "support/status.h"

namespace mk::store {

struct DataDir {
  std::filesystem::path root;
  std::filesystem::path db_path;
  bool db_overridden = false;  // db_path came from --db
};

// Reads one environment variable (tests substitute their own).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
std::optional<std::string> ProcessEnv(const char* name);

inline constexpr const char* kDefaultDbName = "maxkernel.db";

// Resolves the data directory (does not touch the filesystem). `db_override` is --db: empty
// means DIR/maxkernel.db. Relative paths are made absolute against the current directory.
Result<DataDir> ResolveDataDir(const std::string& db_override = "",
                               const EnvLookup& env = ProcessEnv);

// Creates the data directory and the default database's folder (mode 0700: runs may hold
// proprietary kernels). A --db file's folder must already exist.
Status EnsureDataDir(const DataDir& dir);

}  // namespace mk::store
