// A real server on a loopback port for the server tests: a fresh store in a private directory,
// an admin, and one user (with a token) per role.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "server/audit_log.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "store/sqlite_store.h"

namespace mk::server::testing {

class TestServer {
 public:
  // The failure limit is raised: the role matrix sends many bad tokens from one address on
  // purpose (auth_test covers the limit itself).
  TestServer() : TestServer(LenientAuth()) {}
  static AuthOptions LenientAuth() {
    AuthOptions options;
    options.max_failures = 1000;
    return options;
  }
  explicit TestServer(AuthOptions auth_options) {
    std::string pattern = (std::filesystem::temp_directory_path() / "mk_server_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return;
    dir_ = pattern;
    auto store = store::SqliteStore::Open((dir_ / "db").string());
    if (!store.ok()) return;
    store_ = std::move(*store);
    artifacts_ = std::make_unique<store::ArtifactStore>(dir_);
    auth_ = std::make_unique<Authenticator>(*store_->Access(), auth_options);
    key_ = "0123456789abcdef0123456789abcdef";
    auto audit = AuditLog::Open(*store_->Access(), (dir_ / "audit.jsonl").string(), key_);
    if (!audit.ok()) return;
    audit_ = std::move(*audit);
    for (const char* role : {"viewer", "operator", "approver", "admin", "worker"}) {
      const std::string name = std::string(role) + "-user";
      if (!store_->Access()->CreateUser(name, role, {"test", "user.created", name, "{}"}).ok()) return;
      auto minted = auth_->MintToken(name, "test", std::nullopt, "test");
      if (!minted.ok()) return;
      tokens_[role] = minted->token;
    }
    ServerContext ctx{store_.get(), store_->Access(), artifacts_.get(), auth_.get(), audit_.get(),
                      &metrics_};
    ServeOptions options;
    options.port = 0;
    options.threads = 16;
    options.router.secure_cookies = false;  // the test client speaks plain HTTP
    auto server = HttpServer::Create(ctx, options);
    if (!server.ok()) return;
    server_ = std::move(*server);
    auto port = server_->Bind();
    if (!port.ok()) return;
    port_ = *port;
    thread_ = std::thread([this] { (void)server_->Run(); });
    ready_ = true;
  }
  ~TestServer() {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  bool ready() const { return ready_; }
  httplib::Client Client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(5);
    client.set_read_timeout(30);
    return client;
  }
  // The token of the user with `role` ("viewer" ... "worker").
  const std::string& token(const std::string& role) { return tokens_[role]; }
  static httplib::Headers Bearer(const std::string& token) {
    return {{"Authorization", "Bearer " + token}};
  }
  store::SqliteStore& store() { return *store_; }
  store::ArtifactStore& artifacts() { return *artifacts_; }
  AuditLog& audit() { return *audit_; }
  const std::filesystem::path& dir() const { return dir_; }
  const std::string& key() const { return key_; }
  const HttpServer& server() const { return *server_; }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<store::ArtifactStore> artifacts_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<AuditLog> audit_;
  MetricsRegistry metrics_;
  std::string key_;
  std::map<std::string, std::string> tokens_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
  bool ready_ = false;
};

}  // namespace mk::server::testing
