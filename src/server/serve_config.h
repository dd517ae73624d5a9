// `maxkernel serve`'s settings: from `--config FILE` (YAML), then the command line's flags on
// top. Every key is optional; an unknown key, a wrong type or a bad value is an error at its
// file:line:col.
//
//   listen: 127.0.0.1:8080
//   db: /var/lib/maxkernel/maxkernel.db
//   artifacts: /var/lib/maxkernel          # the data dir whose artifacts/ is served
//   threads: 64
//   audit_key: /etc/maxkernel/audit.key     # HMAC key of the audit anchor (made when missing)
//   audit_log: /var/log/maxkernel/audit.jsonl
//   trusted_proxies: [10.0.0.7]
//   proxy_header: X-Forwarded-Email
//   session_ttl_hours: 12
//   secure_cookies: true
//   max_failed_logins: 5
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "support/status.h"

namespace mk::server {

struct ServeConfig {
  std::optional<std::string> listen, db, artifacts, audit_key, audit_log, proxy_header;
  std::optional<int> threads, max_failed_logins;
  std::optional<double> session_ttl_hours;
  std::optional<bool> secure_cookies;
  std::vector<std::string> trusted_proxies;
};

Result<ServeConfig> LoadServeConfig(const std::string& path);
Result<ServeConfig> ParseServeConfig(const std::string& text, const std::string& file);

struct ListenAddress {
  std::string host;
  int port = 0;
};
// "HOST:PORT" or "[V6]:PORT"; port 0 picks a free one.
Result<ListenAddress> ParseListen(const std::string& text);

}  // namespace mk::server
