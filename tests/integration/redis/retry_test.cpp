// The Redis store's retries on its injected clock, against a closed loopback
// port: the suite every network store passes (support/unreachable_retries.hpp).
#include "instance/stores/redis.hpp"
#include "support/server_script.hpp"
#include "support/unreachable_retries.hpp"

namespace instance::testing {
namespace {

UnreachableStore unreachable_redis() {
  const int port = free_port();
  return {.family = "redis",
          .make =
              [port](const UnreachableSettings& s) {
                RedisStoreOptions options;
                options.port = port;
                options.retry_deadline = s.retry_deadline;
                options.max_backoff = s.max_backoff;
                options.clock = s.clock;
                options.logger = s.logger;
                return make_redis_store(std::move(options)).value();
              },
          .endpoint = "127.0.0.1:" + std::to_string(port)};
}

INSTANTIATE_TEST_SUITE_P(Redis, UnreachableRetries, ::testing::Values(unreachable_redis()),
                         [](const auto& p) { return p.param.family; });

}  // namespace
}  // namespace instance::testing
