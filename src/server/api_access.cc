// The access-control API: login/logout, who am I, users, tokens and the audit log.
#include <algorithm>
#include <cmath>
#include <regex>

#include "server/api.h"

namespace mk::server {

namespace {

const std::regex kUserName("[A-Za-z0-9._@+-]{1,64}");

nlohmann::json ParseBody(const Call& call) {
  return nlohmann::json::parse(call.request.body, nullptr, false);
}

std::string Text(const nlohmann::json& body, const char* key) {
  if (!body.is_object() || !body.contains(key) || !body[key].is_string()) return "";
  return body[key].get<std::string>();
}

// After a change: the anchor file gets the new events (a failure is the reply's, not lost: the
// next Sync writes what this one missed).
Reply Synced(ServerContext& ctx, Reply reply) {
  Status synced = ctx.audit->Sync();
  if (!synced.ok()) return Reply::Error(500, "audit log: " + synced.message());
  return reply;
}

Reply FromStatus(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kInvalidArgument: return Reply::Error(400, status.message());
    case ErrorCode::kNotFound: return Reply::Error(404, status.message());
    default: return Reply::Error(500, status.message());
  }
}

nlohmann::json UserJson(const store::UserRecord& user) {
  return {{"name", user.name},
          {"role", user.role},
          {"disabled", user.disabled},
          {"created_at", user.created_at}};
}

std::string SessionCookie(const std::string& value, double max_age_s, bool secure) {
  std::string cookie = std::string(kSessionCookie) + "=" + value +
                       "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" +
                       std::to_string(static_cast<int64_t>(max_age_s));
  if (secure) cookie += "; Secure";
  return cookie;
}

}  // namespace

void RegisterAccessRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/api/v1/login", "login", std::nullopt, [&ctx, &router](const Call& call) {
    // Login CSRF (a foreign page logging the browser in as someone else): a cross-site form
    // cannot send a JSON content type without a preflight this server never grants, and a
    // foreign Origin is refused outright.
    if (call.request.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
      return Reply::Error(415, "login takes Content-Type: application/json");
    }
    if (!Router::SameOriginOrNone(call.request)) return Reply::Error(403, "cross-origin login refused");
    const nlohmann::json body = ParseBody(call);
    const std::string name = Text(body, "name");
    const std::string token = Text(body, "token");
    if (name.empty() || token.empty()) {
      return Reply::Error(400, "login needs a JSON body with \"name\" and \"token\"");
    }
    int status = 500;
    auto login = ctx.auth->LogIn(name, token, call.request.remote_addr, &status);
    Status synced = ctx.audit->Sync();
    if (!login.ok()) return Reply::Error(status, login.status().message());
    if (!synced.ok()) return Reply::Error(500, "audit log: " + synced.message());
    Reply reply = Reply::Json(200, {{"user", login->principal.user},
                                    {"role", RoleName(login->principal.role)},
                                    {"csrf_token", login->csrf_token}});
    reply.headers.push_back(
        {"Set-Cookie", SessionCookie(login->cookie_value, ctx.auth->options().session_ttl_s,
                                     router.options().secure_cookies)});
    return reply;
  });

  router.Add("POST", "/api/v1/logout", "logout", Permission::kView,
             [&ctx, &router](const Call& call) {
               const std::string cookie = Router::CookieValue(call.request, kSessionCookie);
               if (call.who.via == Principal::Via::kCookie && !cookie.empty()) {
                 Status out = ctx.auth->LogOut(cookie, call.who.user);
                 if (!out.ok()) return FromStatus(out);
               }
               Reply reply = Reply::Json(200, {{"logged_out", true}});
               reply.headers.push_back(
                   {"Set-Cookie", SessionCookie("", 0, router.options().secure_cookies)});
               return Synced(ctx, reply);
             });

  router.Add("GET", "/api/v1/whoami", "whoami", Permission::kView, [](const Call& call) {
    const char* via = call.who.via == Principal::Via::kToken    ? "token"
                      : call.who.via == Principal::Via::kCookie ? "cookie"
                                                                : "proxy";
    return Reply::Json(200, {{"user", call.who.user}, {"role", RoleName(call.who.role)}, {"via", via}});
  });

  router.Add("GET", "/api/v1/users", "users.list", Permission::kAdminister, [&ctx](const Call&) {
    auto users = ctx.access->ListUsers();
    if (!users.ok()) return FromStatus(users.status());
    nlohmann::json list = nlohmann::json::array();
    for (const auto& user : *users) list.push_back(UserJson(user));
    return Reply::Json(200, {{"users", list}});
  });

  router.Add("POST", "/api/v1/users", "users.create", Permission::kAdminister,
             [&ctx](const Call& call) {
               const nlohmann::json body = ParseBody(call);
               const std::string name = Text(body, "name");
               const std::string role = Text(body, "role");
               if (!std::regex_match(name, kUserName)) {
                 return Reply::Error(400, "a user name is 1-64 of A-Z a-z 0-9 . _ @ + -");
               }
               auto parsed = ParseRole(role);
               if (!parsed.ok()) return Reply::Error(400, parsed.status().message());
               auto user = ctx.access->CreateUser(
                   name, role,
                   store::AuditEntry{call.who.user, "user.created", "user:" + name,
                                     nlohmann::json{{"role", role}}.dump()});
               if (!user.ok()) return FromStatus(user.status());
               return Synced(ctx, Reply::Json(201, UserJson(*user)));
             });

  router.Add("PUT", R"(/api/v1/users/([A-Za-z0-9._@+-]{1,64}))", "users.update",
             Permission::kAdminister, [&ctx](const Call& call) {
               const std::string name = call.request.matches[1];
               const nlohmann::json body = ParseBody(call);
               if (!body.is_object()) return Reply::Error(400, "the body must be a JSON object");
               if (body.contains("role")) {
                 auto parsed = ParseRole(Text(body, "role"));
                 if (!parsed.ok()) return Reply::Error(400, parsed.status().message());
                 if (name == call.who.user && *parsed != Role::kAdmin) {
                   return Reply::Error(400, "an admin cannot take their own admin role away");
                 }
                 Status set = ctx.access->SetUserRole(
                     name, RoleName(*parsed),
                     store::AuditEntry{call.who.user, "user.role_changed", "user:" + name,
                                       nlohmann::json{{"role", RoleName(*parsed)}}.dump()});
                 if (!set.ok()) return FromStatus(set);
               }
               if (body.contains("disabled")) {
                 if (!body["disabled"].is_boolean()) return Reply::Error(400, "disabled is a boolean");
                 const bool disabled = body["disabled"].get<bool>();
                 if (disabled && name == call.who.user) {
                   return Reply::Error(400, "an admin cannot disable themselves");
                 }
                 Status set = ctx.access->SetUserDisabled(
                     name, disabled,
                     store::AuditEntry{call.who.user, disabled ? "user.disabled" : "user.enabled",
                                       "user:" + name, "{}"});
                 if (!set.ok()) return FromStatus(set);
               }
               auto user = ctx.access->FindUser(name);
               if (!user.ok()) return FromStatus(user.status());
               if (!user->has_value()) return Reply::Error(404, "no user '" + name + "'");
               return Synced(ctx, Reply::Json(200, UserJson(**user)));
             });

  router.Add("GET", "/api/v1/tokens", "tokens.list", Permission::kAdminister, [&ctx](const Call&) {
    auto tokens = ctx.access->ListTokens();
    if (!tokens.ok()) return FromStatus(tokens.status());
    nlohmann::json list = nlohmann::json::array();
    for (const auto& t : *tokens) {
      list.push_back({{"lookup_id", t.lookup_id},
                      {"user", t.user_name},
                      {"label", t.label},
                      {"created_at", t.created_at},
                      {"expires_at", t.expires_at ? nlohmann::json(*t.expires_at) : nullptr},
                      {"revoked_at", t.revoked_at ? nlohmann::json(*t.revoked_at) : nullptr}});
    }
    return Reply::Json(200, {{"tokens", list}});
  });

  router.Add("POST", "/api/v1/tokens", "tokens.create", Permission::kAdminister,
             [&ctx](const Call& call) {
               const nlohmann::json body = ParseBody(call);
               const std::string user = Text(body, "user");
               std::optional<double> ttl_s;
               if (body.is_object() && body.contains("ttl_days")) {
                 if (!body["ttl_days"].is_number() || !(body["ttl_days"].get<double>() > 0) ||
                     !std::isfinite(body["ttl_days"].get<double>())) {
                   return Reply::Error(400, "ttl_days must be a positive number");
                 }
                 ttl_s = body["ttl_days"].get<double>() * 86400;
               }
               auto minted = ctx.auth->MintToken(user, Text(body, "label"), ttl_s, call.who.user);
               if (!minted.ok()) return FromStatus(minted.status());
               return Synced(ctx, Reply::Json(201, {{"token", minted->token},
                                                    {"lookup_id", minted->lookup_id},
                                                    {"user", user}}));
             });

  router.Add("DELETE", R"(/api/v1/tokens/([0-9a-f]{12}))", "tokens.revoke",
             Permission::kAdminister, [&ctx](const Call& call) {
               const std::string lookup = call.request.matches[1];
               Status revoked = ctx.access->RevokeToken(
                   lookup, store::AuditEntry{call.who.user, "token.revoked", "token:" + lookup, "{}"});
               if (!revoked.ok()) return FromStatus(revoked);
               return Synced(ctx, Reply::Json(200, {{"revoked", lookup}}));
             });

  router.Add("GET", "/api/v1/audit", "audit.list", Permission::kAdminister,
             [&ctx](const Call& call) {
               int64_t after = 0, limit = 1000;
               try {
                 if (call.request.has_param("after")) after = std::stoll(call.request.get_param_value("after"));
                 if (call.request.has_param("limit")) limit = std::stoll(call.request.get_param_value("limit"));
               } catch (const std::exception&) {
                 return Reply::Error(400, "after and limit are integers");
               }
               auto events = ctx.access->ListAudit(after, std::clamp<int64_t>(limit, 1, 10000));
               if (!events.ok()) return FromStatus(events.status());
               nlohmann::json list = nlohmann::json::array();
               for (const auto& e : *events) {
                 list.push_back({{"id", e.id},
                                 {"ts", e.ts},
                                 {"actor", e.actor},
                                 {"action", e.action},
                                 {"subject", e.subject},
                                 {"payload", nlohmann::json::parse(e.payload_json, nullptr, false)},
                                 {"prev_sha256", e.prev_sha256},
                                 {"sha256", e.sha256}});
               }
               return Reply::Json(200, {{"events", list}});
             });
}

}  // namespace mk::server
