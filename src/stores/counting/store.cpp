#include "instance/sdk/store_wrapper.hpp"
#include "instance/stores/counting.hpp"

namespace instance {

std::uint64_t RequestCounts::total() const noexcept {
  std::uint64_t n = 0;
  for (auto c : by_op) n += c;
  return n;
}

std::uint64_t RequestCounts::writes() const noexcept {
  return (*this)[StoreOp::create] + (*this)[StoreOp::replace] + (*this)[StoreOp::replace_if];
}

std::uint64_t RequestCounts::removes() const noexcept {
  return (*this)[StoreOp::remove] + (*this)[StoreOp::remove_if];
}

std::uint64_t RequestCounts::lock_ops() const noexcept {
  return (*this)[StoreOp::lock] + (*this)[StoreOp::refresh_lock] + (*this)[StoreOp::unlock];
}

RequestCounts RequestCounts::operator-(const RequestCounts& earlier) const noexcept {
  RequestCounts out;
  for (std::size_t i = 0; i < by_op.size(); ++i) out.by_op[i] = by_op[i] - earlier.by_op[i];
  return out;
}

std::string RequestCounts::str() const {
  std::string out;
  for (std::size_t i = 0; i < by_op.size(); ++i) {
    if (by_op[i] == 0) continue;
    if (!out.empty()) out += ' ';
    out += std::string(to_string(static_cast<StoreOp>(i))) + "=" + std::to_string(by_op[i]);
  }
  return out.empty() ? "none" : out;
}

CountingStore::CountingStore(std::shared_ptr<Store> target) : StoreWrapper(std::move(target)) {}

RequestCounts CountingStore::counts() const noexcept {
  RequestCounts out;
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    out.by_op[i] = calls_[i].load(std::memory_order_relaxed);
  }
  return out;
}

void CountingStore::reset() noexcept {
  for (auto& c : calls_) c.store(0, std::memory_order_relaxed);
}

Result<Document> CountingStore::get(const Key& key) {
  count(StoreOp::get);
  return StoreWrapper::get(key);
}

Result<std::vector<Result<Document>>> CountingStore::get_many(std::span<const Key> keys) {
  count(StoreOp::get_many);
  return StoreWrapper::get_many(keys);
}

// The target's get_all(): its one request when it has prefix_reads; else
// Store's default on the target, whose list() and get_many() are not
// counted again (a store without prefix_reads is never asked by the guard).
Result<std::vector<std::pair<Key, Result<Document>>>> CountingStore::get_all(const Key& prefix) {
  count(StoreOp::get_all);
  return StoreWrapper::get_all(prefix);
}

Result<std::string> CountingStore::create(const Key& key, std::string_view data) {
  count(StoreOp::create);
  return StoreWrapper::create(key, data);
}

Result<std::string> CountingStore::replace(const Key& key, std::string_view data) {
  count(StoreOp::replace);
  return StoreWrapper::replace(key, data);
}

Result<void> CountingStore::remove(const Key& key) {
  count(StoreOp::remove);
  return StoreWrapper::remove(key);
}

Result<std::vector<Key>> CountingStore::list(const Key& prefix) {
  count(StoreOp::list);
  return StoreWrapper::list(prefix);
}

Result<std::string> CountingStore::replace_if(const Key& key, std::string_view data,
                                              std::string_view version) {
  count(StoreOp::replace_if);
  return StoreWrapper::replace_if(key, data, version);
}

Result<void> CountingStore::remove_if(const Key& key, std::string_view version) {
  count(StoreOp::remove_if);
  return StoreWrapper::remove_if(key, version);
}

Result<LockGrant> CountingStore::lock(const Key& key, Duration ttl, std::string_view owner) {
  count(StoreOp::lock);
  return StoreWrapper::lock(key, ttl, owner);
}

Result<Duration> CountingStore::refresh_lock(const Key& key, std::string_view token, Duration ttl) {
  count(StoreOp::refresh_lock);
  return StoreWrapper::refresh_lock(key, token, ttl);
}

Result<LockHolder> CountingStore::lock_holder(const Key& key) {
  count(StoreOp::lock_holder);
  return StoreWrapper::lock_holder(key);
}

Result<void> CountingStore::unlock(const Key& key, std::string_view token) {
  count(StoreOp::unlock);
  return StoreWrapper::unlock(key, token);
}

Result<LeaseClaimed> CountingStore::claim_lease(const LeaseClaim& claim) {
  if (target_atomic_lease()) count(StoreOp::claim_lease);
  return StoreWrapper::claim_lease(claim);
}

Result<LeaseRenewed> CountingStore::renew_lease(const LeaseRenewal& renewal) {
  if (target_atomic_lease()) count(StoreOp::renew_lease);
  return StoreWrapper::renew_lease(renewal);
}

Result<bool> CountingStore::end_lease(const LeaseEnd& end) {
  if (target_atomic_lease()) count(StoreOp::end_lease);
  return StoreWrapper::end_lease(end);
}

std::shared_ptr<CountingStore> make_counting_store(std::shared_ptr<Store> target) {
  return std::make_shared<CountingStore>(std::move(target));
}

}  // namespace instance
