// Deferred work, injected: renewals are scheduled here, so a test fires them
// by hand instead of sleeping (the original guard injected `After` for this).
//
// Thread safety: schedule() and cancel() may be called from any thread,
// including from inside a running task. cancel() guarantees the task will not
// start after it returns; a task that is already running finishes.
#pragma once

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

// A scheduler with up to two worker threads that sleep until the next task is
// due: no wake-ups while nothing is due. Tasks may run concurrently (one slow
// task never delays another); the second thread starts only once a task has
// to wait for a busy first one. Destroying it cancels pending tasks and joins the
// threads.
INSTANCE_EXPORT std::shared_ptr<Scheduler> thread_scheduler();

}  // namespace instance
