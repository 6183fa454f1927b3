#include "instance/sdk/retry.hpp"

#include <algorithm>

namespace instance::net {

using std::chrono::milliseconds;

Retry::Retry(const RetryPolicy& policy, Clock& clock, std::uint64_t seed)
    : clock_(clock),
      budget_(StartupBudget::current()),
      deadline_(clock.monotonic() + (budget_
                                         ? std::min<Duration>(policy.deadline, budget_->remaining())
                                         : policy.deadline)),
      max_backoff_(std::max(policy.max_backoff, milliseconds(1))),
      backoff_(std::clamp<Duration>(policy.initial_backoff, milliseconds(1), max_backoff_)),
      random_(seed) {}

milliseconds Retry::begin_attempt(milliseconds cap, milliseconds floor) {
  ++attempts_;
  if (attempts_ == 1) return cap;
  const auto left = std::chrono::duration_cast<milliseconds>(remaining());
  return std::clamp(left, std::min(floor, cap), cap);
}

std::optional<Duration> Retry::next_pause() {
  const Duration half = backoff_ / 2;
  const Duration pause = half + Duration(std::uniform_int_distribution<Duration::rep>(
                                    0, (backoff_ - half).count())(random_));
  backoff_ = std::min(backoff_ * 2, max_backoff_);
  if (clock_.monotonic() + pause >= deadline_) return std::nullopt;
  return pause;
}

bool Retry::wait(Duration pause, std::string_view error, std::stop_token stop) {
  if (budget_) budget_->retrying({.error = error, .attempt = attempts_, .pause = pause});
  return clock_.sleep_for(pause, std::move(stop));
}

Duration Retry::remaining() const {
  return std::max(Duration::zero(), deadline_ - clock_.monotonic());
}

std::uint64_t random_seed() {
  std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device();
}

}  // namespace instance::net
