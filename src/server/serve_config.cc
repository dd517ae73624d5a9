#include "server/serve_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

#include "support/regular_file.h"

namespace mk::server {

namespace {

SourceLoc Loc(const std::string& file, const YAML::Node& node) {
  if (!node.IsDefined()) return SourceLoc{file, 0, 0};
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return SourceLoc{file, 0, 0};
  return SourceLoc{file, mark.line + 1, mark.column + 1};
}

template <typename T>
Result<T> Scalar(const std::string& file, const YAML::Node& node, const std::string& key,
                 const char* what) {
  if (!node.IsScalar()) return InvalidArgument("'" + key + "' must be " + what, Loc(file, node));
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    return InvalidArgument("'" + key + "' must be " + what, Loc(file, node));
  }
}

}  // namespace

Result<ServeConfig> ParseServeConfig(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return InvalidArgument("not YAML: " + e.msg, SourceLoc{file, e.mark.line + 1, e.mark.column + 1});
  }
  ServeConfig config;
  if (root.IsNull()) return config;
  if (!root.IsMap()) return InvalidArgument("the config must be a mapping of settings", Loc(file, root));
  static const std::set<std::string> kKeys = {
      "listen",          "db",           "artifacts",      "threads",
      "audit_key",       "audit_log",    "trusted_proxies", "proxy_header",
      "session_ttl_hours", "secure_cookies", "max_failed_logins"};
  for (const auto& entry : root) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    const YAML::Node& value = entry.second;
    if (!kKeys.count(key)) {
      return InvalidArgument("unknown setting '" + key + "'", Loc(file, entry.first));
    }
    if (key == "trusted_proxies") {
      if (!value.IsSequence()) return InvalidArgument("'trusted_proxies' must be a list of addresses", Loc(file, value));
      for (const auto& item : value) {
        MK_ASSIGN_OR_RETURN(std::string address, Scalar<std::string>(file, item, key, "an address"));
        config.trusted_proxies.push_back(address);
      }
    } else if (key == "threads" || key == "max_failed_logins") {
      MK_ASSIGN_OR_RETURN(int n, Scalar<int>(file, value, key, "a positive integer"));
      if (n < 1) return InvalidArgument("'" + key + "' must be a positive integer", Loc(file, value));
      (key == "threads" ? config.threads : config.max_failed_logins) = n;
    } else if (key == "session_ttl_hours") {
      MK_ASSIGN_OR_RETURN(double hours, Scalar<double>(file, value, key, "a number of hours"));
      if (!(hours > 0) || !std::isfinite(hours)) {
        return InvalidArgument("'session_ttl_hours' must be positive", Loc(file, value));
      }
      config.session_ttl_hours = hours;
    } else if (key == "secure_cookies") {
      MK_ASSIGN_OR_RETURN(bool on, Scalar<bool>(file, value, key, "true or false"));
      config.secure_cookies = on;
    } else {
      MK_ASSIGN_OR_RETURN(std::string text_value, Scalar<std::string>(file, value, key, "a string"));
      if (key == "listen") {
        auto listen = ParseListen(text_value);
        if (!listen.ok()) return InvalidArgument(listen.status().message(), Loc(file, value));
        config.listen = text_value;
      } else if (key == "db") {
        config.db = text_value;
      } else if (key == "artifacts") {
        config.artifacts = text_value;
      } else if (key == "audit_key") {
        config.audit_key = text_value;
      } else if (key == "audit_log") {
        config.audit_log = text_value;
      } else {
        config.proxy_header = text_value;
      }
    }
  }
  return config;
}

Result<ServeConfig> LoadServeConfig(const std::string& path) {
  MK_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, 1 << 20, "a config file"));
  return ParseServeConfig(text, path);
}

Result<ListenAddress> ParseListen(const std::string& text) {
  ListenAddress address;
  size_t colon;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgument("listen address '" + text + "' is not [IPv6]:PORT");
    }
    address.host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidArgument("listen address '" + text + "' is not HOST:PORT");
    }
    address.host = text.substr(0, colon);
  }
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return InvalidArgument("listen address '" + text + "' has no port in 0..65535");
  }
  address.port = std::stoi(port);
  return address;
}

}  // namespace mk::server
