// The store contract against a real etcd, each test under a fresh prefix,
// as an authenticated user (root, with a known password: refused when wrong,
// never shown). The store differs without auth only in not sending a token:
// every other etcd test runs on a server without auth.
#include "contract/store_contract.hpp"
#include "server.hpp"
#include "support/server_script.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

EtcdStoreOptions options_on(const EtcdServer& server, const StoreEnv& env) {
  auto options = server.options();
  options.logger = env.logger;
  return options;
}

StoreFactory etcd_auth() {
  return {.name = "etcd_auth",
          .place = [](const StoreEnv& env) -> StoreOpener {
            if (!EtcdServer::with_auth().running()) return nullptr;
            return [options = options_on(EtcdServer::with_auth(), env)] {
              return make_etcd_store(options).value();
            };
          },
          .skip_reason = etcd_missing,
          // etcd grants at least its own minimum TTL: the grant says how long.
          .shortest_lease = 1s,
          .secret = EtcdServer::kRootPassword,
          .with_secret =
              [](const StoreEnv& env, const std::string& secret) {
                auto options = options_on(EtcdServer::with_auth(), env);
                options.password = secret;
                return make_etcd_store(options).value();
              },
          .unreachable =
              [](const StoreEnv& env) {
                auto options = options_on(EtcdServer::with_auth(), env);
                options.endpoints = {"http://127.0.0.1:" + std::to_string(free_port())};
                options.retry_deadline = 100ms;
                return make_etcd_store(options).value();
              }};
}

INSTANTIATE_TEST_SUITE_P(Etcd, StoreContract, ::testing::Values(etcd_auth()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
