// The server's routes, one file a group; each registers itself on the router.
#pragma once

#include "server/router.h"
#include "server/server_context.h"

namespace mk::server {

// api_access.cc: login, logout, whoami, users, tokens, audit.
void RegisterAccessRoutes(Router& router, ServerContext& ctx);
// api_runs.cc: runs and artifacts (read-only).
void RegisterRunRoutes(Router& router, ServerContext& ctx);
// ui_routes.cc: the web UI (/, /ui/app.js, /ui/app.css).
void RegisterUiRoutes(Router& router);
// http_server.cc: /healthz, /readyz, /metrics.
void RegisterHealthRoutes(Router& router, ServerContext& ctx);

}  // namespace mk::server
