// The store contract against a real redis-server that requires a password
// (a known one: refused when wrong, never shown), each test under a fresh
// key prefix. Leases are PX expiries on the server, in milliseconds; the
// contract asks 500 ms, well above a round trip on a busy machine.
#include "contract/store_contract.hpp"
#include "redis_server.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

RedisServer& server() { return RedisServer::with_password(); }

RedisStoreOptions options_on(const StoreEnv& env) {
  auto options = server().options();
  options.logger = env.logger;
  return options;
}

INSTANTIATE_TEST_SUITE_P(
    Redis, StoreContract,
    ::testing::Values(StoreFactory{
        .name = "redis",
        .place = [](const StoreEnv& env) -> StoreOpener {
          if (!server().running()) return nullptr;
          return [options = options_on(env)] { return make_redis_store(options).value(); };
        },
        .skip_reason = [] { return server().absent() ? server().why_not() : std::string(); },
        .shortest_lease = 500ms,
        .secret = RedisServer::kPassword,
        .with_secret =
            [](const StoreEnv& env, const std::string& secret) {
              auto options = options_on(env);
              options.password = secret;
              return make_redis_store(options).value();
            },
        .unreachable =
            [](const StoreEnv& env) {
              auto options = options_on(env);
              options.port = free_port();
              options.retry_deadline = 100ms;
              return make_redis_store(options).value();
            }}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
