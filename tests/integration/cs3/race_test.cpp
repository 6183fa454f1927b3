// Races against the CS3 gateway test double, each guard and each thread on
// its own store (its own gRPC channel and HTTP connection):
//   - N guards claiming at the same instant, round after round, per mode: at
//     most one holder at any moment in verify, exclusive (CS3 locks) and
//     auto; announce's double holders are counted and reported;
//   - the store primitives exclusive relies on: concurrent creates, if_match
//     replaces and SetLocks of one key, where exactly one may win.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <iostream>
#include <thread>

#include "helpers.hpp"
#include "support/race.hpp"

namespace instance::testing {
namespace {

constexpr int kRounds = 100;
constexpr int kGuards = 3;

class Cs3Race : public ::testing::TestWithParam<Mode> {};

TEST_P(Cs3Race, AtMostOneHolderAtAnyMoment) {
  GatewayDouble& gateway = shared_gateway();
  const std::string folder = fresh_folder();
  auto store_for = [&](int) { return make_store(options_for(gateway, folder)); };
  const Mode mode = GetParam();
  if (mode == Mode::exclusive) {
    const auto caps = store_for(0)->capabilities();
    ASSERT_TRUE(caps.native_lease && caps.conditional_writes);
  }
  const auto started = std::chrono::steady_clock::now();
  const RaceReport r = run_race(store_for, mode, kGuards, kRounds);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  std::cout << "[ race ] store=cs3 mode=" << to_string(mode) << " guards=" << kGuards
            << " rounds=" << r.rounds << " rounds_with_holder=" << r.claims
            << " double_holder_rounds=" << r.double_holder_rounds
            << " max_holders=" << r.max_holders << " errors=" << r.errors << " ms=" << ms << "\n";
  EXPECT_EQ(r.errors, 0) << r.first_error;
  if (mode == Mode::announce) {
    EXPECT_GT(r.claims, 0);
    return;
  }
  EXPECT_EQ(r.double_holder_rounds, 0);
  EXPECT_LE(r.max_holders, 1);
  EXPECT_GT(r.claims, kRounds / 2);  // contention must not starve every round
}

INSTANTIATE_TEST_SUITE_P(Modes, Cs3Race,
                         ::testing::Values(Mode::announce, Mode::verify, Mode::exclusive,
                                           Mode::automatic),
                         [](const auto& p) { return std::string(to_string(p.param)); });

constexpr int kPrimitiveRounds = 30;
constexpr std::size_t kThreads = 4;

std::vector<std::shared_ptr<Store>> stores(const std::string& folder) {
  std::vector<std::shared_ptr<Store>> out;
  for (std::size_t i = 0; i < kThreads; ++i)
    out.push_back(make_store(options_for(shared_gateway(), folder)));
  return out;
}

TEST(Cs3Primitives, ExactlyOneConcurrentCreateWins) {
  const auto s = stores(fresh_folder());
  for (int round = 0; round < kPrimitiveRounds; ++round) {
    const Key k = key("instances/c" + std::to_string(round));
    const int won = succeeded_at_once(kThreads, [&](std::size_t i) {
      auto r = s[i]->create(k, "writer-" + std::to_string(i));
      if (!r) {
        EXPECT_EQ(r.error().code, Errc::already_exists) << r.error().message;
      }
      return r.has_value();
    });
    EXPECT_EQ(won, 1) << "round " << round;
  }
}

TEST(Cs3Primitives, ExactlyOneConcurrentConditionalReplaceWins) {
  const auto s = stores(fresh_folder());
  const Key k = key("instances.lease");
  auto version = s[0]->replace(k, "v0").value();
  for (int round = 0; round < kPrimitiveRounds; ++round) {
    std::mutex mu;
    std::string next;
    const int won = succeeded_at_once(kThreads, [&](std::size_t i) {
      auto r = s[i]->replace_if(k, "r" + std::to_string(round), version);
      if (!r) {
        EXPECT_EQ(r.error().code, Errc::conflict) << r.error().message;
        return false;
      }
      std::lock_guard lock(mu);
      next = *r;
      return true;
    });
    ASSERT_EQ(won, 1) << "round " << round;
    version = next;
  }
}

TEST(Cs3Primitives, ExactlyOneConcurrentLockWins) {
  const auto s = stores(fresh_folder());
  const Key k = key("instances.lock");
  for (int round = 0; round < kPrimitiveRounds; ++round) {
    std::mutex mu;
    std::vector<std::pair<std::size_t, std::string>> held;
    const int won = succeeded_at_once(kThreads, [&](std::size_t i) {
      auto t = s[i]->lock(k, std::chrono::seconds(30), "racer");
      if (!t) {
        EXPECT_EQ(t.error().code, Errc::locked) << t.error().message;
        return false;
      }
      std::lock_guard lock(mu);
      held.emplace_back(i, t->token);
      return true;
    });
    ASSERT_EQ(won, 1) << "round " << round;
    ASSERT_TRUE(s[held[0].first]->unlock(k, held[0].second));
  }
}

}  // namespace
}  // namespace instance::testing
