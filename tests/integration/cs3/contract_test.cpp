// The store contract against the CS3 gateway test double, each test in a
// fresh folder of one space, with the service account's known secret
// (refused when wrong; neither it nor any token the gateway issued shows).
#include "contract/store_contract.hpp"
#include "helpers.hpp"
#include "support/server_script.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

Cs3StoreOptions options_on(const StoreEnv& env) {
  auto options = options_for(shared_gateway());
  options.logger = env.logger;
  return options;
}

INSTANTIATE_TEST_SUITE_P(Cs3, StoreContract,
                         ::testing::Values(StoreFactory{
                             .name = "gateway_double",
                             .place = [](const StoreEnv& env) -> StoreOpener {
                               return [options = options_on(env)] { return make_store(options); };
                             },
                             // CS3 locks carry an expiration time (whole seconds at least).
                             .shortest_lease = 1s,
                             .secret = GatewayDoubleOptions{}.client_secret,
                             .with_secret =
                                 [](const StoreEnv& env, const std::string& secret) {
                                   auto options = options_on(env);
                                   options.client_secret = secret;
                                   return make_store(options);
                                 },
                             .unreachable =
                                 [](const StoreEnv& env) {
                                   auto options = options_on(env);
                                   options.gateway = "127.0.0.1:" + std::to_string(free_port());
                                   options.retry_deadline = 100ms;
                                   return make_store(options);
                                 },
                             .issued_secrets = [] { return shared_gateway().tokens_issued(); }}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
