// An in-memory store, for tests and simulations. Thread-safe; every
// operation is atomic, so it offers versions and conditional writes.
#pragma once

#include <memory>

#include "instance/export.hpp"
#include "instance/store.hpp"

namespace instance {

INSTANCE_EXPORT std::shared_ptr<Store> make_memory_store();

}  // namespace instance
