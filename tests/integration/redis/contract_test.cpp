// The store contract against a real redis-server, each test under a fresh
// key prefix.
#include "contract/store_contract.hpp"
#include "redis_server.hpp"

namespace instance::testing {
namespace {

std::shared_ptr<Store> on_shared_server() {
  RedisServer& server = RedisServer::shared();
  if (!server.running()) return nullptr;
  return make_redis_store(server.options()).value();
}

INSTANTIATE_TEST_SUITE_P(Redis, StoreContract,
                         ::testing::Values(StoreFactory{"redis", on_shared_server,
                                                        [] {
                                                          const RedisServer& server =
                                                              RedisServer::shared();
                                                          return server.absent() ? server.why_not()
                                                                                 : std::string();
                                                        }}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
