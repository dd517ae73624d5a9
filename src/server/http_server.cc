#include "server/http_server.h"

#include "server/api.h"

namespace mk::server {

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

void RegisterHealthRoutes(Router& router, ServerContext& ctx) {
  router.Add("GET", "/healthz", "healthz", std::nullopt,
             [](const Call&) { return Reply::Json(200, {{"status", "ok"}}); });
  router.Add("GET", "/readyz", "readyz", std::nullopt, [&ctx](const Call&) {
    auto version = ctx.store->SchemaVersion();
    if (!version.ok()) return Reply::Error(503, "store not ready: " + version.status().message());
    return Reply::Json(200, {{"status", "ready"}, {"schema_version", *version}});
  });
  router.Add("GET", "/metrics", "metrics", Permission::kView, [&ctx](const Call&) {
    Reply reply;
    reply.body = ctx.metrics->ExpositionText();
    reply.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return reply;
  });
}

Result<std::unique_ptr<HttpServer>> HttpServer::Create(ServerContext ctx, ServeOptions options) {
  if (ctx.store == nullptr || ctx.access == nullptr || ctx.auth == nullptr ||
      ctx.audit == nullptr || ctx.metrics == nullptr) {
    return Internal("the server needs a store, its access half, auth, audit and metrics");
  }
  if (options.threads < 1 || options.threads > 1024) {
    return InvalidArgument("--threads must be 1..1024");
  }
  if (!IsLoopbackHost(options.host)) {
    bool admin = false;
    MK_ASSIGN_OR_RETURN(auto users, ctx.access->ListUsers());
    for (const auto& user : users) admin = admin || (user.role == "admin" && !user.disabled);
    const bool proxy = !ctx.auth->options().trusted_proxies.empty();
    if (!admin && !proxy) {
      return InvalidArgument("refusing to listen on " + options.host +
                             " without auth set up: make an admin first (`maxkernel serve "
                             "--init-admin NAME`) or configure a trusted proxy");
    }
  }
  std::unique_ptr<HttpServer> server(new HttpServer(ctx, std::move(options)));
  MK_ASSIGN_OR_RETURN(server->router_, Router::Create(server->http_, *ctx.auth, *ctx.metrics,
                                                      server->options_.router));
  const int threads = server->options_.threads;
  server->http_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server->http_.set_payload_max_length(16u << 20);
  server->http_.set_read_timeout(30, 0);
  server->http_.set_error_handler([](const httplib::Request&, httplib::Response& response) {
    if (response.body.empty()) {
      response.set_content(
          nlohmann::json{{"error", "no such route (" + std::to_string(response.status) + ")"}}
              .dump(),
          "application/json");
    }
  });
  RegisterHealthRoutes(*server->router_, server->ctx_);
  RegisterAccessRoutes(*server->router_, server->ctx_);
  RegisterRunRoutes(*server->router_, server->ctx_);
  RegisterUiRoutes(*server->router_);
  return server;
}

Result<int> HttpServer::Bind() {
  if (options_.port == 0) {
    port_ = http_.bind_to_any_port(options_.host);
    if (port_ <= 0) return IoError("cannot bind " + options_.host + " to any port");
  } else {
    if (!http_.bind_to_port(options_.host, options_.port)) {
      return IoError("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                     " (in use, or not an address of this machine)");
    }
    port_ = options_.port;
  }
  return port_;
}

Status HttpServer::Run() {
  if (!http_.listen_after_bind()) return IoError("the server stopped with an error");
  return Status::Ok();
}

void HttpServer::Stop() {
  router_->StopStreams();
  http_.stop();
}

}  // namespace mk::server
