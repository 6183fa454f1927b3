// Time, injected: the guard never reads a clock of its own.
//
// wall() is the calendar time written into records and compared with other
// hosts' records; monotonic() measures intervals (renewal deadlines) and never
// jumps. Both must be safe to call from any thread.
//
// MonoTime is on BootClock (CLOCK_BOOTTIME), not steady_clock
// (CLOCK_MONOTONIC): the two differ only across a suspend of the host (a
// suspended VM, a laptop's sleep), during which CLOCK_MONOTONIC stops and
// CLOCK_BOOTTIME keeps counting. The other hosts' clocks keep counting too,
// so a guard's self-fencing deadline must: on steady_clock, a guard resumed
// after its lease expired elsewhere would believe it still had its whole
// window left.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>

#include "instance/export.hpp"

namespace instance {

using WallTime = std::chrono::sys_time<std::chrono::nanoseconds>;
// CLOCK_BOOTTIME as a std::chrono clock: steady, counting from boot,
// suspends included.
struct BootClock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;
  INSTANCE_EXPORT static time_point now() noexcept;
};

using MonoTime = BootClock::time_point;
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
