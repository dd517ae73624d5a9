// The audit log's hash chain and its outside anchor.
//
// - Each event's sha256 covers its fields and the previous event's sha256, so an edited,
//   deleted or reordered event breaks every link after it.
// - A chain alone cannot see its tail cut off, nor a full rewrite by someone who recomputes
//   every hash. So the server also writes each event as a JSON line with an HMAC of (id, sha256)
//   under a key kept outside the database (the anchor). `VerifyAudit` checks the chain and then
//   that every anchored line is in the chain unchanged, and that the chain reaches the newest
//   anchored event.
// What stays undetectable is in docs/SERVER.md ("What the audit log cannot see").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "store/access.h"
#include "support/status.h"

namespace mk::store {

inline constexpr std::string_view kAuditGenesis =
    "0000000000000000000000000000000000000000000000000000000000000000";

// The sha256 of an event: over a canonical JSON array of its fields and prev_sha256.
std::string AuditEventSha256(const AuditRecord& event);

// The anchor line written for an event: {"id","ts","actor","action","subject","payload",
// "prev_sha256","sha256","hmac"} where hmac = HMAC-SHA256(key, "<id>:<sha256>") in hex.
std::string AuditJsonLine(const AuditRecord& event, std::string_view hmac_key);
std::string AuditHmac(std::string_view hmac_key, int64_t id, std::string_view sha256);

struct AuditVerdict {
  bool ok = true;
  int64_t events = 0;          // events in the chain
  int64_t anchored = 0;        // JSON lines whose HMAC checked
  int64_t first_bad_id = 0;    // the first event found wrong (0 when ok, or not an event's fault)
  std::string problem;         // what is wrong, for a person
};

// Checks `chain` (oldest first, as stored) and, when `jsonl_text` is not empty, the anchor
// lines in it (one JSON object per line) against `hmac_key`.
AuditVerdict VerifyAudit(const std::vector<AuditRecord>& chain, std::string_view jsonl_text,
                         std::string_view hmac_key);

}  // namespace mk::store
