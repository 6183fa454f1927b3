// The state store: where instance records live.
//
// A Store holds small documents (at most kMaxDocumentSize bytes) under Keys.
// Every store offers the plain operations; some also offer versions,
// conditional writes and native leases, which they declare in
// capabilities(). Operations a store does not have answer Errc::unsupported.
//
// Keys form a hierarchy, as in a file system: a key is never both a
// document and a folder holding other documents.
//
// Thread safety: every Store implementation must allow concurrent calls from
// several threads (the guard renews from a scheduler thread while the caller
// may stand down from another).
//
// Errors: each store maps its native failures (errno, HTTP status, gRPC
// status, ...) onto the small Errc set. Error messages name the operation,
// the redacted endpoint and the key; never a credential.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/key.hpp"
#include "instance/logger.hpp"

namespace instance {

// Documents larger than this are refused on write and reported as malformed
// on read.
inline constexpr std::size_t kMaxDocumentSize = std::size_t{1} << 20;

struct Document {
  std::string data;
  // An opaque version of these bytes (an ETag, a revision, a content hash),
  // or empty when the store has no versions.
  std::string version;
  // Set by a store that proves the document was last written before this
  // host's current boot and that only this host writes (the directory store
  // on a local file system without its syncs): whoever wrote it died with
  // that boot, and bytes that do not decode are a write a crash cut short,
  // not a live holder (docs/design/arguments.md, "A light claim on a local
  // folder"). false wherever a store cannot tell.
  bool from_earlier_boot = false;
};

// What the store gave lock(): the token, the store's own fencing number,
// and how long it holds the lock.
struct LockGrant {
  std::string token;  // opaque: what refresh_lock() and unlock() take
  // A fencing number the store itself gave this lock, greater than the
  // number of every earlier lock of the key (an etcd revision, a PostgreSQL
  // sequence). 0 when the store gives none: the guard then counts epochs in
  // its lease document alone.
  std::uint64_t epoch = 0;
  // How long the store said it holds the lock, counted from the request:
  // what it granted, which may be shorter or longer than the ttl asked (a
  // WebDAV server's own lock timeout, an etcd lease's minimum TTL).
  // kForever when it never expires on its own; Duration::zero() when the
  // store holds it exactly as long as asked. The guard renews and
  // self-fences on what was granted (guard.hpp).
  Duration granted{};
};

// Who holds a lock (Store::lock_holder).
struct LockHolder {
  std::string token;  // what unlock() takes; empty when the store hides it
  std::string owner;  // the owner text the holder gave lock(), as the store kept it
};

struct Capabilities {
  // Reads and writes return a version that changes with every write.
  bool versions = false;
  // create() is atomic (fails when the key exists, even under races) and
  // replace_if/remove_if compare the version atomically.
  bool conditional_writes = false;
  // The store can expire a claim on its own (a lock with a timeout).
  bool native_lease = false;
  // Expiry is judged on the store's clock, not the client's.
  bool server_clock = false;
  // With native_lease: a lock may outlive its holder (a WebDAV server keeps
  // it for a timeout of its own, or for ever), and lock_holder() names who
  // holds one, so that unlock() with that holder's token ends it. The guard
  // ends a lock only when it has proven the holder fenced (its lease and its
  // record expired by more than max-skew: docs/design/arguments.md).
  bool ends_stale_locks = false;
  // get_many() reads its keys in one request (or a few, concurrently),
  // rather than one get() after another: the guard reads the records it
  // scans that way.
  bool batch_reads = false;
  // get_all() reads every document under a prefix in one request (an etcd
  // range, one query), rather than a listing and then its reads: the guard
  // reads the records it scans that way.
  bool prefix_reads = false;
  // With native_lease: claim_lease(), renew_lease() and end_lease() each do
  // their whole work in one request (a script, a statement, a
  // transaction), rather than the default's one call after another.
  bool atomic_lease = false;
  // What the store's own servers must agree on before a lock is granted or
  // renewed, in words the guarantee line appends ("etcd cluster (3
  // members): a majority (2) must agree ..."); empty when the store has
  // nothing to add (one server, or no native lease).
  std::string agreement;
  // Set when the store did not learn what its server can do: why, naming the
  // cause. Either it could not (the server cannot be reached, refuses our
  // credentials, a TLS failure; the next call of capabilities() asks again),
  // or it must not (opened read-only, it would have had to write a probe:
  // Errc::unsupported). The flags above are then a guess, never an answer;
  // the guard never picks a mode from a guess.
  std::optional<Error> unknown;
};

// What a store opened read-only answers when it learns its capabilities only
// by writing a probe (WebDAV, CS3): not learnt, and why.
inline Capabilities capabilities_not_probed() {
  return Capabilities{.unknown = Error{Errc::unsupported,
                                       "not probed: opened read-only, and this store learns what "
                                       "it can do by writing a probe"}};
}

// What the guard's timing asks of its store. Guard::create() hands it to
// Store::tune(): the one place the guard's timing reaches a store, so a
// consumer sets the ttl once, in GuardOptions.
struct StoreTiming {
  // GuardOptions::ttl: records and leases live this long without renewal;
  // the guard renews every ttl / 3.
  Duration ttl = std::chrono::minutes(2);
  // GuardOptions::max_skew as the guard resolved it: how far the clocks of
  // the hosts (and of the store's server) may be off.
  Duration max_skew = std::chrono::seconds(5);
};

// exclusive mode's lease under the store's lock, as whole operations
// (Store::claim_lease, renew_lease, end_lease): the lock on `lock`, the
// lease document at `lease` beside it, and the claimant's record.

// A lease document whose fencing epoch and lock token are known only once
// the lock is granted: the document is head + the epoch in decimal +
// middle + the lock's token + tail. A store fills in tokens that need no
// escaping in a JSON string (printable ASCII, no quote, no backslash).
struct LeaseTemplate {
  std::string head;
  std::string middle;
  std::string tail;
  INSTANCE_EXPORT std::string fill(std::uint64_t epoch, std::string_view token) const;
};

struct LeaseClaim {
  Key lock;  // taken as lock(lock, ttl, owner) takes it
  Duration ttl{};
  std::string owner;
  Key lease;               // the lease document
  LeaseTemplate document;  // written there once the lock is ours
  Key record;              // our record, written with the lease document
  std::string record_data;
  Key scan;  // every other document under it is read back
};

struct LeaseClaimed {
  LockGrant grant;
  // The lease document as it was before the claim (Errc::not_found: none).
  Result<Document> previous = std::unexpected(Error{Errc::not_found, "no lease document"});
  // Whether the store also wrote the lease document and the record. It
  // writes them only when `previous` is absent, or a JSON object whose
  // member "epoch" is a positive integer: the epoch filled in is then the
  // larger of that + 1 and grant.epoch. Otherwise (and always in the
  // default) it writes nothing and keeps the lock: the caller reads
  // `previous`, decides, and writes them itself.
  bool written = false;
  std::uint64_t epoch = 0;  // when written
  std::string lease_version;
  std::string record_version;
  // When written: every document under `scan` but `record`, each as
  // get_many() answers it, read after the writes.
  std::vector<std::pair<Key, Result<Document>>> scanned;
};

struct LeaseRenewal {
  Key lock;
  std::string token;
  Duration ttl{};
  Key lease;
  std::string lease_data;  // the lease document, rewritten with the refresh
  Key record;
  std::string record_data;  // our record, likewise
};

struct LeaseRenewed {
  Duration granted{};  // as refresh_lock() answers
  // Whether the store rewrote the lease document and the record with the
  // refresh (never in the default: the caller writes them).
  bool written = false;
  std::string lease_version;
  std::string record_version;
};

struct LeaseEnd {
  Key lock;
  std::string token;
  Key lease;
  std::string lease_data;  // the lease document marked released
  Key record;              // our record, removed
};

// The epoch of a lease document as claim_lease() reads it: the member
// "epoch" of a JSON object, when a positive integer; nullopt otherwise.
INSTANCE_EXPORT std::optional<std::uint64_t> lease_epoch(std::string_view document);

class INSTANCE_EXPORT Store {
 public:
  virtual ~Store();

