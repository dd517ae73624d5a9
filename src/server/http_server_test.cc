// The HTTP API end to end on a loopback port: every route against every role, CSRF, session
// fixation, path traversal on artifacts, and the audit trail the requests leave.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "server/server_test_util.h"
#include "store/audit_chain.h"
#include "store/store_test_util.h"
#include "support/regular_file.h"

namespace mk::server {
namespace {

using mk::server::testing::TestServer;

struct Case {
  std::string method, pattern, path, body;
  std::optional<Permission> permission;
};

// One request per route. Bodies are valid, so an allowed caller never sees 401 or 403.
std::vector<Case> Cases(const std::string& artifact_sha) {
  return {
      {"GET", "/healthz", "/healthz", "", std::nullopt},
      {"GET", "/readyz", "/readyz", "", std::nullopt},
      {"GET", "/metrics", "/metrics", "", Permission::kView},
      {"GET", "/api/v1/whoami", "/api/v1/whoami", "", Permission::kView},
      {"POST", "/api/v1/logout", "/api/v1/logout", "", Permission::kView},
      {"GET", "/api/v1/users", "/api/v1/users", "", Permission::kAdminister},
      {"POST", "/api/v1/users", "/api/v1/users", R"({"name":"NEW","role":"viewer"})",
       Permission::kAdminister},
      {"PUT", R"(/api/v1/users/([A-Za-z0-9._@+-]{1,64}))", "/api/v1/users/viewer-user",
       R"({"role":"viewer"})", Permission::kAdminister},
      {"GET", "/api/v1/tokens", "/api/v1/tokens", "", Permission::kAdminister},
      {"POST", "/api/v1/tokens", "/api/v1/tokens", R"({"user":"viewer-user","label":"m"})",
       Permission::kAdminister},
      {"DELETE", R"(/api/v1/tokens/([0-9a-f]{12}))", "/api/v1/tokens/000000000000", "",
       Permission::kAdminister},
      {"GET", "/api/v1/audit", "/api/v1/audit?after=0&limit=5", "", Permission::kAdminister},
      {"GET", "/api/v1/runs", "/api/v1/runs", "", Permission::kView},
      {"GET", R"(/api/v1/runs/(\d{1,18}))", "/api/v1/runs/1", "", Permission::kView},
      {"GET", R"(/api/v1/artifacts/([0-9a-f]{64}))", "/api/v1/artifacts/" + artifact_sha, "",
       Permission::kView},
      {"POST", "/api/v1/login", "/api/v1/login", "", std::nullopt},
      {"GET", "/api/v1/events", "/api/v1/events?run=999999", "", Permission::kView},
      {"GET", "/", "/", "", std::nullopt},
      {"GET", "/ui/app.js", "/ui/app.js", "", std::nullopt},
      {"GET", "/ui/app.css", "/ui/app.css", "", std::nullopt},
  };
}

struct Got {
  bool ok = false;  // an answer came
  int status = 0;
  std::string body;
};

Got Send(httplib::Client& client, const std::string& method, const std::string& path,
         const std::string& body, const httplib::Headers& headers) {
  Got got;
  // An event stream never ends by itself: take its status and first bytes, then hang up.
  if (path.rfind("/api/v1/events", 0) == 0) {
    client.Get(
        path.c_str(), headers,
        [&](const httplib::Response& response) {
          got.ok = true;
          got.status = response.status;
          return true;
        },
        [&](const char* data, size_t length) {
          got.body.append(data, length);
          return false;
        });
    return got;
  }
  httplib::Result result = method == "GET"    ? client.Get(path.c_str(), headers)
                           : method == "POST" ? client.Post(path.c_str(), headers, body, "application/json")
                           : method == "PUT"  ? client.Put(path.c_str(), headers, body, "application/json")
                                              : client.Delete(path.c_str(), headers);
  if (result) {
    got.ok = true;
    got.status = result->status;
    got.body = result->body;
  }
  return got;
}

TEST(HttpServer, EveryRouteAnswersEachRoleExactlyAsItsPermissionSays) {
  TestServer server;
  ASSERT_TRUE(server.ready());
  auto sha = server.artifacts().Put("kernel bytes");
  ASSERT_TRUE(sha.ok());
  const auto cases = Cases(*sha);
  // The matrix covers every route the server registers.
  std::set<std::string> covered;
  for (const Case& c : cases) {
    covered.insert(c.method + " " + c.pattern + " " +
                   (c.permission ? std::string(PermissionName(*c.permission)) : "public"));
  }
  for (const std::string& route : server.server().router().routes()) {
    EXPECT_TRUE(covered.count(route)) << "route without a role-matrix case: " << route;
  }
  auto client = server.Client();
  for (const Case& c : cases) {
    if (!c.permission) continue;
    SCOPED_TRACE(c.method + " " + c.path);
    Got anonymous = Send(client, c.method, c.path, c.body, {});
    ASSERT_TRUE(anonymous.ok);
    EXPECT_EQ(anonymous.status, 401);
    Got bad = Send(client, c.method, c.path, c.body, TestServer::Bearer("mkt_000000000000_x"));
    ASSERT_TRUE(bad.ok);
    EXPECT_EQ(bad.status, 401);
    for (const char* role : {"viewer", "operator", "approver", "admin", "worker"}) {
      SCOPED_TRACE(role);
      std::string body = c.body;
      if (auto at = body.find("NEW"); at != std::string::npos) {
        body.replace(at, 3, std::string("new-") + role);
      }
      Got reply = Send(client, c.method, c.path, body, TestServer::Bearer(server.token(role)));
      ASSERT_TRUE(reply.ok);
      const bool allowed = Allows(*ParseRole(role), *c.permission);
      if (allowed) {
        EXPECT_NE(reply.status, 401) << reply.body;
        EXPECT_NE(reply.status, 403) << reply.body;
        EXPECT_LT(reply.status, 500) << reply.body;
      } else {
        EXPECT_EQ(reply.status, 403) << reply.body;
      }
    }
  }
}

TEST(HttpServer, HealthAndReadinessNeedNoTokenAndMetricsCountRequests) {
  TestServer server;
  ASSERT_TRUE(server.ready());
  auto client = server.Client();
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_NE(ready->body.find("\"schema_version\":6"), std::string::npos);
  auto metrics = client.Get("/metrics", TestServer::Bearer(server.token("viewer")));
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find(
                R"(maxkernel_http_requests_total{route="healthz",method="GET",status="200"} 1)"),
            std::string::npos)
      << metrics->body;
  auto missing = client.Get("/no/such/route");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("\"error\""), std::string::npos);
}

