#include "sim.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "instance/time.hpp"

namespace instance::sim {
namespace {

constexpr Time kForever = Time::max();

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : g_(seed) {}
  std::uint64_t next() { return g_(); }
  double unit() { return std::uniform_real_distribution<double>(0.0, 1.0)(g_); }
  bool chance(double p) { return p > 0 && unit() < p; }
  Time uniform(Duration lo, Duration hi) {
    if (hi <= lo) return lo;
    return Time{std::uniform_int_distribution<std::int64_t>(lo.count(), hi.count())(g_)};
  }
  Time exponential(Duration mean) {
    return Time{static_cast<std::int64_t>(std::exponential_distribution<double>(1.0)(g_) *
                                          static_cast<double>(mean.count()))};
  }
  Time lognormal(Duration median, double sigma) {
    const double f = std::exp(sigma * std::normal_distribution<double>(0.0, 1.0)(g_));
    return Time{static_cast<std::int64_t>(static_cast<double>(median.count()) * f)};
  }

 private:
  std::mt19937_64 g_;
};

std::uint64_t hash_text(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// ---- the store --------------------------------------------------------------

// The shared store, changed only by events on the loop: each operation is
// applied atomically at its arrival. Writes become visible to reads and
// listings after a lag; conditional writes and creates judge the true state.
class StoreModel {
 public:
  StoreModel(Capabilities caps, Duration lag, Rng& rng) : caps_(caps), lag_(lag), rng_(rng) {}

  const Capabilities& caps() const { return caps_; }

  Result<Document> get(const Key& key, Time now) {
    const Entry* e = visible(key, now);
    if (!e || !e->data) return fail(Errc::not_found, "get " + key.str() + ": not found");
    return Document{*e->data, caps_.versions ? e->version : ""};
  }
  Result<std::vector<Key>> list(const Key& prefix, Time now) {
    std::vector<Key> out;
    for (auto it = docs_.lower_bound(prefix); it != docs_.end(); ++it) {
      if (!it->first.is_under(prefix)) {
        if (it->first.str().compare(0, prefix.str().size(), prefix.str()) != 0) break;
        continue;
      }
      const Entry* e = visible(it->first, now);
      if (e && e->data) out.push_back(it->first);
    }
    return out;
  }
  Result<std::string> create(const Key& key, std::string_view data, Time now) {
    if (const Entry* t = truth(key); t && t->data) {
      return fail(Errc::already_exists, "create " + key.str() + ": exists");
    }
    return write(key, std::string(data), now);
  }
  Result<std::string> replace(const Key& key, std::string_view data, Time now) {
    return write(key, std::string(data), now);
  }
  Result<void> remove(const Key& key, Time now) {
    const Entry* t = truth(key);
    if (!t || !t->data) return fail(Errc::not_found, "remove " + key.str() + ": not found");
    (void)write(key, std::nullopt, now);
    return {};
  }
  Result<std::string> replace_if(const Key& key, std::string_view data, std::string_view version,
                                 Time now) {
    if (!caps_.conditional_writes) return fail(Errc::unsupported, "no conditional writes");
    const Entry* t = truth(key);
    if (!t || !t->data) return fail(Errc::not_found, "replace_if " + key.str() + ": not found");
    if (t->version != version)
      return fail(Errc::conflict, "replace_if " + key.str() + ": conflict");
    return write(key, std::string(data), now);
  }
  Result<void> remove_if(const Key& key, std::string_view version, Time now) {
    if (!caps_.conditional_writes) return fail(Errc::unsupported, "no conditional writes");
    const Entry* t = truth(key);
    if (!t || !t->data) return fail(Errc::not_found, "remove_if " + key.str() + ": not found");
    if (t->version != version) return fail(Errc::conflict, "remove_if " + key.str() + ": conflict");
    (void)write(key, std::nullopt, now);
    return {};
  }
  Result<LockGrant> lock(const Key& key, Duration ttl, std::string owner, Time now) {
    if (!caps_.native_lease) return fail(Errc::unsupported, "no locks");
    if (auto it = locks_.find(key); it != locks_.end() && held(it->second, now)) {
      return fail(Errc::locked, "lock " + key.str() + ": held");
    }
    const std::string token = "lock-" + std::to_string(++version_);
    locks_[key] = {token, now + ttl, std::move(owner)};
    return LockGrant{.token = token};
  }
  Result<LockHolder> lock_holder(const Key& key, Time now) const {
    if (!caps_.ends_stale_locks) return fail(Errc::unsupported, "cannot tell");
    auto it = locks_.find(key);
    if (it == locks_.end() || !held(it->second, now)) return fail(Errc::not_found, "nobody");
    return LockHolder{.token = it->second.token, .owner = it->second.owner};
  }
  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration ttl, Time now) {
    if (!caps_.native_lease) return fail(Errc::unsupported, "no locks");
    auto it = locks_.find(key);
    if (it == locks_.end() || it->second.token != token || !held(it->second, now)) {
      return fail(Errc::locked, "refresh " + key.str() + ": not ours");
    }
    it->second.expires = now + ttl;
    return Duration::zero();
  }
  Result<void> unlock(const Key& key, std::string_view token) {
    if (!caps_.native_lease) return fail(Errc::unsupported, "no locks");
    auto it = locks_.find(key);
    if (it == locks_.end() || it->second.token != token) {
      return fail(Errc::not_found, "unlock " + key.str() + ": not ours");
    }
    locks_.erase(it);
    return {};
  }

  // The lease operations of a store with atomic_lease (Redis's scripts,
  // PostgreSQL's statements): each applied at once, on the true state, as a
  // server applies one script.
  Result<LeaseClaimed> claim_lease(const LeaseClaim& c, Time now) {
    auto grant = lock(c.lock, c.ttl, c.owner, now);
    if (!grant) return std::unexpected(grant.error());
    LeaseClaimed out{.grant = *grant};
    std::uint64_t last = 0;
    if (const Entry* t = truth(c.lease); t && t->data) {
      out.previous = Document{*t->data, t->version};
      const auto epoch = lease_epoch(*t->data);
      if (!epoch) return out;
      last = *epoch;
    }
    out.written = true;
    out.epoch = std::max<std::uint64_t>(last + 1, grant->epoch);
    out.lease_version = *write(c.lease, c.document.fill(out.epoch, grant->token), now);
    out.record_version = *write(c.record, c.record_data, now);
    for (const auto& [key, history] : docs_) {
      if (!key.is_under(c.scan) || key == c.record) continue;
      if (const Entry* t = truth(key); t && t->data) {
        out.scanned.emplace_back(key, Document{*t->data, t->version});
      }
    }
    return out;
  }
  Result<LeaseRenewed> renew_lease(const LeaseRenewal& r, Time now) {
    auto granted = refresh_lock(r.lock, r.token, r.ttl, now);
    if (!granted) return std::unexpected(granted.error());
    return LeaseRenewed{.granted = *granted,
                        .written = true,
                        .lease_version = *write(r.lease, r.lease_data, now),
                        .record_version = *write(r.record, r.record_data, now)};
  }
  Result<bool> end_lease(const LeaseEnd& e, Time now) {
    if (const Entry* t = truth(e.record); t && t->data) (void)write(e.record, std::nullopt, now);
    if (auto it = locks_.find(e.lock); it != locks_.end() && it->second.token == e.token) {
      (void)write(e.lease, e.lease_data, now);
      locks_.erase(it);
    }
    return true;
  }

 private:
  struct Entry {
    Time visible;
    std::optional<std::string> data;  // nullopt: removed
    std::string version;
  };
  struct Lock {
    std::string token;
    Time expires;
    std::string owner;
  };
  // A store that ends stale locks here is one whose locks never expire.
  bool held(const Lock& lock, Time now) const {
    return caps_.ends_stale_locks || now < lock.expires;
  }

  const Entry* truth(const Key& key) const {
    auto it = docs_.find(key);
    return it == docs_.end() || it->second.empty() ? nullptr : &it->second.back();
  }
  // The latest write (in apply order) already visible at `now`.
  const Entry* visible(const Key& key, Time now) const {
    auto it = docs_.find(key);
    if (it == docs_.end()) return nullptr;
    for (auto e = it->second.rbegin(); e != it->second.rend(); ++e) {
      if (e->visible <= now) return &*e;
    }
    return nullptr;
  }
  Result<std::string> write(const Key& key, std::optional<std::string> data, Time now) {
    const Time lag = lag_ > Duration::zero() ? rng_.uniform(Duration{0}, lag_) : Time{0};
    std::string version = std::to_string(++version_);
    auto& history = docs_[key];
    history.push_back({now + lag, std::move(data), version});
    // Keep what a lagging read may still see: drop entries older than the
    // newest one visible to everybody.
    while (history.size() > 2 && history[1].visible <= now && history[0].visible <= now) {
      history.erase(history.begin());
    }
    return caps_.versions ? version : std::string();
  }

  Capabilities caps_;
  Duration lag_;
  Rng& rng_;
  std::map<Key, std::vector<Entry>> docs_;
  std::map<Key, Lock> locks_;
  std::uint64_t version_ = 0;
};

// ---- nodes ------------------------------------------------------------------

struct Interval {
  std::string holder;
  Time start, end;
};

struct Partition {
  Time start, end;
  bool black_hole;  // requests vanish and time out; otherwise fail fast
};

struct Simulation;

struct Node {
  Simulation* sim = nullptr;
  int index = 0;
  std::string name;
  std::string id;
  World::Actor* actor = nullptr;
  Rng rng{0};
  double rate = 1.0;
  Duration offset{0};
  std::vector<Partition> partitions;

