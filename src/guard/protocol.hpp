// Internal: the interface every claim protocol implements, and what they
// share. One protocol per file: announce.cpp, verify.cpp, exclusive.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "instance/guard.hpp"

namespace instance::detail {

// Who we are, for telling our own host's dead processes apart.
struct HostIdentity {
  std::string host;
  std::string boot_id;
  std::string pid_ns;
  std::int64_t pid = 0;
  // GuardOptions::process_gone; empty: the kernel is asked.
  std::function<bool(std::int64_t)> process_gone;
  std::string machine_id;  // "" when unknown: no record is judged of an earlier boot
  WallTime booted_at{};    // when this boot began, on the real-time clock
};

// A record of another instance judged no longer live, and whether the scan
// removed it (then no later scan sees it).
struct DeadRecord {
  Record record;
  bool removed = false;
};

// A record a claim proved stale, to be removed once the claim is granted
// (remove_stale()): by a delete conditional on the version it was judged
// at, or, where the store has no conditional delete (announce's blind
// reaping, the original's), by a plain delete right after reading it again
// and finding it unchanged.
struct StaleRecord {
  Key key;
  std::string version;  // what a conditional delete names; unused when blind
  Record record;        // as judged
  bool blind = false;
};

// Everything a protocol may use. The guard owns it; protocols never touch a
// clock, a thread or a store other than these.
struct Context {
  Store& store;
  Clock& clock;
  Logger& log;
  const GuardOptions& options;
  const Key& record_key;
  HostIdentity self;
  Mode mode = Mode::announce;  // the protocol in force
  // While acquiring, with history on: every record of another instance the
  // protocol judged no longer live is added here, so the guard can close
  // its holder's tenure (instance/history.hpp).
  std::vector<DeadRecord>* dead = nullptr;
  // While acquiring: where a scan puts the stale records it may remove,
  // instead of removing them on the claim's path; the guard removes them
  // once the claim is granted, and a refused claim leaves them. nullptr
  // (renewals, status): removed during the scan. A blind delete (announce
  // on a store without conditional writes) reads the record again first
  // and deletes it only unchanged, so the window in which an owner
  // restarting under the same id has its fresh record deleted stays one
  // round trip, the original's, however long the claim took.
  std::vector<StaleRecord>* stale = nullptr;
};

// What a protocol keeps from acquire to release.
struct Holding {
  Record record;                       // our record as last written
  std::string lease_version;           // exclusive: the lease's version we wrote
  std::optional<std::uint64_t> epoch;  // exclusive: the fencing epoch
  std::string lock_token;              // exclusive on a native lease: our lock
  // exclusive on a native lease: how long the store said it holds our lock
  // (LockGrant::granted at the lock, or the last refresh's); zero: the ttl asked.
  Duration granted{0};
};

// How long a claim stays good on our clock after a successful write or
// refresh: the ttl, or the store's grant when that is shorter. The guard
// renews every window/3 and self-fences at window - max_skew.
Duration lease_window(const GuardOptions& options, Duration granted);

// How long others must treat the claim as held after a write at `now`: the
// ttl, or the store's grant when that is longer (the store keeps the lock
// until then, so a lease or record claiming less would be read as expired
// while it is still held). A grant of kForever counts as 10 years.
Duration held_for(const GuardOptions& options, Duration granted);

// Errc::invalid, naming the grant, when a grant leaves no room to renew
// safely: the self-fencing window (grant - max_skew) must hold two renewal
// periods (grant/3 each), so the grant must be at least 3 * max_skew, and
// at least 1 s.
Result<void> check_grant(const GuardOptions& options, Duration granted, std::string_view store);

struct Renewal {
  enum Outcome { renewed, failed, lost } outcome = renewed;
  Error error;  // why, unless renewed
};

class Protocol {
 public:
  virtual ~Protocol() = default;
  virtual Mode mode() const noexcept = 0;
  virtual std::string_view guarantee() const noexcept = 0;
  // Whether a claim can be lost (and so self-fences).
  virtual bool detects_loss() const noexcept { return true; }

