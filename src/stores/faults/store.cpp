#include "instance/sdk/store_wrapper.hpp"
#include "instance/stores/faults.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <mutex>
#include <random>

namespace instance {

std::string_view to_string(StoreOp op) noexcept {
  switch (op) {
    case StoreOp::get:
      return "get";
    case StoreOp::create:
      return "create";
    case StoreOp::replace:
      return "replace";
    case StoreOp::remove:
      return "remove";
    case StoreOp::list:
      return "list";
    case StoreOp::replace_if:
      return "replace_if";
    case StoreOp::remove_if:
      return "remove_if";
    case StoreOp::lock:
      return "lock";
    case StoreOp::refresh_lock:
      return "refresh_lock";
    case StoreOp::unlock:
      return "unlock";
    case StoreOp::lock_holder:
      return "lock_holder";
    case StoreOp::get_many:
      return "get_many";
    case StoreOp::claim_lease:
      return "claim_lease";
    case StoreOp::renew_lease:
      return "renew_lease";
    case StoreOp::end_lease:
      return "end_lease";
    case StoreOp::get_all:
      return "get_all";
  }
  return "unknown";
}

bool is_write(StoreOp op) noexcept {
  return op != StoreOp::get && op != StoreOp::list && op != StoreOp::lock_holder &&
         op != StoreOp::get_many && op != StoreOp::get_all;
}

std::string_view to_string(FaultKind kind) noexcept {
  switch (kind) {
    case FaultKind::fail:
      return "fail";
    case FaultKind::timeout:
      return "timeout";
    case FaultKind::delay:
      return "delay";
    case FaultKind::lost_reply:
      return "lost_reply";
    case FaultKind::stale_read:
      return "stale_read";
    case FaultKind::corrupt:
      return "corrupt";
  }
  return "unknown";
}

namespace {

// What the wrapper knows of one key: its last state seen, and the one before.
using DocState = std::optional<Document>;  // nullopt: absent

bool same_state(const DocState& a, const DocState& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  if (!a->version.empty() || !b->version.empty()) return a->version == b->version;
  return a->data == b->data;
}

constexpr std::size_t kMaxMembershipLog = 4096;

std::string what(StoreOp op, const Key& key, const Store& store, std::string_view detail) {
  return std::string(to_string(op)) + " " + key.str() + " on " + store.describe() + ": injected " +
         std::string(detail);
}

std::string corrupt(std::string data, Corruption how, std::uint64_t random) {
  if (data.empty()) return "\x80";
  if (how == Corruption::flip) {
    // A control character: JSON forbids it everywhere, inside strings too,
    // so no decoder accepts the document (an invalid UTF-8 byte would not
    // do: Go, and so the record decoder, reads it in a string as U+FFFD).
    data[random % data.size()] = '\x01';
  } else {
    data.resize(random % data.size());  // strictly shorter
  }
  return data;
}

}  // namespace

struct FaultStore::State {
  // Nested, not in the anonymous namespace: a member's type must not have
  // internal linkage when this file is compiled inside a unity batch.
  struct KeyHistory {
    DocState current;
    std::optional<DocState> previous;  // unset: nothing earlier is known
  };
  struct Membership {
    Key key;
    bool created = false;  // false: removed
  };

  explicit State(FaultOptions o)
      : clock(o.clock ? std::move(o.clock) : system_clock()), rng(o.seed) {}

  struct Rule {
    RuleId id = 0;
    FaultRule rule;
    std::uint64_t matched = 0;
  };
  struct Decision {
    Fault fault;
    std::uint64_t random = 0;  // for corruption
  };

  std::shared_ptr<Clock> clock;
  mutable std::mutex mu;
  std::mt19937_64 rng;
  std::vector<Rule> rules;
  RuleId next_rule = 1;
  std::array<std::uint64_t, kStoreOpCount> calls{};
  std::uint64_t total_calls = 0;
  std::vector<Injection> injections;
  std::map<Key, KeyHistory> history;
  std::deque<Membership> membership;

  static bool matches(const FaultRule& r, StoreOp op, const Key& key) {
    if (!r.ops.empty() && std::find(r.ops.begin(), r.ops.end(), op) == r.ops.end()) return false;
    if (r.under && !key.is_under(*r.under)) return false;
    return !r.when || r.when(key);
  }

