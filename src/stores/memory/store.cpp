#include <algorithm>
#include <map>
#include <mutex>

#include "instance/stores/memory.hpp"

namespace instance {
namespace {

// Versions are a counter that grows with every write, so a version is never
// reused, even after a remove and re-create.
class MemoryStore final : public Store {
 public:
  explicit MemoryStore(MemoryStoreOptions options)
      : clock_(std::move(options.lease_clock)),
        outlive_(options.locks_outlive_holders),
        atomic_(options.atomic_lease && clock_ != nullptr) {}

  std::string describe() const override { return "memory:"; }

  Capabilities capabilities() override {
    return {.versions = true,
            .conditional_writes = true,
            .native_lease = clock_ != nullptr,
            .server_clock = clock_ != nullptr && !outlive_,
            .ends_stale_locks = clock_ != nullptr && outlive_,
            // In memory, reading several documents one after another is
            // already one request: the default get_many.
            .batch_reads = true,
            .atomic_lease = atomic_};
  }

  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner) override {
    if (!clock_) return Store::lock(key, ttl, "");
    std::lock_guard lock(mu_);
    return take(key, ttl, owner);
  }

  // With MemoryStoreOptions::atomic_lease, as one step under the mutex, as
  // a server's script or statement does them.
  Result<LeaseClaimed> claim_lease(const LeaseClaim& claim) override {
    if (!atomic_) return Store::claim_lease(claim);
    if (auto ok = check("replace", claim.record, claim.record_data); !ok) {
      return std::unexpected(ok.error());
    }
    std::lock_guard lock(mu_);
    auto grant = take(claim.lock, claim.ttl, claim.owner);
    if (!grant) return std::unexpected(grant.error());
    LeaseClaimed out{.grant = *grant};
    std::uint64_t last = 0;
    if (const auto it = docs_.find(claim.lease); it != docs_.end()) {
      out.previous = it->second;
      const auto epoch = lease_epoch(it->second.data);
      if (!epoch) return out;  // not ours to overwrite: the caller decides
      last = *epoch;
    }
    out.written = true;
    out.epoch = std::max<std::uint64_t>(last + 1, grant->epoch);
    out.lease_version = write(claim.lease, claim.document.fill(out.epoch, grant->token));
    out.record_version = write(claim.record, claim.record_data);
    for (const auto& [key, doc] : docs_) {
      if (key.is_under(claim.scan) && key != claim.record) out.scanned.emplace_back(key, doc);
    }
    return out;
  }

  Result<LeaseRenewed> renew_lease(const LeaseRenewal& renewal) override {
    if (!atomic_) return Store::renew_lease(renewal);
    std::lock_guard lock(mu_);
    auto granted = refresh(renewal.lock, renewal.token, renewal.ttl);
    if (!granted) return std::unexpected(granted.error());
    return LeaseRenewed{.granted = *granted,
                        .written = true,
                        .lease_version = write(renewal.lease, renewal.lease_data),
                        .record_version = write(renewal.record, renewal.record_data)};
  }

  Result<bool> end_lease(const LeaseEnd& end) override {
    if (!atomic_) return Store::end_lease(end);
    std::lock_guard lock(mu_);
    docs_.erase(end.record);
    if (const auto it = locks_.find(end.lock);
        it != locks_.end() && it->second.token == end.token) {
      (void)write(end.lease, end.lease_data);
      locks_.erase(it);
    }
    return true;
  }

  Result<LockHolder> lock_holder(const Key& key) override {
    if (!clock_) return Store::lock_holder(key);
    std::lock_guard lock(mu_);
    const auto it = locks_.find(key);
    if (it == locks_.end() || !held(it->second, clock_->monotonic())) {
      return fail(Errc::not_found, "lock " + key.str() + " in memory: held by nobody");
    }
    return LockHolder{.token = it->second.token, .owner = it->second.owner};
  }

  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration ttl) override {
    if (!clock_) return Store::refresh_lock(key, token, ttl);
    std::lock_guard lock(mu_);
    return refresh(key, token, ttl);
  }

  Result<void> unlock(const Key& key, std::string_view token) override {
    if (!clock_) return Store::unlock(key, token);
    std::lock_guard lock(mu_);
    const auto it = locks_.find(key);
    if (it == locks_.end() || it->second.token != token) {
      return fail(Errc::not_found, "unlock " + key.str() + " in memory: not ours");
    }
    locks_.erase(it);
    return {};
  }

  Result<Document> get(const Key& key) override {
    std::lock_guard lock(mu_);
    const auto it = docs_.find(key);
    if (it == docs_.end()) return missing("get", key);
    return it->second;
  }