  bool alive = true;
  std::uint64_t incarnation = 0;
  Time paused_until{0};
  bool idle = true;
  bool in_call = false;
  std::deque<std::function<void()>> tasks;

  std::optional<Guard> guard;
  std::optional<Claim> claim;
  std::uint64_t claim_gen = 0;
  bool holding = false;
  Time hold_start{0};
  Time believed_until = kForever;

  bool partitioned(Time t, bool* black_hole) const {
    for (const auto& p : partitions) {
      if (t >= p.start && t < p.end) {
        *black_hole = p.black_hole;
        return true;
      }
    }
    return false;
  }
  // Local clocks as functions of global time.
  MonoTime mono(Time t) const {
    return MonoTime{} + std::chrono::hours(1) +
           Duration{static_cast<std::int64_t>(static_cast<double>(t.count()) * rate)};
  }
  WallTime wall(Time t) const {
    return WallTime{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}} + offset +
           Duration{static_cast<std::int64_t>(static_cast<double>(t.count()) * rate)};
  }
  Time global_of(MonoTime m) const {
    const auto local = (m - (MonoTime{} + std::chrono::hours(1))).count();
    return Time{static_cast<std::int64_t>(std::ceil(static_cast<double>(local) / rate))};
  }
  Time global_delay(Duration local) const {
    return Time{static_cast<std::int64_t>(std::ceil(static_cast<double>(local.count()) / rate))};
  }
};