  virtual std::expected<Holding, ClaimError> acquire(const Context& ctx, std::stop_token stop) = 0;
  // Called every ttl/3; `failed` is retried next period, `lost` ends the claim.
  virtual Renewal renew(const Context& ctx, Holding& held) = 0;
  // Gives the claim up; best effort, the claim is over either way.
  virtual Result<void> release(const Context& ctx, Holding& held) = 0;
};

std::unique_ptr<Protocol> make_announce_protocol();
std::unique_ptr<Protocol> make_verify_protocol();

// verify's self-test: writes a probe beside instances/, then polls a listing
// and a read until it shows; returns the lag after the write's acknowledgment,
// or Errc::invalid when it exceeds ctx.options.settle (with a message saying
// what to set). Removes the probe.
Result<Duration> check_visibility_lag(const Context& ctx, std::stop_token stop);
std::unique_ptr<Protocol> make_exclusive_protocol();

// ---- Shared by the protocols (records.cpp) --------------------------------

// A fresh record of ours for `now`.
Record our_record(const Context& ctx, WallTime now, std::string_view state);

// Rewrites our record with a new expiry (renewed_at = now, expires_at = now +
// ttl); `held.record` changes only when the write succeeded.
Result<void> renew_record(const Context& ctx, Holding& held);

// Removes our record; an absent one is fine.
Result<void> remove_our_record(const Context& ctx);

// Whether a record of another instance still counts as live at `now`:
// before its expiry plus `margin`, unless it comes from a process on this
// host (same boot and pid namespace) that no longer exists.
bool is_live(const Context& ctx, const Record& record, WallTime now, Duration margin);
// This process: its host name, boot, pid namespace and pid.
HostIdentity this_process();
// The record names a process on this host (same host name, boot and pid
// namespace) other than `self` that is gone, with every descendant that
// holds its liveness lock: it is dead, whatever its expiry says.
bool gone_from_this_host(const HostIdentity& self, const Record& record);
// Whether the record was left by an earlier boot of this machine (same
// machine id and host name, another boot id; docs/design/arguments.md, "A
// holder of an earlier boot of this host"): `dead` once every write it made
// precedes this boot by more than max_skew and it is a third of its window
// plus max_skew overdue (a clone of this machine that kept the id, alive,
// would have rewritten it); `other_machine` when it was written after this
// boot began (the id is shared by another host); `no` otherwise.
enum class EarlierBoot { no, dead, other_machine };
EarlierBoot of_earlier_boot(const HostIdentity& self, const Record& record, WallTime now,
                            Duration max_skew);

// A record as read from the store, with the version it was read at.
struct StoredRecord {
  Record record;
  std::string version;  // empty where the store has no versions
};
// Reads the record at `key`: nullopt when there is none, or when its bytes
// do not decode but the store marks it from_earlier_boot (a write a crash
// cut short); a ClaimError when it cannot be read ("so it counts as live")
// or decoded (a refusal naming the key). The one read of another
// instance's record.
std::expected<std::optional<StoredRecord>, ClaimError> read_record(const Context& ctx,
                                                                   const Key& key);
// The same judgement of what a read of `key` gave (a get, or one answer of
// a get_many).
std::expected<std::optional<StoredRecord>, ClaimError> as_record(const Key& key,
                                                                 Result<Document> doc);

// The refusal naming the holder; `record` absent when unreadable.
ClaimError refusal(const Key& key, std::optional<Record> record, std::string_view detail);
// A claim that failed for another reason.
ClaimError failure(Errc code, std::string message);

// What a scan found in one record.
struct Seen {
  Key key;
  Record record;
};

struct ScanRules {
  // Delete records that are no longer live (conditionally where possible).
  bool reap = true;
  // Skew margin for liveness (0 in announce mode).
  Duration margin{0};
  // Where a delete cannot be conditional (plain stores), whether to delete a
  // dead record anyway. Only announce does (the original's behaviour): the
  // record may have been rewritten between our read and our delete by its
  // owner restarting under the same id, and a blind delete would remove a
  // live holder's record (spin finds this: models/README.md). Elsewhere a
  // dead record on such a store is skipped and left for `release`.
  bool blind_reap = false;
  // Whether a live record blocks us; all live records when empty.
  std::function<bool(const Record&)> blocks;
};

// Removes one record a claim proved stale, only if it is still what was
// judged: by remove_if on its version, or when `stale.blind` by reading it
// again and, when it decodes to the same record, a plain remove. Errc::
// conflict when it changed (its owner came back), not_found when it is
// gone; a record that cannot be read or decoded now is left, with that
// error.
Result<void> remove_stale(Store& store, const StaleRecord& stale);

// Reads every record under instances/ except ours (by id), and refuses at the
// first unreadable record or blocking live one. A failed listing or read
// fails the scan (it cannot tell what it did not see). One get_all() where
// the store reads a prefix in one request (prefix_reads); else a listing,
// then get_many() of 64 records at a time (batch_reads) or get() of each,
// stopping at the first that refuses.
std::expected<void, ClaimError> scan_others(const Context& ctx, std::stop_token stop,
                                            const ScanRules& rules);

// scan_others' judgement of records a store already read (as
// claim_lease's `scanned`): the first unreadable or blocking live one
// refuses.
std::expected<void, ClaimError> judge_others(const Context& ctx,
                                             std::vector<std::pair<Key, Result<Document>>> read,
                                             const ScanRules& rules);

// The live records of others that `rules.blocks` selects, without refusing.
Result<std::vector<Seen>> live_others(const Context& ctx, const ScanRules& rules);

}  // namespace instance::detail
