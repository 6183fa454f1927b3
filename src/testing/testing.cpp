#include "instance/testing.hpp"

namespace instance {

WallTime FakeClock::wall() {
  std::lock_guard lock(mu_);
  return wall_;
}

MonoTime FakeClock::monotonic() {
  std::lock_guard lock(mu_);
  return mono_;
}

bool FakeClock::sleep_for(Duration d, std::stop_token stop) {
  if (stop.stop_requested()) return false;
  advance(d);
  return true;
}

void FakeClock::advance(Duration d) {
  std::lock_guard lock(mu_);
  wall_ += d;
  mono_ += d;
}

void FakeClock::set_wall(WallTime t) {
  std::lock_guard lock(mu_);
  wall_ = t;
}

ManualScheduler::ManualScheduler(std::shared_ptr<FakeClock> clock) : clock_(std::move(clock)) {}

TaskId ManualScheduler::schedule(Duration delay, std::function<void()> task) {
  std::lock_guard lock(mu_);
  const TaskId id = next_id_++;
  tasks_.emplace(clock_->monotonic() + delay, Task{id, std::move(task)});
  return id;
}

bool ManualScheduler::cancel(TaskId id) {
  std::lock_guard lock(mu_);
  for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
    if (it->second.id == id) {
      tasks_.erase(it);
      return true;
    }
  }
  return false;
}

int ManualScheduler::run_due() {
  int ran = 0;
  while (true) {
    std::function<void()> fn;
    {
      std::lock_guard lock(mu_);
      if (tasks_.empty() || tasks_.begin()->first > clock_->monotonic()) return ran;
      fn = std::move(tasks_.begin()->second.fn);
      tasks_.erase(tasks_.begin());
    }
    fn();  // outside the lock: a task may schedule or cancel
    ++ran;
  }
}

void ManualScheduler::advance(Duration d) {
  const MonoTime end = clock_->monotonic() + d;
  while (true) {
    run_due();
    MonoTime next;
    {
      std::lock_guard lock(mu_);
      if (tasks_.empty() || tasks_.begin()->first > end) break;
      next = tasks_.begin()->first;
    }
    clock_->advance(next - clock_->monotonic());
  }
  // A task may have moved the clock past `end` itself: never back.
  if (const MonoTime now = clock_->monotonic(); now < end) clock_->advance(end - now);
  run_due();
}

std::size_t ManualScheduler::pending() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

std::optional<Duration> ManualScheduler::next_due() const {
  std::lock_guard lock(mu_);
  if (tasks_.empty()) return std::nullopt;
  return tasks_.begin()->first - clock_->monotonic();
}

}  // namespace instance
