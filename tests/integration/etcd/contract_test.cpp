// The store contract against a real etcd, each test under a fresh prefix;
// once without auth and once as an authenticated user (root, with a known
// password: refused when wrong, never shown).
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

StoreOpener on(EtcdServer& server, const StoreEnv& env) {
  if (!server.running()) return nullptr;
  return [options = options_on(server, env)] { return make_etcd_store(options).value(); };
}

StoreFactory etcd(std::string name, EtcdServer& (*server)()) {
  return {.name = std::move(name),
          .place = [server](const StoreEnv& env) { return on(server(), env); },
          .skip_reason = etcd_missing,
          // etcd grants at least its own minimum TTL: lock_granted says how long.
          .shortest_lease = 1s};
}

StoreFactory etcd_auth() {
  StoreFactory f = etcd("etcd_auth", &EtcdServer::with_auth);
  f.secret = EtcdServer::kRootPassword;
  f.with_secret = [](const StoreEnv& env, const std::string& secret) {
    auto options = options_on(EtcdServer::with_auth(), env);
    options.password = secret;
    return make_etcd_store(options).value();
  };
  f.unreachable = [](const StoreEnv& env) {
    auto options = options_on(EtcdServer::with_auth(), env);
    options.endpoint = "http://127.0.0.1:" + std::to_string(free_port());
    options.retry_deadline = 300ms;
    return make_etcd_store(options).value();
  };
  return f;
}

INSTANTIATE_TEST_SUITE_P(Etcd, StoreContract,
                         ::testing::Values(etcd("etcd", &EtcdServer::shared), etcd_auth()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
