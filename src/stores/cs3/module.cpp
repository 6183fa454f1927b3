// The CS3 store family as a StoreModule (instance/sdk/store_module.hpp).
#include <array>
#include <string_view>

#include "instance/sdk/store_module.hpp"
#include "instance/stores/cs3.hpp"

namespace instance {

const StoreModule& cs3_store_module() {
  static constexpr std::array<std::string_view, 4> kSchemes = {"cs3", "cs3s", "opencloud+cs3",
                                                               "opencloud+cs3s"};
  static const StoreModule module{
      .family = "cs3", .schemes = kSchemes, .open = open_parsed<parse_cs3_url, make_cs3_store>};
  return module;
}

}  // namespace instance