  std::optional<Decision> decide(StoreOp op, const Key& key) {
    std::lock_guard lock(mu);
    const std::uint64_t call = ++total_calls;
    ++calls[static_cast<std::size_t>(op)];
    std::optional<Decision> out;
    for (Rule& r : rules) {
      if (!matches(r.rule, op, key)) continue;
      const std::uint64_t n = ++r.matched;
      if (out || n < r.rule.first) continue;
      if (r.rule.times != 0 && n >= r.rule.first + r.rule.times) continue;
      if (r.rule.probability < 1.0 &&
          std::uniform_real_distribution<double>(0.0, 1.0)(rng) >= r.rule.probability) {
        continue;
      }
      out = Decision{r.rule.fault, rng()};
      injections.push_back({call, op, key, r.id, r.rule.fault.kind});
    }
    return out;
  }

  // Records a state of `key` seen in the target (a read, or a write's result).
  void observe(const Key& key, DocState seen) {
    std::lock_guard lock(mu);
    auto [it, fresh] = history.try_emplace(key);
    if (fresh) {
      it->second.current = std::move(seen);
      return;
    }
    if (same_state(it->second.current, seen)) return;
    if (it->second.current.has_value() != seen.has_value()) {
      membership.push_back({key, seen.has_value()});
      if (membership.size() > kMaxMembershipLog) membership.pop_front();
    }
    it->second.previous = std::move(it->second.current);
    it->second.current = std::move(seen);
  }

  bool known(const Key& key) const {
    std::lock_guard lock(mu);
    return history.contains(key);
  }

  std::optional<DocState> previous(const Key& key) const {
    std::lock_guard lock(mu);
    const auto it = history.find(key);
    if (it == history.end()) return std::nullopt;
    return it->second.previous;
  }

  // The last change of membership under `prefix`, if any is known.
  std::optional<Membership> last_change_under(const Key& prefix) const {
    std::lock_guard lock(mu);
    for (auto it = membership.rbegin(); it != membership.rend(); ++it) {
      if (it->key.is_under(prefix)) return *it;
    }
    return std::nullopt;
  }

  void wait(Duration d) const {
    if (d > Duration::zero()) (void)clock->sleep_for(d, {});
  }

  // Applies fail / timeout / delay / lost_reply around `forward`; get and
  // list add stale reads and corruption themselves.
  template <class T, class Forward>
  Result<T> intercept(const Store& self, StoreOp op, const Key& key,
                      const std::optional<Decision>& d, Forward&& forward) {
    if (!d) return forward();
    switch (d->fault.kind) {
      case FaultKind::fail:
        return fail(d->fault.code,
                    what(op, key, self, "failure (" + std::string(to_string(d->fault.code)) + ")"));
      case FaultKind::timeout:
        wait(d->fault.delay);
        return fail(Errc::timeout, what(op, key, self, "timeout: no answer"));
      case FaultKind::delay:
        wait(d->fault.delay);
        return forward();
      case FaultKind::lost_reply:
        (void)forward();
        wait(d->fault.delay);
        return fail(d->fault.code,
                    what(op, key, self, "lost reply: the request may have been applied"));
      case FaultKind::stale_read:
      case FaultKind::corrupt:
        break;
    }
    return forward();
  }

  // Makes sure the history knows a key's state before a write changes it.
  void learn(Store& target, const Key& key) {
    if (known(key)) return;
    reread(target, key);
  }

  // Records the state of `key` now (after a write that returned no copy of
  // what it wrote).
  void reread(Store& target, const Key& key) {
    auto doc = target.get(key);
    if (doc)
      observe(key, *doc);
    else if (doc.error().code == Errc::not_found)
      observe(key, std::nullopt);
  }