struct Simulation {
  Config cfg;
  World world;
  Rng rng;
  StoreModel store;
  std::vector<std::unique_ptr<Node>> nodes;
  RunResult result;
  std::vector<Interval> intervals;
  std::optional<std::pair<Time, bool>> vacated;  // (when, by a crash)
  // With same_host: the host's boot (counted from 0) and when it began.
  std::uint64_t boot = 0;
  Time booted{0};

  Simulation(const Config& c, std::uint64_t seed, Capabilities caps)
      : cfg(c), rng(seed), store(caps, c.lag, rng) {
    result.seed = seed;
  }

  void note(const Node& n, std::string_view what) {
    world.mix(hash_text(what) ^ static_cast<std::uint64_t>(world.now().count()) ^
              (static_cast<std::uint64_t>(n.index) << 56));
    if (cfg.keep_log) {
      result.log.push_back(std::to_string(world.now().count() / 1000) + "us " + n.name + " " +
                           std::string(what));
    }
  }

  // Hands a task to a node's thread (deferred while it is paused).
  void deliver(Node& n, std::uint64_t incarnation, std::function<void()> task) {
    if (incarnation != n.incarnation || !n.alive) return;
    if (world.now() < n.paused_until) {
      world.at(n.paused_until, [this, &n, incarnation, task = std::move(task)]() mutable {
        deliver(n, incarnation, std::move(task));
      });
      return;
    }
    n.tasks.push_back(std::move(task));
    if (n.idle) world.resume(n.actor);
  }
  void deliver_at(Node& n, Time at, std::function<void()> task) {
    world.at(at, [this, &n, inc = n.incarnation, task = std::move(task)]() mutable {
      deliver(n, inc, std::move(task));
    });
  }

