// The store contract against a real ZooKeeper, with digest authentication
// (a known credential: refused when wrong, never shown), each test under a
// fresh root znode. A lock lives as long as its session: it ends with its
// holder (LeaseEnd::holder), whose store closes the session when it goes.
#include "contract/store_contract.hpp"
#include "zookeeper_server.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

ZookeeperServer& server() { return ZookeeperServer::shared(); }

ZookeeperStoreOptions options_on(const StoreEnv& env) {
  auto options = server().options();
  options.logger = env.logger;
  return options;
}

INSTANTIATE_TEST_SUITE_P(
    Zookeeper, StoreContract,
    ::testing::Values(StoreFactory{
        .name = "zookeeper",
        .place = [](const StoreEnv& env) -> StoreOpener {
          if (!server().running()) return nullptr;
          return [options = options_on(env)] { return make_zookeeper_store(options).value(); };
        },
        .skip_reason = [] { return server().absent() ? server().why_not() : std::string(); },
        .lease_end = LeaseEnd::holder,
        .secret = ZookeeperServer::kPassword,
        .with_secret =
            [](const StoreEnv& env, const std::string& secret) {
              // The same root as a store with the right credential made.
              auto options = options_on(env);
              auto right = make_zookeeper_store(options).value();
              (void)right->list(Key());
              options.password = secret;
              return make_zookeeper_store(options).value();
            },
        .unreachable =
            [](const StoreEnv& env) {
              auto options = options_on(env);
              options.servers = "127.0.0.1:" + std::to_string(free_port());
              options.retry_deadline = 300ms;
              options.request_timeout = 200ms;
              return make_zookeeper_store(options).value();
            }}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
