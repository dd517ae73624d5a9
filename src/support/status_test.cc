#include "support/status.h"

#include <gtest/gtest.h>

namespace mk {
namespace {

Result<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd", SourceLoc{"f.hlo", 3, 7});
  return x / 2;
}

Result<int> Quarter(int x) {
  MK_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(StatusTest, ErrorCarriesLocation) {
  auto r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(), "f.hlo:3:7: error: odd");
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

TEST(StatusTest, ValuePropagates) {
  auto r = Quarter(8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 2);
}

TEST(StatusTest, ContextIsPrepended) {
  Status s = InvalidArgument("bad").WithContext("reading x.npy");
  EXPECT_EQ(s.ToString(), "error: reading x.npy: bad");
}

}  // namespace
}  // namespace mk
