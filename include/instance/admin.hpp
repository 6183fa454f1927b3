// Operator views of a store: what `instance-guard status` and `release` do.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/record.hpp"
#include "instance/store.hpp"

namespace instance {

struct InstanceEntry {
  Key key;
  std::optional<Record> record;  // absent when unreadable
  bool readable = false;
  bool live = false;  // unreadable records count as live
  // It names a process on this host that is gone (with everything it started
  // that holds its liveness lock): not live, whatever its expiry says.
  bool process_gone = false;
  // The store proves it was written before this host's current boot, on a
  // store only this host writes (Document::from_earlier_boot), or the record
  // names this machine (machine id and host name) under an earlier boot and
  // was last written before this boot began (docs/design/arguments.md, "A
  // holder of an earlier boot of this host"): its writer died with that
  // boot, so it is not live, readable or not.
  bool from_earlier_boot = false;
  std::string problem;  // why it is unreadable
};

// Every record under instances/, readable or not, sorted by key.
INSTANCE_EXPORT Result<std::vector<InstanceEntry>> list_instances(Store& store, WallTime now);

// The store's own lock beside the records (exclusive mode's
// "instances.lock"), where the store can tell who holds it
// (Store::lock_holder; a WebDAV server's lock, which may outlive its holder).
struct StoreLockEntry {
  std::string holder;  // the holder's id; empty when no instance-guard took it
  std::string owner;   // the owner text the store keeps, as it is
  // When the holder's lease ends unless renewed: the lease document written
  // under this lock, else the lock's own owner text; absent when unknown.
  std::optional<WallTime> expires_at;
  bool stood_down = false;  // its lease says it stood down (its unlock failed)
  // When a guard found this store keeping a lock past the timeout it granted.
  std::optional<WallTime> locks_outlive_grant;
};

// The store's lock: nullopt when nobody holds it or the store cannot tell;
// an error when the store cannot be asked.
INSTANCE_EXPORT Result<std::optional<StoreLockEntry>> read_store_lock(Store& store);

// What release_instance() removed.
struct Released {
  bool record = false;  // the record of the id
  bool lock = false;    // the store's lock the id held (StoreLockEntry)
};

// Removes the record of `id`, and ends the store's lock when `id` holds it
// (a lock that outlived its holder keeps others out as its record did). A
// live or unreadable record (a record naming a process on this host that is
// gone is not live), or a lock whose holder's lease is live, is
// removed only with `force`; otherwise Errc::another_instance and nothing is
// removed. Errc::not_found when there is neither. When the record went but
// the lock stays (the server refused to end it), the error says so and what
// remains.
INSTANCE_EXPORT Result<Released> release_instance(Store& store, std::string_view id, WallTime now,
                                                  bool force);

}  // namespace instance