TEST(HttpServer, TheEventStreamSendsStoredAndNewEventsAndEndsWhenTheServerStops) {
  auto server = std::make_unique<TestServer>();
  ASSERT_TRUE(server->ready());
  auto& store = server->store();
  auto task = store.UpsertTask({0, "/t", std::string(64, 'a'), "name: t", 0});
  ASSERT_TRUE(task.ok());
  auto run = store.CreateRun({*task, store::RunMode::kAuto, "cpu", "{}"});
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(store.AddEvent(*run, "run.started", R"({"note":"line one\nline two"})").ok());
  ASSERT_TRUE(store.AddEvent(std::nullopt, "other", "{}").ok());
  std::string received;
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    (void)store.AddEvent(*run, "candidate.built", "{}");
  });
  auto client = server->Client();
  auto reply = client.Get(("/api/v1/events?run=" + std::to_string(*run)).c_str(),
                          TestServer::Bearer(server->token("viewer")),
                          [&](const char* data, size_t length) {
                            received.append(data, length);
                            // Stop reading once the event stored after connecting arrived.
                            return received.find("candidate.built") == std::string::npos;
                          });
  later.join();
  EXPECT_NE(received.find("id: 1\nevent: run.started\ndata: {"), std::string::npos) << received;
  EXPECT_NE(received.find("line one\\nline two"), std::string::npos) << received;
  EXPECT_EQ(received.find("event: other"), std::string::npos) << received;
  EXPECT_NE(received.find("id: 3\nevent: candidate.built"), std::string::npos) << received;

  // A stream still open when the server stops ends with it, and Stop() does not hang.
  std::atomic<bool> ended{false};
  std::thread reader([&] {
    auto other = server->Client();
    other.Get("/api/v1/events?after=3", TestServer::Bearer(server->token("viewer")),
              [](const char*, size_t) { return true; });
    ended = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  server.reset();
  reader.join();
  EXPECT_TRUE(ended);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(HttpServer, TheUiIsServedWithAStrictContentSecurityPolicy) {
  TestServer server;
  ASSERT_TRUE(server.ready());
  auto client = server.Client();
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<script src=\"/ui/app.js\""), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("script-src 'self'"),
            std::string::npos);
  EXPECT_EQ(page->get_header_value("X-Frame-Options"), "DENY");
  auto script = client.Get("/ui/app.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->status, 200);
  EXPECT_NE(script->get_header_value("Content-Type").find("javascript"), std::string::npos);
  // The script never writes server data as HTML.
  EXPECT_EQ(script->body.find("innerHTML"), std::string::npos);
}

TEST(HttpServer, ABrowserSessionNeedsItsCsrfTokenForEveryChange) {
  TestServer server;
  ASSERT_TRUE(server.ready());
  auto client = server.Client();
  const nlohmann::json login_body = {{"name", "admin-user"}, {"token", server.token("admin")}};
  auto login = client.Post("/api/v1/login", login_body.dump(), "application/json");
  ASSERT_TRUE(login);
  ASSERT_EQ(login->status, 200) << login->body;
  const std::string set_cookie = login->get_header_value("Set-Cookie");
  EXPECT_NE(set_cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(set_cookie.find("SameSite=Strict"), std::string::npos);
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  const std::string csrf = nlohmann::json::parse(login->body)["csrf_token"];

  auto read = client.Get("/api/v1/users", {{"Cookie", cookie}});
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 200);
  const std::string create = R"({"name":"carol","role":"viewer"})";
  auto no_csrf = client.Post("/api/v1/users", {{"Cookie", cookie}}, create, "application/json");
  ASSERT_TRUE(no_csrf);
  EXPECT_EQ(no_csrf->status, 403);
  auto wrong = client.Post("/api/v1/users", {{"Cookie", cookie}, {"X-CSRF-Token", "guess"}},
                           create, "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 403);
  auto cross = client.Post("/api/v1/users",
                           {{"Cookie", cookie}, {"X-CSRF-Token", csrf},
                            {"Origin", "http://evil.example"}},
                           create, "application/json");
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->status, 403);
  auto ok = client.Post("/api/v1/users", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}, create,
                        "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
  ASSERT_TRUE(server.store().Access()->FindUser("carol")->has_value());

  auto out = client.Post("/api/v1/logout", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}, "",
                         "application/json");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, 200);
  auto after = client.Get("/api/v1/users", {{"Cookie", cookie}});
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 401);
}

