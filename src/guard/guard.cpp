// The guard: options, the choice of protocol, and a granted claim's life
// (renewals, self-fencing, loss, stand-down). The protocols themselves are
// in announce.cpp, verify.cpp and exclusive.cpp.
#include "instance/guard.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <utility>

#include "instance/history.hpp"
#include "instance/sdk/random.hpp"
#include "instance/sdk/startup_budget.hpp"
#include "instance/time.hpp"
#include "protocol.hpp"

namespace instance {

std::string_view to_string(Mode mode) noexcept {
  switch (mode) {
    case Mode::automatic:
      return "auto";
    case Mode::announce:
      return "announce";
    case Mode::verify:
      return "verify";
    case Mode::exclusive:
      return "exclusive";
  }
  return "unknown";
}

Result<Mode> parse_mode(std::string_view text) {
  for (Mode m : {Mode::automatic, Mode::announce, Mode::verify, Mode::exclusive}) {
    if (text == to_string(m)) return m;
  }
  return fail(Errc::invalid, "unknown mode \"" + std::string(text) +
                                 "\" (choose auto, announce, verify or exclusive)");
}

namespace detail {

// Closes the tenure of a holder whose record `by` found dead: ended at its
// last renewal (it died after it), unless it was closed already. With
// `listed` (history/'s keys, sorted), only a tenure listed there is read.
void close_dead_tenure(Store& store, Logger& log, const std::string& by, const Record& r,
                       const std::vector<std::string>* listed) {
  auto k = instance::tenure_key(r.id, r.started_at);
  if (!k) return;
  if (listed && !std::binary_search(listed->begin(), listed->end(), k->str())) return;
  auto doc = store.get(*k);
  if (!doc) return;  // gone, or unreadable: never overwritten
  auto t = decode_tenure(doc->data);
  if (!t) {
    log.warn("a dead holder's tenure cannot be read; left as it is",
             {{"key", k->str()}, {"error", t.error().message}});
    return;
  }
  if (t->ended_at) return;  // it closed its tenure itself, or another successor did
  t->ended_at = std::max(r.renewed_at.value_or(r.started_at), t->claimed_at);
  t->end = "crashed";
  t->reason = "its record was found dead by " + by + "; ended at its last renewal";
  const bool conditional = store.capabilities().conditional_writes && !doc->version.empty();
  auto written = conditional ? store.replace_if(*k, encode_tenure(*t), doc->version)
                             : store.replace(*k, encode_tenure(*t));
  if (written) {
    log.info("closed a dead holder's tenure", {{"key", k->str()}, {"holder", r.id}});
  } else if (written.error().code != Errc::conflict) {
    log.warn("could not close a dead holder's tenure",
             {{"key", k->str()}, {"error", written.error().message}});
  }
}

// A granted claim. Renewal and fence tasks hold a weak_ptr, so a claim that
// is gone is never renewed.
//
// Two locks: `io` serialises the protocol's store calls (renew, release,
// cleanup after a loss); `mu` guards the state and is never held across a
// store call. So the self-fencing check, status() and fence_deadline() never
// wait for a renewal stuck in a slow store.
struct ClaimState : std::enable_shared_from_this<ClaimState> {
  std::shared_ptr<Store> store;
  std::shared_ptr<GuardOptions> options;
  std::unique_ptr<Protocol> protocol;
  Key key;
  HostIdentity self;
  std::string id;                      // never changes: read without the lock
  Mode mode = Mode::announce;          // never changes
  std::optional<std::uint64_t> epoch;  // never changes

  std::mutex io;
  mutable std::mutex mu;
  Holding held;
  ClaimStatus status = ClaimStatus::held;
  std::optional<Error> loss;
  bool record_withdrawn = false;  // after a loss: our record is gone (or we gave up)
  TaskId renewal = 0;
  TaskId fence = 0;
  MonoTime deadline{};              // self-fencing: lost when no renewal succeeds by then
  std::optional<WallTime> lost_at;  // when the claim was lost, on our clock

