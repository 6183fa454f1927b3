// The retries of a network store whose server cannot be reached (a closed
// loopback port), on a FakeClock: nothing sleeps. Every network store retries
// with net::Retry, so the same suite holds for each: the pauses and the
// deadline run on the store's injected clock; a start-up budget ends the
// chain by its own deadline and hears every retry; the guard's ttl bounds a
// chain (Store::tune); a guard starting on such a store logs each retry at
// info, naming the endpoint.
//
// A store family instantiates it in its test executable (which also builds
// tests/support/unreachable_retries.cpp):
//
//   INSTANTIATE_TEST_SUITE_P(Redis, UnreachableRetries,
//                            ::testing::Values(UnreachableStore{"redis", make, endpoint}));
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "instance/clock.hpp"
#include "instance/logger.hpp"
#include "instance/store.hpp"

namespace instance::testing {

// How the suite makes a store.
struct UnreachableSettings {
  std::shared_ptr<Clock> clock;                     // retries run on it
  std::chrono::milliseconds retry_deadline{10000};  // as made (before any guard)
  std::chrono::milliseconds max_backoff{1000};
  std::shared_ptr<Logger> logger;
};

struct UnreachableStore {
  std::string family;  // the test name's suffix: "redis"
  // A store whose server is at a closed loopback port.
  std::function<std::shared_ptr<Store>(const UnreachableSettings&)> make;
  // What every error and retry notice names: "127.0.0.1:<port>".
  std::string endpoint;
};

class UnreachableRetries : public ::testing::TestWithParam<UnreachableStore> {};

}  // namespace instance::testing