  Result<std::string> create(const Key& key, std::string_view data) override {
    if (auto ok = check("create", key, data); !ok) return std::unexpected(ok.error());
    std::lock_guard lock(mu_);
    if (docs_.contains(key)) {
      return fail(Errc::already_exists, "create " + key.str() + " in memory: already exists");
    }
    return write(key, data);
  }

  Result<std::string> replace(const Key& key, std::string_view data) override {
    if (auto ok = check("replace", key, data); !ok) return std::unexpected(ok.error());
    std::lock_guard lock(mu_);
    return write(key, data);
  }

  Result<void> remove(const Key& key) override {
    std::lock_guard lock(mu_);
    if (docs_.erase(key) == 0) return missing("remove", key);
    return {};
  }

  Result<std::vector<Key>> list(const Key& prefix) override {
    std::lock_guard lock(mu_);
    std::vector<Key> keys;
    for (auto it = docs_.lower_bound(prefix); it != docs_.end(); ++it) {
      if (it->first.is_under(prefix)) {
        keys.push_back(it->first);
      } else if (it->first.str().compare(0, prefix.str().size(), prefix.str()) != 0) {
        break;  // sorted: past every key that starts with the prefix's bytes
      }
    }
    return keys;
  }

  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override {
    if (auto ok = check("replace", key, data); !ok) return std::unexpected(ok.error());
    std::lock_guard lock(mu_);
    const auto it = docs_.find(key);
    if (it == docs_.end()) return missing("conditional replace", key);
    if (it->second.version != version) return conflict("replace", key);
    return write(key, data);
  }

  Result<void> remove_if(const Key& key, std::string_view version) override {
    std::lock_guard lock(mu_);
    const auto it = docs_.find(key);
    if (it == docs_.end()) return missing("conditional remove", key);
    if (it->second.version != version) return conflict("remove", key);
    docs_.erase(it);
    return {};
  }

 private:
  Result<LockGrant> take(const Key& key, Duration ttl, std::string_view owner) {  // requires mu_
    const MonoTime now = clock_->monotonic();
    if (auto it = locks_.find(key); it != locks_.end() && held(it->second, now)) {
      return fail(Errc::locked, "lock " + key.str() + " in memory: held by another");
    }
    const std::string token = "mem-" + std::to_string(++last_version_);
    locks_[key] = {token, now + ttl, std::string(owner)};
    return LockGrant{.token = token};
  }

  Result<Duration> refresh(const Key& key, std::string_view token, Duration ttl) {  // requires mu_
    const MonoTime now = clock_->monotonic();
    const auto it = locks_.find(key);
    if (it == locks_.end() || it->second.token != token || !held(it->second, now)) {
      return fail(Errc::locked, "refresh lock " + key.str() + " in memory: no longer ours");
    }
    it->second.expires = now + ttl;
    return Duration::zero();
  }

  static Result<void> check(std::string_view op, const Key& key, std::string_view data) {
    if (key.empty()) return fail(Errc::invalid, std::string(op) + " in memory: empty key");
    if (data.size() > kMaxDocumentSize) {
      return fail(Errc::invalid, std::string(op) + " " + key.str() + " in memory: document of " +
                                     std::to_string(data.size()) + " bytes exceeds the 1 MiB cap");
    }
    return {};
  }
  static std::unexpected<Error> missing(std::string_view op, const Key& key) {
    return fail(Errc::not_found, std::string(op) + " " + key.str() + " in memory: not found");
  }
  static std::unexpected<Error> conflict(std::string_view op, const Key& key) {
    return fail(Errc::conflict,
                std::string(op) + " " + key.str() + " in memory: version does not match");
  }
  std::string write(const Key& key, std::string_view data) {  // requires mu_
    auto version = std::to_string(++last_version_);
    docs_[key] = Document{std::string(data), version};
    return version;
  }

  struct Lock {
    std::string token;
    MonoTime expires;
    std::string owner;
  };
  bool held(const Lock& lock, MonoTime now) const { return outlive_ || now < lock.expires; }

  std::shared_ptr<Clock> clock_;
  const bool outlive_;  // locks never expire (as phodav's): MemoryStoreOptions
  const bool atomic_;   // the lease operations in one step: MemoryStoreOptions
  std::mutex mu_;
  std::map<Key, Document> docs_;
  std::map<Key, Lock> locks_;
  std::uint64_t last_version_ = 0;
};

}  // namespace

std::shared_ptr<Store> make_memory_store(std::shared_ptr<Clock> lease_clock) {
  return make_memory_store(MemoryStoreOptions{.lease_clock = std::move(lease_clock)});
}

std::shared_ptr<Store> make_memory_store(MemoryStoreOptions options) {
  return std::make_shared<MemoryStore>(std::move(options));
}

}  // namespace instance
