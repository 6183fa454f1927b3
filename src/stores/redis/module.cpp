// The Redis store family as a StoreModule (instance/sdk/store_module.hpp).
#include <array>
#include <string_view>

#include "instance/sdk/store_module.hpp"
#include "instance/stores/redis.hpp"

namespace instance {

const StoreModule& redis_store_module() {
  static constexpr std::array<std::string_view, 3> kSchemes = {"redis", "rediss", "redis+sentinel"};
  static const StoreModule module{.family = "redis",
                                  .schemes = kSchemes,
                                  .open = open_parsed<parse_redis_url, make_redis_store>};
  return module;
}

}  // namespace instance
