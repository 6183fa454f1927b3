// N guards claiming at the same instant against a real etcd, each on its own
// connection: at most one holder at any moment in verify, exclusive and
// auto; announce's double holders are counted and reported.
#include <gtest/gtest.h>

#include "server.hpp"
#include "support/race.hpp"

namespace instance::testing {
namespace {

constexpr int kRounds = 200;
constexpr int kGuards = 3;

class EtcdRace : public ::testing::TestWithParam<Mode> {};

TEST_P(EtcdRace, AtMostOneHolderAtAnyMoment) {
  if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
  EtcdServer& server = EtcdServer::shared();
  ASSERT_TRUE(server.running());
  const std::string prefix = EtcdServer::fresh_prefix();
  const Mode mode = GetParam();
  const auto start = std::chrono::steady_clock::now();
  const RaceReport r = run_race([&](int) { return server.store(prefix); }, mode, kGuards, kRounds);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  std::cout << "[ race ] store=etcd mode=" << to_string(mode) << " guards=" << kGuards
            << " rounds=" << r.rounds << " rounds_with_holder=" << r.claims
            << " double_holder_rounds=" << r.double_holder_rounds
            << " max_holders=" << r.max_holders << " errors=" << r.errors << " ms=" << ms << "\n";
  if (r.errors > 0) std::cout << "[ race ] errors, first: " << r.first_error << "\n";
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.claims, 0);
  if (mode == Mode::announce) return;
  EXPECT_EQ(r.double_holder_rounds, 0);
  EXPECT_LE(r.max_holders, 1);
  // The lock decides at once: someone wins nearly every round. (In verify,
  // contenders that see each other all withdraw, so rounds may stay empty.)
  if (mode != Mode::verify) {
    EXPECT_GE(r.claims, kRounds * 9 / 10);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, EtcdRace,
                         ::testing::Values(Mode::announce, Mode::verify, Mode::exclusive,
                                           Mode::automatic),
                         [](const auto& p) { return std::string(to_string(p.param)); });

}  // namespace
}  // namespace instance::testing
