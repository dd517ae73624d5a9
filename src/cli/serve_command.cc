// `maxkernel serve`: the HTTP API and /metrics over the store (docs/SERVER.md), and
// `--init-admin NAME`, which makes the first admin and prints their one-time token.
// SIGTERM and SIGINT stop it cleanly: requests in flight finish, nothing half-written remains.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "server/audit_log.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "server/serve_config.h"
#include "store/artifact_store.h"
#include "store/data_dir.h"
#include "store/sqlite_store.h"

namespace mk::cli {
namespace {

struct ServeFlags {
  std::string config, listen, db, artifacts, audit_key, audit_log, init_admin, proxy_header;
  std::vector<std::string> trusted_proxies;
  int threads = 0;
  bool insecure_cookies = false;
};

// The settings in force: the config file's, with the flags on top.
Result<server::ServeConfig> Settings(const ServeFlags& f) {
  server::ServeConfig c;
  if (!f.config.empty()) {
    MK_RETURN_IF_ERROR(CheckNotADirectory(f.config, "a config file"));
    MK_ASSIGN_OR_RETURN(c, server::LoadServeConfig(f.config));
  }
  auto set = [](std::optional<std::string>& slot, const std::string& flag) {
    if (!flag.empty()) slot = flag;
  };
  set(c.listen, f.listen);
  set(c.db, f.db);
  set(c.artifacts, f.artifacts);
  set(c.audit_key, f.audit_key);
  set(c.audit_log, f.audit_log);
  set(c.proxy_header, f.proxy_header);
  if (f.threads > 0) c.threads = f.threads;
  if (!f.trusted_proxies.empty()) c.trusted_proxies = f.trusted_proxies;
  if (f.insecure_cookies) c.secure_cookies = false;
  return c;
}

Result<int> InitAdmin(store::SqliteStore& db, const std::string& name) {
  MK_ASSIGN_OR_RETURN(auto users, db.Access()->ListUsers());
  for (const auto& user : users) {
    if (user.role == "admin") {
      return InvalidArgument("an admin exists already ('" + user.name +
                             "'): --init-admin makes only the first; admins make the others "
                             "through the API");
    }
  }
  if (name.empty() || name.size() > 64 ||
      name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@+-") !=
          std::string::npos) {
    return InvalidArgument("a user name is 1-64 of A-Z a-z 0-9 . _ @ + -");
  }
  MK_RETURN_IF_ERROR(db.Access()
                         ->CreateUser(name, "admin",
                                      store::AuditEntry{"cli", "user.created", "user:" + name,
                                                        R"({"role":"admin","via":"--init-admin"})"})
                         .status());
  server::Authenticator auth(*db.Access(), {});
  MK_ASSIGN_OR_RETURN(auto minted, auth.MintToken(name, "init-admin", std::nullopt, "cli"));
  std::cout << minted.token << "\n";
  std::cerr << "maxkernel serve: made admin '" << name
            << "'; the token above is shown once: keep it secret (log in with it, or send it as "
               "Authorization: Bearer)\n";
  return kExitOk;
}

Result<int> Serve(const ServeFlags& flags) {
  MK_ASSIGN_OR_RETURN(server::ServeConfig config, Settings(flags));
  MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(config.db.value_or("")));
  MK_RETURN_IF_ERROR(store::EnsureDataDir(dir));
  MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(dir.db_path.string()));
  if (!flags.init_admin.empty()) return InitAdmin(*db, flags.init_admin);

  MK_ASSIGN_OR_RETURN(server::ListenAddress address,
                      server::ParseListen(config.listen.value_or("127.0.0.1:8080")));
  const std::filesystem::path root = config.artifacts ? std::filesystem::path(*config.artifacts)
                                                      : dir.root;
  store::ArtifactStore artifacts(root);
  // Beside the database by default: each store has its own chain, so its own anchor.
  const std::string key_path = config.audit_key.value_or(dir.db_path.string() + ".audit.key");
  const std::string log_path = config.audit_log.value_or(dir.db_path.string() + ".audit.jsonl");
  MK_ASSIGN_OR_RETURN(std::string key, server::LoadOrCreateAuditKey(key_path));
  MK_ASSIGN_OR_RETURN(auto audit, server::AuditLog::Open(*db->Access(), log_path, key));
  MK_RETURN_IF_ERROR(audit->Sync());  // events a crash left unanchored

