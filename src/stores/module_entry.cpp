// The entry point of a loadable store module: the one symbol a module's
// shared object exports (instance/sdk/store_module.hpp). Built into each module
// with INSTANCE_STORE_MODULE_FUNCTION naming the store's
// `const StoreModule& <family>_store_module()`.
#include "instance/sdk/store_module.hpp"

#ifndef INSTANCE_STORE_MODULE_FUNCTION
#error "INSTANCE_STORE_MODULE_FUNCTION must name the module's <family>_store_module function"
#endif

namespace instance {
const StoreModule& INSTANCE_STORE_MODULE_FUNCTION();
}  // namespace instance

INSTANCE_STORE_MODULE_ENTRY(instance::INSTANCE_STORE_MODULE_FUNCTION)
