// The records of the server's access control and audit trail (schema version 6): users with a
// role, API tokens, browser sessions, and the audit log, a hash chain of every state change.
//
// The store keeps these as data and enforces only what keeps the data whole (unique names, a
// token's owner exists, the audit chain is appended in the same transaction as the change it
// records). What a role may do, how a secret is hashed and what a token looks like are the
// server's business (src/server/auth.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mk::store {

struct UserRecord {
  int64_t id = 0;
  std::string name;
  std::string role;  // viewer | operator | approver | admin | worker (checked by the server)
  bool disabled = false;
  double created_at = 0;
};

// An API token. The secret is never stored: only `secret_hash` (argon2id, the server's choice).
// `lookup_id` is the public half of the token, the key it is found by.
struct NewToken {
  int64_t user_id = 0;
  std::string lookup_id;
  std::string secret_hash;
  std::string label;
  std::optional<double> expires_at;  // seconds since the epoch; none: never expires
};

struct TokenRecord {
  int64_t id = 0;
  int64_t user_id = 0;
  std::string user_name;
  std::string lookup_id;
  std::string secret_hash;
  std::string label;
  double created_at = 0;
  std::optional<double> expires_at;
  std::optional<double> revoked_at;
};

// A browser session after a login: the cookie's value is never stored, only its sha256
// (`id_sha256`), and so for the CSRF token bound to it.
struct WebSessionRecord {
  std::string id_sha256;
  int64_t user_id = 0;
  std::string csrf_sha256;
  double created_at = 0;
  double expires_at = 0;
};

// What a state change says about itself in the audit log.
struct AuditEntry {
  std::string actor;    // the user's name, or "system" / "cli" for the server's own changes
  std::string action;   // "user.created", "token.created", "login.succeeded", "session.started", ...
  std::string subject;  // what it acted on: "user:alice", "token:ab12...", "run:5"
  std::string payload_json = "{}";  // details (a JSON object); never a secret
};

// One audit event as stored. `sha256` covers every other field and `prev_sha256` (the previous
// event's sha256, or 64 zeros for the first), which makes the log a hash chain
// (store/audit_chain.h computes and checks it).
struct AuditRecord {
  int64_t id = 0;
  double ts = 0;
  std::string actor;
  std::string action;
  std::string subject;
  std::string payload_json;
  std::string prev_sha256;
  std::string sha256;
};

}  // namespace mk::store

#include <string_view>
#include <vector>

#include "support/status.h"

namespace mk::store {

// The access-control half of a store (Store::Access()). Every method that changes state appends
// its `audit` entry to the audit log in the same transaction: a change without its event, or an
// event without its change, cannot be stored.
class AccessStore {
 public:
  virtual ~AccessStore() = default;

  // A name already taken is kInvalidArgument.
  virtual Result<UserRecord> CreateUser(std::string_view name, std::string_view role,
                                        const AuditEntry& audit) = 0;
  virtual Result<std::optional<UserRecord>> FindUser(std::string_view name) = 0;
  virtual Result<std::optional<UserRecord>> GetUser(int64_t id) = 0;
  virtual Result<std::vector<UserRecord>> ListUsers() = 0;
  virtual Status SetUserRole(std::string_view name, std::string_view role,
                             const AuditEntry& audit) = 0;
  // A disabled user's tokens and sessions stop working at once.
  virtual Status SetUserDisabled(std::string_view name, bool disabled, const AuditEntry& audit) = 0;

  virtual Result<int64_t> AddToken(const NewToken& token, const AuditEntry& audit) = 0;
  virtual Result<std::optional<TokenRecord>> FindToken(std::string_view lookup_id) = 0;
  virtual Result<std::vector<TokenRecord>> ListTokens() = 0;
  // kNotFound when no such token; revoking a revoked token changes nothing (and is not audited).
  virtual Status RevokeToken(std::string_view lookup_id, const AuditEntry& audit) = 0;

  virtual Status AddWebSession(const WebSessionRecord& session, const AuditEntry& audit) = 0;
  virtual Result<std::optional<WebSessionRecord>> FindWebSession(std::string_view id_sha256) = 0;
  virtual Status DeleteWebSession(std::string_view id_sha256, const AuditEntry& audit) = 0;

  // An event that changes nothing else (a failed login, a verified export).
  virtual Result<AuditRecord> AppendAudit(const AuditEntry& audit) = 0;
  // Events with id > after_id, oldest first; limit <= 0: all.
  virtual Result<std::vector<AuditRecord>> ListAudit(int64_t after_id, int64_t limit) = 0;
};

}  // namespace mk::store
