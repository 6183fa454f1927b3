// Store SDK. The retry policy of every network store (WebDAV, CS3, etcd, Redis,
// PostgreSQL): exponential backoff with equal jitter under one deadline per
// operation chain, on the injected Clock. Its own library, instance_retry,
// free of any client library (src/net/CMakeLists.txt).
//
// A Retry lives for one operation (a store call and all its attempts). Its
// deadline is fixed when it is made: now + policy.deadline, or now + the
// time the current StartupBudget has left (instance/sdk/startup_budget.hpp)
// when that is less, so a start-up budget bounds every store's retries
// whatever clock each runs on. Each attempt
// asks begin_attempt() for its timeout; after a failure a retry may cure,
// next_pause() gives the pause before the next attempt (half the current
// backoff fixed, half drawn from a generator seeded by `seed`, so a seed
// replays the same pauses), doubling the backoff up to max_backoff, or
// nullopt when the next attempt would begin at or past the deadline: give
// up. wait() sleeps on the clock, so a FakeClock runs a whole chain without
// waiting.
//
// Not thread-safe: one Retry per operation, on one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <stop_token>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/sdk/startup_budget.hpp"

namespace instance::net {

struct RetryPolicy {
  std::chrono::milliseconds initial_backoff{50};  // the first pause before jitter
  std::chrono::milliseconds max_backoff{2000};    // the cap on the backoff
  std::chrono::milliseconds deadline{20000};      // all attempts of one operation
};

class Retry {
 public:
  Retry(const RetryPolicy& policy, Clock& clock, std::uint64_t seed);

  // Counts an attempt and returns its timeout: `cap` for the first; for a
  // later one the time left before the deadline, clamped to [floor, cap].
  // The floor (200 ms unless given) keeps a last attempt long enough to get
  // an answer: one cut to a few milliseconds would end the chain in a
  // timeout of our own making instead of the server's real reply (seen
  // under ASan: "timeout" instead of "HTTP 500"). The chain may so end up
  // to one floor past its deadline.
  std::chrono::milliseconds begin_attempt(
      std::chrono::milliseconds cap,
      std::chrono::milliseconds floor = std::chrono::milliseconds(200));
  // Attempts begun so far.
  int attempts() const noexcept { return attempts_; }
  // The pause before the next attempt, or nullopt to give up (see above).
  std::optional<Duration> next_pause();
  // Reports the coming retry to the current StartupBudget (if any), then
  // sleeps `pause` on the clock; false when `stop` was requested first.
  // `error` is the failed attempt's error, already redacted.
  bool wait(Duration pause, std::string_view error, std::stop_token stop = {});
  // The time left before the deadline (zero once past it).
  Duration remaining() const;

 private:
  Clock& clock_;
  const StartupBudget* const budget_;
  const MonoTime deadline_;
  const Duration max_backoff_;
  Duration backoff_;
  int attempts_ = 0;
  std::mt19937_64 random_;
};

// A seed from std::random_device, for stores (tests pass their own).
std::uint64_t random_seed();

}  // namespace instance::net
