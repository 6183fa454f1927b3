// The PostgreSQL store family as a StoreModule (instance/sdk/store_module.hpp).
#include <array>
#include <string_view>

#include "instance/sdk/store_module.hpp"
#include "instance/stores/postgres.hpp"

namespace instance {

const StoreModule& postgres_store_module() {
  static constexpr std::array<std::string_view, 2> kSchemes = {"postgres", "postgresql"};
  static const StoreModule module{.family = "postgres",
                                  .schemes = kSchemes,
                                  .open = open_parsed<parse_postgres_url, make_postgres_store>};
  return module;
}

}  // namespace instance
