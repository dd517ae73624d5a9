// Tokens, logins and the failure limit, against a real store.
#include "server/auth.h"

#include <gtest/gtest.h>

#include "server/secrets.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::server {
namespace {

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::SqliteStore::Open((dir_.path() / "db").string());
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
    ASSERT_TRUE(store_->Access()->CreateUser("alice", "approver", {"t", "user.created", "", "{}"}).ok());
    AuthOptions options;
    options.clock = [this] { return now_; };
    options.max_failures = 3;
    options.failure_window_s = 60;
    options.trusted_proxies = {"10.0.0.7"};
    options.proxy_header = "X-Forwarded-Email";
    auth_ = std::make_unique<Authenticator>(*store_->Access(), options);
  }

  store::testing::TempDir dir_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<Authenticator> auth_;
  double now_ = 1.8e9;
};

TEST_F(AuthTest, AMintedTokenVerifiesAndOnlyItsHashIsStored) {
  auto minted = auth_->MintToken("alice", "laptop", std::nullopt, "admin");
  ASSERT_TRUE(minted.ok()) << minted.status().ToString();
  EXPECT_EQ(minted->token.rfind("mkt_" + minted->lookup_id + "_", 0), 0u);
  AuthOutcome outcome = auth_->VerifyBearer(minted->token, "127.0.0.1");
  ASSERT_TRUE(outcome.principal) << outcome.reason;
  EXPECT_EQ(outcome.principal->user, "alice");
  EXPECT_EQ(outcome.principal->role, Role::kApprover);
  auto stored = store_->Access()->FindToken(minted->lookup_id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  const std::string secret = minted->token.substr(4 + 12 + 1);
  EXPECT_EQ((*stored)->secret_hash.find(secret), std::string::npos);
  EXPECT_EQ((*stored)->secret_hash.rfind("$argon2id$", 0), 0u);
  // A second check (the cached path) still refuses a wrong secret with the same lookup id.
  std::string forged = minted->token;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(auth_->VerifyBearer(forged, "127.0.0.1").principal);
  EXPECT_TRUE(auth_->VerifyBearer(minted->token, "127.0.0.1").principal);
}

TEST_F(AuthTest, RevokedExpiredAndDisabledAreRefused) {
  auto forever = auth_->MintToken("alice", "", std::nullopt, "admin");
  auto day = auth_->MintToken("alice", "", 86400.0, "admin");
  ASSERT_TRUE(forever.ok() && day.ok());
  EXPECT_TRUE(auth_->VerifyBearer(day->token, "a").principal);
  now_ += 86401;
  AuthOutcome expired = auth_->VerifyBearer(day->token, "a");
  EXPECT_FALSE(expired.principal);
  EXPECT_EQ(expired.reason, "token expired");
  ASSERT_TRUE(store_->Access()->RevokeToken(forever->lookup_id, {"admin", "token.revoked", "", "{}"}).ok());
  EXPECT_EQ(auth_->VerifyBearer(forever->token, "b").reason, "token revoked");
  auto fresh = auth_->MintToken("alice", "", std::nullopt, "admin");
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(store_->Access()->SetUserDisabled("alice", true, {"admin", "user.disabled", "", "{}"}).ok());
  EXPECT_EQ(auth_->VerifyBearer(fresh->token, "c").reason, "user disabled");
  EXPECT_FALSE(auth_->MintToken("nobody", "", std::nullopt, "admin").ok());
}

TEST_F(AuthTest, GarbageTokensAreRefusedWithoutAStoreError) {
  for (const char* junk : {"", "mkt_", "mkt_zzzzzzzzzzzz_abc", "mkt_0123456789ab", "Bearer x",
                           "mkt_0123456789ab_nothere"}) {
    AuthOutcome outcome = auth_->VerifyBearer(junk, std::string("10.1.1.") + junk);
    EXPECT_FALSE(outcome.principal) << junk;
    EXPECT_EQ(outcome.http_status, 401) << junk;
  }
}

TEST_F(AuthTest, RepeatedFailuresAreLimitedPerAddressUntilTheWindowPasses) {
  auto minted = auth_->MintToken("alice", "", std::nullopt, "admin");
  ASSERT_TRUE(minted.ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(auth_->VerifyBearer("mkt_bad", "9.9.9.9").http_status, 401);
  // Now even the right token is refused from that address, and not from another.
  EXPECT_EQ(auth_->VerifyBearer(minted->token, "9.9.9.9").http_status, 429);
  EXPECT_TRUE(auth_->VerifyBearer(minted->token, "8.8.8.8").principal);
  now_ += 61;
  EXPECT_TRUE(auth_->VerifyBearer(minted->token, "9.9.9.9").principal);
}

TEST_F(AuthTest, LoginIssuesAFreshSessionEachTimeAndLogoutEndsIt) {
  auto minted = auth_->MintToken("alice", "", std::nullopt, "admin");
  ASSERT_TRUE(minted.ok());
  int status = 0;
  auto first = auth_->LogIn("alice", minted->token, "127.0.0.1", &status);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(status, 200);
  auto second = auth_->LogIn("alice", minted->token, "127.0.0.1", &status);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->cookie_value, second->cookie_value);
  AuthOutcome by_cookie = auth_->VerifyCookie(first->cookie_value);
  ASSERT_TRUE(by_cookie.principal);
  EXPECT_EQ(by_cookie.principal->via, Principal::Via::kCookie);
  EXPECT_TRUE(Authenticator::CsrfMatches(*by_cookie.principal, first->csrf_token));
  EXPECT_FALSE(Authenticator::CsrfMatches(*by_cookie.principal, second->csrf_token));
  ASSERT_TRUE(auth_->LogOut(first->cookie_value, "alice").ok());
  EXPECT_FALSE(auth_->VerifyCookie(first->cookie_value).principal);
  EXPECT_TRUE(auth_->VerifyCookie(second->cookie_value).principal);
  EXPECT_FALSE(auth_->VerifyCookie("a-cookie-the-server-never-issued").principal);
  now_ += 13 * 3600;  // past the session's lifetime
  EXPECT_FALSE(auth_->VerifyCookie(second->cookie_value).principal);
}

TEST_F(AuthTest, AWrongLoginIsAuditedWithoutTheTokenAndLimited) {
  auto minted = auth_->MintToken("alice", "", std::nullopt, "admin");
  ASSERT_TRUE(minted.ok());
  int status = 0;
  // Someone else's valid token does not log in as alice.
  ASSERT_TRUE(store_->Access()->CreateUser("bob", "viewer", {"t", "user.created", "", "{}"}).ok());
  auto bobs = auth_->MintToken("bob", "", std::nullopt, "admin");
  ASSERT_TRUE(bobs.ok());
  EXPECT_FALSE(auth_->LogIn("alice", bobs->token, "1.2.3.4", &status).ok());
  EXPECT_EQ(status, 401);
  EXPECT_FALSE(auth_->LogIn("alice", "mkt_000000000000_guess", "1.2.3.5", &status).ok());
  EXPECT_FALSE(auth_->LogIn("alice", "mkt_000000000000_guess2", "1.2.3.6", &status).ok());
  // Three failures for the name alice, from three addresses: the name is locked for a while.
  EXPECT_FALSE(auth_->LogIn("alice", minted->token, "1.2.3.7", &status).ok());
  EXPECT_EQ(status, 429);
  auto events = store_->Access()->ListAudit(0, 0);
  ASSERT_TRUE(events.ok());
  int failed = 0;
  for (const auto& e : *events) {
    if (e.action == "login.failed") ++failed;
    EXPECT_EQ(e.payload_json.find("guess"), std::string::npos);
    EXPECT_EQ(e.payload_json.find(bobs->token), std::string::npos);
  }
  EXPECT_EQ(failed, 3);
}

TEST_F(AuthTest, AProxyHeaderCountsOnlyFromATrustedAddress) {
  EXPECT_FALSE(auth_->VerifyProxy("10.0.0.8", "alice").has_value());
  auto trusted = auth_->VerifyProxy("10.0.0.7", "alice");
  ASSERT_TRUE(trusted.has_value());
  ASSERT_TRUE(trusted->principal);
  EXPECT_EQ(trusted->principal->via, Principal::Via::kProxy);
  auto unknown = auth_->VerifyProxy("10.0.0.7", "mallory");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_FALSE(unknown->principal);
}

TEST(Secrets, RandomValuesDifferAndHashesVerifyOnlyTheirSecret) {
  ASSERT_TRUE(InitSecrets().ok());
  EXPECT_NE(RandomText(32), RandomText(32));
  EXPECT_EQ(RandomHex(6).size(), 12u);
  auto hash = HashSecret("s3cret");
  ASSERT_TRUE(hash.ok());
  EXPECT_TRUE(VerifySecret(*hash, "s3cret"));
  EXPECT_FALSE(VerifySecret(*hash, "s3creT"));
  EXPECT_FALSE(VerifySecret("not a hash", "s3cret"));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
}

}  // namespace
}  // namespace mk::server
