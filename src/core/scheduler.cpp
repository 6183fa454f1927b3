#include "instance/scheduler.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace instance {

Scheduler::~Scheduler() = default;

namespace {

// One worker thread; it blocks on a condition variable until the earliest
// task is due, so an idle scheduler never wakes up.
class ThreadScheduler final : public Scheduler {
 public:
  ThreadScheduler() : worker_([this](std::stop_token stop) { run(stop); }) {}

  ~ThreadScheduler() override {
    worker_.request_stop();
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
        cv_.wait_until(lock, stop, due, [&] {
          return !tasks_.empty() && tasks_.begin()->first < due;
        });
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
  std::jthread worker_;  // last: started after, and joined before, the members it uses
};

}  // namespace

std::shared_ptr<Scheduler> thread_scheduler() { return std::make_shared<ThreadScheduler>(); }

}  // namespace instance
