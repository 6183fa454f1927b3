#include "instance/scheduler.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace instance {

Scheduler::~Scheduler() = default;

namespace {

// Worker threads that block on a condition variable until the earliest task
// is due, so an idle scheduler never wakes up. Up to two workers (by default), so one task
// stuck in a slow store call (a renewal) cannot hold back another that must
// run on time (the self-fencing check). They start when needed, not before:
// the first at the first schedule(), the second only when a task is due or
// waiting while no worker is free to watch it (one starts a task with others
// queued, or schedule() finds every worker busy). A guard that claims and
// stands down before its first renewal starts one thread, not two.
//
// The scheduler may be destroyed by one of its own tasks: a task that drops
// the last reference to what owns the scheduler (a claim's state, after
// its Claim went). The workers therefore share the queue with the scheduler
// (State, kept alive by each worker), and the destructor joins every worker
// but the one it runs on, which it detaches: that one returns from its task,
// sees the stop and ends without touching the scheduler.
class ThreadScheduler final : public Scheduler {
 public:
  explicit ThreadScheduler(std::size_t workers) : state_(std::make_shared<State>()) {
    state_->max_workers = workers;
  }

  ~ThreadScheduler() override {
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(state_->mu);
      state_->stopping = true;
      state_->tasks.clear();
      workers.swap(state_->workers);  // none start once stopping is set
    }
    state_->cv.notify_all();
    for (auto& w : workers) {
      if (w.get_id() == std::this_thread::get_id()) {
        w.detach();
      } else {
        w.join();
      }
    }
  }

  TaskId schedule(Duration delay, std::function<void()> task) override {
    TaskId id;
    {
      std::lock_guard lock(state_->mu);
      id = state_->next_id++;
      state_->tasks.emplace(BootClock::now() + delay, Task{id, std::move(task)});
      if (state_->idle == 0) state_->start_worker();
    }
    // After the lock is let go, so a worker it wakes does not block on it.
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

  struct State : std::enable_shared_from_this<State> {
    std::mutex mu;
    std::condition_variable cv;
    std::multimap<MonoTime, Task> tasks;
    TaskId next_id = 1;
    std::vector<std::thread> workers;
    std::size_t max_workers = 1;
    std::size_t idle = 0;  // workers not running a task
    bool stopping = false;

    // Under `mu`: one more worker, unless there are enough or we are stopping.
    void start_worker() {
      if (stopping || workers.size() >= max_workers) return;
      workers.emplace_back([self = shared_from_this()] { self->run(); });
      ++idle;  // until it takes a task
    }

    void run() {
      std::unique_lock lock(mu);
      while (!stopping) {
        if (tasks.empty()) {
          cv.wait(lock, [&] { return stopping || !tasks.empty(); });
          continue;
        }
        const auto due = tasks.begin()->first;
        if (BootClock::now() < due) {
          cv.wait_until(lock, due,
                        [&] { return stopping || (!tasks.empty() && tasks.begin()->first < due); });
          continue;
        }
        auto fn = std::move(tasks.begin()->second.fn);
        tasks.erase(tasks.begin());
        --idle;
        // Others wait: someone must watch their time while this one runs.
        if (!tasks.empty() && idle == 0) start_worker();
        lock.unlock();
        fn();
        fn = nullptr;  // what the task held goes here, outside the lock
        lock.lock();
        ++idle;
      }
    }
  };

  std::shared_ptr<State> state_;
};

}  // namespace

std::shared_ptr<Scheduler> thread_scheduler(std::size_t max_workers) {
  return std::make_shared<ThreadScheduler>(std::max<std::size_t>(max_workers, 1));
}

}  // namespace instance
