// Logging through a small injectable interface.
//
// The guard logs what it decides (claimed, refused, renewed, lost) with
// key/value fields. The default logger discards everything. Nothing the
// library logs contains a credential: endpoints pass through redact_url().
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "instance/export.hpp"

namespace instance {

enum class LogLevel { debug, info, warn, error };

INSTANCE_EXPORT std::string_view to_string(LogLevel level) noexcept;

struct LogField {
  std::string key;
  std::string value;
};

class INSTANCE_EXPORT Logger {
 public:
  virtual ~Logger();
  virtual void log(LogLevel level, std::string_view message, std::span<const LogField> fields) = 0;

  void debug(std::string_view m, std::initializer_list<LogField> f = {}) {
    log(LogLevel::debug, m, {f.begin(), f.size()});
  }
  void info(std::string_view m, std::initializer_list<LogField> f = {}) {
    log(LogLevel::info, m, {f.begin(), f.size()});
  }
  void warn(std::string_view m, std::initializer_list<LogField> f = {}) {
    log(LogLevel::warn, m, {f.begin(), f.size()});
  }
  void error(std::string_view m, std::initializer_list<LogField> f = {}) {
    log(LogLevel::error, m, {f.begin(), f.size()});
  }
};

// A logger that discards everything.
INSTANCE_EXPORT std::shared_ptr<Logger> null_logger();

// Removes user info (user:password@) and sensitive query parameters
// (anything named like token, password, secret, key, auth) from a URL.
INSTANCE_EXPORT std::string redact_url(std::string_view url);

}  // namespace instance
