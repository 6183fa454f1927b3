// A fault-injecting store wrapper, for this project's tests and for services
// that test their own use of a store or of the guard.
//
// FaultStore forwards every operation to a target store, except where a rule
// says otherwise. A rule picks calls by operation and key (the prefix for
// list(), the lock key for lock operations) and then by an explicit schedule
// (the n-th matching call, for `times` calls) and/or a seeded probability.
// What it injects:
//   fail        returns `code`; the target is not called.
//   timeout     waits `delay` on the injected clock, then Errc::timeout; the
//               target is not called.
//   delay       waits `delay` on the injected clock, then forwards.
//   lost_reply  forwards (a write lands), waits `delay`, then returns `code`
//               (Errc::unavailable or Errc::timeout): the caller cannot tell
//               whether the write happened. Writes and lock operations only.
//   stale_read  get: the document as it was before the last write made
//               through this wrapper (not_found when that write created it);
//               list: the listing with the last change of membership under
//               the prefix (a create or remove through this wrapper) undone.
//               get and list only. With no earlier state known, forwards.
//   corrupt     get: the stored bytes, damaged. `flip` replaces one byte (a
//               seeded position) by a control character, which JSON forbids
//               everywhere, so no JSON document stays decodable; `truncate` cuts at a seeded
//               shorter length. get only; a missing document stays missing.
// Waits go through Clock::sleep_for, so a FakeClock or a simulated clock
// moves virtual time instead of sleeping.
//
// Reproducible: the same rules, seed and sequence of calls inject the same
// faults. Every matching rule counts every call it matches; the first rule
// (in the order added) that fires decides the call.
//
// Previous versions are those seen through this wrapper: a write to a key
// it has not seen first reads the key from the target once (an extra get
// on the target, not subject to rules). Exact when one thread writes a key
// at a time; concurrent writers may see an approximate "previous" version.
//
// Thread safety: every member may be called from any thread. The wrapper's
// lock is never held while calling the target or sleeping.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/key.hpp"
#include "instance/sdk/store_wrapper.hpp"
#include "instance/store.hpp"

namespace instance {

enum class StoreOp {
  get,
  create,
  replace,
  remove,
  list,
  replace_if,
  remove_if,
  lock,
  refresh_lock,
  unlock,
  lock_holder,
  get_many,
  claim_lease,
  renew_lease,
  end_lease,
  get_all,
};
inline constexpr int kStoreOpCount = 16;

// "get", "create", ..., "unlock", "lock_holder", "get_many", "claim_lease",
// "renew_lease", "end_lease", "get_all".
INSTANCE_EXPORT std::string_view to_string(StoreOp op) noexcept;
// Whether the operation changes the store (everything but get, get_many,
// get_all, list and lock_holder).
INSTANCE_EXPORT bool is_write(StoreOp op) noexcept;

enum class FaultKind { fail, timeout, delay, lost_reply, stale_read, corrupt };
INSTANCE_EXPORT std::string_view to_string(FaultKind kind) noexcept;

enum class Corruption { flip, truncate };

struct Fault {
  FaultKind kind = FaultKind::fail;
  // fail: the error returned; lost_reply: unavailable or timeout.
  Errc code = Errc::unavailable;
  // timeout, delay: how long to wait; lost_reply: wait before answering.
  Duration delay{0};
  Corruption corruption = Corruption::flip;
};

struct FaultRule {
  // The operations this rule matches; every operation when empty.
  std::vector<StoreOp> ops;
  // Only keys under this prefix (whole segments); every key when unset.
  std::optional<Key> under;
  // A further filter on the key, when set.
  std::function<bool(const Key&)> when;
  // The schedule, counted in calls this rule matches (1-based): the rule may
  // fire from the `first` matching call on, for `times` calls (0: forever).
  std::uint64_t first = 1;
  std::uint64_t times = 0;
  // Within the schedule, each call fires with this probability (seeded).
  double probability = 1.0;
  Fault fault;
};

using RuleId = std::uint64_t;

struct FaultOptions {
  // Seeds the std::mt19937_64 behind probabilities and corruption.
  std::uint64_t seed = 0;
  // Where waits happen; the system clock when null.
  std::shared_ptr<Clock> clock;
};

// One injected fault, for assertions and for reproducing a failure.
struct Injection {
  std::uint64_t call = 0;  // the wrapper's call number, from 1
  StoreOp op = StoreOp::get;
  Key key;
  RuleId rule = 0;
  FaultKind kind = FaultKind::fail;
};

class INSTANCE_EXPORT FaultStore final : public StoreWrapper {
 public:
  explicit FaultStore(std::shared_ptr<Store> target, FaultOptions options = {});

  // Adds a rule. Errc::invalid for a kind the rule's operations cannot take
  // (stale_read outside get/list, corrupt outside get, lost_reply on a read,
  // lost_reply with a code other than unavailable/timeout, probability
  // outside [0, 1], first == 0).
  Result<RuleId> add(FaultRule rule);
  // Removes one rule; false when unknown.
  bool remove_rule(RuleId id);
  // Removes every rule; the store forwards everything from now on.
  void heal();

  // Calls of `op` seen (injected or not) since construction.
  std::uint64_t calls(StoreOp op) const;
  // How many calls rule `id` has matched so far (0 when unknown).
  std::uint64_t matched(RuleId id) const;
  // Every fault injected so far, in call order.
  std::vector<Injection> injections() const;

  Result<Document> get(const Key& key) override;
  // A fault on get_many fails (or delays) the whole batch; without one,
  // each key is read as get() reads it, so get's faults (stale reads,
  // corruption) reach the documents of a batch too.
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
  Result<LeaseClaimed> claim_lease(const LeaseClaim& claim) override;
  Result<LeaseRenewed> renew_lease(const LeaseRenewal& renewal) override;
  Result<bool> end_lease(const LeaseEnd& end) override;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

INSTANCE_EXPORT std::shared_ptr<FaultStore> make_fault_store(std::shared_ptr<Store> target,
                                                             FaultOptions options = {});

}  // namespace instance
