// The guard: makes sure only one instance of a service runs against one
// state store.
//
// Modes (docs/design/modes.md explains each; docs/design/arguments.md why
// they hold):
//   announce   the original Go guard, unchanged: list instances/, refuse
//              beside a live or unreadable record, delete expired ones, write
//              our record, renew every ttl/3. Not a lock: two guards starting
//              at the same instant can both win. No loss detection.
//   verify     write, settle, scan: exclusion on stores with only plain
//              operations, given that an acknowledged write is visible to
//              every read starting `settle` later.
//   exclusive  a lease document changed only by compare-and-set, carrying a
//              fencing epoch. Refuses stores without conditional writes.
//   automatic  the strongest the store supports, once the store has said
//              what that is: never a weaker one because it could not be
//              asked (resolve_mode()).
// In every mode the holder keeps its record at instances/<escaped id>, so
// original guards and `status` see who runs.
//
// A granted Claim renews every ttl/3 through the injected scheduler. Outside
// announce, it is lost when a renewal finds it was taken (a failed
// compare-and-set, a collision seen by a renewal scan) or when no renewal has
// succeeded for ttl - max_skew on the monotonic clock (Clock::monotonic(): CLOCK_BOOTTIME for
// the system clock, so a suspend counts); on_lost is then called
// once. On a store's native lease the store's grant counts
// (LockGrant::granted): a shorter grant sets the period (grant/3) and the
// deadline (grant - max_skew); a grant under 3 x max_skew (or 1 s) is refused
// at the claim (Errc::invalid) and loses the claim at a refresh; a longer
// grant is the expiry the lease document and record show. stand_down() stops renewing and gives the
// claim up so a successor starts at once. Reclaiming with one's own id is allowed (a restart).
//
// Thread safety: a Guard may be used from several threads; a Claim's
// stand_down() may race with its renewals and with itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/key.hpp"
#include "instance/logger.hpp"
#include "instance/record.hpp"
#include "instance/scheduler.hpp"
#include "instance/store.hpp"

namespace instance {

enum class Mode { automatic, announce, verify, exclusive };

INSTANCE_EXPORT std::string_view to_string(Mode mode) noexcept;
// "auto", "announce", "verify", "exclusive"; Errc::invalid otherwise.
INSTANCE_EXPORT Result<Mode> parse_mode(std::string_view text);

enum class ClaimStatus { held, lost, released };

// What one renewal came to (GuardOptions::on_renewal).
struct RenewalReport {
  bool renewed = false;  // false: it failed, and is tried again next period
  Duration took{};       // from its start to its end, on the guard's monotonic clock
  std::string error;     // why it failed; empty when renewed
};

struct GuardOptions {
  // How long a record stays live without renewal. The store's retry budget
  // and request timeouts follow it (create()).
  Duration ttl = std::chrono::minutes(2);
  // This instance's identity; 8 random bytes in hex when empty.
  std::string id;
  // Written into the record; this host's name and process id when unset.
  std::string host;
  std::optional<std::int64_t> pid;
  // Injected effects; the system clock, a thread scheduler and a logger
  // that discards when null.
  std::shared_ptr<Clock> clock;
  std::shared_ptr<Scheduler> scheduler;
  std::shared_ptr<Logger> logger;
  // The claim protocol.
  Mode mode = Mode::automatic;
  // verify: the longest time the store may take before an acknowledged write
  // shows in every later read and listing (0 for a local directory).
  Duration settle{0};
  // verify: before the first claim, write a probe, time until it shows in a
  // listing and a read, and refuse (Errc::invalid) when that lag exceeds
  // `settle`: the protocol's proof needs it.
  bool check_lag = true;
  // How far other hosts' clocks may be off. Their records count as live for
  // this long past their expiry; our renewals and self-fencing keep it as a
  // margin. Must be less than ttl / 2. Not applied in announce mode. Unset:
  // 5 s, or ttl / 10 when that is smaller (short ttls in tests and demos).
  std::optional<Duration> max_skew;
  // Called once, from the renewal thread, when a granted claim is lost.
  std::function<void(const Error&)> on_lost;
  // Called from the renewal thread after each renewal that renewed or failed
  // (a loss goes to on_lost), once a successful one has moved the claim's
  // fence_deadline() on; must not block. Lets a watcher of the deadline
  // re-arm its timer at the renewal instead of waking up at the old deadline
  // between renewals, and a metrics writer count renewals and their latency.
  std::function<void(const RenewalReport&)> on_renewal;
  // This host's boot and pid namespace, written into records so a record of
  // a dead process on this host is stale at once; read from /proc when empty.
  std::string boot_id;
  std::string pid_ns;
  // This host's machine id and when this boot began (instance/liveness.hpp),
  // so that a record an earlier boot of this machine left is dead at once
  // (docs/design/arguments.md, "A holder of an earlier boot"); read from the
  // system when empty.
  std::string machine_id;
  std::optional<WallTime> booted_at;
  // Whether the process `pid` of this host (same host name, boot and pid
  // namespace) is gone, with everything that holds its liveness lock
  // (instance/liveness.hpp). Empty: asked of the kernel (kill(pid, 0) and the
  // liveness lock); the simulator answers for its own processes. A process
  // wrongly said alive only delays a take-over; wrongly said gone, it would
  // let a successor run beside it.
  std::function<bool(std::int64_t pid)> process_gone;
  // How long claim() keeps trying while it cannot decide yet: the store
  // cannot be reached to learn its capabilities (auto, exclusive), or verify
  // collided with other claimers and backs off. Past it, the claim fails
  // with the last cause. It is the one start-up budget: claim() and
  // resolve_mode() open a StartupBudget (instance/sdk/startup_budget.hpp), so
  // the stores' own retry loops stop by the same deadline (a request under
  // way may finish: one request timeout more) and each of their retries is
  // logged at info. Must be at least 0.
  Duration startup_timeout = std::chrono::seconds(30);
  // Tenure history (instance/history.hpp): each claim writes one tenure
  // document under history/ when granted and once more when it ends, and
  // closes the tenures of dead holders whose records it found; after the
  // claim (off its path) the guard keeps the newest `history_keep` tenures.
  // A history write that fails never fails a claim or a renewal: it is
  // logged. history_keep must be at least 1.
  bool history = true;
  std::size_t history_keep = 200;
};

// The original's refusal message; ClaimError::error.message starts with it.
inline constexpr std::string_view kAnotherInstanceMessage =
    "another instance of this service is running against this state space; "
    "only one is supported; deploy with strategy Recreate";

// Why a claim failed. error.code is Errc::another_instance when another live
// (or unreadable) record blocks us; `holder` then names it.
struct ClaimError {
  Error error;
  struct Holder {
    Key key;
    std::optional<Record> record;  // absent when the record was unreadable
  };
  std::optional<Holder> holder;
};

// How claim() waits for a holder to go, instead of refusing at once.
struct WaitOptions {
  // Give up (with the refusal) after this long; forever when zero.
  Duration timeout{0};
  // Poll interval, growing from min to max with jitter while waiting; on a
  // store that wakes its waiters, the longest a wait for a wake-up lasts
  // before the guard asks again (covering a missed one).
  Duration poll_min = std::chrono::milliseconds(100);
  Duration poll_max = std::chrono::milliseconds(250);
  // Told whom we wait for: at the start and whenever the holder changes.
  std::function<void(const ClaimError&)> on_wait;
};

namespace detail {
struct ClaimState;
}

// A granted claim. Move-only. stand_down() is idempotent and thread-safe and
// runs on destruction.
class INSTANCE_EXPORT Claim {
 public:
  Claim(Claim&&) noexcept;
  Claim& operator=(Claim&&) noexcept;
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  ~Claim();