  // Tenure history (instance/history.hpp), with options->history: our
  // tenure's key (none when its write was never tried), the document as
  // written, the records of dead holders the claim found, and the task that
  // writes our tenure, closes theirs and prunes the history after the claim.
  // history_mu guards tenure_key and tenure, and is held across their
  // writes: the end of a claim lost while its opening write is still under
  // way lands after it, never under it, and an end written before the
  // upkeep ran (tenure.ended_at set) leaves it no opening write to make.
  std::mutex history_mu;
  std::optional<Key> tenure_key;
  Tenure tenure;
  std::vector<DeadRecord> dead;
  // The records the claim proved stale, removed after it was granted.
  std::vector<StaleRecord> stale;
  TaskId housekeeping = 0;  // the upkeep's next turn: our tenure, stale records, the history
  // Held while a turn of the upkeep runs, so a stand-down waits for one in
  // flight rather than returning (and the process exiting) halfway through
  // it; guards housekeeping (rescheduled by each turn), upkept and
  // next_stale.
  std::mutex upkeep_mu;
  // nothing yet; our tenure written and the stale records sorted, their
  // removals under way; all done.
  enum class Upkept { nothing, removing, all };
  Upkept upkept = Upkept::nothing;
  std::size_t next_stale = 0;  // stale[next_stale..] are still to remove

  Context context() const {
    return Context{*store, *options->clock, *options->logger, *options, key, self, mode};
  }
  Logger& log() const { return *options->logger; }
  // The window our claim is good for after a successful write: the ttl, or
  // what the store granted when less (requires mu).
  Duration window() const { return lease_window(*options, held.granted); }
  Duration period() const { return window() / 3; }  // requires mu
  // The write that succeeded started no later than `since`; our record and
  // lease are good until since + window on our clock, and others may judge
  // them max_skew early (requires mu).
  MonoTime deadline_after(MonoTime since) const { return since + window() - *options->max_skew; }

  void start(MonoTime acquired_since) {  // requires mu
    schedule_renewal(period());
    if (protocol->detects_loss()) arm_fence(deadline_after(acquired_since));
  }

  // The next renewal, `delay` from now (a period after the claim).
  void schedule_renewal(Duration delay) {  // requires mu
    renewal = options->scheduler->schedule(delay, [weak = weak_from_this()] {
      if (auto self_ptr = weak.lock()) self_ptr->renew();
    });
  }

  // The next renewal's delay after one that took `took` (requires mu).
  Duration next_renewal(Duration took) const { return std::max(Duration::zero(), period() - took); }

  void arm_fence(MonoTime at) {  // requires mu
    options->scheduler->cancel(fence);
    deadline = at;
    const Duration delay = std::max(Duration{0}, at - options->clock->monotonic());
    fence = options->scheduler->schedule(delay, [weak = weak_from_this()] {
      if (auto self_ptr = weak.lock()) self_ptr->check_fence();
    });
  }

  // Why the claim is lost when its self-fencing deadline passed (requires
  // mu).
  Error fence_passed() const {
    return Error{Errc::lost,
                 "no renewal succeeded for " +
                     std::string(held.granted > Duration::zero() && held.granted < options->ttl
                                     ? "the store's lock grant"
                                     : "ttl") +
                     " - max-skew (" + format_duration(window() - *options->max_skew) +
                     "); another instance may take over now"};
  }

  void check_fence() {
    std::unique_lock lock(mu);
    if (status != ClaimStatus::held) return;
    if (options->clock->monotonic() < deadline) return;  // renewed meanwhile
    lose(lock, fence_passed());
    // A renewal may be stuck holding `io`; it withdraws our record when it
    // returns. Otherwise do it now.
    std::unique_lock io_lock(io, std::try_to_lock);
    if (io_lock.owns_lock()) withdraw_record();
  }

  void renew() {
    std::lock_guard io_lock(io);
    Holding work;
    {
      std::unique_lock lock(mu);
      if (status != ClaimStatus::held) return;
      // Woken after the self-fencing deadline (the process was stopped, the
      // host paused or suspended past it): the claim is lost before anything
      // else happens, a request to the store included, so the holder hears
      // it first. The fence task may still be queued behind this one.
      if (protocol->detects_loss() && options->clock->monotonic() >= deadline) {
        lose(lock, fence_passed());
        withdraw_record();
        return;
      }
      work = held;
    }
    const MonoTime started = options->clock->monotonic();
    const Renewal r = protocol->renew(context(), work);

    std::unique_lock lock(mu);
    // Renewals start a period apart however long one took (at once after
    // one that took longer): a failed attempt that spent a whole request
    // timeout on a store that did not answer still leaves the retries
    // before the self-fencing deadline that a quick failure leaves.
    const Duration took = options->clock->monotonic() - started;
    if (status == ClaimStatus::lost) {  // fenced while the store was busy
      lock.unlock();
      withdraw_record();
      return;
    }
    if (status != ClaimStatus::held) return;  // stood down meanwhile
    switch (r.outcome) {
      case Renewal::renewed:
        if (work.granted != held.granted) {
          log().info("the store's lock grant changed; renewing on the new one",
                     {{"id", id},
                      {"granted", format_duration(work.granted)},
                      {"was", format_duration(held.granted)}});
        }
        held = std::move(work);
        log().debug("renewed",
                    {{"id", id}, {"expires_at", format_rfc3339(held.record.expires_at)}});
        if (protocol->detects_loss()) {
          if (options->clock->monotonic() >= deadline) {
            // The write landed, but after our deadline: others may already
            // have judged us gone.
            lose(lock, Error{Errc::lost,
                             "a renewal succeeded only after the self-fencing "
                             "deadline had passed"});
            withdraw_record();
            return;
          }
          arm_fence(deadline_after(started));
        }
        break;
      case Renewal::failed:
        log().warn("renewal failed; retrying next period",
                   {{"id", id},
                    {"error", r.error.message},
                    {"retry_in", format_duration(next_renewal(took))}});
        break;
      case Renewal::lost:
        lose(lock, r.error);
        withdraw_record();
        return;
    }
    schedule_renewal(next_renewal(took));
    if (options->on_renewal) {
      const RenewalReport report{.renewed = r.outcome == Renewal::renewed,
                                 .took = options->clock->monotonic() - started,
                                 .error = r.outcome == Renewal::renewed ? "" : r.error.message};
      auto handler = options->on_renewal;
      lock.unlock();
      handler(report);
    }
  }

