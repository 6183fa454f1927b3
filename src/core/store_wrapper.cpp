#include "instance/sdk/store_wrapper.hpp"

namespace instance {

StoreWrapper::StoreWrapper(std::shared_ptr<Store> target) : target_(std::move(target)) {}

std::string StoreWrapper::describe() const { return target_->describe(); }
Capabilities StoreWrapper::capabilities() { return target_->capabilities(); }
Result<Document> StoreWrapper::get(const Key& key) { return target_->get(key); }
Result<std::vector<Result<Document>>> StoreWrapper::get_many(std::span<const Key> keys) {
  return target_->get_many(keys);
}

Result<std::vector<std::pair<Key, Result<Document>>>> StoreWrapper::get_all(const Key& prefix) {
  return target_->get_all(prefix);
}
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
Result<bool> StoreWrapper::await_change(const Key& key, Duration timeout, std::stop_token stop) {
  return target_->await_change(key, timeout, std::move(stop));
}
Result<LeaseClaimed> StoreWrapper::claim_lease(const LeaseClaim& claim) {
  return target_atomic_lease() ? target_->claim_lease(claim) : Store::claim_lease(claim);
}
Result<LeaseRenewed> StoreWrapper::renew_lease(const LeaseRenewal& renewal) {
  return target_atomic_lease() ? target_->renew_lease(renewal) : Store::renew_lease(renewal);
}
Result<bool> StoreWrapper::end_lease(const LeaseEnd& end) {
  return target_atomic_lease() ? target_->end_lease(end) : Store::end_lease(end);
}
void StoreWrapper::tune(const StoreTiming& timing) { target_->tune(timing); }

}  // namespace instance
