#include "instance/startup_budget.hpp"

namespace instance {
namespace {

thread_local const StartupBudget* innermost = nullptr;

}  // namespace

StartupBudget::StartupBudget(MonoTime deadline, std::function<void(const RetryNotice&)> on_retry)
    : deadline_(deadline), on_retry_(std::move(on_retry)), outer_(innermost) {
  innermost = this;
}

StartupBudget::~StartupBudget() { innermost = outer_; }

const StartupBudget* StartupBudget::current() noexcept { return innermost; }

void StartupBudget::retrying(const RetryNotice& notice) const {
  if (on_retry_) on_retry_(notice);
}

}  // namespace instance
