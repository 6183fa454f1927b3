// N guards claiming at the same instant against a real redis-server, each on
// its own connection: at most one holder at any moment in verify, exclusive
// and auto (exclusive and auto use the native lease: SET NX PX in a script);
// announce's double holders are counted and reported, not asserted away.
#include <gtest/gtest.h>

#include "redis_server.hpp"
#include "support/race.hpp"

namespace instance::testing {
namespace {

constexpr int kRounds = 200;

struct Case {
  Mode mode;
  int guards;
};

void PrintTo(const Case& c, std::ostream* os) { *os << to_string(c.mode) << "/" << c.guards; }

class RedisRace : public ::testing::TestWithParam<Case> {};

TEST_P(RedisRace, AtMostOneHolderAtAnyMoment) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  // Budgets that hold on a loaded 2-core machine (CI runs the suite at -j2
  // beside the sanitizer builds): the race is about who holds, not about
  // latency. The shared options' 500 ms deadline once failed every guard of
  // a round here with a server that was running, only slow.
  auto store_for = [&](int) -> std::shared_ptr<Store> {
    RedisStoreOptions options = server.options(prefix);
    options.command_timeout = std::chrono::seconds(3);
    options.retry_deadline = std::chrono::seconds(3);
    return make_redis_store(options).value();
  };
  const Case c = GetParam();
  expect_one_holder("redis", c.mode, c.guards, run_race(store_for, c.mode, c.guards, kRounds));
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Mode m : {Mode::announce, Mode::verify, Mode::exclusive, Mode::automatic}) {
    for (int n : {3, 8}) out.push_back({m, n});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Modes, RedisRace, ::testing::ValuesIn(cases()), [](const auto& p) {
  return std::string(to_string(p.param.mode)) + "_" + std::to_string(p.param.guards);
});

}  // namespace
}  // namespace instance::testing
