// Loggers that write to stderr, one line per message, for the tool's
// --log-format (text or json) and --log-level.
//
// Text:  instance-guard: 2026-11-29T11:47:21.858Z info: claimed id=abc ttl=2m0s
// JSON:  {"time":"2026-11-29T11:47:21.858Z","level":"info","msg":"claimed","id":"abc",...}
//
// Thread-safe: the guard logs renewals from its scheduler thread while the
// main thread logs signals. Each line goes out in one write(2). Values are
// written as given: callers pass endpoints through redact_url() and never pass
// a secret (the library promises the same for what it logs).
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "instance/logger.hpp"

namespace instance::cli {

enum class LogFormat { text, json };

// "text" or "json"; nullopt otherwise.
std::optional<LogFormat> parse_log_format(std::string_view text) noexcept;

// "debug", "info", "warn" (or "warning"), "error"; nullopt otherwise.
std::optional<LogLevel> parse_log_level(std::string_view text) noexcept;

// A logger writing messages at `min_level` and above to stderr.
std::shared_ptr<Logger> make_stderr_logger(LogFormat format, LogLevel min_level);

}  // namespace instance::cli