  // Where this store is, for messages: a URL with credentials removed.
  virtual std::string describe() const = 0;

  // What the store can do beyond the plain operations. May probe a remote
  // server on first use; later calls return the same answer once one was
  // learned (Capabilities::unknown says why not yet).
  virtual Capabilities capabilities();

  // Reads a document. Errc::not_found when absent, Errc::malformed when the
  // stored bytes cannot be a document (oversized, not a regular file, ...).
  virtual Result<Document> get(const Key& key) = 0;

  // Reads several documents, each as get() would: the answers in the order
  // of `keys`, each a document or its own error (not_found, malformed). The
  // outer error is a failure of the whole request (the server unreachable,
  // a timeout): nothing was learnt about any key. With
  // capabilities().batch_reads it is one request (or a few at once); the
  // default calls get() for each key in turn.
  virtual Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys);

  // Every document under `prefix` as list() names them, each with what get()
  // of it gives (a document, or Errc::malformed), in no particular order; a
  // document removed while it is read is left out. The outer error is a
  // failure of the whole request. With capabilities().prefix_reads it is one
  // request; the default is list(), then get_many() of what it listed.
  virtual Result<std::vector<std::pair<Key, Result<Document>>>> get_all(const Key& prefix);

  // Writes a new document; Errc::already_exists when the key exists. Returns
  // the new version (empty when the store has none). Only atomic against
  // concurrent creators when capabilities().conditional_writes is true.
  virtual Result<std::string> create(const Key& key, std::string_view data) = 0;

  // Writes a document, creating it or overwriting it. Returns the new version.
  virtual Result<std::string> replace(const Key& key, std::string_view data) = 0;

  // Removes a document; Errc::not_found when absent.
  virtual Result<void> remove(const Key& key) = 0;

