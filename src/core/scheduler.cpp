#include "instance/scheduler.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace instance {

Scheduler::~Scheduler() = default;

namespace {

// Worker threads that block on a condition variable until the earliest task
// is due, so an idle scheduler never wakes up. Two workers, so one task stuck
// in a slow store call (a renewal) cannot hold back another that must run on
// time (the self-fencing check).
class ThreadScheduler final : public Scheduler {
 public:
  explicit ThreadScheduler(int workers) {
    for (int i = 0; i < workers; ++i) {
      workers_.emplace_back([this](std::stop_token stop) { run(stop); });
    }
  }

  ~ThreadScheduler() override {
    for (auto& w : workers_) w.request_stop();
    {
      std::lock_guard lock(mu_);
      tasks_.clear();
    }
    cv_.notify_all();
  }

  TaskId schedule(Duration delay, std::function<void()> task) override {
    std::lock_guard lock(mu_);
    const TaskId id = next_id_++;
    tasks_.emplace(std::chrono::steady_clock::now() + delay, Task{id, std::move(task)});
    cv_.notify_all();
    return id;
  }

  bool cancel(TaskId id) override {
    std::lock_guard lock(mu_);
    for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
      if (it->second.id == id) {
        tasks_.erase(it);
        return true;
      }
    }
    return false;
  }

 private:
  struct Task {
    TaskId id;
    std::function<void()> fn;
  };

  void run(std::stop_token stop) {
    std::unique_lock lock(mu_);
    while (!stop.stop_requested()) {
      if (tasks_.empty()) {
        cv_.wait(lock, stop, [&] { return !tasks_.empty(); });
        continue;
      }
      const auto due = tasks_.begin()->first;
      if (std::chrono::steady_clock::now() < due) {
        cv_.wait_until(lock, stop, due,
                       [&] { return !tasks_.empty() && tasks_.begin()->first < due; });
        continue;
      }
      auto fn = std::move(tasks_.begin()->second.fn);
      tasks_.erase(tasks_.begin());
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable_any cv_;
  std::multimap<MonoTime, Task> tasks_;
  TaskId next_id_ = 1;
  std::vector<std::jthread> workers_;  // last: started after, joined before, what they use
};

}  // namespace

std::shared_ptr<Scheduler> thread_scheduler() { return std::make_shared<ThreadScheduler>(2); }

}  // namespace instance
