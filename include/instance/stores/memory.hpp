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

}  // namespace instance
