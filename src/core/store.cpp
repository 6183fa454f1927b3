#include "instance/store.hpp"

#include <algorithm>

#include "instance/time.hpp"

namespace instance {

Store::~Store() = default;

Capabilities Store::capabilities() { return {}; }

Result<std::string> Store::replace_if(const Key& key, std::string_view, std::string_view) {
  return fail(Errc::unsupported,
              "conditional replace of " + key.str() + " is not supported by " + describe());
}

Result<void> Store::remove_if(const Key& key, std::string_view) {
  return fail(Errc::unsupported,
              "conditional remove of " + key.str() + " is not supported by " + describe());
}

Result<LockGrant> Store::lock(const Key& key, Duration, std::string_view) {
  return fail(Errc::unsupported, "locks on " + key.str() + " are not supported by " + describe());
}

Result<Duration> Store::refresh_lock(const Key& key, std::string_view, Duration) {
  return fail(Errc::unsupported, "locks on " + key.str() + " are not supported by " + describe());
}

Result<void> Store::unlock(const Key& key, std::string_view) {
  return fail(Errc::unsupported, "locks on " + key.str() + " are not supported by " + describe());
}

Result<LockHolder> Store::lock_holder(const Key& key) {
  return fail(Errc::unsupported, describe() + " cannot tell who holds the lock on " + key.str());
}

void Store::tune(const StoreTiming&) {}

TunedTimeouts::TunedTimeouts(const StoreTimeouts& made) : made_(made), now_(made) {}

void TunedTimeouts::tune(const StoreTiming& timing, Logger& log, std::string_view store) {
  using std::chrono::milliseconds;
  const auto period = std::chrono::duration_cast<milliseconds>(timing.ttl / 3);
  StoreTimeouts tuned = made_;
  tuned.retry_deadline = std::min(made_.retry_deadline, std::max(milliseconds(1000), period));
  tuned.request_timeout = std::min(made_.request_timeout, tuned.retry_deadline);
  if (tuned.max_clock_skew) tuned.max_clock_skew = timing.max_skew;
  {
    std::lock_guard lock(mu_);
    now_ = tuned;
  }
  log.debug("store timing follows the guard's ttl",
            {{"store", std::string(store)},
             {"ttl", format_duration(timing.ttl)},
             {"retry_deadline", format_duration(tuned.retry_deadline)},
             {"request_timeout", format_duration(tuned.request_timeout)},
             {"max_clock_skew",
              tuned.max_clock_skew ? format_duration(*tuned.max_clock_skew) : "not checked"}});
}

StoreTimeouts TunedTimeouts::get() const {
  std::lock_guard lock(mu_);
  return now_;
}

StoreWrapper::StoreWrapper(std::shared_ptr<Store> target) : target_(std::move(target)) {}

std::string StoreWrapper::describe() const { return target_->describe(); }
Capabilities StoreWrapper::capabilities() { return target_->capabilities(); }
Result<Document> StoreWrapper::get(const Key& key) { return target_->get(key); }
Result<std::string> StoreWrapper::create(const Key& key, std::string_view data) {
  return target_->create(key, data);
}
Result<std::string> StoreWrapper::replace(const Key& key, std::string_view data) {
  return target_->replace(key, data);
}
Result<void> StoreWrapper::remove(const Key& key) { return target_->remove(key); }
Result<std::vector<Key>> StoreWrapper::list(const Key& prefix) { return target_->list(prefix); }
Result<std::string> StoreWrapper::replace_if(const Key& key, std::string_view data,
                                             std::string_view version) {
  return target_->replace_if(key, data, version);
}
Result<void> StoreWrapper::remove_if(const Key& key, std::string_view version) {
  return target_->remove_if(key, version);
}

Result<LockGrant> StoreWrapper::lock(const Key& key, Duration ttl, std::string_view owner) {
  return target_->lock(key, ttl, owner);
}
Result<Duration> StoreWrapper::refresh_lock(const Key& key, std::string_view token, Duration ttl) {
  return target_->refresh_lock(key, token, ttl);
}
Result<void> StoreWrapper::unlock(const Key& key, std::string_view token) {
  return target_->unlock(key, token);
}
Result<LockHolder> StoreWrapper::lock_holder(const Key& key) { return target_->lock_holder(key); }
void StoreWrapper::tune(const StoreTiming& timing) { target_->tune(timing); }

}  // namespace instance
