#include "server/auth.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/secrets.h"
#include "support/sha256.h"

namespace mk::server {

namespace {

constexpr std::string_view kTokenPrefix = "mkt_";
constexpr size_t kLookupChars = 12;
constexpr double kVerifiedCacheS = 300;

struct TokenParts {
  std::string lookup_id;
  std::string secret;
};

std::optional<TokenParts> SplitToken(std::string_view token) {
  const size_t head = kTokenPrefix.size() + kLookupChars;
  if (token.size() <= head + 1 || token.substr(0, kTokenPrefix.size()) != kTokenPrefix ||
      token[head] != '_') {
    return std::nullopt;
  }
  const std::string_view lookup = token.substr(kTokenPrefix.size(), kLookupChars);
  for (char c : lookup) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return TokenParts{std::string(lookup), std::string(token.substr(head + 1))};
}

AuthOutcome Refuse(int status, std::string reason) {
  AuthOutcome outcome;
  outcome.http_status = status;
  outcome.reason = std::move(reason);
  return outcome;
}

std::string Payload(const nlohmann::json& json) { return json.dump(); }

}  // namespace

Authenticator::Authenticator(store::AccessStore& access, AuthOptions options)
    : access_(access), options_(std::move(options)) {}

double Authenticator::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Authenticator::RateLimited(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  if (it == failures_.end()) return false;
  const double since = Now() - options_.failure_window_s;
  std::erase_if(it->second, [&](double t) { return t < since; });
  if (it->second.empty()) {
    failures_.erase(it);
    return false;
  }
  return static_cast<int>(it->second.size()) >= options_.max_failures;
}

void Authenticator::RecordFailure(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_[key].push_back(Now());
}

Result<MintedToken> Authenticator::MintToken(std::string_view user, std::string_view label,
                                             std::optional<double> ttl_s,
                                             std::string_view actor) {
  MK_RETURN_IF_ERROR(InitSecrets());
  MK_ASSIGN_OR_RETURN(auto record, access_.FindUser(user));
  if (!record) return NotFound("no user '" + std::string(user) + "'");
  if (ttl_s && !(*ttl_s > 0)) return InvalidArgument("a token's lifetime must be positive");
  MintedToken minted;
  minted.lookup_id = RandomHex(kLookupChars / 2);
  const std::string secret = RandomText(32);
  minted.token = std::string(kTokenPrefix) + minted.lookup_id + "_" + secret;
  MK_ASSIGN_OR_RETURN(std::string hash, HashSecret(secret));
  store::NewToken token;
  token.user_id = record->id;
  token.lookup_id = minted.lookup_id;
  token.secret_hash = hash;
  token.label = label;
  if (ttl_s) token.expires_at = Now() + *ttl_s;
  store::AuditEntry audit{std::string(actor), "token.created", "token:" + minted.lookup_id,
                          Payload({{"user", user},
                                   {"label", label},
                                   {"expires_at", token.expires_at ? nlohmann::json(*token.expires_at)
                                                                   : nlohmann::json(nullptr)}})};
  MK_RETURN_IF_ERROR(access_.AddToken(token, audit).status());
  return minted;
}

AuthOutcome Authenticator::PrincipalOf(std::string_view user, Principal::Via via) {
  auto record = access_.FindUser(user);
  if (!record.ok()) return Refuse(500, record.status().message());
  return PrincipalOf(*record, via);
}

AuthOutcome Authenticator::PrincipalOf(const std::optional<store::UserRecord>& record,
                                       Principal::Via via) {
  if (!record) return Refuse(401, "unknown user");
  if (record->disabled) return Refuse(401, "user disabled");
  auto role = ParseRole(record->role);
  if (!role.ok()) return Refuse(500, role.status().message());
  AuthOutcome outcome;
  outcome.principal = Principal{record->name, record->id, *role, via, ""};
  outcome.http_status = 200;
  return outcome;
}

AuthOutcome Authenticator::CheckToken(std::string_view token) {
  const auto parts = SplitToken(token);
  if (!parts) return Refuse(401, "malformed token");
  auto record = access_.FindToken(parts->lookup_id);
  if (!record.ok()) return Refuse(500, record.status().message());
  if (!record->has_value()) return Refuse(401, "unknown token");
  const store::TokenRecord& t = **record;
  if (t.revoked_at) return Refuse(401, "token revoked");
  if (t.expires_at && *t.expires_at <= Now()) return Refuse(401, "token expired");
  const std::string digest = Sha256Hex(parts->secret);
  bool cached = false;
  {
    std::lock_guard lock(mu_);
    auto it = verified_.find(t.lookup_id);
    cached = it != verified_.end() && Now() - it->second.second < kVerifiedCacheS &&
             ConstantTimeEquals(it->second.first, digest);
  }
  if (!cached) {
    if (!VerifySecret(t.secret_hash, parts->secret)) return Refuse(401, "bad token");
    std::lock_guard lock(mu_);
    verified_[t.lookup_id] = {digest, Now()};
  }
  return PrincipalOf(t.user_name, Principal::Via::kToken);
}

AuthOutcome Authenticator::VerifyBearer(std::string_view token, std::string_view remote) {
  const std::string key = "addr:" + std::string(remote);
  if (RateLimited(key)) return Refuse(429, "too many failed attempts; wait and retry");
  AuthOutcome outcome = CheckToken(token);
  if (!outcome.principal && outcome.http_status == 401) RecordFailure(key);
  return outcome;
}

AuthOutcome Authenticator::VerifyCookie(std::string_view cookie_value) {
  if (cookie_value.empty()) return Refuse(401, "no session");
  auto session = access_.FindWebSession(Sha256Hex(cookie_value));
  if (!session.ok()) return Refuse(500, session.status().message());
  if (!session->has_value() || (*session)->expires_at <= Now()) {
    return Refuse(401, "no such session, or it expired");
  }
  auto user = access_.GetUser((*session)->user_id);
  if (!user.ok()) return Refuse(500, user.status().message());
  AuthOutcome outcome = PrincipalOf(*user, Principal::Via::kCookie);
  if (outcome.principal) outcome.principal->csrf_sha256 = (*session)->csrf_sha256;
  return outcome;
}

std::optional<AuthOutcome> Authenticator::VerifyProxy(std::string_view remote,
                                                      std::string_view header_value) {
  if (options_.proxy_header.empty() || header_value.empty()) return std::nullopt;
  bool trusted = false;
  for (const auto& proxy : options_.trusted_proxies) trusted = trusted || proxy == remote;
  if (!trusted) return std::nullopt;
  return PrincipalOf(header_value, Principal::Via::kProxy);
}

Result<Login> Authenticator::LogIn(std::string_view name, std::string_view token,
                                   std::string_view remote, int* http_status) {
  MK_RETURN_IF_ERROR(InitSecrets());
  const std::string addr_key = "addr:" + std::string(remote);
  const std::string user_key = "user:" + std::string(name);
  auto refuse = [&](int status, const std::string& reason) -> Status {
    *http_status = status;
    // The audit records the attempt, never the token.
    (void)access_.AppendAudit(store::AuditEntry{
        std::string(name).empty() ? "anonymous" : std::string(name), "login.failed",
        "user:" + std::string(name), Payload({{"remote", remote}, {"reason", reason}})});
    return InvalidArgument(reason);
  };
  if (RateLimited(addr_key) || RateLimited(user_key)) {
    *http_status = 429;
    return InvalidArgument("too many failed logins; wait and retry");
  }
  AuthOutcome outcome = CheckToken(token);
  if (!outcome.principal || outcome.principal->user != name) {
    if (outcome.http_status == 500) return Internal(outcome.reason);
    RecordFailure(addr_key);
    RecordFailure(user_key);
    return refuse(401, "wrong name or token");
  }
  Login login;
  login.cookie_value = RandomText(32);
  login.csrf_token = RandomText(32);
  login.principal = *outcome.principal;
  login.principal.via = Principal::Via::kCookie;
  login.principal.csrf_sha256 = Sha256Hex(login.csrf_token);
  store::WebSessionRecord session;
  session.id_sha256 = Sha256Hex(login.cookie_value);
  session.user_id = outcome.principal->user_id;
  session.csrf_sha256 = login.principal.csrf_sha256;
  session.expires_at = Now() + options_.session_ttl_s;
  MK_RETURN_IF_ERROR(access_.AddWebSession(
      session, store::AuditEntry{std::string(name), "login.succeeded", "user:" + std::string(name),
                                 Payload({{"remote", remote}})}));
  *http_status = 200;
  return login;
}

Status Authenticator::LogOut(std::string_view cookie_value, std::string_view actor) {
  return access_.DeleteWebSession(
      Sha256Hex(cookie_value),
      store::AuditEntry{std::string(actor), "logout", "user:" + std::string(actor), "{}"});
}

bool Authenticator::CsrfMatches(const Principal& principal, std::string_view csrf_token) {
  if (principal.csrf_sha256.empty() || csrf_token.empty()) return false;
  return ConstantTimeEquals(principal.csrf_sha256, Sha256Hex(csrf_token));
}

}  // namespace mk::server
