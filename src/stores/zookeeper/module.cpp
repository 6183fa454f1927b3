// The ZooKeeper store family as a StoreModule (instance/sdk/store_module.hpp).
#include <array>
#include <string_view>

#include "instance/sdk/store_module.hpp"
#include "instance/stores/zookeeper.hpp"

namespace instance {

const StoreModule& zookeeper_store_module() {
  static constexpr std::array<std::string_view, 1> kSchemes = {"zk"};
  static const StoreModule module{.family = "zookeeper",
                                  .schemes = kSchemes,
                                  .open = open_parsed<parse_zookeeper_url, make_zookeeper_store>};
  return module;
}

}  // namespace instance
