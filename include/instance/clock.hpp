// Time, injected: the guard never reads a clock of its own.
//
// wall() is the calendar time written into records and compared with other
// hosts' records; monotonic() measures intervals (renewal deadlines) and never
// jumps. Both must be safe to call from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <stop_token>

#include "instance/export.hpp"

namespace instance {

using WallTime = std::chrono::sys_time<std::chrono::nanoseconds>;
using MonoTime = std::chrono::steady_clock::time_point;
using Duration = std::chrono::nanoseconds;

class INSTANCE_EXPORT Clock {
 public:
  virtual ~Clock();
  virtual WallTime wall() = 0;
  virtual MonoTime monotonic() = 0;
  // Waits `d` (a fake clock just moves forward). Returns false, early, when
  // `stop` is requested.
  virtual bool sleep_for(Duration d, std::stop_token stop) = 0;
};

// The system clocks.
INSTANCE_EXPORT std::shared_ptr<Clock> system_clock();

}  // namespace instance