TEST(HttpServer, ATrustedProxysIdentityHeaderWorksWithItsOwnCsrfGuard) {
  AuthOptions options = TestServer::LenientAuth();
  options.trusted_proxies = {"127.0.0.1"};
  options.proxy_header = "X-Forwarded-Email";
  TestServer server(options);
  ASSERT_TRUE(server.ready());
  auto client = server.Client();
  auto who = client.Get("/api/v1/whoami", {{"X-Forwarded-Email", "admin-user"}});
  ASSERT_TRUE(who);
  EXPECT_EQ(who->status, 200);
  EXPECT_NE(who->body.find("\"via\":\"proxy\""), std::string::npos) << who->body;
  auto unknown = client.Get("/api/v1/whoami", {{"X-Forwarded-Email", "nobody@example.com"}});
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 401);
  const std::string body = R"({"name":"pat","role":"viewer"})";
  auto bare = client.Post("/api/v1/users", {{"X-Forwarded-Email", "admin-user"}}, body,
                          "application/json");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 403);
  auto guarded = client.Post("/api/v1/users",
                             {{"X-Forwarded-Email", "admin-user"}, {"X-Requested-With", "maxkernel"}},
                             body, "application/json");
  ASSERT_TRUE(guarded);
  EXPECT_EQ(guarded->status, 201) << guarded->body;
}