  server::AuthOptions auth_options;
  auth_options.trusted_proxies = config.trusted_proxies;
  auth_options.proxy_header = config.proxy_header.value_or("");
  if (!auth_options.trusted_proxies.empty() && auth_options.proxy_header.empty()) {
    return InvalidArgument("trusted proxies need --proxy-header (e.g. X-Forwarded-Email)");
  }
  if (config.session_ttl_hours) auth_options.session_ttl_s = *config.session_ttl_hours * 3600;
  if (config.max_failed_logins) auth_options.max_failures = *config.max_failed_logins;
  server::Authenticator auth(*db->Access(), auth_options);
  MetricsRegistry metrics;
  server::ServerContext ctx{db.get(), db->Access(), &artifacts, &auth, audit.get(), &metrics};
  server::ServeOptions options;
  options.host = address.host;
  options.port = address.port;
  if (config.threads) options.threads = *config.threads;
  options.router.secure_cookies = config.secure_cookies.value_or(true);
  MK_ASSIGN_OR_RETURN(auto http, server::HttpServer::Create(ctx, options));

  // Signals go to one watcher thread (blocked everywhere else, the server's workers included),
  // which stops the server; Run() then returns after the requests in flight.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
  auto port = http->Bind();
  if (!port.ok()) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    return port.status();
  }
  const bool loopback = server::IsLoopbackHost(address.host);
  std::fprintf(stderr,
               "maxkernel serve: listening on http://%s:%d (store %s, audit log %s)%s\n",
               address.host.find(':') != std::string::npos ? ("[" + address.host + "]").c_str()
                                                           : address.host.c_str(),
               *port, dir.db_path.c_str(), log_path.c_str(),
               loopback ? "" : "; put TLS in front of it (a proxy or an ingress)");
  std::atomic<bool> stopping{false};
  std::thread watcher([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    if (!stopping.exchange(true)) {
      std::fprintf(stderr, "maxkernel serve: %s, stopping\n", signal == SIGTERM ? "SIGTERM" : "SIGINT");
    }
    http->Stop();
  });
  Status ran = http->Run();
  // Wake the watcher when the server stopped by itself.
  if (!stopping.exchange(true)) pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  MK_RETURN_IF_ERROR(ran);
  MK_RETURN_IF_ERROR(audit->Sync());
  std::fprintf(stderr, "maxkernel serve: stopped\n");
  return kExitOk;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Serve the JSON API, /metrics, /healthz and /readyz over the store. Every request but the "
      "health checks and login needs a token (Authorization: Bearer) or a browser login; make "
      "the first admin with --init-admin. Stops cleanly on SIGTERM or SIGINT (docs/SERVER.md)");
  serve->add_option("--listen", f->listen, "HOST:PORT (default 127.0.0.1:8080; port 0: any free one). "
                    "A non-loopback address is refused until an admin or a trusted proxy exists");
  serve->add_option("--db", f->db, "Database file (default DATA_DIR/maxkernel.db)");
  serve->add_option("--artifacts", f->artifacts, "Data directory whose artifacts/ to serve (default: the database's)");
  serve->add_option("--config", f->config, "YAML settings file (docs/SERVER.md); flags override it");
  serve->add_option("--init-admin", f->init_admin,
                    "Make the first admin NAME, print their token once, and exit");
  serve->add_option("--threads", f->threads, "Worker threads (default 64; each open connection holds one)");
  serve->add_option("--audit-key", f->audit_key, "HMAC key file of the audit anchor, mode 0600 (default DB.audit.key beside the database, made when missing)");
  serve->add_option("--audit-log", f->audit_log, "The audit log's JSON-lines file (default DB.audit.jsonl beside the database)");
  serve->add_option("--trusted-proxy", f->trusted_proxies, "A proxy address whose --proxy-header names the user (repeatable)");
  serve->add_option("--proxy-header", f->proxy_header, "The identity header a trusted proxy sets (e.g. X-Forwarded-Email)");
  serve->add_flag("--insecure-cookies", f->insecure_cookies,
                  "Session cookies without the Secure attribute (plain-HTTP development only)");
  serve->callback([f, &result] { RunCommand(result, [&] { return Serve(*f); }); });
}

}  // namespace mk::cli
