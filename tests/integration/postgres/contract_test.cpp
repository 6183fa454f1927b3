// The store contract against a real PostgreSQL cluster, each test in a fresh
// table, logged in as the role `guard` with its password (refused when
// wrong, never shown). Leases expire on the server's now(), in milliseconds;
// the contract asks 500 ms, well above a round trip on a busy machine.
#include "contract/store_contract.hpp"
#include "server.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

PostgresStoreOptions options_for(const std::string& table, std::string password,
                                 const StoreEnv& env) {
  auto options = guard_options(table, std::move(password));
  options.logger = env.logger;
  return options;
}

StoreOpener fresh_table(const StoreEnv& env) {
  auto& server = PostgresServer::get();
  if (server.absent()) {
    [&] { GTEST_SKIP() << server.skip_reason(); }();
    return nullptr;
  }
  if (!server.running()) return nullptr;
  return
      [options = options_for(PostgresServer::fresh_table(), std::string(PostgresServer::kPassword),
                             env)] { return test_store(options); };
}

INSTANTIATE_TEST_SUITE_P(Postgres, StoreContract,
                         ::testing::Values(StoreFactory{
                             .name = "postgres",
                             .place = fresh_table,
                             .shortest_lease = 500ms,
                             .secret = std::string(PostgresServer::kPassword),
                             .with_secret =
                                 [](const StoreEnv& env, const std::string& secret) {
                                   return test_store(
                                       options_for(PostgresServer::fresh_table(), secret, env));
                                 },
                             .unreachable =
                                 [](const StoreEnv& env) {
                                   auto options =
                                       options_for(PostgresServer::fresh_table(),
                                                   std::string(PostgresServer::kPassword), env);
                                   options.params = {{"host", "127.0.0.1"},
                                                     {"port", std::to_string(free_port())},
                                                     {"dbname", "guard"},
                                                     {"user", std::string(PostgresServer::kUser)}};
                                   options.retry_deadline = 100ms;
                                   return test_store(options);
                                 }}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
