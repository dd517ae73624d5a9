// The audit chain and its anchor: every kind of tampering the docs promise to see is seen, and
// the first bad event is the one named.
#include "store/audit_chain.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mk::store {
namespace {

std::vector<AuditRecord> Chain(int n) {
  std::vector<AuditRecord> chain;
  std::string prev(kAuditGenesis);
  for (int i = 1; i <= n; ++i) {
    AuditRecord e;
    e.id = i;
    e.ts = 1700000000.0 + i;
    e.actor = "alice";
    e.action = "proposal.decided";
    e.subject = "run:" + std::to_string(i);
    e.payload_json = R"({"decision":"approve"})";
    e.prev_sha256 = prev;
    e.sha256 = AuditEventSha256(e);
    prev = e.sha256;
    chain.push_back(e);
  }
  return chain;
}

std::string Lines(const std::vector<AuditRecord>& chain, const std::string& key) {
  std::string text;
  for (const auto& e : chain) text += AuditJsonLine(e, key) + "\n";
  return text;
}

TEST(AuditChain, AnIntactChainWithItsAnchorsVerifies) {
  const auto chain = Chain(6);
  const AuditVerdict verdict = VerifyAudit(chain, Lines(chain, "key"), "key");
  EXPECT_TRUE(verdict.ok) << verdict.problem;
  EXPECT_EQ(verdict.events, 6);
  EXPECT_EQ(verdict.anchored, 6);
}

TEST(AuditChain, AnEditedEventIsNamed) {
  auto chain = Chain(6);
  chain[3].payload_json = R"({"decision":"reject"})";
  const AuditVerdict verdict = VerifyAudit(chain, "", "key");
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.first_bad_id, 4);
  EXPECT_NE(verdict.problem.find("edited"), std::string::npos);
}

TEST(AuditChain, AnEditWhoseHashWasRecomputedBreaksTheNextLink) {
  auto chain = Chain(6);
  chain[3].actor = "mallory";
  chain[3].sha256 = AuditEventSha256(chain[3]);
  const AuditVerdict verdict = VerifyAudit(chain, "", "key");
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.first_bad_id, 5);
}

TEST(AuditChain, ADeletedEventIsSeenAtTheNextOne) {
  auto chain = Chain(6);
  chain.erase(chain.begin() + 2);
  const AuditVerdict verdict = VerifyAudit(chain, "", "key");
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.first_bad_id, 4);
  EXPECT_NE(verdict.problem.find("deleted"), std::string::npos);
}

TEST(AuditChain, ReorderedEventsAreSeen) {
  auto chain = Chain(6);
  std::swap(chain[1], chain[2]);
  EXPECT_FALSE(VerifyAudit(chain, "", "key").ok);
}

TEST(AuditChain, ATruncatedTailIsSeenOnlyThroughTheAnchor) {
  const auto full = Chain(6);
  const std::string anchors = Lines(full, "key");
  std::vector<AuditRecord> cut(full.begin(), full.begin() + 4);
  EXPECT_TRUE(VerifyAudit(cut, "", "key").ok);  // the chain alone cannot tell
  const AuditVerdict verdict = VerifyAudit(cut, anchors, "key");
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.first_bad_id, 5);
  EXPECT_NE(verdict.problem.find("truncated"), std::string::npos);
}

TEST(AuditChain, AFullRewriteIsSeenThroughTheAnchor) {
  const auto original = Chain(4);
  auto rewritten = original;
  rewritten[0].actor = "mallory";
  std::string prev(kAuditGenesis);
  for (auto& e : rewritten) {  // every hash recomputed: a consistent chain
    e.prev_sha256 = prev;
    e.sha256 = AuditEventSha256(e);
    prev = e.sha256;
  }
  EXPECT_TRUE(VerifyAudit(rewritten, "", "key").ok);
  const AuditVerdict verdict = VerifyAudit(rewritten, Lines(original, "key"), "key");
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.first_bad_id, 1);
  EXPECT_NE(verdict.problem.find("rewritten"), std::string::npos);
}

TEST(AuditChain, AnAnchorLineForgedWithoutTheKeyIsRefused) {
  const auto chain = Chain(3);
  std::string forged = Lines(chain, "not-the-key");
  const AuditVerdict verdict = VerifyAudit(chain, forged, "key");
  EXPECT_FALSE(verdict.ok);
  EXPECT_NE(verdict.problem.find("line 1"), std::string::npos);
  EXPECT_NE(verdict.problem.find("HMAC"), std::string::npos);
  EXPECT_FALSE(VerifyAudit(chain, "not json\n", "key").ok);
}

TEST(AuditChain, TheHashCoversEveryField) {
  const auto chain = Chain(1);
  for (int field = 0; field < 6; ++field) {
    AuditRecord e = chain[0];
    switch (field) {
      case 0: e.id += 1; break;
      case 1: e.ts += 1; break;
      case 2: e.actor += "x"; break;
      case 3: e.action += "x"; break;
      case 4: e.subject += "x"; break;
      case 5: e.prev_sha256[0] = '1'; break;
    }
    EXPECT_NE(AuditEventSha256(e), chain[0].sha256) << "field " << field;
  }
}

}  // namespace
}  // namespace mk::store
