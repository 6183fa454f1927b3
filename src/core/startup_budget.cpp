#include "instance/sdk/startup_budget.hpp"

#include <algorithm>

namespace instance {
namespace {

thread_local const StartupBudget* innermost = nullptr;

}  // namespace

StartupBudget::StartupBudget(Clock& clock, Duration length,
                             std::function<void(const RetryNotice&)> on_retry)
    : clock_(clock),
      deadline_(clock.monotonic() + length),
      on_retry_(std::move(on_retry)),
      outer_(innermost) {
  innermost = this;
}

Duration StartupBudget::remaining() const {
  return std::max(Duration::zero(), deadline_ - clock_.monotonic());
}

StartupBudget::~StartupBudget() { innermost = outer_; }

const StartupBudget* StartupBudget::current() noexcept { return innermost; }

void StartupBudget::retrying(const RetryNotice& notice) const {
  if (on_retry_) on_retry_(notice);
}

}  // namespace instance
