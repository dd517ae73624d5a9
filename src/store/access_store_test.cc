// SqliteStore's users, tokens, web sessions and audit log: each change lands with its audit
// event or not at all, and the chain the store writes verifies.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "store/audit_chain.h"
#include "store/sqlite_db.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::store {
namespace {

AuditEntry Audit(std::string action, std::string subject = "") {
  return AuditEntry{"tester", std::move(action), std::move(subject), "{}"};
}

class AccessStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteStore::Open((dir_.path() / "db").string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    access_ = store_->Access();
    ASSERT_NE(access_, nullptr);
  }
  std::vector<AuditRecord> Events() {
    auto events = access_->ListAudit(0, 0);
    EXPECT_TRUE(events.ok());
    return events.ok() ? *events : std::vector<AuditRecord>{};
  }

  testing::TempDir dir_;
  std::unique_ptr<SqliteStore> store_;
  AccessStore* access_ = nullptr;
};

TEST_F(AccessStoreTest, UsersAreUniqueAndEveryChangeIsAudited) {
  auto alice = access_->CreateUser("alice", "admin", Audit("user.created", "user:alice"));
  ASSERT_TRUE(alice.ok()) << alice.status().ToString();
  EXPECT_GT(alice->id, 0);
  auto again = access_->CreateUser("alice", "viewer", Audit("user.created", "user:alice"));
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
  ASSERT_TRUE(access_->SetUserRole("alice", "viewer", Audit("user.role")).ok());
  EXPECT_EQ(access_->SetUserRole("bob", "viewer", Audit("user.role")).code(),
            ErrorCode::kNotFound);
  auto found = access_->FindUser("alice");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->role, "viewer");
  // Two changes stored, two events: the refused ones left nothing behind.
  const auto events = Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].action, "user.created");
  EXPECT_EQ(events[1].action, "user.role");
  EXPECT_TRUE(VerifyAudit(events, "", "key").ok);
}

TEST_F(AccessStoreTest, TokensAreFoundByLookupIdAndRevokedOnce) {
  auto user = access_->CreateUser("op", "operator", Audit("user.created"));
  ASSERT_TRUE(user.ok());
  NewToken token{user->id, "abc123", "hash-not-secret", "ci", 2e9};
  ASSERT_TRUE(access_->AddToken(token, Audit("token.created")).ok());
  auto found = access_->FindToken("abc123");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->user_name, "op");
  EXPECT_EQ((*found)->secret_hash, "hash-not-secret");
  EXPECT_FALSE((*found)->revoked_at.has_value());
  ASSERT_TRUE(access_->RevokeToken("abc123", Audit("token.revoked")).ok());
  ASSERT_TRUE(access_->RevokeToken("abc123", Audit("token.revoked")).ok());
  EXPECT_EQ(access_->RevokeToken("nope", Audit("token.revoked")).code(), ErrorCode::kNotFound);
  found = access_->FindToken("abc123");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_TRUE((*found)->revoked_at.has_value());
  EXPECT_EQ(Events().size(), 3u);  // created user, created token, revoked once
}

TEST_F(AccessStoreTest, DisablingAUserEndsItsWebSessions) {
  auto user = access_->CreateUser("ap", "approver", Audit("user.created"));
  ASSERT_TRUE(user.ok());
  WebSessionRecord session{std::string(64, 'a'), user->id, std::string(64, 'b'), 0, 4e9};
  ASSERT_TRUE(access_->AddWebSession(session, Audit("login.succeeded")).ok());
  ASSERT_TRUE(access_->FindWebSession(std::string(64, 'a'))->has_value());
  ASSERT_TRUE(access_->SetUserDisabled("ap", true, Audit("user.disabled")).ok());
  EXPECT_FALSE(access_->FindWebSession(std::string(64, 'a'))->has_value());
}

TEST_F(AccessStoreTest, ExpiredWebSessionsArePurgedByTheNextLogin) {
  auto user = access_->CreateUser("v", "viewer", Audit("user.created"));
  ASSERT_TRUE(user.ok());
  WebSessionRecord old{std::string(64, '1'), user->id, std::string(64, '2'), 0, 1.0};
  ASSERT_TRUE(access_->AddWebSession(old, Audit("login.succeeded")).ok());
  WebSessionRecord fresh{std::string(64, '3'), user->id, std::string(64, '4'), 0, 4e9};
  ASSERT_TRUE(access_->AddWebSession(fresh, Audit("login.succeeded")).ok());
  EXPECT_FALSE(access_->FindWebSession(std::string(64, '1'))->has_value());
  EXPECT_TRUE(access_->FindWebSession(std::string(64, '3'))->has_value());
}

TEST_F(AccessStoreTest, TheChainSurvivesReopeningAndDetectsARowEditedInTheFile) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(access_->AppendAudit(Audit("note", "n:" + std::to_string(i))).ok());
  }
  store_.reset();
  auto reopened = SqliteStore::Open((dir_.path() / "db").string());
  ASSERT_TRUE(reopened.ok());
  auto events = (*reopened)->Access()->ListAudit(0, 0);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 5u);
  EXPECT_TRUE(VerifyAudit(*events, "", "k").ok);
  EXPECT_EQ((*events)[0].prev_sha256, kAuditGenesis);
  EXPECT_EQ((*events)[1].prev_sha256, (*events)[0].sha256);
  reopened->reset();

  // Someone with the file edits one event's subject behind the server's back.
  auto db = SqliteDb::Open((dir_.path() / "db").string(), false, 1000);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("UPDATE audit_log SET subject = 'n:x' WHERE id = 3").ok());
  db->reset();
  auto tampered = SqliteStore::Open((dir_.path() / "db").string());
  ASSERT_TRUE(tampered.ok());
  events = (*tampered)->Access()->ListAudit(0, 0);
  ASSERT_TRUE(events.ok());
  const AuditVerdict verdict = VerifyAudit(*events, "", "k");
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.first_bad_id, 3);
}

TEST_F(AccessStoreTest, BadInputIsRefusedWithoutAnEvent) {
  EXPECT_FALSE(access_->CreateUser("", "admin", Audit("user.created")).ok());
  EXPECT_FALSE(access_->AppendAudit(AuditEntry{"", "x", "", "{}"}).ok());
  EXPECT_FALSE(access_->AppendAudit(AuditEntry{"a", "x", "", "[1]"}).ok());
  EXPECT_FALSE(access_->AddToken(NewToken{1, "", "h", "", std::nullopt}, Audit("t")).ok());
  // A token of a user that does not exist breaks the foreign key.
  EXPECT_FALSE(access_->AddToken(NewToken{99, "id", "h", "", std::nullopt}, Audit("t")).ok());
  EXPECT_TRUE(Events().empty());
}

}  // namespace
}  // namespace mk::store
