// `maxkernel audit verify|export`: the audit log's hash chain and its HMAC anchor
// (store/audit_chain.h, docs/SERVER.md).
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "server/audit_log.h"
#include "store/audit_chain.h"
#include "store/data_dir.h"
#include "store/sqlite_store.h"
#include "support/regular_file.h"

namespace mk::cli {
namespace {

struct AuditFlags {
  std::string db, audit_key, audit_log, since;
  bool json = false;
};

struct Opened {
  std::unique_ptr<store::SqliteStore> db;
  std::string key;
  std::string log_path;
};

Result<Opened> Open(const AuditFlags& f) {
  MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(f.db));
  if (!std::filesystem::exists(dir.db_path)) {
    return NotFound("no database at " + dir.db_path.string());
  }
  Opened opened;
  MK_ASSIGN_OR_RETURN(opened.db, store::SqliteStore::Open(dir.db_path.string()));
  const std::string key_path = f.audit_key.empty() ? dir.db_path.string() + ".audit.key" : f.audit_key;
  if (!std::filesystem::exists(key_path)) {
    return NotFound("no audit key at " + key_path + " (the server makes it on its first start; "
                    "pass --audit-key)");
  }
  MK_ASSIGN_OR_RETURN(opened.key, server::LoadOrCreateAuditKey(key_path));
  opened.log_path = f.audit_log.empty() ? dir.db_path.string() + ".audit.jsonl" : f.audit_log;
  return opened;
}

// --since: an event id, or a UTC date "YYYY-MM-DD" / time "YYYY-MM-DDTHH:MM:SSZ".
Result<std::pair<int64_t, double>> ParseSince(const std::string& text) {
  if (text.empty()) return std::make_pair(int64_t{0}, 0.0);
  if (text.find_first_not_of("0123456789") == std::string::npos && text.size() < 19) {
    return std::make_pair(static_cast<int64_t>(std::stoll(text)) - 1, 0.0);
  }
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') {
    tm = {};
    end = strptime(text.c_str(), "%Y-%m-%d", &tm);
  }
  if (end == nullptr || *end != '\0') {
    return InvalidArgument("--since '" + text +
                           "' is neither an event id nor a UTC time (2026-12-07 or "
                           "2026-12-07T20:00:00Z)");
  }
  return std::make_pair(int64_t{0}, static_cast<double>(timegm(&tm)));
}

Result<int> Verify(const AuditFlags& f) {
  MK_ASSIGN_OR_RETURN(Opened opened, Open(f));
  MK_ASSIGN_OR_RETURN(auto log, server::AuditLog::Open(*opened.db->Access(), opened.log_path, opened.key));
  MK_ASSIGN_OR_RETURN(store::AuditVerdict verdict, log->Verify());
  if (f.json) {
    std::cout << nlohmann::json{{"ok", verdict.ok},
                                {"events", verdict.events},
                                {"anchored", verdict.anchored},
                                {"first_bad_id", verdict.first_bad_id},
                                {"problem", verdict.problem}}
                     .dump()
              << "\n";
  } else if (verdict.ok) {
    std::cout << "audit log intact: " << verdict.events << " events, " << verdict.anchored
              << " anchored in " << opened.log_path << "\n";
  }
  if (!verdict.ok) {
    if (!f.json) return ReportFailure("audit log tampered: " + verdict.problem);
    return kExitFailed;
  }
  return kExitOk;
}

Result<int> Export(const AuditFlags& f) {
  MK_ASSIGN_OR_RETURN(auto since, ParseSince(f.since));
  MK_ASSIGN_OR_RETURN(Opened opened, Open(f));
  MK_ASSIGN_OR_RETURN(auto events, opened.db->Access()->ListAudit(std::max<int64_t>(0, since.first), 0));
  for (const auto& e : events) {
    if (e.ts < since.second) continue;
    std::cout << store::AuditJsonLine(e, opened.key) << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterAuditCommands(CLI::App& app, CommandResult& result) {
  CLI::App* audit = app.add_subcommand("audit", "The server's audit log (a hash chain anchored by an HMAC'd JSON-lines file)");
  audit->require_subcommand(1);
  for (const char* name : {"verify", "export"}) {
    auto f = std::make_shared<AuditFlags>();
    const bool verify = std::string(name) == "verify";
    CLI::App* sub = audit->add_subcommand(
        name, verify ? "Check the chain and its anchor; name the first edited, deleted or reordered "
                       "event (exit 1 when tampered)"
                     : "Print the events as JSON lines (with their HMAC), oldest first");
    sub->add_option("--db", f->db, "Database file (default DATA_DIR/maxkernel.db)");
    sub->add_option("--audit-key", f->audit_key, "The server's HMAC key file (default DB.audit.key)");
    if (verify) {
      sub->add_option("--audit-log", f->audit_log, "The anchor file (default DB.audit.jsonl)");
      sub->add_flag("--json", f->json, "Print the verdict as JSON");
      sub->callback([f, &result] { RunCommand(result, [&] { return Verify(*f); }); });
    } else {
      sub->add_option("--since", f->since, "From this event id, or this UTC time (2026-12-07, 2026-12-07T20:00:00Z)");
      sub->callback([f, &result] { RunCommand(result, [&] { return Export(*f); }); });
    }
  }
}

}  // namespace mk::cli
