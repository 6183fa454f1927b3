// N guards claiming at the same instant against a real ZooKeeper, each on
// its own sessions: at most one holder at any moment in verify, exclusive
// and auto (those two on the native lease: an ephemeral znode in a session
// of its own); announce's double holders are counted, not asserted away.
#include <gtest/gtest.h>

#include "support/race.hpp"
#include "zookeeper_server.hpp"

namespace instance::testing {
namespace {

class ZookeeperRace : public ::testing::TestWithParam<std::tuple<Mode, int>> {};

TEST_P(ZookeeperRace, AtMostOneHolderAtAnyMoment) {
  ZookeeperServer& server = ZookeeperServer::shared();
  REQUIRE_ZOOKEEPER(server);
  const auto [mode, guards] = GetParam();
  const std::string root = ZookeeperServer::fresh_root();
  const RaceReport r = run_race(
      [&](int) -> std::shared_ptr<Store> {
        return make_zookeeper_store(server.options(root)).value();
      },
      mode, guards, 100);
  expect_one_holder("zookeeper", mode, guards, r);
}

INSTANTIATE_TEST_SUITE_P(Modes, ZookeeperRace,
                         ::testing::Combine(::testing::Values(Mode::announce, Mode::verify,
                                                              Mode::exclusive, Mode::automatic),
                                            ::testing::Values(3, 8)),
                         [](const auto& p) {
                           return std::string(to_string(std::get<0>(p.param))) + "_" +
                                  std::to_string(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace instance::testing