  // Ends a held claim as lost: stops renewing and tells the holder, outside
  // the lock, so the handler may call back into the claim. Leaves `lock`
  // unlocked.
  void lose(std::unique_lock<std::mutex>& lock, Error why) {
    status = ClaimStatus::lost;
    loss = why;
    lost_at = options->clock->wall();
    options->scheduler->cancel(renewal);
    options->scheduler->cancel(fence);
    log().error("claim lost", {{"id", id}, {"reason", why.message}});
    auto handler = options->on_lost;
    lock.unlock();
    if (handler) handler(why);
  }

  // After a loss our record no longer speaks for a holder: remove it once, if
  // the store lets us. Requires `io`.
  void withdraw_record() {
    {
      std::lock_guard lock(mu);
      if (record_withdrawn) return;
      record_withdrawn = true;
    }
    if (auto removed = store->remove(key); !removed && removed.error().code != Errc::not_found) {
      log().warn("could not remove our record after the loss",
                 {{"error", removed.error().message}});
    }
    std::optional<WallTime> at;
    std::string why;
    {
      std::lock_guard lock(mu);
      at = lost_at;
      if (loss) why = loss->message;
    }
    close_tenure("lost", std::move(why), at.value_or(options->clock->wall()));
  }

  // ---- Tenure history -------------------------------------------------------

  // Opens our tenure once the claim is granted. Its write, like the rest of
  // the history's upkeep, is off the claim path (the service starts without
  // waiting for it): the upkeep writes it first, at once after the claim, or
  // the stand-down does when the claim ends before the upkeep ran. A process
  // killed in between leaves no tenure, only its record, which a successor
  // finds dead like any other.
  void open_tenure(std::vector<DeadRecord> found_dead) {
    Holding now_held;
    {
      std::lock_guard lock(mu);
      now_held = held;
    }
    auto k = instance::tenure_key(id, now_held.record.started_at);
    if (!k) {
      log().warn("no tenure history for this claim", {{"error", k.error().message}});
      return;
    }
    std::unique_lock history_lock(history_mu);
    tenure = Tenure{.id = id,
                    .host = self.host,
                    .pid = self.pid,
                    .mode = std::string(to_string(mode)),
                    .epoch = epoch,
                    .started_at = now_held.record.started_at,
                    .claimed_at = options->clock->wall(),
                    .max_skew = *options->max_skew};
    tenure_key = *k;
    history_lock.unlock();
    dead = std::move(found_dead);
  }

  // Schedules the upkeep after the claim, at once but off its path, when
  // there is any: the stale records to remove, the history to keep.
  void schedule_upkeep() {
    bool history_kept;
    {
      std::lock_guard history_lock(history_mu);
      history_kept = tenure_key.has_value();
    }
    if (stale.empty() && !history_kept) return;
    std::lock_guard once(upkeep_mu);
    schedule_upkeep_turn();
  }

  // The upkeep's next turn, at once (requires upkeep_mu).
  void schedule_upkeep_turn() {
    housekeeping = options->scheduler->schedule(Duration::zero(), [weak = weak_from_this()] {
      auto self_ptr = weak.lock();
      if (!self_ptr) return;
      std::lock_guard once(self_ptr->upkeep_mu);
      if (self_ptr->upkeep_turn(kRemovalsPerTurn)) self_ptr->schedule_upkeep_turn();
    });
  }