  // Blocks the calling node's thread until `done` or a crash.
  bool wait(Node& n, const std::shared_ptr<bool>& done, std::uint64_t incarnation) {
    n.in_call = true;
    while (!*done && n.incarnation == incarnation && !world.stopping()) world.block();
    n.in_call = false;
    return *done && n.incarnation == incarnation;
  }
  // Wakes a node blocked in wait() (deferred while it is paused).
  void wake(Node& n, std::shared_ptr<bool> done, std::uint64_t incarnation) {
    if (incarnation != n.incarnation) return;
    if (world.now() < n.paused_until) {
      world.at(n.paused_until, [this, &n, done, incarnation] { wake(n, done, incarnation); });
      return;
    }
    *done = true;
    world.resume(n.actor);
  }

  // ---- holders ----
  void begin_holding(Node& n) {
    n.holding = true;
    n.hold_start = world.now();
    n.believed_until = kForever;
    ++result.claims;
    note(n, "granted");
    if (vacated) {
      const Time gap = world.now() - vacated->first;
      (vacated->second ? result.takeovers : result.handovers).push_back(gap);
      vacated.reset();
    }
    update_belief(n);
  }
  void end_holding(Node& n, Time at, std::string_view why, bool crash = false) {
    if (!n.holding) return;
    n.holding = false;
    intervals.push_back({n.name, n.hold_start, std::min(at, n.believed_until)});
    note(n, std::string("ended: ") + std::string(why));
    const bool others =
        std::any_of(nodes.begin(), nodes.end(), [](const auto& o) { return o->holding; });
    if (!others && (crash || why == "stand_down")) vacated = {at, crash};
  }
  // After a task: the holder believes it holds until its fence deadline.
  void update_belief(Node& n) {
    if (!n.holding || !n.claim) return;
    if (n.claim->status() != ClaimStatus::held) {
      end_holding(n, world.now(), "not held");
      return;
    }
    const auto deadline = n.claim->fence_deadline();
    const Time until = deadline ? n.global_of(*deadline) : kForever;
    if (world.now() > n.believed_until) {  // belief had lapsed: a new interval
      intervals.push_back({n.name, n.hold_start, n.believed_until});
      n.hold_start = world.now();
    }
    n.believed_until = until;
  }

  // ---- the script each node follows ----
  void attempt(Node& n) {
    if (!n.alive || !n.guard || n.claim) return;
    const std::uint64_t incarnation = n.incarnation;
    auto claimed = n.guard->claim();
    // A claim of an incarnation that crashed meanwhile holds nothing, even
    // when the node has restarted by the time the call unwinds.
    if (!n.alive || n.incarnation != incarnation) return;
    if (claimed) {
      n.claim.emplace(std::move(*claimed));
      begin_holding(n);
      const std::uint64_t gen = ++n.claim_gen;
      deliver_at(n, world.now() + n.rng.exponential(cfg.hold_mean),
                 [this, &n, gen] { stand_down(n, gen); });
    } else {
      note(n, std::string("refused: ") + std::string(to_string(claimed.error().error.code)));
      deliver_at(n, world.now() + n.rng.uniform(cfg.poll_min, cfg.poll_max),
                 [this, &n] { attempt(n); });
    }
  }
  void stand_down(Node& n, std::uint64_t gen) {
    if (!n.claim || gen != n.claim_gen) return;
    end_holding(n, world.now(), "stand_down");
    (void)n.claim->stand_down();
    n.claim.reset();
    deliver_at(n, world.now() + cfg.rest + n.rng.uniform(cfg.poll_min, cfg.poll_max),
               [this, &n] { attempt(n); });
  }
  void lost(Node& n) {  // on_lost, on the node's thread
    end_holding(n, world.now(), "lost");
    ++result.losses;
    ++n.claim_gen;  // the scheduled stand-down no longer applies
    deliver_at(n, world.now() + n.rng.uniform(cfg.poll_min, cfg.poll_max), [this, &n] {
      n.claim.reset();
      attempt(n);
    });
  }

  void start_guard(Node& n);
  void crash(Node& n);
  void reboot();
  void restart(Node& n);
  void node_main(Node& n);
  void build();
  void finish();
};

