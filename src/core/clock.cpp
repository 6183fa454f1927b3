#include "instance/clock.hpp"

#include <condition_variable>
#include <mutex>

namespace instance {

Clock::~Clock() = default;

namespace {

class SystemClock final : public Clock {
 public:
  WallTime wall() override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
  MonoTime monotonic() override { return std::chrono::steady_clock::now(); }
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
