#include "instance/sdk/timeouts.hpp"

#include <algorithm>

#include "instance/time.hpp"

namespace instance {

TunedTimeouts::TunedTimeouts(const StoreTimeouts& made) : made_(made), now_(made) {}

void TunedTimeouts::tune(const StoreTiming& timing, Logger& log, std::string_view store) {
  using std::chrono::milliseconds;
  const auto period = std::chrono::duration_cast<milliseconds>(timing.ttl / 3);
  StoreTimeouts tuned = made_;
  tuned.retry_deadline = std::min(made_.retry_deadline, std::max(milliseconds(1000), period));
  tuned.request_timeout = std::min(made_.request_timeout, tuned.retry_deadline);
  if (tuned.max_clock_skew) tuned.max_clock_skew = timing.max_skew;
  {
    std::lock_guard lock(mu_);
    now_ = tuned;
  }
  log.debug("store timing follows the guard's ttl",
            {{"store", std::string(store)},
             {"ttl", format_duration(timing.ttl)},
             {"retry_deadline", format_duration(tuned.retry_deadline)},
             {"request_timeout", format_duration(tuned.request_timeout)},
             {"max_clock_skew",
              tuned.max_clock_skew ? format_duration(*tuned.max_clock_skew) : "not checked"}});
}

StoreTimeouts TunedTimeouts::get() const {
  std::lock_guard lock(mu_);
  return now_;
}

}  // namespace instance
