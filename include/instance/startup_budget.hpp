// One start-up budget for the stores' retry loops.
//
// While a StartupBudget lives on a thread, every store operation that thread
// starts stops retrying by deadline() (a time on the monotonic clock the
// stores use: the system clock in the tool), so the guard's start-up timeout
// (GuardOptions::startup_timeout) is the one budget from `run` to claimed,
// refused or unreachable: the stores' retry loops add no budget of their own
// on top. An operation makes at least one attempt, and a request under way
// finishes (at most one request timeout past the deadline). Each retry a
// store makes inside the budget is reported to on_retry (the guard logs it).
//
// Budgets nest (the innermost is current) and belong to their thread: the
// guard opens one around claim(); store operations on other threads (the
// renewals) never see it. Not copyable, not movable.
#pragma once

#include <functional>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/export.hpp"

namespace instance {

// A store's retry inside a start-up budget.
struct RetryNotice {
  std::string_view error;  // the failed attempt's error (redacted: endpoints only)
  int attempt = 0;         // attempts made so far by this operation
  Duration pause{};        // until the next attempt
};

class INSTANCE_EXPORT StartupBudget {
 public:
  StartupBudget(MonoTime deadline, std::function<void(const RetryNotice&)> on_retry);
  ~StartupBudget();
  StartupBudget(const StartupBudget&) = delete;
  StartupBudget& operator=(const StartupBudget&) = delete;

  // The innermost budget of this thread; null outside any.
  static const StartupBudget* current() noexcept;

  MonoTime deadline() const noexcept { return deadline_; }
  // Tells on_retry (when set) about a retry.
  void retrying(const RetryNotice& notice) const;

 private:
  const MonoTime deadline_;
  const std::function<void(const RetryNotice&)> on_retry_;
  const StartupBudget* const outer_;
};

}  // namespace instance
