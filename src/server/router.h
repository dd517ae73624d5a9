// The gate every request passes: who is calling (server/auth.h), whether their role allows the
// route (403 otherwise, 401 with no or bad credentials), CSRF for browser-borne credentials, and
// the request metrics. Handlers get a Call and return a Reply; an error body is always
// {"error": "..."}.
#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/auth.h"
#include "server/roles.h"
#include "support/metrics.h"

namespace mk::server {

inline constexpr const char* kSessionCookie = "mk_session";

struct Call {
  const httplib::Request& request;
  Principal who;  // empty user on routes without a permission
};

struct Reply {
  int status = 200;
  std::string body = "{}";
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;

  static Reply Json(int status, const nlohmann::json& body);
  static Reply Error(int status, const std::string& message);
};

using Handler = std::function<Reply(const Call&)>;

// A server-sent-events route: after the gate, the handler returns the stream's step function,
// which the server calls until it returns false (it writes what it has, or waits a little and
// writes nothing). `stopping` turns true when the server stops: the step must then return false.
using EventStep = std::function<bool(httplib::DataSink& sink, const std::atomic<bool>& stopping)>;
using StreamHandler = std::function<EventStep(const Call&)>;

struct RouterOptions {
  bool secure_cookies = true;  // the session cookie's Secure attribute
};

class Router {
 public:
  // Registers its metric families in `metrics` (which must outlive the router).
  static Result<std::unique_ptr<Router>> Create(httplib::Server& http, Authenticator& auth,
                                                MetricsRegistry& metrics, RouterOptions options);

  // `permission` nullopt: public (health, login). `route` names the route in metrics.
  void Add(const std::string& method, const std::string& pattern, const std::string& route,
           std::optional<Permission> permission, Handler handler);

  // A GET route answering text/event-stream.
  void AddStream(const std::string& pattern, const std::string& route, Permission permission,
                 StreamHandler handler);
  // Ends every open stream (HttpServer::Stop).
  void StopStreams() { stopping_ = true; }

  // Every route as "METHOD pattern permission", for the docs and the role-matrix test.
  const std::vector<std::string>& routes() const { return routes_; }
  const RouterOptions& options() const { return options_; }
  Authenticator& auth() { return auth_; }

  // False when the request names a foreign Origin (none: true, as for non-browser clients).
  static bool SameOriginOrNone(const httplib::Request& request);
  // The value of cookie `name` in the request's Cookie header ("" when absent).
  static std::string CookieValue(const httplib::Request& request, const std::string& name);

 private:
  Router(httplib::Server& http, Authenticator& auth, RouterOptions options)
      : http_(http), auth_(auth), options_(options) {}
  AuthOutcome Authenticate(const httplib::Request& request);
  std::optional<Reply> CheckCsrf(const httplib::Request& request, const Principal& who);
  // Authentication, the role's permission and CSRF: a refusal, or who is calling.
  std::optional<Reply> Gate(const httplib::Request& request, std::optional<Permission> permission,
                            Principal* who);
  void Serve(const httplib::Request& request, httplib::Response& response,
             const std::string& route, std::optional<Permission> permission,
             const Handler& handler);
  void Send(const httplib::Request& request, httplib::Response& response,
            const std::string& route, const Reply& reply, double seconds);

  httplib::Server& http_;
  Authenticator& auth_;
  RouterOptions options_;
  CounterFamily* requests_ = nullptr;
  HistogramFamily* durations_ = nullptr;
  std::vector<std::string> routes_;
  std::atomic<bool> stopping_{false};
};

}  // namespace mk::server
