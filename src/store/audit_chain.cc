#include "store/audit_chain.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "support/sha256.h"

namespace mk::store {

namespace {

// A fixed text for the time: a double printed with a fixed precision hashes the same on every
// machine, where a JSON number's shortest form might not survive another serializer.
std::string TsText(double ts) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6f", ts);
  return buffer;
}

std::string Hex(const unsigned char* bytes, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return out;
}

AuditVerdict Bad(AuditVerdict verdict, int64_t id, std::string problem) {
  verdict.ok = false;
  verdict.first_bad_id = id;
  verdict.problem = std::move(problem);
  return verdict;
}

}  // namespace

std::string AuditEventSha256(const AuditRecord& e) {
  const nlohmann::json fields = {e.id,      TsText(e.ts),   e.actor,      e.action,
                                 e.subject, e.payload_json, e.prev_sha256};
  return Sha256Hex(fields.dump());
}

std::string AuditHmac(std::string_view key, int64_t id, std::string_view sha256) {
  const std::string message = std::to_string(id) + ":" + std::string(sha256);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  return Hex(digest, length);
}

std::string AuditJsonLine(const AuditRecord& e, std::string_view hmac_key) {
  nlohmann::json payload = nlohmann::json::parse(e.payload_json, nullptr, false);
  if (payload.is_discarded()) payload = e.payload_json;
  const nlohmann::json line = {{"id", e.id},
                               {"ts", e.ts},
                               {"actor", e.actor},
                               {"action", e.action},
                               {"subject", e.subject},
                               {"payload", payload},
                               {"prev_sha256", e.prev_sha256},
                               {"sha256", e.sha256},
                               {"hmac", AuditHmac(hmac_key, e.id, e.sha256)}};
  return line.dump();
}

AuditVerdict VerifyAudit(const std::vector<AuditRecord>& chain, std::string_view jsonl_text,
                         std::string_view hmac_key) {
  AuditVerdict verdict;
  std::map<int64_t, const AuditRecord*> by_id;
  std::string_view prev = kAuditGenesis;
  int64_t prev_id = 0;
  for (const AuditRecord& e : chain) {
    if (AuditEventSha256(e) != e.sha256) {
      return Bad(verdict, e.id,
                 "event " + std::to_string(e.id) + " (" + e.action +
                     ") was edited: its fields no longer hash to its sha256");
    }
    if (e.id <= prev_id || e.prev_sha256 != prev) {
      return Bad(verdict, e.id,
                 "event " + std::to_string(e.id) + " does not follow event " +
                     std::to_string(prev_id) +
                     ": an event between them was deleted, or the events were reordered or "
                     "rewritten");
    }
    prev = e.sha256;
    prev_id = e.id;
    by_id[e.id] = &e;
    ++verdict.events;
  }
  int line_number = 0;
  size_t start = 0;
  while (start < jsonl_text.size()) {
    size_t end = jsonl_text.find('\n', start);
    if (end == std::string_view::npos) end = jsonl_text.size();
    const std::string_view text = jsonl_text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (text.empty()) continue;
    const std::string where = "audit JSON-lines line " + std::to_string(line_number);
    const nlohmann::json line = nlohmann::json::parse(text, nullptr, false);
    if (!line.is_object() || !line.contains("id") || !line["id"].is_number_integer() ||
        !line.contains("sha256") || !line["sha256"].is_string() || !line.contains("hmac") ||
        !line["hmac"].is_string()) {
      return Bad(verdict, 0, where + " is not an audit event (id, sha256 and hmac)");
    }
    const int64_t id = line["id"].get<int64_t>();
    const std::string sha = line["sha256"].get<std::string>();
    if (AuditHmac(hmac_key, id, sha) != line["hmac"].get<std::string>()) {
      return Bad(verdict, 0,
                 where + " has an HMAC that does not check: the file was edited, or the key is "
                         "not the server's");
    }
    ++verdict.anchored;
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      return Bad(verdict, id,
                 "event " + std::to_string(id) + " (anchored at " + where +
                     ") is missing from the database: it was deleted or the log was truncated");
    }
    if (it->second->sha256 != sha) {
      return Bad(verdict, id,
                 "event " + std::to_string(id) + " differs from its anchor at " + where +
                     ": the log was rewritten");
    }
  }
  return verdict;
}

}  // namespace mk::store
