#include "instance/logger.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace instance {

Logger::~Logger() = default;

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warn";
    case LogLevel::error:
      return "error";
  }
  return "unknown";
}

namespace {

class NullLogger final : public Logger {
 public:
  void log(LogLevel, std::string_view, std::span<const LogField>) override {}
};

bool sensitive_name(std::string_view name) {
  std::string lower(name);
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return std::tolower(c); });
  constexpr std::array<std::string_view, 8> kWords = {"token", "passw", "secret",     "key",
                                                      "auth",  "sig",   "credential", "pwd"};
  return std::ranges::any_of(
      kWords, [&](std::string_view w) { return lower.find(w) != std::string::npos; });
}

}  // namespace

std::shared_ptr<Logger> null_logger() {
  static const auto logger = std::make_shared<NullLogger>();
  return logger;
}

std::string redact_url(std::string_view url) {
  std::string out(url);
  // User info: scheme://user:password@host. A password may hold '/', '?' or
  // '#' unescaped, so everything up to the last '@' goes: an '@' in a path
  // costs some of the message, never the secret.
  if (const auto scheme_end = out.find("://"); scheme_end != std::string::npos) {
    const auto authority_start = scheme_end + 3;
    const auto at = out.rfind('@');
    if (at != std::string::npos && at >= authority_start) {
      out.replace(authority_start, at + 1 - authority_start, "REDACTED@");
    }
  }
  // query parameters with sensitive names
  const auto query = out.find('?');
  if (query == std::string::npos) return out;
  std::string result = out.substr(0, query + 1);
  std::string_view rest = std::string_view(out).substr(query + 1);
  const auto fragment = rest.find('#');
  std::string_view tail = fragment == std::string_view::npos ? "" : rest.substr(fragment);
  rest = rest.substr(0, fragment);
  bool first = true;
  while (!rest.empty() || first) {
    const auto amp = rest.find('&');
    const auto param = rest.substr(0, amp);
    if (!first) result += '&';
    first = false;
    const auto eq = param.find('=');
    if (eq != std::string_view::npos && sensitive_name(param.substr(0, eq))) {
      result.append(param.substr(0, eq)).append("=REDACTED");
    } else {
      result.append(param);
    }
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return result + std::string(tail);
}

}  // namespace instance