  // A lease operation on a target that does it in one request: faulted as
  // one call, with the lease document and record it writes recorded.
  template <class T, class Forward>
  Result<T> lease_op(const Store& self, Store& target, StoreOp op, const Key& lock,
                     std::initializer_list<const Key*> writes, Forward&& forward) {
    const auto d = decide(op, lock);
    return intercept<T>(self, op, lock, d, [&] {
      for (const Key* key : writes) learn(target, *key);
      auto r = forward();
      for (const Key* key : writes) reread(target, *key);
      return r;
    });
  }
};

FaultStore::FaultStore(std::shared_ptr<Store> target, FaultOptions options)
    : StoreWrapper(std::move(target)), state_(std::make_shared<State>(std::move(options))) {}

Result<RuleId> FaultStore::add(FaultRule rule) {
  const FaultKind kind = rule.fault.kind;
  auto only = [&](std::initializer_list<StoreOp> allowed) {
    if (rule.ops.empty()) return false;
    return std::all_of(rule.ops.begin(), rule.ops.end(), [&](StoreOp op) {
      return std::find(allowed.begin(), allowed.end(), op) != allowed.end();
    });
  };
  auto bad = [&](std::string_view why) {
    return fail(Errc::invalid,
                "fault rule (" + std::string(to_string(kind)) + "): " + std::string(why));
  };
  if (kind == FaultKind::stale_read && !only({StoreOp::get, StoreOp::list})) {
    return bad("stale reads apply to get and list only");
  }
  if (kind == FaultKind::corrupt && !only({StoreOp::get}))
    return bad("corruption applies to get only");
  if (kind == FaultKind::lost_reply) {
    if (rule.ops.empty() ||
        std::any_of(rule.ops.begin(), rule.ops.end(), [](StoreOp op) { return !is_write(op); })) {
      return bad("lost replies apply to writes and lock operations only");
    }
    if (rule.fault.code != Errc::unavailable && rule.fault.code != Errc::timeout) {
      return bad("a lost reply answers unavailable or timeout");
    }
  }
  if (!(rule.probability >= 0.0 && rule.probability <= 1.0))
    return bad("probability outside [0, 1]");
  if (rule.first == 0) return bad("calls are counted from 1");
  if (rule.fault.delay < Duration::zero()) return bad("negative delay");
  std::lock_guard lock(state_->mu);
  const RuleId id = state_->next_rule++;
  state_->rules.push_back({id, std::move(rule), 0});
  return id;
}

bool FaultStore::remove_rule(RuleId id) {
  std::lock_guard lock(state_->mu);
  return std::erase_if(state_->rules, [&](const State::Rule& r) { return r.id == id; }) > 0;
}

void FaultStore::heal() {
  std::lock_guard lock(state_->mu);
  state_->rules.clear();
}

std::uint64_t FaultStore::calls(StoreOp op) const {
  std::lock_guard lock(state_->mu);
  return state_->calls[static_cast<std::size_t>(op)];
}

std::uint64_t FaultStore::matched(RuleId id) const {
  std::lock_guard lock(state_->mu);
  for (const auto& r : state_->rules) {
    if (r.id == id) return r.matched;
  }
  return 0;
}

std::vector<Injection> FaultStore::injections() const {
  std::lock_guard lock(state_->mu);
  return state_->injections;
}

// ---- the operations -------------------------------------------------------
//
// intercept() applies fail / timeout / delay / lost_reply around `forward`;
// get and list add stale reads and corruption themselves.

Result<Document> FaultStore::get(const Key& key) {
  State& s = *state_;
  const auto d = s.decide(StoreOp::get, key);
  auto read = [&]() -> Result<Document> {
    auto doc = target().get(key);
    if (doc)
      s.observe(key, *doc);
    else if (doc.error().code == Errc::not_found)
      s.observe(key, std::nullopt);
    return doc;
  };
  if (d && d->fault.kind == FaultKind::stale_read) {
    auto now = read();
    auto before = s.previous(key);
    if (!before) return now;  // nothing earlier known
    if (!*before)
      return fail(Errc::not_found, what(StoreOp::get, key, *this, "stale read: not found"));
    return **before;
  }
  if (d && d->fault.kind == FaultKind::corrupt) {
    auto doc = read();
    if (doc) doc->data = corrupt(std::move(doc->data), d->fault.corruption, d->random);
    return doc;
  }
  return s.intercept<Document>(*this, StoreOp::get, key, d, read);
}

Result<std::vector<Key>> FaultStore::list(const Key& prefix) {
  State& s = *state_;
  const auto d = s.decide(StoreOp::list, prefix);
  auto forward = [&] { return target().list(prefix); };
  if (d && d->fault.kind == FaultKind::stale_read) {
    auto keys = forward();
    if (!keys) return keys;
    const auto change = s.last_change_under(prefix);
    if (!change) return keys;
    if (change->created) {
      std::erase(*keys, change->key);
    } else if (std::find(keys->begin(), keys->end(), change->key) == keys->end()) {
      keys->push_back(change->key);
    }
    return keys;
  }
  return s.intercept<std::vector<Key>>(*this, StoreOp::list, prefix, d, forward);
}

Result<std::string> FaultStore::create(const Key& key, std::string_view data) {
  const auto d = state_->decide(StoreOp::create, key);
  return state_->intercept<std::string>(*this, StoreOp::create, key, d, [&] {
    state_->learn(target(), key);
    auto v = target().create(key, data);
    if (v) state_->observe(key, Document{std::string(data), *v});
    return v;
  });
}

Result<std::string> FaultStore::replace(const Key& key, std::string_view data) {
  const auto d = state_->decide(StoreOp::replace, key);
  return state_->intercept<std::string>(*this, StoreOp::replace, key, d, [&] {
    state_->learn(target(), key);
    auto v = target().replace(key, data);
    if (v) state_->observe(key, Document{std::string(data), *v});
    return v;
  });
}

Result<std::string> FaultStore::replace_if(const Key& key, std::string_view data,
                                           std::string_view version) {
  const auto d = state_->decide(StoreOp::replace_if, key);
  return state_->intercept<std::string>(*this, StoreOp::replace_if, key, d, [&] {
    state_->learn(target(), key);
    auto v = target().replace_if(key, data, version);
    if (v) state_->observe(key, Document{std::string(data), *v});
    return v;
  });
}

Result<void> FaultStore::remove(const Key& key) {
  const auto d = state_->decide(StoreOp::remove, key);
  return state_->intercept<void>(*this, StoreOp::remove, key, d, [&] {
    state_->learn(target(), key);
    auto r = target().remove(key);
    if (r) state_->observe(key, std::nullopt);
    return r;
  });
}

Result<void> FaultStore::remove_if(const Key& key, std::string_view version) {
  const auto d = state_->decide(StoreOp::remove_if, key);
  return state_->intercept<void>(*this, StoreOp::remove_if, key, d, [&] {
    state_->learn(target(), key);
    auto r = target().remove_if(key, version);
    if (r) state_->observe(key, std::nullopt);
    return r;
  });
}

Result<LockGrant> FaultStore::lock(const Key& key, Duration ttl, std::string_view owner) {
  const auto d = state_->decide(StoreOp::lock, key);
  return state_->intercept<LockGrant>(*this, StoreOp::lock, key, d,
                                      [&] { return target().lock(key, ttl, owner); });
}

Result<Duration> FaultStore::refresh_lock(const Key& key, std::string_view token, Duration ttl) {
  const auto d = state_->decide(StoreOp::refresh_lock, key);
  return state_->intercept<Duration>(*this, StoreOp::refresh_lock, key, d,
                                     [&] { return target().refresh_lock(key, token, ttl); });
}

Result<void> FaultStore::unlock(const Key& key, std::string_view token) {
  const auto d = state_->decide(StoreOp::unlock, key);
  return state_->intercept<void>(*this, StoreOp::unlock, key, d,
                                 [&] { return target().unlock(key, token); });
}

Result<std::vector<Result<Document>>> FaultStore::get_many(std::span<const Key> keys) {
  const Key first = keys.empty() ? Key{} : keys.front();
  const auto d = state_->decide(StoreOp::get_many, first);
  return state_->intercept<std::vector<Result<Document>>>(*this, StoreOp::get_many, first, d,
                                                          [&] { return Store::get_many(keys); });
}

// Like get_many: a fault on get_all fails (or delays) the whole read;
// without one, Store's default lists and reads on this wrapper, so each
// listing and read meets its own faults.
Result<std::vector<std::pair<Key, Result<Document>>>> FaultStore::get_all(const Key& prefix) {
  const auto d = state_->decide(StoreOp::get_all, prefix);
  return state_->intercept<std::vector<std::pair<Key, Result<Document>>>>(
      *this, StoreOp::get_all, prefix, d, [&] { return Store::get_all(prefix); });
}

Result<LockHolder> FaultStore::lock_holder(const Key& key) {
  const auto d = state_->decide(StoreOp::lock_holder, key);
  return state_->intercept<LockHolder>(*this, StoreOp::lock_holder, key, d,
                                       [&] { return target().lock_holder(key); });
}

// On a target without atomic_lease, Store's defaults run on this wrapper, so
// each step meets the faults of its own operation.
Result<LeaseClaimed> FaultStore::claim_lease(const LeaseClaim& claim) {
  if (!target_atomic_lease()) return Store::claim_lease(claim);
  return state_->lease_op<LeaseClaimed>(*this, target(), StoreOp::claim_lease, claim.lock,
                                        {&claim.lease, &claim.record},
                                        [&] { return target().claim_lease(claim); });
}

Result<LeaseRenewed> FaultStore::renew_lease(const LeaseRenewal& renewal) {
  if (!target_atomic_lease()) return Store::renew_lease(renewal);
  return state_->lease_op<LeaseRenewed>(*this, target(), StoreOp::renew_lease, renewal.lock,
                                        {&renewal.lease, &renewal.record},
                                        [&] { return target().renew_lease(renewal); });
}

Result<bool> FaultStore::end_lease(const LeaseEnd& end) {
  if (!target_atomic_lease()) return Store::end_lease(end);
  return state_->lease_op<bool>(*this, target(), StoreOp::end_lease, end.lock,
                                {&end.lease, &end.record}, [&] { return target().end_lease(end); });
}

std::shared_ptr<FaultStore> make_fault_store(std::shared_ptr<Store> target, FaultOptions options) {
  return std::make_shared<FaultStore>(std::move(target), std::move(options));
}

}  // namespace instance
