// For store implementations (the store SDK, include/instance/sdk/): a store
// that forwards to another, the base of the wrappers (fault injection,
// request counting).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "instance/export.hpp"
#include "instance/store.hpp"

namespace instance {

// Forwards every call to a target store, so a wrapper (fault injection,
// request counting, latency) overrides only what it changes.
class INSTANCE_EXPORT StoreWrapper : public Store {
 public:
  explicit StoreWrapper(std::shared_ptr<Store> target);

  std::string describe() const override;
  Capabilities capabilities() override;
  Result<Document> get(const Key& key) override;
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override;
  Result<std::vector<std::pair<Key, Result<Document>>>> get_all(const Key& prefix) override;
  Result<std::string> create(const Key& key, std::string_view data) override;
  Result<std::string> replace(const Key& key, std::string_view data) override;
  Result<void> remove(const Key& key) override;
  Result<std::vector<Key>> list(const Key& prefix) override;
  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override;
  Result<void> remove_if(const Key& key, std::string_view version) override;
  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner) override;
  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration ttl) override;
  Result<void> unlock(const Key& key, std::string_view token) override;
  Result<LockHolder> lock_holder(const Key& key) override;
  Result<bool> await_change(const Key& key, Duration timeout, std::stop_token stop) override;
  // The lease operations go to the target when it does them in one request
  // (atomic_lease); otherwise they run Store's defaults on this wrapper, so
  // its lock(), get() and the rest see each step.
  Result<LeaseClaimed> claim_lease(const LeaseClaim& claim) override;
  Result<LeaseRenewed> renew_lease(const LeaseRenewal& renewal) override;
  Result<bool> end_lease(const LeaseEnd& end) override;
  void tune(const StoreTiming& timing) override;

 protected:
  Store& target() const noexcept { return *target_; }
  // Whether the target does the lease operations in one request.
  bool target_atomic_lease() const { return target_->capabilities().atomic_lease; }

 private:
  std::shared_ptr<Store> target_;
};

}  // namespace instance