TEST(HttpServer, APlantedSessionCookieIsNeitherAcceptedNorKeptByALogin) {
  TestServer server;
  ASSERT_TRUE(server.ready());
  auto client = server.Client();
  const std::string planted = std::string(kSessionCookie) + "=attacker-chosen-value";
  auto before = client.Get("/api/v1/whoami", {{"Cookie", planted}});
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 401);
  const nlohmann::json body = {{"name", "viewer-user"}, {"token", server.token("viewer")}};
  auto login = client.Post("/api/v1/login", {{"Cookie", planted}}, body.dump(), "application/json");
  ASSERT_TRUE(login);
  ASSERT_EQ(login->status, 200);
  EXPECT_EQ(login->get_header_value("Set-Cookie").find("attacker-chosen-value"), std::string::npos);
  auto still = client.Get("/api/v1/whoami", {{"Cookie", planted}});
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 401);
}

TEST(HttpServer, ArtifactNamesThatAreNotAHashNeverReachTheFilesystem) {
  TestServer server;
  ASSERT_TRUE(server.ready());
  auto sha = server.artifacts().Put("the kernel");
  ASSERT_TRUE(sha.ok());
  auto client = server.Client();
  const auto viewer = TestServer::Bearer(server.token("viewer"));
  auto good = client.Get(("/api/v1/artifacts/" + *sha).c_str(), viewer);
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
  EXPECT_EQ(good->body, "the kernel");
  for (const char* path :
       {"/api/v1/artifacts/../../../../etc/passwd", "/api/v1/artifacts/..%2F..%2Fetc%2Fpasswd",
        "/api/v1/artifacts/%2e%2e/db", "/api/v1/artifacts/sha256/ab/x",
        "/api/v1/artifacts/AAAA"}) {
    auto reply = client.Get(path, viewer);
    ASSERT_TRUE(reply) << path;
    EXPECT_EQ(reply->status, 404) << path;
    EXPECT_EQ(reply->body.find("root:"), std::string::npos) << path;
  }
  auto absent = client.Get(("/api/v1/artifacts/" + std::string(64, 'a')).c_str(), viewer);
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->status, 404);
}

TEST(HttpServer, ChangesThroughTheApiLeaveAVerifiableAuditTrail) {
  TestServer server;
  ASSERT_TRUE(server.ready());
  auto client = server.Client();
  const auto admin = TestServer::Bearer(server.token("admin"));
  auto created = client.Post("/api/v1/users", admin, R"({"name":"dave","role":"operator"})",
                             "application/json");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201);
  auto token = client.Post("/api/v1/tokens", admin, R"({"user":"dave","ttl_days":1})",
                           "application/json");
  ASSERT_TRUE(token);
  ASSERT_EQ(token->status, 201);
  const std::string lookup = nlohmann::json::parse(token->body)["lookup_id"];
  auto revoked = client.Delete(("/api/v1/tokens/" + lookup).c_str(), admin);
  ASSERT_TRUE(revoked);
  EXPECT_EQ(revoked->status, 200);
  auto audit = client.Get("/api/v1/audit", admin);
  ASSERT_TRUE(audit);
  const auto events = nlohmann::json::parse(audit->body)["events"];
  std::vector<std::string> actions;
  for (const auto& e : events) {
    if (e["actor"] == "admin-user") actions.push_back(e["action"]);
  }
  EXPECT_EQ(actions, (std::vector<std::string>{"user.created", "token.created", "token.revoked"}));
  // The anchor file has every event, and the whole log verifies.
  auto verdict = server.audit().Verify();
  ASSERT_TRUE(verdict.ok());
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->anchored, verdict->events);
  // No secret reached the audit: the minted token is not in the file.
  auto text = ReadRegularFile((server.dir() / "audit.jsonl").string());
  ASSERT_TRUE(text.ok());
  const std::string minted = nlohmann::json::parse(token->body)["token"];
  EXPECT_EQ(text->find(minted.substr(18)), std::string::npos);
}

