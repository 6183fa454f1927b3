// A request-counting store wrapper: counts every call made through it, per
// operation, and forwards it unchanged. For benchmarks (requests per claim,
// renewal and release: bench/) and for tests that pin a protocol's cost.
//
// One call counts as one request, whatever the store does underneath (the
// WebDAV store may send more than one HTTP request for one call: a MKCOL for
// a missing folder, a GET after a PUT that returned no ETag, retries).
// capabilities() and describe() are not counted: they are answered once and
// then remembered by every store.
//
// Thread safety: every member may be called from any thread; the counters are
// atomics, so a snapshot taken while other threads call may mix calls from
// before and after.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "instance/export.hpp"
#include "instance/sdk/store_wrapper.hpp"
#include "instance/store.hpp"
#include "instance/stores/faults.hpp"  // StoreOp, kStoreOpCount, to_string(StoreOp)

namespace instance {

// Calls per operation, indexed by StoreOp.
struct INSTANCE_EXPORT RequestCounts {
  std::array<std::uint64_t, kStoreOpCount> by_op{};

  std::uint64_t operator[](StoreOp op) const noexcept {
    return by_op[static_cast<std::size_t>(op)];
  }
  std::uint64_t total() const noexcept;
  // create + replace + replace_if: documents written.
  std::uint64_t writes() const noexcept;
  // remove + remove_if.
  std::uint64_t removes() const noexcept;
  // lock + refresh_lock + unlock.
  std::uint64_t lock_ops() const noexcept;
  // Calls made between `earlier` and this snapshot.
  RequestCounts operator-(const RequestCounts& earlier) const noexcept;
  // "list=1 get=3 replace=1" (operations with no calls left out; "none").
  std::string str() const;
  friend bool operator==(const RequestCounts&, const RequestCounts&) = default;
};

class INSTANCE_EXPORT CountingStore final : public StoreWrapper {
 public:
  explicit CountingStore(std::shared_ptr<Store> target);

  // The calls made so far (since construction or the last reset()).
  RequestCounts counts() const noexcept;
  void reset() noexcept;

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
  // Counted as one call each where the target does them in one request;
  // elsewhere each step is counted.
  Result<LeaseClaimed> claim_lease(const LeaseClaim& claim) override;
  Result<LeaseRenewed> renew_lease(const LeaseRenewal& renewal) override;
  Result<bool> end_lease(const LeaseEnd& end) override;

 private:
  void count(StoreOp op) noexcept {
    calls_[static_cast<std::size_t>(op)].fetch_add(1, std::memory_order_relaxed);
  }
  std::array<std::atomic<std::uint64_t>, kStoreOpCount> calls_{};
};

INSTANCE_EXPORT std::shared_ptr<CountingStore> make_counting_store(std::shared_ptr<Store> target);

}  // namespace instance
