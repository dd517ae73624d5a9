// SqliteStore's users, tokens, web sessions and audit log (migration 6; store/access.h).
#include <nlohmann/json.hpp>

#include "store/audit_chain.h"
#include "store/sqlite_store.h"

namespace mk::store {

namespace {

Status CheckAudit(const AuditEntry& audit) {
  if (audit.actor.empty() || audit.action.empty()) {
    return InvalidArgument("an audit event needs an actor and an action");
  }
  if (!nlohmann::json::parse(audit.payload_json.empty() ? "{}" : audit.payload_json, nullptr,
                             false)
           .is_object()) {
    return InvalidArgument("an audit event's payload must be a JSON object");
  }
  return Status::Ok();
}

UserRecord UserFromRow(const SqliteCursor& row) {
  UserRecord user;
  user.id = row.Int(0);
  user.name = row.Text(1);
  user.role = row.Text(2);
  user.disabled = row.Int(3) != 0;
  user.created_at = row.Real(4);
  return user;
}

std::optional<double> OptionalReal(const SqliteCursor& row, int column) {
  if (row.IsNull(column)) return std::nullopt;
  return row.Real(column);
}

TokenRecord TokenFromRow(const SqliteCursor& row) {
  TokenRecord token;
  token.id = row.Int(0);
  token.user_id = row.Int(1);
  token.user_name = row.Text(2);
  token.lookup_id = row.Text(3);
  token.secret_hash = row.Text(4);
  token.label = row.Text(5);
  token.created_at = row.Real(6);
  token.expires_at = OptionalReal(row, 7);
  token.revoked_at = OptionalReal(row, 8);
  return token;
}

constexpr const char* kTokenColumns =
    "SELECT t.id, t.user_id, u.name, t.lookup_id, t.secret_hash, t.label, t.created_at, "
    "t.expires_at, t.revoked_at FROM api_tokens t JOIN users u ON u.id = t.user_id ";

void BindOptionalReal(SqliteCursor& cursor, int index, std::optional<double> value) {
  if (value) {
    cursor.Bind(index, *value);
  } else {
    cursor.BindNull(index);
  }
}

}  // namespace

Result<AuditRecord> SqliteStore::AppendAuditLocked(const AuditEntry& audit) {
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  AuditRecord event;
  event.prev_sha256 = std::string(kAuditGenesis);
  {
    MK_ASSIGN_OR_RETURN(auto last,
                        db_->Query("SELECT id, sha256 FROM audit_log ORDER BY id DESC LIMIT 1"));
    MK_ASSIGN_OR_RETURN(bool row, last->Step());
    if (row) {
      event.id = last->Int(0) + 1;
      event.prev_sha256 = last->Text(1);
    } else {
      // AUTOINCREMENT remembers deleted rows; the chain's first id must be what SQLite assigns.
      MK_ASSIGN_OR_RETURN(auto seq, db_->Query("SELECT seq FROM sqlite_sequence WHERE name = "
                                               "'audit_log'"));
      MK_ASSIGN_OR_RETURN(bool has_seq, seq->Step());
      event.id = (has_seq ? seq->Int(0) : 0) + 1;
    }
  }
  event.ts = Now();
  event.actor = audit.actor;
  event.action = audit.action;
  event.subject = audit.subject;
  event.payload_json = audit.payload_json.empty() ? "{}" : audit.payload_json;
  event.sha256 = AuditEventSha256(event);
  MK_ASSIGN_OR_RETURN(auto insert,
                      db_->Query("INSERT INTO audit_log (id, ts, actor, action, subject, "
                                 "payload_json, prev_sha256, sha256) VALUES (?, ?, ?, ?, ?, ?, "
                                 "?, ?)"));
  insert->Bind(1, event.id)
      .Bind(2, event.ts)
      .Bind(3, std::string_view(event.actor))
      .Bind(4, std::string_view(event.action))
      .Bind(5, std::string_view(event.subject))
      .Bind(6, std::string_view(event.payload_json))
      .Bind(7, std::string_view(event.prev_sha256))
      .Bind(8, std::string_view(event.sha256));
  MK_RETURN_IF_ERROR(insert->Run());
  return event;
}

Result<AuditRecord> SqliteStore::AppendAudit(const AuditEntry& audit) {
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  std::lock_guard lock(mu_);
  AuditRecord event;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(event, AppendAuditLocked(audit));
    return Status::Ok();
  }));
  return event;
}

