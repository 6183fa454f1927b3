// One start-up budget for the stores' retry loops.
//
// While a StartupBudget lives on a thread, every store operation that thread
// starts stops retrying once remaining() has run out, so the guard's start-up timeout
// (GuardOptions::startup_timeout) is the one budget from `run` to claimed,
// refused or unreachable: the stores' retry loops add no budget of their own
// on top. An operation makes at least one attempt, and a request under way
// finishes (at most one request timeout past the deadline). Each retry a
// store makes inside the budget is reported to on_retry (the guard logs it).
//
// The budget is kept on its own clock (the guard's) and handed out as time
// left, never as a point in time: a store may run on another clock (a
// test's fake clock beside the system clock, or the reverse), and a point
// on one clock means nothing on the other. Before, a guard on a fake clock
// gave a store on the system clock a deadline long past: no retries at all.
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
  // Runs out `length` from now on `clock`, which must outlive the budget.
  StartupBudget(Clock& clock, Duration length, std::function<void(const RetryNotice&)> on_retry);
  ~StartupBudget();
  StartupBudget(const StartupBudget&) = delete;
  StartupBudget& operator=(const StartupBudget&) = delete;

  // The innermost budget of this thread; null outside any.
  static const StartupBudget* current() noexcept;

  // Time left, on the budget's clock; zero once it has run out. A store
  // adds it to its own clock's now.
  Duration remaining() const;
  // Tells on_retry (when set) about a retry.
  void retrying(const RetryNotice& notice) const;

 private:
  Clock& clock_;
  const MonoTime deadline_;  // on clock_
  const std::function<void(const RetryNotice&)> on_retry_;
  const StartupBudget* const outer_;
};

}  // namespace instance
