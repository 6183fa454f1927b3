// For tests that prove calls overlap (a client's requests, a store's
// reads): each call hold()s until `together` calls are inside at once, or
// `patience` passed, so a caller that makes one at a time is slow, not
// stuck; most() is the largest number seen inside at once.
//
// Thread safety: all public members may be called from any thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace instance::testing {

class Overlap {
 public:
  explicit Overlap(int together, std::chrono::milliseconds patience = std::chrono::seconds(5))
      : together_(together), patience_(patience) {}

  void hold() {
    std::unique_lock lock(mu_);
    ++in_;
    most_ = std::max(most_, in_);
    if (in_ >= together_) {
      met_ = true;
      cv_.notify_all();
    }
    cv_.wait_for(lock, patience_, [&] { return met_; });
    --in_;
  }
  int most() const {
    std::lock_guard lock(mu_);
    return most_;
  }

 private:
  const int together_;
  const std::chrono::milliseconds patience_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int in_ = 0;
  int most_ = 0;
  bool met_ = false;
};

}  // namespace instance::testing
