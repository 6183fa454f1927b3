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
//
// The scheduler may be destroyed by one of its own tasks: a task that drops
// the last reference to what owns the scheduler (a claim's state, after
// its Claim went). The workers therefore share the queue with the scheduler
// (State, kept alive by each worker), and the destructor joins every worker
// but the one it runs on, which it detaches: that one returns from its task,
// sees the stop and ends without touching the scheduler.
class ThreadScheduler final : public Scheduler {
 public:
  explicit ThreadScheduler(int workers) : state_(std::make_shared<State>()) {
    for (int i = 0; i < workers; ++i) {
      workers_.emplace_back([state = state_](std::stop_token stop) { state->run(stop); });
    }
  }

  ~ThreadScheduler() override {
    for (auto& w : workers_) w.request_stop();
    {
      std::lock_guard lock(state_->mu);
      state_->tasks.clear();
    }
    state_->cv.notify_all();
    for (auto& w : workers_) {
      if (w.get_id() == std::this_thread::get_id()) {
        w.detach();
      } else if (w.joinable()) {
        w.join();
      }
    }
  }

  TaskId schedule(Duration delay, std::function<void()> task) override {
    std::lock_guard lock(state_->mu);
    const TaskId id = state_->next_id++;
    state_->tasks.emplace(BootClock::now() + delay, Task{id, std::move(task)});
    state_->cv.notify_all();
    return id;
  }

  bool cancel(TaskId id) override {
    std::lock_guard lock(state_->mu);
    for (auto it = state_->tasks.begin(); it != state_->tasks.end(); ++it) {
      if (it->second.id == id) {
        state_->tasks.erase(it);
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

  struct State {
    std::mutex mu;
    std::condition_variable_any cv;
    std::multimap<MonoTime, Task> tasks;
    TaskId next_id = 1;

    void run(std::stop_token stop) {
      std::unique_lock lock(mu);
      while (!stop.stop_requested()) {
        if (tasks.empty()) {
          cv.wait(lock, stop, [&] { return !tasks.empty(); });
          continue;
        }
        const auto due = tasks.begin()->first;
        if (BootClock::now() < due) {
          cv.wait_until(lock, stop, due,
                        [&] { return !tasks.empty() && tasks.begin()->first < due; });
          continue;
        }
        auto fn = std::move(tasks.begin()->second.fn);
        tasks.erase(tasks.begin());
        lock.unlock();
        fn();
        fn = nullptr;  // what the task held goes here, outside the lock
        lock.lock();
      }
    }
  };

  std::shared_ptr<State> state_;
  std::vector<std::jthread> workers_;  // last: started after, joined before, what they use
};

}  // namespace

std::shared_ptr<Scheduler> thread_scheduler() { return std::make_shared<ThreadScheduler>(2); }

}  // namespace instance