// Time and deferred work for one node; all calls come from its own thread.
class NodeClock final : public Clock {
 public:
  explicit NodeClock(Node& n) : n_(n) {}
  WallTime wall() override { return n_.wall(n_.sim->world.now()) + skipped_; }
  MonoTime monotonic() override { return n_.mono(n_.sim->world.now()) + skipped_; }
  bool sleep_for(Duration d, std::stop_token stop) override {
    Simulation& s = *n_.sim;
    if (stop.stop_requested()) return false;
    if (d <= Duration::zero()) return true;
    if (!n_.alive || s.world.stopping()) {
      skipped_ += d;
      return true;
    }
    auto done = std::make_shared<bool>(false);
    const std::uint64_t inc = n_.incarnation;
    s.world.at(s.world.now() + n_.global_delay(d),
               [&s, n = &n_, done, inc] { s.wake(*n, done, inc); });
    return s.wait(n_, done, inc);
  }

 private:
  Node& n_;
  // Time this guard's clock skipped after its process died (or the run
  // ended): its sleeps return at once but still move its own clock, so loops
  // that sleep until a deadline (the guard's lag self-test) end while it
  // unwinds. Each incarnation has its own clock: a restart starts clean.
  Duration skipped_{0};
};

class NodeScheduler final : public Scheduler {
 public:
  explicit NodeScheduler(Node& n) : n_(n), incarnation_(n.incarnation) {}
  TaskId schedule(Duration delay, std::function<void()> task) override {
    const TaskId id = ++next_;
    if (!n_.alive || incarnation_ != n_.incarnation) return id;
    pending_.insert(id);
    Simulation& s = *n_.sim;
    const Time at = s.world.now() + n_.global_delay(std::max(delay, Duration{0}));
    s.world.at(at, [&s, n = &n_, inc = incarnation_, id, pending = pending_ptr(), task]() {
      s.deliver(*n, inc, [pending, id, task] {
        if (pending->erase(id) > 0) task();  // cancelled meanwhile: skip
      });
    });
    return id;
  }
  bool cancel(TaskId id) override { return pending_.erase(id) > 0; }

 private:
  std::set<TaskId>* pending_ptr() { return &pending_; }
  Node& n_;
  std::uint64_t incarnation_;
  std::set<TaskId> pending_;
  TaskId next_ = 0;
};

// The store as one node sees it: every call is a request with latencies.
class NodeStore final : public Store {
 public:
  explicit NodeStore(Node& n) : n_(n) {}
  std::string describe() const override { return "sim:"; }
  Capabilities capabilities() override { return n_.sim->store.caps(); }

  Result<Document> get(const Key& k) override {
    return call<Document>("get", k, [=, m = &model()](Time t) { return m->get(k, t); });
  }
  Result<std::string> create(const Key& k, std::string_view d) override {
    return call<std::string>(
        "create", k, [=, m = &model(), d = std::string(d)](Time t) { return m->create(k, d, t); });
  }
  Result<std::string> replace(const Key& k, std::string_view d) override {
    return call<std::string>("replace", k, [=, m = &model(), d = std::string(d)](Time t) {
      return m->replace(k, d, t);
    });
  }
  Result<void> remove(const Key& k) override {
    return call<void>("remove", k, [=, m = &model()](Time t) { return m->remove(k, t); });
  }
  Result<std::vector<Key>> list(const Key& p) override {
    return call<std::vector<Key>>("list", p, [=, m = &model()](Time t) { return m->list(p, t); });
  }
  Result<std::string> replace_if(const Key& k, std::string_view d, std::string_view v) override {
    return call<std::string>("replace_if", k,
                             [=, m = &model(), d = std::string(d), v = std::string(v)](Time t) {
                               return m->replace_if(k, d, v, t);
                             });
  }
  Result<void> remove_if(const Key& k, std::string_view v) override {
    return call<void>("remove_if", k, [=, m = &model(), v = std::string(v)](Time t) {
      return m->remove_if(k, v, t);
    });
  }
  Result<LockGrant> lock(const Key& k, Duration ttl, std::string_view owner) override {
    return call<LockGrant>("lock", k, [=, m = &model(), owner = std::string(owner)](Time t) {
      return m->lock(k, ttl, owner, t);
    });
  }
  Result<LockHolder> lock_holder(const Key& k) override {
    return call<LockHolder>("lock_holder", k,
                            [=, m = &model()](Time t) { return m->lock_holder(k, t); });
  }
  Result<Duration> refresh_lock(const Key& k, std::string_view tok, Duration ttl) override {
    return call<Duration>("refresh_lock", k, [=, m = &model(), tok = std::string(tok)](Time t) {
      return m->refresh_lock(k, tok, ttl, t);
    });
  }
  Result<void> unlock(const Key& k, std::string_view tok) override {
    return call<void>(
        "unlock", k, [=, m = &model(), tok = std::string(tok)](Time) { return m->unlock(k, tok); });
  }
  Result<LeaseClaimed> claim_lease(const LeaseClaim& c) override {
    if (!capabilities().atomic_lease) return Store::claim_lease(c);
    return call<LeaseClaimed>("claim_lease", c.lock,
                              [=, m = &model()](Time t) { return m->claim_lease(c, t); });
  }
  Result<LeaseRenewed> renew_lease(const LeaseRenewal& r) override {
    if (!capabilities().atomic_lease) return Store::renew_lease(r);
    return call<LeaseRenewed>("renew_lease", r.lock,
                              [=, m = &model()](Time t) { return m->renew_lease(r, t); });
  }
  Result<bool> end_lease(const LeaseEnd& e) override {
    if (!capabilities().atomic_lease) return Store::end_lease(e);
    return call<bool>("end_lease", e.lock,
                      [=, m = &model()](Time t) { return m->end_lease(e, t); });
  }

