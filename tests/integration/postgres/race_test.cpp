// N guards claiming at the same instant against a real PostgreSQL cluster,
// each on its own connection: at most one holder at any moment in verify,
// exclusive and auto; announce's double holders are counted and reported.
#include <gtest/gtest.h>

#include <iostream>

#include "server.hpp"
#include "support/race.hpp"

namespace instance::testing {
namespace {

constexpr int kRounds = 200;
constexpr int kGuards = 3;

class PostgresRace : public ::testing::TestWithParam<Mode> {};

TEST_P(PostgresRace, AtMostOneHolderAtAnyMoment) {
  REQUIRE_POSTGRES();
  const std::string table = PostgresServer::fresh_table();
  auto store_for = [&](int) { return test_store(test_options(table)); };
  const Mode mode = GetParam();
  const RaceReport r = run_race(store_for, mode, kGuards, kRounds);
  std::cout << "[ race ] store=postgres mode=" << to_string(mode) << " guards=" << kGuards
            << " rounds=" << r.rounds << " rounds_with_holder=" << r.claims
            << " double_holder_rounds=" << r.double_holder_rounds
            << " max_holders=" << r.max_holders << " errors=" << r.errors << "\n";
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.claims, 0);
  if (mode == Mode::announce) return;
  EXPECT_EQ(r.double_holder_rounds, 0);
  EXPECT_LE(r.max_holders, 1);
}

INSTANTIATE_TEST_SUITE_P(Modes, PostgresRace,
                         ::testing::Values(Mode::announce, Mode::verify, Mode::exclusive,
                                           Mode::automatic),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param));
                         });

}  // namespace
}  // namespace instance::testing
