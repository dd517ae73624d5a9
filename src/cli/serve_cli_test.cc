// `maxkernel serve` and `maxkernel audit` as a user runs them: the first admin, a real server
// process on a loopback port stopped by SIGTERM, and the audit log verified, then tampered with.
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "cli/cli_test_util.h"
#include "store/sqlite_db.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;
using testing::RunMaxkernel;

class ServeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mk_serve_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    db_ = (dir_ / "db").string();
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Starts `serve` in the background; returns its port (0 when it never said it listens).
  int StartServer(const std::vector<std::string>& extra = {}) {
    const std::string log = (dir_ / "serve.err").string();
    std::vector<std::string> argv = {MK_BINARY, "serve", "--db", db_, "--listen", "127.0.0.1:0",
                                     "--insecure-cookies"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(out, 2);
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    const std::regex listening(R"(listening on http://127\.0\.0\.1:(\d+))");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      std::smatch m;
      const std::string s = text.str();
      if (std::regex_search(s, m, listening)) return std::stoi(m[1]);
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        ADD_FAILURE() << "serve exited: " << s;
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return 0;
  }

  // SIGTERM, then the exit code (or -1 when it did not exit by itself).
  int Stop() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  fs::path dir_;
  std::string db_;
  pid_t pid_ = 0;
};

TEST_F(ServeCliTest, TheFirstAdminsTokenWorksAndSigtermStopsTheServerCleanly) {
  auto init = RunMaxkernel({"serve", "--db", db_, "--init-admin", "root"});
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const std::string token = init.out.substr(0, init.out.find('\n'));
  ASSERT_EQ(token.rfind("mkt_", 0), 0u) << init.out;
  auto again = RunMaxkernel({"serve", "--db", db_, "--init-admin", "other"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("an admin exists already"), std::string::npos) << again.err;

  const int port = StartServer();
  ASSERT_GT(port, 0);
  httplib::Client client("127.0.0.1", port);
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto who = client.Get("/api/v1/whoami", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(who);
  EXPECT_EQ(who->status, 200);
  EXPECT_NE(who->body.find("\"root\""), std::string::npos);
  auto made = client.Post("/api/v1/users", {{"Authorization", "Bearer " + token}},
                          R"({"name":"vera","role":"viewer"})", "application/json");
  ASSERT_TRUE(made);
  EXPECT_EQ(made->status, 201);
  EXPECT_EQ(Stop(), 0);

  // The anchor file has the server's events and the ones --init-admin made before it.
  auto verify = RunMaxkernel({"audit", "verify", "--db", db_, "--json"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("\"ok\":true"), std::string::npos) << verify.out;
  EXPECT_NE(verify.out.find("\"anchored\":3"), std::string::npos) << verify.out;
  auto exported = RunMaxkernel({"audit", "export", "--db", db_, "--since", "3"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("\"user:vera\""), std::string::npos) << exported.out;
  EXPECT_EQ(exported.out.find("\"id\":2,"), std::string::npos) << exported.out;

  // Someone edits an event in the database behind the server: verify names it.
  {
    auto db = store::SqliteDb::Open(db_, false, 1000);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("UPDATE audit_log SET subject = 'user:eve' WHERE id = 3").ok());
  }
  auto tampered = RunMaxkernel({"audit", "verify", "--db", db_});
  EXPECT_EQ(tampered.exit_code, 1);
  EXPECT_NE(tampered.err.find("event 3"), std::string::npos) << tampered.err;
}

TEST_F(ServeCliTest, ATruncatedLogIsCaughtByItsAnchor) {
  ASSERT_EQ(RunMaxkernel({"serve", "--db", db_, "--init-admin", "root"}).exit_code, 0);
  const int port = StartServer();
  ASSERT_GT(port, 0);
  EXPECT_EQ(Stop(), 0);
  {
    auto db = store::SqliteDb::Open(db_, false, 1000);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("DELETE FROM audit_log WHERE id = (SELECT max(id) FROM audit_log)").ok());
  }
  auto verify = RunMaxkernel({"audit", "verify", "--db", db_});
  EXPECT_EQ(verify.exit_code, 1);
  EXPECT_NE(verify.err.find("truncated"), std::string::npos) << verify.err;
}

TEST_F(ServeCliTest, BadSettingsAreRefusedWithWhereTheyAre) {
  const fs::path config = dir_ / "serve.yaml";
  std::ofstream(config) << "listen: 127.0.0.1:0\nthreads: 4\nlisten_port: 9\n";
  auto unknown = RunMaxkernel({"serve", "--db", db_, "--config", config.string()});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find(config.string() + ":3:1"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("unknown setting 'listen_port'"), std::string::npos) << unknown.err;
  std::ofstream(config) << "threads: many\n";
  auto typed = RunMaxkernel({"serve", "--db", db_, "--config", config.string()});
  EXPECT_EQ(typed.exit_code, 2);
  EXPECT_NE(typed.err.find(":1:10"), std::string::npos) << typed.err;
  for (const char* listen : {"8080", "host:", "127.0.0.1:99999", "[::1:80"}) {
    auto bad = RunMaxkernel({"serve", "--db", db_, "--listen", listen});
    EXPECT_EQ(bad.exit_code, 2) << listen;
    EXPECT_NE(bad.err.find("listen address"), std::string::npos) << bad.err;
  }
  auto no_key = RunMaxkernel({"audit", "verify", "--db", db_});
  EXPECT_EQ(no_key.exit_code, 2);
  EXPECT_NE(no_key.err.find("no audit key"), std::string::npos) << no_key.err;
  auto open = RunMaxkernel({"serve", "--db", db_, "--listen", "0.0.0.0:0"});
  EXPECT_EQ(open.exit_code, 2);
  EXPECT_NE(open.err.find("without auth set up"), std::string::npos) << open.err;
}

}  // namespace
}  // namespace mk::cli