  // Stale records one turn of the scheduled upkeep removes: a renewal that
  // falls due meanwhile runs between two turns, even on a scheduler with one
  // worker (the earliest due task runs first).
  static constexpr std::size_t kRemovalsPerTurn = 16;

  // Once per claim, after it was granted, in turns (requires upkeep_mu):
  // writes our tenure, removes at most `removals` of the records the claim
  // proved stale, each only if it is still what was judged (remove_stale: a
  // record its owner rewrote meanwhile stays), and once none is left keeps
  // the history.
  // Returns whether anything is left for another turn.
  bool upkeep_turn(std::size_t removals) {
    if (upkept == Upkept::all) return false;
    if (upkept == Upkept::nothing) {
      {
        std::lock_guard history_lock(history_mu);
        if (tenure_key && !tenure.ended_at) write_tenure("the claim's tenure");
      }
      std::sort(stale.begin(), stale.end(),
                [](const StaleRecord& a, const StaleRecord& b) { return a.key < b.key; });
      upkept = Upkept::removing;
    }
    for (; next_stale < stale.size() && removals > 0; ++next_stale) {
      // verify scans twice: the same record may be listed twice; the later
      // judgement (its version last read) counts.
      const std::size_t i = next_stale;
      if (i + 1 < stale.size() && stale[i + 1].key == stale[i].key) continue;
      --removals;
      const StaleRecord& s = stale[i];
      auto removed = detail::remove_stale(*store, s);
      if (removed) {
        log().info("removed a stale record",
                   {{"key", s.key.str()}, {"expired_at", format_rfc3339(s.record.expires_at)}});
      } else if (removed.error().code != Errc::not_found &&
                 removed.error().code != Errc::conflict) {
        log().warn("could not remove a stale record",
                   {{"key", s.key.str()}, {"error", removed.error().message}});
      }
    }
    if (next_stale < stale.size()) return true;
    stale.clear();
    upkept = Upkept::all;
    bool history_kept;
    {
      std::lock_guard history_lock(history_mu);
      history_kept = tenure_key.has_value();
    }
    if (history_kept) keep_history();
    return false;
  }

  void close_tenure(std::string end, std::string reason, WallTime at) {
    std::lock_guard history_lock(history_mu);
    if (!tenure_key) return;
    tenure.ended_at = std::max(at, tenure.claimed_at);
    tenure.end = std::move(end);
    tenure.reason = std::move(reason);
    write_tenure("the end of the claim's tenure");
  }

  void write_tenure(std::string_view what) {  // requires history_mu
    if (auto written = store->replace(*tenure_key, encode_tenure(tenure)); !written) {
      log().warn("could not write " + std::string(what) + " to the history; the claim goes on",
                 {{"key", tenure_key->str()}, {"error", written.error().message}});
    }
  }

  // Once per claim, after it was granted: closes the tenures of the dead
  // holders the claim found (ended at their last renewal: they died after
  // it), then removes the oldest tenures beyond history_keep. One listing
  // of history/, and a read and a write per tenure to close.
  void keep_history() {
    std::string ours;
    WallTime ours_started{};
    {
      std::lock_guard history_lock(history_mu);
      if (tenure_key) ours = tenure_key->str();
      ours_started = tenure.started_at;
    }
    auto listed = store->list(history_prefix());
    if (!listed) {
      log().warn("could not list the history to keep it", {{"error", listed.error().message}});
      return;
    }
    std::vector<std::string> keys;
    for (const Key& k : *listed) keys.push_back(k.str());
    std::sort(keys.begin(), keys.end());
    for (const DeadRecord& d : dead) {
      if (d.record.id == id && d.record.started_at == ours_started) continue;  // ours
      close_dead_tenure(*store, log(), id, d.record, &keys);
    }
    const std::size_t keep = std::max<std::size_t>(options->history_keep, 1);
    if (keys.size() <= keep) return;
    for (std::size_t i = 0; i + keep < keys.size(); ++i) {
      if (keys[i] == ours) continue;
      auto k = Key::parse(keys[i]);
      if (!k) continue;  // a name we did not write: not ours to remove
      if (auto removed = store->remove(*k); !removed && removed.error().code != Errc::not_found) {
        log().warn("could not remove an old tenure from the history",
                   {{"key", keys[i]}, {"error", removed.error().message}});
      }
    }
  }