  // Every document key under `prefix` by whole segments, nested folders
  // included, in no particular order. A missing prefix lists as empty.
  virtual Result<std::vector<Key>> list(const Key& prefix) = 0;

  // Overwrites only when the current version equals `version`; otherwise
  // Errc::conflict. A missing key gives Errc::not_found or Errc::conflict
  // (WebDAV cannot tell them apart without another request): callers treat
  // both as "someone else moved first". Needs conditional_writes.
  virtual Result<std::string> replace_if(const Key& key, std::string_view data,
                                         std::string_view version);

  // Removes only when the current version equals `version`; otherwise
  // Errc::conflict. Needs conditional_writes.
  virtual Result<void> remove_if(const Key& key, std::string_view version);

  // Native leases (capabilities().native_lease): a lock on `key` that the
  // store itself ends after `ttl` without a refresh (a WebDAV LOCK with
  // Timeout: Second-N), or when the holder dies (an OFD lock on a local
  // file). The key names a lock, not a document: it never shows in list()
  // of any prefix the guard reads, and get() of it is not_found.
  //
  // lock: the grant (its token, epoch and granted time); Errc::locked when
  // someone else holds it.
  virtual Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner);
  // refresh_lock: extends our lock; returns how long the store holds it now
  // (as LockGrant::granted: a refresh may come back with another grant).
  // Errc::locked, Errc::not_found or Errc::conflict when it is no longer
  // ours (expired, taken): the lease is lost.
  virtual Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration ttl);
  // unlock: releases the lock held under `token` (ours, or, with
  // ends_stale_locks, a holder's that lock_holder() named); not_found when
  // that token no longer holds it (released, expired, or ended by someone
  // else first), Errc::permission when the server refuses to end it.
  virtual Result<void> unlock(const Key& key, std::string_view token);
  // lock_holder (ends_stale_locks): who holds the lock on `key` now, as the
  // store reports it: the token unlock() takes and the owner text given to
  // lock(). Errc::not_found when nobody holds it; Errc::unsupported (the
  // default) where the store cannot tell. Reads only.
  virtual Result<LockHolder> lock_holder(const Key& key);
  // await_change: blocks for at most `timeout`, or until `stop` is
  // requested, until the document or lock `key` may have changed (a lock
  // released, its holder dead), so that a claim waiting for its holder
  // tries again the moment it can instead of at its next poll. true: it may
  // have changed (possibly spuriously: the caller claims as usual); false:
  // the timeout passed or stop was requested. Errc::unsupported (the
  // default): the store cannot tell, and the caller polls; any other error:
  // the wait failed, and the caller polls too. Sends no write. The
  // directory store blocks on the lock file's OFD lock; Redis subscribes to
  // the channel its unlock and remove scripts publish on; PostgreSQL
  // LISTENs for the NOTIFY of its unlock and remove statements; etcd
  // watches the key from the revision it read it at. Each checks once,
  // after it starts listening (etcd: before, and watches from that read),
  // that the key is still held or present (true at once when not), so a
  // change just before the wait is not missed. A lock that expires on
  // Redis or PostgreSQL wakes nobody (on etcd its key's deletion does): the
  // caller's poll covers it.
  virtual Result<bool> await_change(const Key& key, Duration timeout, std::stop_token stop);
  // exclusive mode's lease under the store's lock, each as one operation
  // (in one request with capabilities().atomic_lease).
  //
  // claim_lease: takes the lock (Errc::locked, and nothing else done, when
  // someone else holds it; any error: nothing was taken) and reads the
  // lease document; where the store can, also writes the lease document and
  // the record and reads back the documents under `scan` (LeaseClaimed says
  // which it did). The default: lock(), then get() of the lease.
  virtual Result<LeaseClaimed> claim_lease(const LeaseClaim& claim);
  // renew_lease: refreshes the lock held under `token` (its errors as
  // refresh_lock()'s: the lock is no longer ours), and only then, where the
  // store can, rewrites the lease document and the record. The default:
  // refresh_lock().
  virtual Result<LeaseRenewed> renew_lease(const LeaseRenewal& renewal);
  // end_lease: removes the record and, while the lock held under `token`
  // is still ours, writes the lease document and unlocks, in one request:
  // true. false (the default, or a store without atomic_lease): nothing was
  // done, and the caller does it one call after another.
  virtual Result<bool> end_lease(const LeaseEnd& end);
  // Fits the store's timing to the guard that uses it. Guard::create() calls
  // it; a consumer has no need to. A store that retries derives, here and
  // only here, its retry budget per operation, its request timeouts and its
  // clock-skew warning threshold (instance/sdk/timeouts.hpp gives the rule). The default
  // does nothing (stores without retries or timeouts). Sends no request; safe
  // while other threads use the store. A store shared by several guards
  // follows the last one created.
  virtual void tune(const StoreTiming& timing);
};

// LockGrant::granted of a lock that never expires on its own.
inline constexpr Duration kForever = Duration::max();

}  // namespace instance