 private:
  // Requests outlive this object (a crash drops the guard): they capture the
  // model, never `this`.
  StoreModel& model() { return n_.sim->store; }

  template <class T>
  Result<T> call(std::string_view op, const Key& key, std::function<Result<T>(Time)> apply) {
    Simulation& s = *n_.sim;
    if (!n_.alive || s.world.stopping()) return fail(Errc::cancelled, "the process is gone");
    ++s.result.store_ops;
    const Config& c = s.cfg;
    const Time now = s.world.now();
    auto done = std::make_shared<bool>(false);
    auto out = std::make_shared<std::optional<Result<T>>>();
    const std::uint64_t inc = n_.incarnation;
    Node* n = &n_;
    const std::string what = std::string(op) + " " + key.str();
    bool black_hole = false;
    if (n_.partitioned(now, &black_hole)) {
      const Time after = black_hole ? c.timeout : s.rng.lognormal(c.latency, c.latency_sigma);
      *out = black_hole ? fail(Errc::timeout, what + ": no answer (partition)")
                        : fail(Errc::unavailable, what + ": unreachable (partition)");
      s.world.at(now + after, [&s, n, done, inc] { s.wake(*n, done, inc); });
    } else {
      auto sample = [&] {
        Time t = s.rng.lognormal(c.latency, c.latency_sigma);
        if (s.rng.chance(c.spike_probability)) t += s.rng.uniform(Duration{0}, c.spike);
        return t;
      };
      const Time request = sample(), response = sample();
      const bool times_out = request + response > c.timeout;
      s.world.at(now + request, [&s, n, out, apply, done, inc, response, times_out, what] {
        Result<T> r = apply(s.world.now());
        s.note(*n, what + (r ? " ok" : " " + std::string(to_string(r.error().code))));
        if (times_out) return;
        *out = std::move(r);
        s.world.at(s.world.now() + response, [&s, n, done, inc] { s.wake(*n, done, inc); });
      });
      if (times_out) {
        s.world.at(now + c.timeout, [&s, n, out, done, inc, what] {
          *out = fail(Errc::timeout, what + ": no answer in time");
          s.wake(*n, done, inc);
        });
      }
    }
    if (!s.wait(n_, done, inc) || !out->has_value()) {
      return fail(Errc::cancelled, "the process is gone");
    }
    return std::move(**out);
  }

  Node& n_;
};

class NodeLogger final : public Logger {
 public:
  explicit NodeLogger(Node& n) : n_(n) {}
  void log(LogLevel level, std::string_view message, std::span<const LogField>) override {
    // The guard marks a claim lost before it cleans up; the holder stops
    // believing at that moment.
    if (level == LogLevel::error && message == "claim lost") {
      n_.sim->end_holding(n_, n_.sim->world.now(), "lost");
    }
    if (message.starts_with("ended the store's lock of a holder that ran in an earlier boot")) {
      ++n_.sim->result.earlier_boot_ends;
    }
  }

