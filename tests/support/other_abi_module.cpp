// A store module built for another ABI than this tree's (kStoreModuleAbi +
// 998): the loader must refuse it, naming both versions, without touching
// anything but its first member. tests/e2e/modules_test.sh installs it as
// etcd.so in a scratch module folder.
#include "instance/sdk/store_module.hpp"

namespace {

const instance::StoreModule& other_abi_module() {
  static const instance::StoreModule module{.abi = instance::kStoreModuleAbi + 998,
                                            .family = "etcd"};
  return module;
}

}  // namespace

INSTANCE_STORE_MODULE_ENTRY(other_abi_module)
