// Internal: exclusive mode's lease document and the store lock beside it,
// shared by the protocol (exclusive.cpp) and the operator views (admin.cpp).
//
// The lease lives at "instances.lease", the lock at "instances.lock", both
// beside instances/ and outside the records' id space (original guards never
// read them). The document holds the holder's id, host, pid, expiry, the
// fencing epoch and a released flag; under a store lock it also names the
// lock's token and how long the store promised to keep the lock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/key.hpp"
#include "instance/record.hpp"
#include "instance/store.hpp"

namespace instance::detail {

const Key& lease_key();  // "instances.lease"
const Key& lock_key();   // "instances.lock"

struct Lease {
  std::string holder;
  std::uint64_t epoch = 0;
  WallTime expires_at{};
  std::string host;
  std::optional<std::int64_t> pid;
  std::string boot_id;
  std::string pid_ns;
  std::string machine_id;              // "" when unknown (older guards write none)
  std::optional<WallTime> written_at;  // when the holder wrote it (older guards: none)
  bool released = false;
  // Under a store lock: the token of the lock the holder wrote this document
  // under (a successor ends it by that token once the holder is proven dead
  // or fenced); with ends_stale_locks also when the store's grant for it
  // ends (absent for a lock granted for ever).
  std::string lock_token;
  std::optional<WallTime> lock_expires_at;
  // When a guard first found this store keeping a lock past the timeout it
  // granted (its locks do not expire on their own); carried forward by every
  // holder, for the guarantee line and `status`.
  std::optional<WallTime> locks_outlive_grant;

  // The lease as a record, for liveness and for naming the holder: with its
  // machine id and the time it was written, an earlier boot of this
  // machine's holder is judged dead as its record is (of_earlier_boot).
  Record as_record() const {
    return Record{.id = holder,
                  .started_at = written_at.value_or(WallTime{}),
                  .expires_at = expires_at,
                  .host = host,
                  .pid = pid,
                  .renewed_at = written_at,
                  .boot_id = boot_id,
                  .machine_id = machine_id,
                  .pid_ns = pid_ns};
  }
};

std::string encode_lease(const Lease& lease);
// The lease as a template whose epoch and lock token the store fills in
// (Store::claim_lease): filled with the epoch e and token t, it is
// encode_lease() of the lease with epoch e and lock_token t.
LeaseTemplate lease_template(Lease lease);
// Errc::malformed, saying why, when the bytes are not a lease document.
Result<Lease> decode_lease(std::string_view bytes);

// The owner text a guard gives the store's lock on a store that may end
// stale locks: who takes it, when (before the request), and for how long the
// taker may hold it without renewing (its ttl). A successor judges a lock
// that no lease document names by it (the holder crashed between its lock
// and its lease document). JSON; the store keeps it as text.
struct LockOwner {
  std::string id;
  WallTime locked_at{};
  Duration ttl{};
  std::string host;
  std::optional<std::int64_t> pid;
  std::string boot_id;
  std::string pid_ns;

  // The lock as a record: live until locked_at + ttl.
  Record as_record() const {
    return Record{.id = id,
                  .expires_at = locked_at + ttl,
                  .host = host,
                  .pid = pid,
                  .boot_id = boot_id,
                  .pid_ns = pid_ns};
  }
};

std::string encode_lock_owner(const LockOwner& owner);

// Whose the store's lock is, from what the store says of it
// (Store::lock_holder) and the lease document.
struct LockOfHolder {
  // What unlock() takes: the store's token, or, where the store hides
  // tokens (sabre/dav lists a lock without one), the lease document's; an
  // UNLOCK with a token that no longer holds ends nothing. Empty: unknown.
  std::string token;
  // The lease document was written under this lock: same token, or (tokens
  // hidden) an owner text that does not name someone else.
  bool named = false;
  std::optional<LockOwner> owner;  // the owner text, when one of ours
};
LockOfHolder lock_of_holder(std::string_view token, std::string_view owner_text,
                            const std::optional<Lease>& lease);
// nullopt when the text is not one of ours (another program's lock, an old
// guard's plain id, a server that mangled it).
std::optional<LockOwner> decode_lock_owner(std::string_view text);

}  // namespace instance::detail
