#include "server/router.h"

#include <chrono>

namespace mk::server {

Reply Reply::Json(int status, const nlohmann::json& body) {
  Reply reply;
  reply.status = status;
  reply.body = body.dump();
  return reply;
}

Reply Reply::Error(int status, const std::string& message) {
  return Json(status, {{"error", message}});
}

Result<std::unique_ptr<Router>> Router::Create(httplib::Server& http, Authenticator& auth,
                                               MetricsRegistry& metrics, RouterOptions options) {
  std::unique_ptr<Router> router(new Router(http, auth, options));
  MK_ASSIGN_OR_RETURN(router->requests_,
                      metrics.AddCounter("maxkernel_http_requests_total",
                                         "HTTP requests served, by route, method and status.",
                                         {"route", "method", "status"}));
  MK_ASSIGN_OR_RETURN(router->durations_,
                      metrics.AddHistogram("maxkernel_http_request_duration_seconds",
                                           "Time to answer an HTTP request, by route.",
                                           {"route"}));
  return router;
}

bool Router::SameOriginOrNone(const httplib::Request& request) {
  if (!request.has_header("Origin")) return true;
  const std::string origin = request.get_header_value("Origin");
  const std::string host = request.get_header_value("Host");
  return origin == "http://" + host || origin == "https://" + host;
}

std::string Router::CookieValue(const httplib::Request& request, const std::string& name) {
  const std::string header = request.get_header_value("Cookie");
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(pos, end - pos);
    const size_t first = pair.find_first_not_of(' ');
    pair = first == std::string::npos ? "" : pair.substr(first);
    const size_t eq = pair.find('=');
    if (eq != std::string::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
    pos = end + 1;
  }
  return "";
}

AuthOutcome Router::Authenticate(const httplib::Request& request) {
  if (request.has_header("Authorization")) {
    const std::string value = request.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (value.compare(0, kBearer.size(), kBearer) != 0) {
      return AuthOutcome{std::nullopt, 401, "only Bearer tokens are accepted"};
    }
    return auth_.VerifyBearer(std::string_view(value).substr(kBearer.size()), request.remote_addr);
  }
  const std::string& header = auth_.options().proxy_header;
  if (!header.empty() && request.has_header(header.c_str())) {
    auto outcome = auth_.VerifyProxy(request.remote_addr, request.get_header_value(header.c_str()));
    if (outcome) return *outcome;
  }
  const std::string cookie = CookieValue(request, kSessionCookie);
  if (!cookie.empty()) return auth_.VerifyCookie(cookie);
  return AuthOutcome{std::nullopt, 401, "authentication required (a Bearer token or a login)"};
}

std::optional<Reply> Router::CheckCsrf(const httplib::Request& request, const Principal& who) {
  if (request.method == "GET" || request.method == "HEAD") return std::nullopt;
  // A token in a header is not something a browser attaches by itself: no CSRF to fear.
  if (who.via == Principal::Via::kToken) return std::nullopt;
  if (!SameOriginOrNone(request)) return Reply::Error(403, "cross-origin request refused");
  if (who.via == Principal::Via::kCookie) {
    if (!Authenticator::CsrfMatches(who, request.get_header_value("X-CSRF-Token"))) {
      return Reply::Error(403, "missing or wrong X-CSRF-Token");
    }
    return std::nullopt;
  }
  // A proxy's identity rides on the proxy's cookie: ask for a header no cross-site form can set.
  if (request.get_header_value("X-Requested-With") != "maxkernel") {
    return Reply::Error(403, "state-changing requests need X-Requested-With: maxkernel");
  }
  return std::nullopt;
}

std::optional<Reply> Router::Gate(const httplib::Request& request,
                                  std::optional<Permission> permission, Principal* who) {
  if (!permission) return std::nullopt;
  AuthOutcome outcome = Authenticate(request);
  if (!outcome.principal) return Reply::Error(outcome.http_status, outcome.reason);
  if (!Allows(outcome.principal->role, *permission)) {
    return Reply::Error(403, "role '" + std::string(RoleName(outcome.principal->role)) +
                                 "' may not " + std::string(PermissionName(*permission)));
  }
  *who = *outcome.principal;
  return CheckCsrf(request, *who);
}

void Router::Send(const httplib::Request& request, httplib::Response& response,
                  const std::string& route, const Reply& reply, double seconds) {
  response.status = reply.status;
  for (const auto& [name, value] : reply.headers) response.set_header(name, value);
  response.set_header("Cache-Control", "no-store");
  response.set_header("X-Content-Type-Options", "nosniff");
  if (!reply.body.empty() || reply.content_type != "text/event-stream") {
    response.set_content(reply.body, reply.content_type);
  }
  requests_->WithLabels({route, request.method, std::to_string(reply.status)}).Inc();
  durations_->WithLabels({route}).Observe(seconds);
}

void Router::Serve(const httplib::Request& request, httplib::Response& response,
                   const std::string& route, std::optional<Permission> permission,
                   const Handler& handler) {
  const auto start = std::chrono::steady_clock::now();
  Principal who;
  std::optional<Reply> reply = Gate(request, permission, &who);
  if (!reply) {
    try {
      reply = handler(Call{request, who});
    } catch (const std::exception& e) {
      reply = Reply::Error(500, std::string("internal error: ") + e.what());
    }
  }
  Send(request, response, route, *reply,
       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void Router::AddStream(const std::string& pattern, const std::string& route,
                       Permission permission, StreamHandler handler) {
  routes_.push_back("GET " + pattern + " " + std::string(PermissionName(permission)));
  http_.Get(pattern, [this, route, permission, handler = std::move(handler)](
                         const httplib::Request& request, httplib::Response& response) {
    const auto start = std::chrono::steady_clock::now();
    Principal who;
    if (std::optional<Reply> refused = Gate(request, permission, &who)) {
      Send(request, response, route, *refused, 0);
      return;
    }
    EventStep step = handler(Call{request, who});
    Reply headers;
    headers.content_type = "text/event-stream";
    headers.body.clear();
    headers.headers.push_back({"X-Accel-Buffering", "no"});  // proxies: pass each event on
    Send(request, response, route, headers,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    response.set_chunked_content_provider(
        "text/event-stream", [this, step](size_t, httplib::DataSink& sink) {
          if (stopping_ || !sink.is_writable() || !step(sink, stopping_)) {
            sink.done();
            return true;
          }
          return true;
        });
  });
}

void Router::Add(const std::string& method, const std::string& pattern, const std::string& route,
                 std::optional<Permission> permission, Handler handler) {
  routes_.push_back(method + " " + pattern + " " +
                    (permission ? std::string(PermissionName(*permission)) : "public"));
  auto serve = [this, route, permission, handler = std::move(handler)](
                   const httplib::Request& request, httplib::Response& response) {
    Serve(request, response, route, permission, handler);
  };
  if (method == "GET") {
    http_.Get(pattern, serve);
  } else if (method == "POST") {
    http_.Post(pattern, serve);
  } else if (method == "PUT") {
    http_.Put(pattern, serve);
  } else if (method == "DELETE") {
    http_.Delete(pattern, serve);
  }
}

}  // namespace mk::server