  Result<void> stand_down() {
    if (status_is(ClaimStatus::lost)) {
      // Never wait for a renewal stuck in the store: it withdraws our record
      // itself when it returns.
      std::unique_lock io_lock(io, std::try_to_lock);
      if (io_lock.owns_lock()) withdraw_record();
      return {};
    }
    std::lock_guard io_lock(io);  // waits for a renewal in flight
    Holding work;
    ClaimStatus was;
    {
      std::lock_guard lock(mu);
      was = status;
      if (was == ClaimStatus::held) {
        status = ClaimStatus::released;
        options->scheduler->cancel(renewal);
        options->scheduler->cancel(fence);
        work = held;
      }
    }
    if (was == ClaimStatus::lost) withdraw_record();  // once; later calls do nothing
    if (was != ClaimStatus::held) return {};
    const WallTime ended = options->clock->wall();
    auto released = protocol->release(context(), work);
    // Our tenure closed (and so written, opened and closed at once, when
    // the upkeep has not written it yet), then what is left of the upkeep
    // after the claim, after the release, so a successor never waits for
    // it: a turn under way is waited for and the rest runs now (all of it
    // after a short claim), so that it is never cut off by the process
    // exiting (a dead holder's tenure left open, a stale record left).
    close_tenure("stood_down", "", ended);
    {
      std::lock_guard once(upkeep_mu);
      options->scheduler->cancel(housekeeping);
      (void)upkeep_turn(std::numeric_limits<std::size_t>::max());  // all that is left
    }
    if (!released) {
      log().warn("stand-down could not release the claim; it expires on its own",
                 {{"id", id},
                  {"error", released.error().message},
                  {"expires_at", format_rfc3339(work.record.expires_at)}});
      return released;
    }
    log().info("stood down", {{"id", id}});
    return {};
  }

  bool status_is(ClaimStatus s) const {
    std::lock_guard lock(mu);
    return status == s;
  }
};

Duration lease_window(const GuardOptions& options, Duration granted) {
  return granted > Duration::zero() ? std::min(options.ttl, granted) : options.ttl;
}

Duration held_for(const GuardOptions& options, Duration granted) {
  constexpr Duration kLongest = std::chrono::hours(24 * 3653);
  return std::max(options.ttl, std::min(granted, kLongest));
}

Result<void> check_grant(const GuardOptions& options, Duration granted, std::string_view store) {
  if (granted <= Duration::zero() || granted >= options.ttl) return {};
  const Duration least = std::max<Duration>(*options.max_skew * 3, std::chrono::seconds(1));
  if (granted >= least) return {};
  return fail(Errc::invalid,
              std::string(store) + " granted its lock for only " + format_duration(granted) +
                  " (ttl " + format_duration(options.ttl) +
                  " asked): too short to renew "
                  "before it lapses with max-skew " +
                  format_duration(*options.max_skew) + "; a grant must be at least " +
                  format_duration(least) +
                  " (3 x max-skew, and 1 s): lengthen the server's lock timeout or lower "
                  "--max-skew");
}

}  // namespace detail

namespace {

// Ids go into file names and JSON: valid UTF-8, no control characters, and
// short enough that the escaped name fits a file name (255 bytes).
Result<void> check_id(const std::string& id) {
  auto bad = [&](std::string_view why) {
    return fail(Errc::invalid, "instance id is unusable: " + std::string(why));
  };
  if (id.size() > 200) return bad("longer than 200 bytes");
  for (std::size_t i = 0; i < id.size();) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (c < 0x20 || c == 0x7F) return bad("contains a control character");
    const std::size_t len = c < 0x80           ? 1
                            : (c >> 5) == 0x6  ? 2
                            : (c >> 4) == 0xE  ? 3
                            : (c >> 3) == 0x1E ? 4
                                               : 0;
    if (len == 0 || i + len > id.size()) return bad("not valid UTF-8");
    for (std::size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(id[i + k]) >> 6) != 0x2) return bad("not valid UTF-8");
    }
    i += len;
  }
  if (auto key = record_key(id); !key)
    return bad(key.error().message);
  else if (key->str().size() - records_prefix().str().size() - 1 > 255) {
    return bad("its escaped form is longer than 255 bytes");
  }
  return {};
}

std::unique_ptr<detail::Protocol> make_protocol(Mode mode) {
  switch (mode) {
    case Mode::verify:
      return detail::make_verify_protocol();
    case Mode::exclusive:
      return detail::make_exclusive_protocol();
    default:
      return detail::make_announce_protocol();
  }
}

}  // namespace

Guard::Guard(std::shared_ptr<Store> store, GuardOptions options)
    : store_(std::move(store)),
      options_(std::make_shared<GuardOptions>(std::move(options))),
      key_(*record_key(options_->id)),
      lag_checked_(std::make_shared<std::atomic<bool>>(false)) {}

