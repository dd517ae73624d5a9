// Who is calling: API tokens (Authorization: Bearer), browser sessions (a cookie bound to a CSRF
// token), or a trusted proxy's identity header. Users, token hashes and sessions live in the
// store (store/access.h); every change is audited there.
//
// - A token is "mkt_" + 12 hex (its public lookup id) + "_" + 32 random bytes (base64url). Only
//   an argon2id hash of the random part is stored; it is shown once, when it is made.
// - A login trades a user's token for a session: a fresh random cookie value and a CSRF token
//   (both stored as sha256 only). A session id the server did not issue is never accepted, and
//   every login issues a new one, so a planted cookie cannot fix a session.
// - Failed logins and bad bearer tokens are counted per remote address and per user name; past
//   `max_failures` in `failure_window_s` the caller gets 429 until the window passes.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/roles.h"
#include "store/access.h"
#include "support/status.h"

namespace mk::server {

struct Principal {
  std::string user;
  int64_t user_id = 0;
  Role role = Role::kViewer;
  enum class Via { kToken, kCookie, kProxy } via = Via::kToken;
  std::string csrf_sha256;  // kCookie: the session's CSRF token, hashed
};

struct AuthOptions {
  double session_ttl_s = 12 * 3600;
  // Trusted-proxy mode: requests from these exact remote addresses may name their user in
  // `proxy_header` (e.g. X-Forwarded-Email from oauth2-proxy). Empty: off.
  std::vector<std::string> trusted_proxies;
  std::string proxy_header;
  int max_failures = 5;
  double failure_window_s = 300;
  std::function<double()> clock;  // seconds since the epoch (tests pin it)
};

// The answer to "who is this?": a principal, or the HTTP status to refuse with and why.
struct AuthOutcome {
  std::optional<Principal> principal;
  int http_status = 401;  // 401 unknown or bad credentials, 429 too many failures, 500 store
  std::string reason;
};

struct MintedToken {
  std::string token;  // the whole secret token: shown once
  std::string lookup_id;
};

struct Login {
  std::string cookie_value;  // the session cookie's value
  std::string csrf_token;    // sent back in X-CSRF-Token on every state-changing request
  Principal principal;
};

class Authenticator {
 public:
  Authenticator(store::AccessStore& access, AuthOptions options);

  // Makes a token for `user` (ttl_s: none never expires) and stores its hash, audited as
  // `actor`'s action.
  Result<MintedToken> MintToken(std::string_view user, std::string_view label,
                                std::optional<double> ttl_s, std::string_view actor);

  AuthOutcome VerifyBearer(std::string_view token, std::string_view remote);
  AuthOutcome VerifyCookie(std::string_view cookie_value);
  // The user a trusted proxy vouches for; nullopt when the request is not from a trusted proxy
  // or has no such header (then the other ways apply).
  std::optional<AuthOutcome> VerifyProxy(std::string_view remote, std::string_view header_value);

  // The login form: a user's name and one of their tokens. Audited either way.
  Result<Login> LogIn(std::string_view name, std::string_view token, std::string_view remote,
                      int* http_status);
  Status LogOut(std::string_view cookie_value, std::string_view actor);

  static bool CsrfMatches(const Principal& principal, std::string_view csrf_token);
  const AuthOptions& options() const { return options_; }

 private:
  double Now() const;
  bool RateLimited(const std::string& key);
  void RecordFailure(const std::string& key);
  // The user behind a token whose secret checked; 401 outcomes say why not.
  AuthOutcome CheckToken(std::string_view token);
  AuthOutcome PrincipalOf(std::string_view user, Principal::Via via);
  AuthOutcome PrincipalOf(const std::optional<store::UserRecord>& user, Principal::Via via);

  store::AccessStore& access_;
  AuthOptions options_;
  std::mutex mu_;
  std::map<std::string, std::vector<double>> failures_;  // key -> failure times in the window
  // lookup id -> sha256 of a secret that argon2 verified, and when: a repeat skips argon2
  // (revocation, expiry and the user's state are still read from the store every time).
  std::map<std::string, std::pair<std::string, double>> verified_;
};

}  // namespace mk::server
