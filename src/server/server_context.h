// What the server's handlers share: the store, its access-control half, the artifacts, the
// authenticator, the audit anchor and the metrics. All owned elsewhere (by `serve`), and alive
// as long as the server.
#pragma once

#include "server/audit_log.h"
#include "server/auth.h"
#include "store/artifact_store.h"
#include "store/store.h"
#include "support/metrics.h"

namespace mk::server {

struct ServerContext {
  store::Store* store = nullptr;
  store::AccessStore* access = nullptr;
  const store::ArtifactStore* artifacts = nullptr;  // may be null: artifact routes answer 404
  Authenticator* auth = nullptr;
  AuditLog* audit = nullptr;
  MetricsRegistry* metrics = nullptr;
};

}  // namespace mk::server
