// Test doubles for time, for this project's tests and for services that test
// their own use of the guard: a clock that moves only when told and a
// scheduler whose tasks run only when the clock is advanced.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "instance/clock.hpp"
#include "instance/export.hpp"
#include "instance/scheduler.hpp"

namespace instance {

// Starts at 2026-01-01T00:00:00Z; thread-safe.
class INSTANCE_EXPORT FakeClock : public Clock {
 public:
  WallTime wall() override;
  MonoTime monotonic() override;
  // Moves both clocks forward by `d` at once, unless `stop` is requested.
  bool sleep_for(Duration d, std::stop_token stop) override;
  // Moves both clocks forward.
  void advance(Duration d);
  // Moves only the wall clock (a step, as NTP might make); may go backwards.
  void set_wall(WallTime t);

 private:
  std::mutex mu_;
  WallTime wall_ = WallTime{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};
  MonoTime mono_{};
};

// Tasks are due at clock.monotonic() + delay and run only inside advance()
// or run_due(), on the calling thread, in due order.
class INSTANCE_EXPORT ManualScheduler : public Scheduler {
 public:
  explicit ManualScheduler(std::shared_ptr<FakeClock> clock);
  TaskId schedule(Duration delay, std::function<void()> task) override;
  bool cancel(TaskId id) override;

  // Advances the clock to each due task in turn and runs it, up to `d`.
  void advance(Duration d);
  // Runs the tasks that are due now; returns how many ran.
  int run_due();
  std::size_t pending() const;
  // The delay until the next task (nullopt when none).
  std::optional<Duration> next_due() const;

 private:
  struct Task {
    TaskId id;
    std::function<void()> fn;
  };
  std::shared_ptr<FakeClock> clock_;
  mutable std::mutex mu_;
  std::multimap<MonoTime, Task> tasks_;
  TaskId next_id_ = 1;
};

}  // namespace instance
