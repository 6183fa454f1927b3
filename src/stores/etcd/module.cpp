// The etcd store family as a StoreModule (instance/sdk/store_module.hpp).
#include <array>
#include <string_view>

#include "instance/sdk/store_module.hpp"
#include "instance/stores/etcd.hpp"

namespace instance {

const StoreModule& etcd_store_module() {
  static constexpr std::array<std::string_view, 2> kSchemes = {"etcd", "etcds"};
  static const StoreModule module{
      .family = "etcd", .schemes = kSchemes, .open = open_parsed<parse_etcd_url, make_etcd_store>};
  return module;
}

}  // namespace instance