Result<Guard> Guard::create(std::shared_ptr<Store> store, GuardOptions options) {
  if (store == nullptr) return fail(Errc::invalid, "the guard needs a store; got none");
  if (options.ttl <= Duration::zero()) {
    return fail(Errc::invalid, "ttl must be positive; got " + format_duration(options.ttl));
  }
  if (!options.max_skew) {
    options.max_skew = std::min<Duration>(std::chrono::seconds(5), options.ttl / 10);
  }
  if (*options.max_skew < Duration::zero() || *options.max_skew * 2 >= options.ttl) {
    return fail(Errc::invalid, "max-skew (" + format_duration(*options.max_skew) +
                                   ") must be at least 0 and less than half the ttl (" +
                                   format_duration(options.ttl) + ")");
  }
  if (options.settle < Duration::zero() || options.settle >= options.ttl / 3) {
    return fail(Errc::invalid, "settle (" + format_duration(options.settle) +
                                   ") must be at least 0 and less than a third of the ttl");
  }
  if (options.history && options.history_keep < 1) {
    return fail(Errc::invalid, "the history must keep at least 1 tenure; got 0");
  }
  if (options.startup_timeout < Duration::zero()) {
    return fail(Errc::invalid, "the start-up timeout must be at least 0; got " +
                                   format_duration(options.startup_timeout));
  }
  if (options.id.empty()) options.id = random_hex(8);
  if (auto ok = check_id(options.id); !ok) return std::unexpected(ok.error());
  const detail::HostIdentity here = detail::this_process();
  if (options.host.empty()) options.host = here.host;
  if (!options.pid) options.pid = here.pid;
  if (options.boot_id.empty()) options.boot_id = here.boot_id;
  if (options.pid_ns.empty()) options.pid_ns = here.pid_ns;
  if (options.machine_id.empty()) options.machine_id = here.machine_id;
  if (!options.booted_at) options.booted_at = here.booted_at;
  if (!options.clock) options.clock = system_clock();
  if (!options.scheduler) options.scheduler = thread_scheduler();
  if (!options.logger) options.logger = null_logger();
  // The one place the guard's timing reaches the store (Store::tune).
  store->tune({.ttl = options.ttl, .max_skew = *options.max_skew});
  return Guard(std::move(store), std::move(options));
}

namespace {

// The start-up budget around claim() and resolve_mode(): every store
// operation inside gives up by now + startup_timeout, and each retry a store
// makes is logged at info: what failed, where, when the next attempt is.
// A prvalue (StartupBudget cannot move): `const StartupBudget b = ...;`.
StartupBudget startup_budget(const GuardOptions& options, std::string store) {
  const MonoTime deadline = options.clock->monotonic() + options.startup_timeout;
  return StartupBudget(*options.clock, options.startup_timeout,
                       [logger = options.logger, clock = options.clock, store = std::move(store),
                        deadline](const RetryNotice& n) {
                         const Duration left =
                             std::max(Duration::zero(), deadline - clock->monotonic());
                         logger->info("the store did not answer; trying again",
                                      {{"store", store},
                                       {"error", std::string(n.error)},
                                       {"attempt", std::to_string(n.attempt)},
                                       {"next_attempt_in", format_duration(n.pause)},
                                       {"give_up_in", format_duration(left)}});
                       });
}

}  // namespace

Result<Capabilities> Guard::learn_capabilities(std::stop_token stop) {
  Clock& clock = *options_->clock;
  const StartupBudget* budget = StartupBudget::current();
  const MonoTime deadline =
      clock.monotonic() + (budget ? budget->remaining() : options_->startup_timeout);
  Duration pause = std::chrono::milliseconds(250);
  for (bool told = false;; told = true) {
    Capabilities caps = store_->capabilities();
    if (!caps.unknown) return caps;
    const Error& why = *caps.unknown;
    const bool transient = why.code == Errc::unavailable || why.code == Errc::timeout;
    const MonoTime now = clock.monotonic();
    if (!transient || now >= deadline) {
      return fail(why.code, "cannot learn what " + store_->describe() +
                                " supports, so no mode is chosen (a weaker one is never "
                                "assumed): " +
                                why.message);
    }
    if (!told) {
      options_->logger->warn("cannot learn what the store supports yet; trying again",
                             {{"store", store_->describe()},
                              {"error", why.message},
                              {"give_up_in", format_duration(deadline - now)}});
    }
    if (!clock.sleep_for(std::min(pause, deadline - now), stop)) {
      return fail(Errc::cancelled, "claim cancelled");
    }
    pause = std::min<Duration>(pause * 2, std::chrono::seconds(2));
  }
}

