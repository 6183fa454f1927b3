// Shared helpers for the CS3 tests: stores on a gateway test double (the
// logger that keeps every line is support/test_support.hpp's).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gateway_double.hpp"
#include "instance/key.hpp"
#include "instance/logger.hpp"
#include "instance/store.hpp"
#include "instance/stores/cs3.hpp"
#include "support/test_support.hpp"

namespace instance::testing {

// A folder name no other test in this double uses.
inline std::string fresh_folder() {
  static std::atomic<int> n{0};
  return "guard-" + std::to_string(++n);
}

// Options for a store on `gateway` in `folder`, with short timeouts so
// failures end quickly.
inline Cs3StoreOptions options_for(const GatewayDouble& gateway,
                                   const std::string& folder = fresh_folder()) {
  Cs3StoreOptions options;
  options.gateway = gateway.address();
  options.space_id = gateway.space();
  options.folder = folder;
  options.client_id = gateway.options().client_id;
  options.client_secret = gateway.options().client_secret;
  options.call_timeout = std::chrono::milliseconds(5000);
  options.retry_deadline = std::chrono::milliseconds(3000);
  options.initial_backoff = std::chrono::milliseconds(5);
  options.max_backoff = std::chrono::milliseconds(100);
  return options;
}

inline std::shared_ptr<Store> make_store(Cs3StoreOptions options) {
  auto store = make_cs3_store(std::move(options));
  EXPECT_TRUE(store.has_value()) << store.error().message;
  return store ? *store : nullptr;
}

// One double for the whole test process (ctest runs each shard of this
// executable as one process), with a short "processing" window after every
// upload so reads and deletes meet 425 / CODE_TOO_EARLY now and then.
//
// It is stopped when the tests end, not at exit. Its destruction is what
// shuts gRPC down and joins gRPC's threads; at exit that could come after
// OpenSSL's own exit handler, which stops freeing the per-thread state of
// threads that end later, and LeakSanitizer then reports that state as a
// leak (1 run in 4 with both cores busy).
class SharedGateway : public ::testing::Environment {
 public:
  GatewayDouble& gateway() {
    std::call_once(once_, [this] {
      gateway_ = std::make_unique<GatewayDouble>(
          GatewayDoubleOptions{.too_early = std::chrono::milliseconds(2)});
    });
    return *gateway_;
  }
  void TearDown() override { gateway_.reset(); }

 private:
  std::once_flag once_;
  std::unique_ptr<GatewayDouble> gateway_;
};

inline GatewayDouble& shared_gateway() {
  static auto* const shared =
      static_cast<SharedGateway*>(::testing::AddGlobalTestEnvironment(new SharedGateway));
  return shared->gateway();
}

}  // namespace instance::testing
