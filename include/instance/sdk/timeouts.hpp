// For store implementations (the store SDK, include/instance/sdk/): the one
// rule by which a guard's timing (Store::tune) becomes a network store's
// retry budget, request timeout and clock-skew threshold.
//
// Timing reaches a store by this one channel: Store::tune, called by
// Guard::create with the guard's ttl and max-skew, kept in a TunedTimeouts
// and read by every operation. The start-up budget
// (instance/sdk/startup_budget.hpp) is no second channel: only the attempt
// loop (instance/sdk/attempts.hpp) reads it, to end a chain of retries
// within the time claim() has left; a store's own code never does.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/export.hpp"
#include "instance/logger.hpp"
#include "instance/store.hpp"

namespace instance {

// For store implementations: the timings a network store reads on every
// operation, as the store was made and as a guard tuned them (Store::tune).
struct StoreTimeouts {
  std::chrono::milliseconds retry_deadline;   // all attempts of one operation
  std::chrono::milliseconds request_timeout;  // one attempt (request, command, call)
  // Warn (once) when the server's clock differs from ours by more; nullopt
  // for a store that reads no server clock.
  std::optional<Duration> max_clock_skew;
};

// For store implementations: a store's StoreTimeouts, tuned by one rule for
// every store, so an operation's retries end before the guard's next
// renewal is due:
//   retry_deadline  = min(as made, max(1 s, ttl / 3))
//   request_timeout = min(as made, retry_deadline)
//   max_clock_skew  = the guard's max_skew (what the guard assumes of clocks)
// The timeouts a store was made with are upper bounds a guard only shortens;
// a store no guard tuned keeps them. Thread-safe.
class INSTANCE_EXPORT TunedTimeouts {
 public:
  explicit TunedTimeouts(const StoreTimeouts& made);
  // Applies the rule to `timing` and logs the result at debug, naming `store`.
  void tune(const StoreTiming& timing, Logger& log, std::string_view store);
  StoreTimeouts get() const;

 private:
  const StoreTimeouts made_;
  mutable std::mutex mu_;
  StoreTimeouts now_;
};

}  // namespace instance