TEST(HttpServer, BadBodiesAreFourHundredsNotCrashes) {
  TestServer server;
  ASSERT_TRUE(server.ready());
  auto client = server.Client();
  const auto admin = TestServer::Bearer(server.token("admin"));
  for (const char* body : {"", "not json", "[]", R"({"name":"x"})", R"({"name":"../x","role":"viewer"})",
                           R"({"name":"ok","role":"root"})", R"({"name":1,"role":"viewer"})"}) {
    auto reply = client.Post("/api/v1/users", admin, body, "application/json");
    ASSERT_TRUE(reply) << body;
    EXPECT_EQ(reply->status, 400) << body << " -> " << reply->body;
  }
  auto ttl = client.Post("/api/v1/tokens", admin, R"({"user":"viewer-user","ttl_days":-1})",
                         "application/json");
  ASSERT_TRUE(ttl);
  EXPECT_EQ(ttl->status, 400);
  auto login = client.Post("/api/v1/login", "{}", "application/json");
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 400);
  // Login CSRF: a form's content type, or a foreign page's Origin, never logs anyone in.
  const nlohmann::json good = {{"name", "viewer-user"}, {"token", server.token("viewer")}};
  auto form = client.Post("/api/v1/login", good.dump(), "text/plain");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);
  auto foreign = client.Post("/api/v1/login", {{"Origin", "https://evil.example"}}, good.dump(),
                             "application/json");
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->status, 403);
  EXPECT_TRUE(foreign->get_header_value("Set-Cookie").empty());
  auto disable_self = client.Put("/api/v1/users/admin-user", admin, R"({"disabled":true})",
                                 "application/json");
  ASSERT_TRUE(disable_self);
  EXPECT_EQ(disable_self->status, 400);
  auto self = client.Put("/api/v1/users/admin-user", admin, R"({"role":"viewer"})",
                         "application/json");
  ASSERT_TRUE(self);
  EXPECT_EQ(self->status, 400);
  auto basic = client.Get("/api/v1/whoami", {{"Authorization", "Basic YWRtaW46YWRtaW4="}});
  ASSERT_TRUE(basic);
  EXPECT_EQ(basic->status, 401);
}

TEST(HttpServer, ANonLoopbackAddressIsRefusedUntilAnAdminExists) {
  mk::store::testing::TempDir dir;
  auto store = store::SqliteStore::Open((dir.path() / "db").string());
  ASSERT_TRUE(store.ok());
  Authenticator auth(*(*store)->Access(), {});
  auto audit = AuditLog::Open(*(*store)->Access(), (dir.path() / "a.jsonl").string(),
                              std::string(32, 'k'));
  ASSERT_TRUE(audit.ok());
  MetricsRegistry metrics;
  ServerContext ctx{store->get(), (*store)->Access(), nullptr, &auth, audit->get(), &metrics};
  ServeOptions options;
  options.host = "0.0.0.0";
  auto refused = HttpServer::Create(ctx, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--init-admin"), std::string::npos);
  ASSERT_TRUE((*store)->Access()->CreateUser("root", "admin", {"cli", "user.created", "", "{}"}).ok());
  EXPECT_TRUE(HttpServer::Create(ctx, options).ok());
  options.host = "127.0.0.1";
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1") && IsLoopbackHost("::1") && !IsLoopbackHost("10.0.0.1"));
}

}  // namespace
}  // namespace mk::server
