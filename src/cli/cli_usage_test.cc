// The command line's own behaviour, through the real binary: unknown subcommands, --help text,
// errors as JSON under --json, inputs that are directories, and the JSON shapes every command
// shares (an object on stdout).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Ran;
using testing::RunMaxkernel;

class CliUsageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mk_cli_usage_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
  }
  fs::path dir_;
};

// The names listed under "Subcommands:" in a --help text.
std::vector<std::string> SubcommandsIn(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream lines(help);
  std::string line;
  bool in_list = false;
  while (std::getline(lines, line)) {
    if (line.rfind("Subcommands:", 0) == 0) {
      in_list = true;
      continue;
    }
    if (!in_list) continue;
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(  ([a-z][a-z0-9-]*)\b.*)"))) {
      names.push_back(m[1]);
    } else if (!line.empty() && line[0] != ' ') {
      in_list = false;
    }
  }
  return names;
}

TEST_F(CliUsageTest, AnUnknownSubcommandIsNamedWithTheValidOnes) {
  Ran top = RunMaxkernel({"nosuch"});
  EXPECT_EQ(top.exit_code, 2);
  EXPECT_NE(top.err.find("unknown subcommand 'nosuch'"), std::string::npos) << top.err;
  for (const char* valid : {"hlo", "optimize", "runs", "export", "bench", "suite"}) {
    EXPECT_NE(top.err.find(valid), std::string::npos) << valid << "\n" << top.err;
  }
  EXPECT_EQ(top.err.find("A subcommand is required"), std::string::npos) << top.err;

  Ran nested = RunMaxkernel({"hlo", "nosuch", Path("x.hlo")});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_NE(nested.err.find("unknown subcommand 'nosuch' of maxkernel hlo; valid subcommands: "
                            "check, fmt"),
            std::string::npos)
      << nested.err;

  // No subcommand at all is still "required", and a known one with a bad option is not
  // mistaken for an unknown subcommand.
  Ran none = RunMaxkernel({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err.find("unknown subcommand"), std::string::npos) << none.err;
  Ran option = RunMaxkernel({"hlo", "check", "--frobnicate"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_EQ(option.err.find("unknown subcommand"), std::string::npos) << option.err;
}

// CLI11 shows a flag's default value after its name (`--no-record{false}`) for negated flags;
// no command's help may show one.
TEST_F(CliUsageTest, HelpShowsNoDefaultValuesOnFlags) {
  std::vector<std::vector<std::string>> todo = {{}};
  int seen = 0;
  const std::regex flag_default(R"(-[-A-Za-z0-9_]+\{[^}]*\})");
  while (!todo.empty()) {
    std::vector<std::string> cmd = todo.back();
    todo.pop_back();
    std::vector<std::string> args = cmd;
    args.push_back("--help");
    Ran r = RunMaxkernel(args);
    ASSERT_EQ(r.exit_code, 0) << ::testing::PrintToString(args) << r.err;
    ++seen;
    std::smatch m;
    EXPECT_FALSE(std::regex_search(r.out, m, flag_default))
        << ::testing::PrintToString(args) << " shows " << m.str(0) << "\n" << r.out;
    for (const std::string& sub : SubcommandsIn(r.out)) {
      std::vector<std::string> next = cmd;
      next.push_back(sub);
      todo.push_back(next);
    }
  }
  EXPECT_GT(seen, 15);  // every command was reached (the walk parses the help text)
}

TEST_F(CliUsageTest, WithJsonAnErrorIsAJsonObjectOnStdout) {
  // An error value with a position: file, line and column in the object, text on stderr.
  Write("bad.hlo", "HloModule bad\n\nENTRY main {\n  ROOT y = f32[2] frobnicate()\n}\n");
  Ran bad = RunMaxkernel({"hlo", "check", Path("bad.hlo"), "--json"});
  EXPECT_EQ(bad.exit_code, 2);
  json j = json::parse(bad.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << bad.out;
  ASSERT_TRUE(j["error"].is_object()) << bad.out;
  EXPECT_EQ(j["error"]["code"], "invalid_argument");
  EXPECT_EQ(j["error"]["exit_code"], 2);
  EXPECT_EQ(j["error"]["file"], Path("bad.hlo"));
  EXPECT_EQ(j["error"]["line"], 4);
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_NE(bad.err.find(Path("bad.hlo") + ":4:"), std::string::npos) << bad.err;

  Ran missing = RunMaxkernel({"hlo", "check", Path("missing.hlo"), "--json"});
  EXPECT_EQ(missing.exit_code, 2);
  j = json::parse(missing.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << missing.out;
  // The file is the error's position (`file`), as for any error about one file.
  EXPECT_EQ(j["error"]["file"], Path("missing.hlo"));
  EXPECT_EQ(j["error"]["code"], "not_found");
  EXPECT_NE(missing.err.find("missing.hlo"), std::string::npos) << missing.err;

  // A usage error (a missing argument, an unknown subcommand) too.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"hlo", "check", "--json"},
        std::vector<std::string>{"nosuch", "--json"}}) {
    Ran usage = RunMaxkernel(args);
    EXPECT_EQ(usage.exit_code, 2);
    j = json::parse(usage.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << ::testing::PrintToString(args) << usage.out;
    EXPECT_EQ(j["error"]["code"], "usage") << usage.out;
    EXPECT_EQ(j["error"]["exit_code"], 2);
    EXPECT_FALSE(usage.err.empty());
  }

  // Without --json, stdout stays empty.
  Ran plain = RunMaxkernel({"hlo", "check", Path("missing.hlo")});
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_EQ(plain.out, "");
}

TEST_F(CliUsageTest, ADirectoryGivenForAFileIsNamedAsOne) {
  for (const char* sub : {"check", "fmt"}) {
    Ran r = RunMaxkernel({"hlo", sub, dir_.string()});
    EXPECT_EQ(r.exit_code, 2) << sub;
    EXPECT_NE(r.err.find(dir_.string() + ": error: is a directory"), std::string::npos)
        << sub << ": " << r.err;
    EXPECT_EQ(r.err.find("empty input"), std::string::npos) << sub << ": " << r.err;
  }
}

TEST_F(CliUsageTest, SuiteListJsonIsAnObject) {
  Ran r = RunMaxkernel({"suite", "list", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out.substr(0, 200);
  ASSERT_TRUE(j["workloads"].is_array());
  EXPECT_FALSE(j["workloads"].empty());
  EXPECT_TRUE(j["workloads"][0]["id"].is_string());
}

}  // namespace
}  // namespace mk::cli
