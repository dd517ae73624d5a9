#include "server/roles.h"

#include <string>

namespace mk::server {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kApprover: return "approver";
    case Role::kAdmin: return "admin";
    case Role::kWorker: return "worker";
  }
  return "?";
}

Result<Role> ParseRole(std::string_view name) {
  for (Role role : {Role::kViewer, Role::kOperator, Role::kApprover, Role::kAdmin, Role::kWorker}) {
    if (RoleName(role) == name) return role;
  }
  return InvalidArgument("unknown role '" + std::string(name) +
                         "' (viewer, operator, approver, admin or worker)");
}

std::string_view PermissionName(Permission permission) {
  switch (permission) {
    case Permission::kView: return "view";
    case Permission::kOperate: return "operate";
    case Permission::kApprove: return "approve";
    case Permission::kEditCode: return "edit_code";
    case Permission::kAdminister: return "admin";
    case Permission::kWork: return "work";
  }
  return "?";
}

bool Allows(Role role, Permission permission) {
  if (role == Role::kWorker) return permission == Permission::kWork;
  if (permission == Permission::kWork) return false;
  const int rank = static_cast<int>(role);  // viewer 0 .. admin 3
  switch (permission) {
    case Permission::kView: return rank >= 0;
    case Permission::kOperate: return rank >= static_cast<int>(Role::kOperator);
    case Permission::kApprove: return rank >= static_cast<int>(Role::kApprover);
    case Permission::kEditCode:
    case Permission::kAdminister: return role == Role::kAdmin;
    case Permission::kWork: return false;
  }
  return false;
}

}  // namespace mk::server
