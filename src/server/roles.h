// Who may do what on the server. Four ranked roles for people, and one for remote workers:
//   viewer < operator (starts runs and sessions) < approver (decides proposals) < admin
//   (users, tokens, roles; edits kernel source by default), and worker (takes jobs, nothing else).
#pragma once

#include <string_view>

#include "support/status.h"

namespace mk::server {

enum class Role { kViewer, kOperator, kApprover, kAdmin, kWorker };

// What an endpoint asks of its caller.
enum class Permission {
  kView,      // read runs, sessions, artifacts, metrics
  kOperate,   // start runs and HITL sessions
  kApprove,   // decide proposals
  kEditCode,  // submit edited kernel source (code execution on the server)
  kAdminister,  // users, tokens, roles, the audit log
  kWork,      // take and report remote jobs
};

std::string_view RoleName(Role role);
Result<Role> ParseRole(std::string_view name);  // an error lists the valid names
std::string_view PermissionName(Permission permission);

// The default grants: each person's role has its own permission and those of the roles below;
// kEditCode is admin's; a worker only works.
bool Allows(Role role, Permission permission);

}  // namespace mk::server