Result<Guard::ModeChoice> Guard::choose_mode(std::stop_token stop) {
  const Mode requested = options_->mode;
  if (requested == Mode::announce || requested == Mode::verify) {
    return ModeChoice{requested, "requested"};
  }
  auto caps = learn_capabilities(stop);
  if (!caps) return std::unexpected(caps.error());
  const bool lease = caps->native_lease;
  const bool cas = caps->conditional_writes;
  if (requested == Mode::exclusive) {
    if (!lease && !cas) {
      return fail(Errc::unsupported, store_->describe() +
                                         " offers neither a native lease nor conditional "
                                         "writes, so exclusive mode is impossible; use "
                                         "--mode verify (or auto)");
    }
    return ModeChoice{Mode::exclusive, "requested"};
  }
  if (lease) return ModeChoice{Mode::exclusive, "the store has its own locks"};
  if (cas) return ModeChoice{Mode::exclusive, "the store has atomic conditional writes"};
  return ModeChoice{Mode::verify,
                    "the store has neither its own locks nor atomic conditional writes"};
}

Result<Mode> Guard::resolve_mode(std::stop_token stop) {
  const StartupBudget budget = startup_budget(*options_, store_->describe());
  auto choice = choose_mode(stop);
  if (!choice) return std::unexpected(choice.error());
  return choice->mode;
}

std::expected<Claim, ClaimError> Guard::claim(std::stop_token stop) {
  if (stop.stop_requested()) {
    return std::unexpected(detail::failure(Errc::cancelled, "claim cancelled"));
  }
  const StartupBudget budget = startup_budget(*options_, store_->describe());
  auto choice = choose_mode(stop);
  if (!choice) return std::unexpected(ClaimError{choice.error(), std::nullopt});
  const Mode mode = choice->mode;

  auto state = std::make_shared<detail::ClaimState>();
  state->store = store_;
  state->options = options_;
  state->protocol = make_protocol(mode);
  state->key = key_;
  state->self = detail::HostIdentity{.host = options_->host,
                                     .boot_id = options_->boot_id,
                                     .pid_ns = options_->pid_ns,
                                     .pid = *options_->pid,
                                     .process_gone = options_->process_gone,
                                     .machine_id = options_->machine_id,
                                     .booted_at = options_->booted_at.value_or(WallTime{})};
  state->id = options_->id;
  state->mode = mode;

  if (mode == Mode::verify && options_->check_lag && !lag_checked_->load()) {
    auto lag = detail::check_visibility_lag(state->context(), stop);
    if (!lag) return std::unexpected(ClaimError{lag.error(), std::nullopt});
    lag_checked_->store(true);
  }

  const MonoTime since = options_->clock->monotonic();
  std::vector<detail::DeadRecord> dead;
  std::vector<detail::StaleRecord> stale;
  detail::Context ctx = state->context();
  if (options_->history) ctx.dead = &dead;
  ctx.stale = &stale;
  auto held = state->protocol->acquire(ctx, stop);
  if (!held) {
    // A refused claim may have removed dead holders' records on its way:
    // nobody will see them again, so their tenures are closed now.
    for (const detail::DeadRecord& d : dead) {
      if (d.removed) {
        detail::close_dead_tenure(*store_, *options_->logger, options_->id, d.record, nullptr);
      }
    }
    return std::unexpected(std::move(held.error()));
  }
  state->epoch = held->epoch;
  {
    std::lock_guard lock(state->mu);
    state->held = std::move(*held);
    state->start(since);
  }
  if (options_->history) state->open_tenure(std::move(dead));
  state->stale = std::move(stale);
  state->schedule_upkeep();
  std::vector<LogField> fields{{"id", options_->id},
                               {"store", store_->describe()},
                               {"mode", std::string(to_string(mode))},
                               {"requested", std::string(to_string(options_->mode))},
                               {"mode_reason", choice->reason},
                               {"guarantee", std::string(state->protocol->guarantee())},
                               {"ttl", format_duration(options_->ttl)}};
  {
    std::lock_guard lock(state->mu);
    if (state->held.granted > Duration::zero() && state->held.granted != options_->ttl) {
      // The store holds the lock for its own timeout, not the ttl asked.
      fields.push_back({"granted", format_duration(state->held.granted)});
      fields.push_back({"renew_every", format_duration(state->period())});
    }
  }
  if (state->epoch) fields.push_back({"epoch", std::to_string(*state->epoch)});
  options_->logger->log(LogLevel::info, "claimed", fields);
  return Claim(std::move(state));
}

