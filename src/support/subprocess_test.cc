#include "support/subprocess.h"

#include <gtest/gtest.h>

namespace mk {
namespace {

TEST(SubprocessTest, CapturesOutputAndExitCode) {
  auto r = RunProcess({"sh", "-c", "echo hello; echo oops >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "hello\n");
  EXPECT_EQ(r->err, "oops\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
}

TEST(SubprocessTest, TimesOutAndKills) {
  auto r = RunProcess({"sh", "-c", "sleep 30"}, 0.3);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(r->seconds, 10.0);
}

TEST(SubprocessTest, ReportsSignal) {
  auto r = RunProcess({"sh", "-c", "kill -SEGV $$"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->signaled);
  EXPECT_EQ(r->term_signal, 11);
}

TEST(SubprocessTest, MissingProgramIsAnError) {
  auto r = RunProcess({"/nonexistent/program"});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace mk
