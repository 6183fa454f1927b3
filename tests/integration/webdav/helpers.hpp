// Shared helpers for the WebDAV tests: stores on the test servers and a
// logger that keeps every line.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "instance/key.hpp"
#include "instance/logger.hpp"
#include "instance/store.hpp"
#include "instance/stores/webdav.hpp"
#include "servers.hpp"

namespace instance::testing {

inline Key key(std::string_view escaped) { return Key::parse(escaped).value(); }

// Keeps every line, at every level, formatted as "level message k=v ...".
class CapturingLogger final : public Logger {
 public:
  void log(LogLevel level, std::string_view message, std::span<const LogField> fields) override {
    std::string line = std::string(to_string(level)) + " " + std::string(message);
    for (const auto& f : fields) line += " " + f.key + "=" + f.value;
    std::lock_guard lock(mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::vector<std::string> lines_at(LogLevel level) const {
    std::vector<std::string> out;
    const auto prefix = std::string(to_string(level)) + " ";
    for (auto& l : lines()) {
      if (l.starts_with(prefix)) out.push_back(l);
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// Options for a store in a fresh folder on `server`, with short timeouts so
// failures end quickly.
inline WebDavStoreOptions options_for(const WebDavServer& server,
                                      const std::string& folder = WebDavServer::fresh_folder()) {
  WebDavStoreOptions options;
  options.base_url = server.url() + "/" + folder;
  options.connect_timeout = std::chrono::milliseconds(2000);
  options.request_timeout = std::chrono::milliseconds(10000);
  options.retry_deadline = std::chrono::milliseconds(3000);
  options.initial_backoff = std::chrono::milliseconds(10);
  options.max_backoff = std::chrono::milliseconds(200);
  return options;
}

inline std::shared_ptr<Store> make_store(WebDavStoreOptions options) {
  auto store = make_webdav_store(std::move(options));
  EXPECT_TRUE(store.has_value()) << store.error().message;
  return store ? *store : nullptr;
}

}  // namespace instance::testing