std::expected<Claim, ClaimError> Guard::claim_waiting(const WaitOptions& wait,
                                                      std::stop_token stop) {
  Clock& clock = *options_->clock;
  const MonoTime start = clock.monotonic();
  std::mt19937_64 rng{std::random_device{}()};
  Duration poll = wait.poll_min;
  std::optional<std::string> told;  // the holder we last said we wait for
  int quick_wakes = 0;              // store wake-ups in a row, each followed by a refusal
  while (true) {
    auto claimed = claim(stop);
    if (claimed || claimed.error().error.code != Errc::another_instance) return claimed;
    const auto& holder = claimed.error().holder;
    const std::string who = holder && holder->record ? holder->record->id
                            : holder                 ? holder->key.str()
                                                     : "";
    if (wait.on_wait && told != who) wait.on_wait(claimed.error());
    told = who;
    const Duration waited = clock.monotonic() - start;
    if (wait.timeout > Duration{0} && waited >= wait.timeout) return claimed;
    // Back off with jitter (3/4 to 5/4 of the interval), so waiters spread out.
    std::uniform_int_distribution<Duration::rep> jitter(0, poll.count() / 2);
    Duration nap = poll * 3 / 4 + Duration{jitter(rng)};
    if (wait.timeout > Duration{0}) nap = std::min(nap, wait.timeout - waited);
    // Where the store can tell, wait for the key that refused us to change
    // (the directory store: the kernel wakes us as the holder's lock goes;
    // Redis and PostgreSQL: the release's PUBLISH or NOTIFY; etcd: a watch),
    // for at most this nap, so a missed change costs one poll. Two wake-ups
    // in a row that did not end in a claim (the lock came free, but a
    // record or another waiter still refused us) fall back to the poll:
    // never a busy loop. After a wake-up that ended in a refusal, a pause of
    // up to poll_min / 20 first: waiters woken at the same instant otherwise
    // keep colliding (each one's glance at the lock refuses the other).
    if (holder && quick_wakes < 2) {
      if (quick_wakes > 0) {
        std::uniform_int_distribution<Duration::rep> spread(0, wait.poll_min.count() / 20);
        if (!clock.sleep_for(Duration{spread(rng)}, stop)) {
          return std::unexpected(detail::failure(Errc::cancelled, "wait cancelled"));
        }
      }
      auto changed = store_->await_change(holder->key, nap, stop);
      if (changed) {
        if (stop.stop_requested()) {
          return std::unexpected(detail::failure(Errc::cancelled, "wait cancelled"));
        }
        quick_wakes = *changed ? quick_wakes + 1 : 0;
        if (!*changed) poll = std::min(wait.poll_max, poll * 2);
        continue;
      }
      if (changed.error().code != Errc::unsupported) {
        options_->logger->debug("cannot wait for the holder to change; polling",
                                {{"error", changed.error().message}});
      }
    }
    quick_wakes = 0;
    if (!clock.sleep_for(nap, stop)) {
      return std::unexpected(detail::failure(Errc::cancelled, "wait cancelled"));
    }
    poll = std::min(wait.poll_max, poll * 2);
  }
}

Claim::Claim(std::shared_ptr<detail::ClaimState> state) : state_(std::move(state)) {}
Claim::Claim(Claim&&) noexcept = default;
Claim& Claim::operator=(Claim&& other) noexcept {
  if (this != &other) {
    if (state_) (void)state_->stand_down();
    state_ = std::move(other.state_);
  }
  return *this;
}
Claim::~Claim() {
  if (state_) (void)state_->stand_down();
}

const std::string& Claim::id() const noexcept { return state_->id; }
const Key& Claim::key() const noexcept { return state_->key; }
Mode Claim::mode() const noexcept { return state_->mode; }
std::string_view Claim::guarantee() const noexcept { return state_->protocol->guarantee(); }
std::optional<std::uint64_t> Claim::epoch() const noexcept { return state_->epoch; }

Record Claim::record() const {
  std::lock_guard lock(state_->mu);
  return state_->held.record;
}

ClaimStatus Claim::status() const noexcept {
  if (!state_) return ClaimStatus::released;
  std::lock_guard lock(state_->mu);
  return state_->status;
}

bool Claim::active() const noexcept { return status() == ClaimStatus::held; }

std::optional<MonoTime> Claim::fence_deadline() const {
  std::lock_guard lock(state_->mu);
  if (state_->status != ClaimStatus::held || !state_->protocol->detects_loss()) {
    return std::nullopt;
  }
  return state_->deadline;
}

std::optional<Error> Claim::loss() const {
  std::lock_guard lock(state_->mu);
  return state_->loss;
}

Result<void> Claim::stand_down() {
  if (!state_) return {};
  return state_->stand_down();
}

}  // namespace instance
