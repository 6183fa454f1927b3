// Shared helpers for the WebDAV tests: stores on the test servers (the
// logger that keeps every line is support/test_support.hpp's).
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
#include "support/test_support.hpp"

namespace instance::testing {

// A server a parameterised test runs against: its name (the tests' suffix)
// and the function that starts it once.
struct ServerParam {
  std::string name;
  WebDavServer& (*server)();
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

// The errors of a list, a get, a write and a remove on `s`: what a store
// with credentials the server refuses answers to each (the authentication
// tests expect four, each a permission error).
inline std::vector<Error> errors_of_every_operation(Store& s) {
  std::vector<Error> errors;
  if (auto r = s.list(key("instances")); !r) errors.push_back(r.error());
  if (auto r = s.get(key("instances/a")); !r) errors.push_back(r.error());
  if (auto r = s.replace(key("instances/a"), "x"); !r) errors.push_back(r.error());
  if (auto r = s.remove(key("instances/a")); !r) errors.push_back(r.error());
  return errors;
}

}  // namespace instance::testing