Result<std::vector<AuditRecord>> SqliteStore::ListAudit(int64_t after_id, int64_t limit) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query("SELECT id, ts, actor, action, subject, payload_json, "
                                 "prev_sha256, sha256 FROM audit_log WHERE id > ? ORDER BY id "
                                 "LIMIT ?"));
  cursor->Bind(1, after_id).Bind(2, limit > 0 ? limit : int64_t{-1});
  std::vector<AuditRecord> events;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    AuditRecord e;
    e.id = cursor->Int(0);
    e.ts = cursor->Real(1);
    e.actor = cursor->Text(2);
    e.action = cursor->Text(3);
    e.subject = cursor->Text(4);
    e.payload_json = cursor->Text(5);
    e.prev_sha256 = cursor->Text(6);
    e.sha256 = cursor->Text(7);
    events.push_back(std::move(e));
  }
  return events;
}

Result<UserRecord> SqliteStore::CreateUser(std::string_view name, std::string_view role,
                                           const AuditEntry& audit) {
  if (name.empty() || role.empty()) return InvalidArgument("a user needs a name and a role");
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  std::lock_guard lock(mu_);
  UserRecord user;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto exists, db_->Query("SELECT 1 FROM users WHERE name = ?"));
    exists->Bind(1, name);
    MK_ASSIGN_OR_RETURN(bool taken, exists->Step());
    if (taken) return InvalidArgument("user '" + std::string(name) + "' already exists");
    MK_ASSIGN_OR_RETURN(auto insert, db_->Query("INSERT INTO users (name, role, disabled, "
                                                "created_at) VALUES (?, ?, 0, ?)"));
    user.name = name;
    user.role = role;
    user.created_at = Now();
    insert->Bind(1, name).Bind(2, role).Bind(3, user.created_at);
    MK_RETURN_IF_ERROR(insert->Run());
    user.id = db_->LastInsertId();
    return AppendAuditLocked(audit).status();
  }));
  return user;
}

Result<std::optional<UserRecord>> SqliteStore::FindUser(std::string_view name) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("SELECT id, name, role, disabled, created_at FROM "
                                              "users WHERE name = ?"));
  cursor->Bind(1, name);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return std::optional<UserRecord>();
  return std::optional<UserRecord>(UserFromRow(*cursor));
}

Result<std::optional<UserRecord>> SqliteStore::GetUser(int64_t id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("SELECT id, name, role, disabled, created_at FROM "
                                              "users WHERE id = ?"));
  cursor->Bind(1, id);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return std::optional<UserRecord>();
  return std::optional<UserRecord>(UserFromRow(*cursor));
}

Result<std::vector<UserRecord>> SqliteStore::ListUsers() {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("SELECT id, name, role, disabled, created_at FROM "
                                              "users ORDER BY id"));
  std::vector<UserRecord> users;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    users.push_back(UserFromRow(*cursor));
  }
  return users;
}

Status SqliteStore::SetUserRole(std::string_view name, std::string_view role,
                                const AuditEntry& audit) {
  if (role.empty()) return InvalidArgument("a role is empty");
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto update, db_->Query("UPDATE users SET role = ? WHERE name = ?"));
    update->Bind(1, role).Bind(2, name);
    MK_RETURN_IF_ERROR(update->Run());
    if (db_->Changes() == 0) return NotFound("no user '" + std::string(name) + "'");
    return AppendAuditLocked(audit).status();
  });
}

Status SqliteStore::SetUserDisabled(std::string_view name, bool disabled,
                                    const AuditEntry& audit) {
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto update, db_->Query("UPDATE users SET disabled = ? WHERE name = ?"));
    update->Bind(1, int64_t{disabled ? 1 : 0}).Bind(2, name);
    MK_RETURN_IF_ERROR(update->Run());
    if (db_->Changes() == 0) return NotFound("no user '" + std::string(name) + "'");
    if (disabled) {
      // Ends every browser session of the user now; tokens are refused by the disabled flag.
      MK_ASSIGN_OR_RETURN(auto drop, db_->Query("DELETE FROM web_sessions WHERE user_id = (SELECT "
                                                "id FROM users WHERE name = ?)"));
      drop->Bind(1, name);
      MK_RETURN_IF_ERROR(drop->Run());
    }
    return AppendAuditLocked(audit).status();
  });
}