 private:
  Node& n_;
};

void Simulation::start_guard(Node& n) {
  // On one host, a pid per incarnation: 1000 * (node + 1) + incarnation.
  const std::int64_t pid = cfg.same_host
                               ? 1000 * (n.index + 1) + static_cast<std::int64_t>(n.incarnation)
                               : 1000 + n.index;
  GuardOptions o{.ttl = cfg.ttl,
                 .id = n.id,
                 .host = cfg.same_host ? std::string("host") : n.name,
                 .pid = pid,
                 .clock = std::make_shared<NodeClock>(n),
                 .scheduler = std::make_shared<NodeScheduler>(n),
                 .logger = std::make_shared<NodeLogger>(n),
                 .mode = cfg.mode,
                 .settle = cfg.settle,
                 .max_skew = cfg.max_skew,
                 .on_lost = [this, &n](const Error&) { lost(n); },
                 .boot_id = cfg.same_host ? "boot-" + std::to_string(boot) : "boot-" + n.name,
                 .pid_ns = "pid-ns",
                 .machine_id = cfg.same_host ? std::string("machine") : "machine-" + n.name,
                 .booted_at = n.wall(cfg.same_host ? booted : Time{0})};
  if (cfg.same_host) {
    // Gone unless it is a node's incarnation that runs now (paused or cut
    // off included). Called on a node's thread, which holds the baton.
    o.process_gone = [this](std::int64_t p) {
      const std::int64_t index = p / 1000 - 1;
      if (index < 0 || index >= static_cast<std::int64_t>(nodes.size())) return false;
      const Node& owner = *nodes[static_cast<std::size_t>(index)];
      return !owner.alive || static_cast<std::int64_t>(owner.incarnation) != p % 1000;
    };
  }
  o.check_lag = cfg.lag_check;
  auto guard = Guard::create(std::make_shared<NodeStore>(n), std::move(o));
  if (!guard) {
    note(n, "guard: " + guard.error().message);
    return;
  }
  n.guard.emplace(std::move(*guard));
}

void Simulation::crash(Node& n) {
  if (!n.alive) return;
  end_holding(n, world.now(), "crash", true);
  note(n, "crash");
  ++result.crashes;
  n.alive = false;
  ++n.incarnation;
  n.paused_until = Time{0};
  n.tasks.clear();
  if (!n.idle) world.resume(n.actor);  // its pending call returns; the task unwinds
  world.at(world.now() + n.rng.uniform(cfg.restart_min, cfg.restart_max),
           [this, &n] { restart(n); });
}

void Simulation::reboot() {
  note(*nodes.front(), "the host reboots");
  ++result.reboots;
  for (auto& n : nodes) crash(*n);
  ++boot;
  booted = world.now();
}

void Simulation::restart(Node& n) {
  if (n.alive) return;
  n.alive = true;
  if (!n.rng.chance(cfg.same_id_restart)) n.id = n.name + "-" + std::to_string(n.incarnation);
  note(n, "restart as " + n.id);
  deliver(n, n.incarnation, [this, &n] {
    start_guard(n);
    attempt(n);
  });
}

void Simulation::node_main(Node& n) {
  while (!world.stopping()) {
    if (!n.alive && (n.claim || n.guard)) {  // a crashed process leaves nothing running
      n.claim.reset();
      n.guard.reset();
    }
    if (n.tasks.empty()) {
      n.idle = true;
      world.block();
      n.idle = false;
      continue;
    }
    auto task = std::move(n.tasks.front());
    n.tasks.pop_front();
    task();
    if (n.alive) update_belief(n);
  }
  end_holding(n, world.now(), "end of run");
  n.claim.reset();  // store calls fail at once now: nothing is released
  n.guard.reset();
}

std::vector<Partition> make_partitions(const Config& c, Rng& rng) {
  std::vector<Partition> out;
  if (c.partitions_per_minute <= 0) return out;
  Time t = rng.exponential(Time{static_cast<std::int64_t>(60e9 / c.partitions_per_minute)});
  while (t < c.duration) {
    const Time len = rng.uniform(Duration{1}, c.partition_max);
    out.push_back({t, t + len, rng.chance(0.5)});
    t += len + rng.exponential(Time{static_cast<std::int64_t>(60e9 / c.partitions_per_minute)});
  }
  return out;
}

