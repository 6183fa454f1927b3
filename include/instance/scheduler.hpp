// Deferred work, injected: renewals are scheduled here, so a test fires them
// by hand instead of sleeping (the original guard injected `After` for this).
//
// Thread safety: schedule() and cancel() may be called from any thread,
// including from inside a running task. cancel() guarantees the task will not
// start after it returns; a task that is already running finishes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "instance/clock.hpp"
#include "instance/export.hpp"

namespace instance {

using TaskId = std::uint64_t;

class INSTANCE_EXPORT Scheduler {
 public:
  virtual ~Scheduler();
  // Runs `task` once, `delay` after now on the monotonic clock.
  virtual TaskId schedule(Duration delay, std::function<void()> task) = 0;
  // Returns true when the task was pending and will now never run.
  virtual bool cancel(TaskId id) = 0;
};

// A scheduler with up to `max_workers` (at least 1) worker threads that sleep
// until the next task is due: no wake-ups while nothing is due. With two (the
// default) tasks may run concurrently, so one task stuck in a slow store call
// never delays another (the self-fencing check); the second thread starts only
// once a task has to wait for a busy first one. With one, tasks run in turn,
// the earliest due first: for an owner that enforces the claim's self-fencing
// deadline itself (Claim::fence_deadline(), as the tool's main thread does), so
// that a late check costs nothing. Destroying it cancels pending tasks and
// joins the threads.
INSTANCE_EXPORT std::shared_ptr<Scheduler> thread_scheduler(std::size_t max_workers = 2);

}  // namespace instance