Result<int64_t> SqliteStore::AddToken(const NewToken& token, const AuditEntry& audit) {
  if (token.lookup_id.empty() || token.secret_hash.empty()) {
    return InvalidArgument("a token needs a lookup id and a secret hash");
  }
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO api_tokens (user_id, lookup_id, secret_hash, "
                                   "label, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)"));
    insert->Bind(1, token.user_id)
        .Bind(2, std::string_view(token.lookup_id))
        .Bind(3, std::string_view(token.secret_hash))
        .Bind(4, std::string_view(token.label))
        .Bind(5, Now());
    BindOptionalReal(*insert, 6, token.expires_at);
    MK_RETURN_IF_ERROR(insert->Run());
    id = db_->LastInsertId();
    return AppendAuditLocked(audit).status();
  }));
  return id;
}

Result<std::optional<TokenRecord>> SqliteStore::FindToken(std::string_view lookup_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query(std::string(kTokenColumns) + "WHERE t.lookup_id = ?"));
  cursor->Bind(1, lookup_id);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return std::optional<TokenRecord>();
  return std::optional<TokenRecord>(TokenFromRow(*cursor));
}

Result<std::vector<TokenRecord>> SqliteStore::ListTokens() {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query(std::string(kTokenColumns) + "ORDER BY t.id"));
  std::vector<TokenRecord> tokens;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    tokens.push_back(TokenFromRow(*cursor));
  }
  return tokens;
}

Status SqliteStore::RevokeToken(std::string_view lookup_id, const AuditEntry& audit) {
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto find,
                        db_->Query("SELECT revoked_at FROM api_tokens WHERE lookup_id = ?"));
    find->Bind(1, lookup_id);
    MK_ASSIGN_OR_RETURN(bool row, find->Step());
    if (!row) return NotFound("no token '" + std::string(lookup_id) + "'");
    if (!find->IsNull(0)) return Status::Ok();
    MK_ASSIGN_OR_RETURN(auto update,
                        db_->Query("UPDATE api_tokens SET revoked_at = ? WHERE lookup_id = ?"));
    update->Bind(1, Now()).Bind(2, lookup_id);
    MK_RETURN_IF_ERROR(update->Run());
    return AppendAuditLocked(audit).status();
  });
}

Status SqliteStore::AddWebSession(const WebSessionRecord& session, const AuditEntry& audit) {
  if (session.id_sha256.size() != 64 || session.csrf_sha256.size() != 64) {
    return InvalidArgument("a web session is keyed by sha256 digests");
  }
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    // Expired sessions go when new ones come: the table never grows past the live ones.
    MK_ASSIGN_OR_RETURN(auto expire, db_->Query("DELETE FROM web_sessions WHERE expires_at < ?"));
    expire->Bind(1, Now());
    MK_RETURN_IF_ERROR(expire->Run());
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO web_sessions (id_sha256, user_id, csrf_sha256, "
                                   "created_at, expires_at) VALUES (?, ?, ?, ?, ?)"));
    insert->Bind(1, std::string_view(session.id_sha256))
        .Bind(2, session.user_id)
        .Bind(3, std::string_view(session.csrf_sha256))
        .Bind(4, Now())
        .Bind(5, session.expires_at);
    MK_RETURN_IF_ERROR(insert->Run());
    return AppendAuditLocked(audit).status();
  });
}

Result<std::optional<WebSessionRecord>> SqliteStore::FindWebSession(std::string_view id_sha256) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query("SELECT id_sha256, user_id, csrf_sha256, created_at, expires_at "
                                 "FROM web_sessions WHERE id_sha256 = ?"));
  cursor->Bind(1, id_sha256);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return std::optional<WebSessionRecord>();
  WebSessionRecord session;
  session.id_sha256 = cursor->Text(0);
  session.user_id = cursor->Int(1);
  session.csrf_sha256 = cursor->Text(2);
  session.created_at = cursor->Real(3);
  session.expires_at = cursor->Real(4);
  return std::optional<WebSessionRecord>(std::move(session));
}

Status SqliteStore::DeleteWebSession(std::string_view id_sha256, const AuditEntry& audit) {
  MK_RETURN_IF_ERROR(CheckAudit(audit));
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto drop, db_->Query("DELETE FROM web_sessions WHERE id_sha256 = ?"));
    drop->Bind(1, id_sha256);
    MK_RETURN_IF_ERROR(drop->Run());
    if (db_->Changes() == 0) return Status::Ok();
    return AppendAuditLocked(audit).status();
  });
}

}  // namespace mk::store
