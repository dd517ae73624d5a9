// Opening the store that read-only commands (`runs`, `artifacts get`, `export`) look at, and
// naming an artifact by a short prefix of its sha256.
//
// Read-only commands must not leave an empty database behind when the user mistyped a path or
// nothing ran yet, so a missing database file is an error that says where we looked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "store/artifact_store.h"
#include "store/data_dir.h"
#include "store/store.h"
#include "support/status.h"

namespace mk::exports {

struct OpenedStore {
  store::DataDir dir;
  std::unique_ptr<store::Store> db;
  std::unique_ptr<store::ArtifactStore> artifacts;  // dir.root/artifacts
};

// Opens the existing database (`db_override` is --db; empty: DATA_DIR/maxkernel.db) and the
// artifact store of the data directory. NotFound when the database file does not exist. The
// database is opened read-only (nothing is migrated or written) unless its schema is older than
// this maxkernel's, in which case it is upgraded first.
Result<OpenedStore> OpenExistingStore(const std::string& db_override,
                                      const store::EnvLookup& env = store::ProcessEnv);

// The full sha256 of the one artifact whose name starts with `prefix` (at least 8 hex digits,
// any case). InvalidArgument for a malformed or too short prefix or for an ambiguous one (the
// message lists a few matches), NotFound when nothing matches.
Result<std::string> ResolveArtifactSha(const store::ArtifactStore& artifacts,
                                       std::string_view prefix);

inline constexpr size_t kMinArtifactPrefix = 8;

// A run id as typed on the command line: a positive decimal integer.
Result<int64_t> ParseRunId(std::string_view text);

}  // namespace mk::exports
