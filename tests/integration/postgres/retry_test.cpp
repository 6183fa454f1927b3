// The PostgreSQL store's retries on its injected clock, against a closed
// loopback port: the suite every network store passes
// (support/unreachable_retries.hpp).
#include "instance/stores/postgres.hpp"
#include "support/server_script.hpp"
#include "support/unreachable_retries.hpp"

namespace instance::testing {
namespace {

UnreachableStore unreachable_postgres() {
  const int port = free_port();
  return {.family = "postgres",
          .make =
              [port](const UnreachableSettings& s) {
                PostgresStoreOptions options;
                options.params = {
                    {"host", "127.0.0.1"}, {"port", std::to_string(port)}, {"dbname", "guard"}};
                options.retry_deadline = s.retry_deadline;
                options.max_backoff = s.max_backoff;
                options.clock = s.clock;
                options.logger = s.logger;
                return make_postgres_store(std::move(options)).value();
              },
          .endpoint = "127.0.0.1:" + std::to_string(port)};
}

INSTANTIATE_TEST_SUITE_P(Postgres, UnreachableRetries, ::testing::Values(unreachable_postgres()),
                         [](const auto& p) { return p.param.family; });

}  // namespace
}  // namespace instance::testing
