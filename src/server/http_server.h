// `maxkernel serve`'s HTTP side: one cpp-httplib server, its worker pool, every route
// (server/api.h), JSON errors for unknown paths, and a clean stop.
//
// Threads: cpp-httplib gives a keep-alive or server-sent-events connection a worker for as long
// as it is open, and its default pool has 8; `threads` sizes the pool for the viewers polling at
// once (the load test's 20 sessions and their viewers).
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include "server/router.h"
#include "server/server_context.h"

namespace mk::server {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (tests)
  int threads = 64;
  RouterOptions router;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);

class HttpServer {
 public:
  // Refuses a non-loopback address unless auth is set up: an enabled admin exists, or a trusted
  // proxy names users.
  static Result<std::unique_ptr<HttpServer>> Create(ServerContext ctx, ServeOptions options);

  // Binds the socket; returns the port (the chosen one when options.port was 0).
  Result<int> Bind();
  // Serves until Stop() (from another thread or a signal watcher).
  Status Run();
  void Stop();
  int port() const { return port_; }
  const Router& router() const { return *router_; }

 private:
  explicit HttpServer(ServerContext ctx, ServeOptions options)
      : ctx_(ctx), options_(std::move(options)) {}

  ServerContext ctx_;
  ServeOptions options_;
  httplib::Server http_;
  std::unique_ptr<Router> router_;
  int port_ = 0;
};

}  // namespace mk::server