void Simulation::build() {
  for (int i = 0; i < cfg.guards; ++i) {
    auto n = std::make_unique<Node>();
    n->sim = this;
    n->index = i;
    n->name = "n" + std::to_string(i);
    n->id = n->name;
    n->rng = Rng(rng.next());
    n->rate = 1.0 + (rng.unit() * 2 - 1) * cfg.drift;
    n->offset = rng.uniform(-cfg.clock_offset, cfg.clock_offset);
    n->partitions = make_partitions(cfg, n->rng);
    Node* raw = n.get();
    n->actor = world.spawn(n->name, [this, raw] { node_main(*raw); });
    nodes.push_back(std::move(n));
  }
  if (cfg.same_host && cfg.reboots_per_minute > 0) {
    const Time mean{static_cast<std::int64_t>(60e9 / cfg.reboots_per_minute)};
    for (Time t = rng.exponential(mean); t < cfg.duration; t += rng.exponential(mean)) {
      world.at(t, [this] { reboot(); });
    }
  }
  for (auto& np : nodes) {
    Node& n = *np;
    deliver_at(n, rng.uniform(Duration{0}, cfg.start_spread), [this, &n] {
      start_guard(n);
      attempt(n);
    });
    auto poisson = [&](double per_minute, auto&& fn) {
      if (per_minute <= 0) return;
      const Time mean{static_cast<std::int64_t>(60e9 / per_minute)};
      for (Time t = n.rng.exponential(mean); t < cfg.duration; t += n.rng.exponential(mean)) fn(t);
    };
    poisson(cfg.crashes_per_minute, [&](Time t) { world.at(t, [this, &n] { crash(n); }); });
    poisson(cfg.pauses_per_minute, [&](Time t) {
      const Time len = n.rng.uniform(Duration{1}, cfg.pause_max);
      world.at(t, [this, &n, len] {
        if (!n.alive) return;
        note(n, "pause");
        n.paused_until = std::max(n.paused_until, world.now() + len);
      });
    });
  }
}

void Simulation::finish() {
  world.run(cfg.duration);  // ends every node's thread
  result.events = world.events();
  result.trace = world.trace();
  // Intervals with two or more holders, on the global clock.
  std::vector<std::pair<Time, int>> edges;
  for (const auto& iv : intervals) {
    if (iv.end <= iv.start) continue;
    edges.push_back({iv.start, +1});
    edges.push_back({iv.end, -1});
  }
  std::sort(edges.begin(), edges.end());  // ends (-1) before starts at the same time
  int count = 0;
  Time open{0};
  for (const auto& [t, d] : edges) {
    const int before = count;
    count += d;
    if (before < 2 && count >= 2) open = t;
    if (before >= 2 && count < 2 && t > open) {
      Overlap o{open, t - open, {}};
      for (const auto& iv : intervals) {
        if (iv.start < t && iv.end > open) o.holders.push_back(iv.holder);
      }
      result.overlaps.push_back(std::move(o));
    }
  }
}

}  // namespace

bool must_exclude(const Config& c) {
  if (c.mode == Mode::announce) return false;
  if (c.mode == Mode::verify) return c.lag <= c.settle;
  return true;
}

RunResult run_one(const Config& config, std::uint64_t seed) {
  Capabilities caps;
  if (config.mode == Mode::exclusive || config.mode == Mode::automatic) {
    caps.versions = caps.conditional_writes = true;
  }
  if (config.mode == Mode::automatic) caps.native_lease = caps.server_clock = true;
  if (config.stale_locks && config.mode != Mode::announce && config.mode != Mode::verify) {
    caps = Capabilities{.native_lease = true, .ends_stale_locks = true};
  }
  if (config.atomic_lease && (config.mode == Mode::exclusive || config.mode == Mode::automatic)) {
    caps.native_lease = caps.server_clock = caps.atomic_lease = true;
    caps.ends_stale_locks = false;
  }
  auto sim = std::make_unique<Simulation>(config, seed, caps);
  sim->build();
  sim->finish();
  return std::move(sim->result);
}

}  // namespace instance::sim
