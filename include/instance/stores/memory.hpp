// An in-memory store, for tests and simulations. Thread-safe; every
// operation is atomic, so it offers versions and conditional writes. Given a
// clock, it also offers native leases that expire on that clock (the store's
// own clock, as a server's would be).
#pragma once

#include <memory>

#include "instance/clock.hpp"
#include "instance/export.hpp"
#include "instance/store.hpp"

namespace instance {

INSTANCE_EXPORT std::shared_ptr<Store> make_memory_store(
    std::shared_ptr<Clock> lease_clock = nullptr);

struct MemoryStoreOptions {
  // Native leases on this clock; none without one.
  std::shared_ptr<Clock> lease_clock;
  // Locks that never expire, whatever was asked, as some WebDAV servers'
  // (phodav): the store then declares ends_stale_locks instead of
  // server_clock, and lock_holder() names who holds a lock, so a guard ends
  // the lock of a holder it proved fenced. For tests and the simulator.
  bool locks_outlive_holders = false;
  // With a lease clock: claim_lease(), renew_lease() and end_lease() in one
  // step each (Capabilities::atomic_lease), as Redis's scripts and
  // PostgreSQL's statements do them, so the guard's one-request path runs
  // in unit tests and the simulator.
  bool atomic_lease = false;
};
INSTANCE_EXPORT std::shared_ptr<Store> make_memory_store(MemoryStoreOptions options);

}  // namespace instance
