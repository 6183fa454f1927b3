// The WebDAV and OpenCloud store family as a StoreModule (instance/sdk/store_module.hpp).
#include <array>
#include <string_view>

#include "instance/sdk/store_module.hpp"
#include "instance/stores/webdav.hpp"

namespace instance {

const StoreModule& webdav_store_module() {
  static constexpr std::array<std::string_view, 3> kSchemes = {"webdav", "webdavs", "opencloud"};
  static const StoreModule module{.family = "webdav",
                                  .schemes = kSchemes,
                                  .open = open_parsed<parse_webdav_url, make_webdav_store>};
  return module;
}

}  // namespace instance
