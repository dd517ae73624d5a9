#include "server/roles.h"

#include <gtest/gtest.h>

namespace mk::server {
namespace {

TEST(Roles, NamesRoundTripAndUnknownNamesAreRefused) {
  for (Role role : {Role::kViewer, Role::kOperator, Role::kApprover, Role::kAdmin, Role::kWorker}) {
    auto parsed = ParseRole(RoleName(role));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, role);
  }
  auto bad = ParseRole("root");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("viewer, operator"), std::string::npos);
}

TEST(Roles, EachRoleHasItsOwnPermissionAndThoseBelowIt) {
  using P = Permission;
  struct Row {
    Role role;
    bool view, operate, approve, edit_code, administer, work;
  };
  const Row rows[] = {
      {Role::kViewer, true, false, false, false, false, false},
      {Role::kOperator, true, true, false, false, false, false},
      {Role::kApprover, true, true, true, false, false, false},
      {Role::kAdmin, true, true, true, true, true, false},
      {Role::kWorker, false, false, false, false, false, true},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(RoleName(r.role)));
    EXPECT_EQ(Allows(r.role, P::kView), r.view);
    EXPECT_EQ(Allows(r.role, P::kOperate), r.operate);
    EXPECT_EQ(Allows(r.role, P::kApprove), r.approve);
    EXPECT_EQ(Allows(r.role, P::kEditCode), r.edit_code);
    EXPECT_EQ(Allows(r.role, P::kAdminister), r.administer);
    EXPECT_EQ(Allows(r.role, P::kWork), r.work);
  }
}

}  // namespace
}  // namespace mk::server