  const std::string& id() const noexcept;
  const Key& key() const noexcept;
  // The record as last written.
  Record record() const;
  // Held until lost or stood down.
  bool active() const noexcept;
  ClaimStatus status() const noexcept;
  // The protocol in force (never Mode::automatic) and what it guarantees.
  Mode mode() const noexcept;
  std::string_view guarantee() const noexcept;
  // exclusive: the fencing epoch, larger than any earlier holder's.
  std::optional<std::uint64_t> epoch() const noexcept;
  // When the claim will count itself lost without a successful renewal
  // (monotonic clock); nullopt in announce mode or once not held.
  std::optional<MonoTime> fence_deadline() const;
  // Why the claim was lost (nullopt while held or after stand_down()).
  std::optional<Error> loss() const;

  // Stops renewing and removes our record. The first call does the work and
  // returns its result; later calls return success at once.
  Result<void> stand_down();

 private:
  friend class Guard;
  explicit Claim(std::shared_ptr<detail::ClaimState> state);
  std::shared_ptr<detail::ClaimState> state_;
};

class INSTANCE_EXPORT Guard {
 public:
  // Errc::invalid for a null store, a non-positive ttl or an unusable id.
  // Tunes the store to the guard's ttl and max_skew (Store::tune): the one
  // place the guard's timing reaches the store, so the ttl is given once,
  // here, and the store's retries, request timeouts and clock-skew warning
  // follow it.
  static Result<Guard> create(std::shared_ptr<Store> store, GuardOptions options = {});

  // Claims the store for this instance. `stop` ends the attempt between store
  // operations with Errc::cancelled (nothing of ours is left behind).
  std::expected<Claim, ClaimError> claim(std::stop_token stop = {});

  // Like claim(), but while another instance holds the store, waits until it
  // stands down or expires (or `wait.timeout` passes, or `stop`): woken by
  // the store where it can tell (Store::await_change: the directory store's
  // lock, Redis pub/sub, PostgreSQL LISTEN/NOTIFY), else polling, and
  // polling too between wake-ups that did not end in a claim.
  std::expected<Claim, ClaimError> claim_waiting(const WaitOptions& wait,
                                                 std::stop_token stop = {});

  // The protocol claim() will use: `options.mode`, or for Mode::automatic
  // the strongest the store supports (may probe the store). Errc::unsupported
  // when the store cannot do the requested mode. For auto and exclusive, the
  // store's capabilities must be known: while the store cannot be reached
  // (Errc::unavailable, timeout) it asks again until options.startup_timeout,
  // then fails with the store's own error, as it does at once for any other
  // (credentials, TLS); it never assumes a weaker mode. `stop` ends the wait.
  Result<Mode> resolve_mode(std::stop_token stop = {});

  const std::string& id() const noexcept { return options_->id; }
  Duration ttl() const noexcept { return options_->ttl; }
  Store& store() const noexcept { return *store_; }

  // A resolved mode and why it runs: "requested", or for auto what the
  // store offers ("the store has its own locks", ...).
  struct ModeChoice {
    Mode mode;
    std::string reason;
  };
  // resolve_mode() with the reason; claim() logs both.
  Result<ModeChoice> choose_mode(std::stop_token stop = {});

 private:
  Result<Capabilities> learn_capabilities(std::stop_token stop);
  Guard(std::shared_ptr<Store> store, GuardOptions options);
  std::shared_ptr<Store> store_;
  std::shared_ptr<GuardOptions> options_;  // shared with the claims it grants
  Key key_;
  std::shared_ptr<std::atomic<bool>> lag_checked_;  // verify's self-test passed once
};

}  // namespace instance
