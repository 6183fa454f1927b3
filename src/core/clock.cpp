#include "instance/clock.hpp"

#include <time.h>

#include <condition_variable>
#include <mutex>

namespace instance {

Clock::~Clock() = default;

BootClock::time_point BootClock::now() noexcept {
  struct timespec ts {};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);  // cannot fail: the clock id is valid since Linux 2.6.39
  return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

namespace {

class SystemClock final : public Clock {
 public:
  WallTime wall() override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
  MonoTime monotonic() override { return BootClock::now(); }
  bool sleep_for(Duration d, std::stop_token stop) override {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    return !cv.wait_for(lock, stop, d, [] { return false; });
  }
};

}  // namespace

std::shared_ptr<Clock> system_clock() {
  static const auto clock = std::make_shared<SystemClock>();
  return clock;
}

}  // namespace instance
