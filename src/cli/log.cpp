#include "log.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "instance/clock.hpp"
#include "instance/time.hpp"

namespace instance::cli {

namespace {

// Now, in RFC 3339 UTC with exactly three fractional digits (fixed width, so
// text lines align): "2026-11-29T11:47:21.050Z".
std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto secs = std::chrono::floor<std::chrono::seconds>(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now - secs).count();
  std::string text = format_rfc3339(std::chrono::time_point_cast<Duration>(secs));
  text.pop_back();                                           // the 'Z'
  const std::string digits = std::to_string(1000 + millis);  // "1050"
  return text + "." + digits.substr(1) + "Z";
}

// logfmt quoting: bare when the value is a plain word, else a JSON string.
std::string logfmt_value(std::string_view value) {
  const bool bare = !value.empty() && value.find_first_of(" \t\r\n\"=\\") == std::string_view::npos;
  if (bare) return std::string(value);
  return nlohmann::json(std::string(value))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Writes the whole line to stderr, retrying short writes; errors are dropped
// (there is nowhere left to report them).
void write_stderr(std::string_view line) {
  while (!line.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    line.remove_prefix(static_cast<std::size_t>(n));
  }
}

class StderrLogger final : public Logger {
 public:
  StderrLogger(LogFormat format, LogLevel min_level) : format_(format), min_level_(min_level) {}

  void log(LogLevel level, std::string_view message, std::span<const LogField> fields) override {
    if (level < min_level_) return;
    std::string line = format_ == LogFormat::json ? json_line(level, message, fields)
                                                  : text_line(level, message, fields);
    line += '\n';
    std::lock_guard lock(mu_);
    write_stderr(line);
  }

 private:
  static std::string text_line(LogLevel level, std::string_view message,
                               std::span<const LogField> fields) {
    std::string line = "instance-guard: " + timestamp() + " " + std::string(to_string(level)) +
                       ": " + std::string(message);
    for (const auto& field : fields) {
      line += ' ';
      line += field.key;
      line += '=';
      line += logfmt_value(field.value);
    }
    return line;
  }

  static std::string json_line(LogLevel level, std::string_view message,
                               std::span<const LogField> fields) {
    nlohmann::ordered_json line;
    line["time"] = timestamp();
    line["level"] = to_string(level);
    line["msg"] = message;
    for (const auto& field : fields) {
      // A field never overwrites time, level or msg.
      const std::string key = line.contains(field.key) ? "field." + field.key : field.key;
      line[key] = field.value;
    }
    return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  const LogFormat format_;
  const LogLevel min_level_;
  std::mutex mu_;
};

}  // namespace

std::optional<LogFormat> parse_log_format(std::string_view text) noexcept {
  if (text == "text") return LogFormat::text;
  if (text == "json") return LogFormat::json;
  return std::nullopt;
}

std::optional<LogLevel> parse_log_level(std::string_view text) noexcept {
  if (text == "debug") return LogLevel::debug;
  if (text == "info") return LogLevel::info;
  if (text == "warn" || text == "warning") return LogLevel::warn;
  if (text == "error") return LogLevel::error;
  return std::nullopt;
}

std::shared_ptr<Logger> make_stderr_logger(LogFormat format, LogLevel min_level) {
  return std::make_shared<StderrLogger>(format, min_level);
}

}  // namespace instance::cli
