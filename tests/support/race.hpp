// Races: N guards claim the same store at the same instant, round after
// round, and we count the rounds in which more than one of them held a claim
// at once. Used for every store (memory, directory, WebDAV, ...).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "instance/guard.hpp"

namespace instance::testing {

// Runs op(0), ..., op(n - 1) on n threads released at one instant; returns
// how many returned true.
inline int succeeded_at_once(std::size_t n, const std::function<bool(std::size_t)>& op) {
  std::barrier start(static_cast<std::ptrdiff_t>(n));
  std::atomic<int> succeeded{0};
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        if (op(i)) ++succeeded;
      });
    }
  }
  return succeeded.load();
}

struct RaceReport {
  int rounds = 0;
  int double_holder_rounds = 0;  // rounds with two or more holders at once
  int max_holders = 0;
  int claims = 0;  // rounds with at least one holder
  int errors = 0;  // claims that failed other than by refusal
  std::string first_error;

  // "holders per round: 0:a 1:b 2+:c", how many rounds had no holder, one,
  // or more than one.
  std::string holders_per_round() const {
    return "holders per round: 0:" + std::to_string(rounds - claims) +
           " 1:" + std::to_string(claims - double_holder_rounds) +
           " 2+:" + std::to_string(double_holder_rounds);
  }
};

// Runs `rounds` rounds of `guards` concurrent claims in `mode`, each guard on
// its own store object from `store_for(i)` (its own connection, for remote
// stores), all on the same state.
// Each round: all threads pass a barrier, claim, count themselves as holders,
// pass a second barrier (so every attempt overlaps every hold), then the
// holders stand down before the next round.
// `max_skew` unset: the guard's default. `before_round(r)`, when given, runs
// before round r while no guard holds (to leave a crashed holder behind).
inline RaceReport run_race(const std::function<std::shared_ptr<Store>(int)>& store_for, Mode mode,
                           int guards, int rounds, Duration ttl = std::chrono::minutes(1),
                           std::optional<Duration> max_skew = std::nullopt,
                           const std::function<void(int)>& before_round = {}) {
  RaceReport report;
  report.rounds = rounds;
  auto scheduler = thread_scheduler();
  std::vector<Guard> gs;
  for (int i = 0; i < guards; ++i) {
    gs.push_back(Guard::create(store_for(i), {.ttl = ttl,
                                              .id = "racer-" + std::to_string(i),
                                              .scheduler = scheduler,
                                              .mode = mode,
                                              .max_skew = max_skew})
                     .value());
  }
  std::atomic<int> holders{0};
  std::atomic<int> errors{0};
  std::string first_error;
  std::mutex error_mu;
  std::barrier start(guards);
  std::barrier attempted(guards, [&]() noexcept {
    const int h = holders.exchange(0);
    if (h > 1) ++report.double_holder_rounds;
    if (h > 0) ++report.claims;
    report.max_holders = std::max(report.max_holders, h);
  });
  std::barrier released(guards);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < guards; ++i) {
      threads.emplace_back([&, i] {
        for (int r = 0; r < rounds; ++r) {
          if (i == 0 && before_round) before_round(r);
          start.arrive_and_wait();
          std::optional<Claim> claim;
          if (auto c = gs[static_cast<std::size_t>(i)].claim()) {
            claim.emplace(std::move(*c));
            ++holders;
          } else if (c.error().error.code != Errc::another_instance) {
            if (errors++ == 0) {
              std::lock_guard lock(error_mu);
              first_error = c.error().error.message;
            }
          }
          attempted.arrive_and_wait();
          if (claim) (void)claim->stand_down();
          released.arrive_and_wait();
        }
      });
    }
  }
  report.errors = errors.load();
  report.first_error = first_error;
  return report;
}

// Prints a race's "[ race ]" line and asserts what `mode` promises: at most
// one holder at any moment (announce only counts its double holders), and a
// holder in every round where a lease decides.
inline void expect_one_holder(std::string_view store, Mode mode, int guards, const RaceReport& r) {
  std::cout << "[ race ] store=" << store << " mode=" << to_string(mode) << " guards=" << guards
            << " rounds=" << r.rounds << " rounds_with_holder=" << r.claims
            << " double_holder_rounds=" << r.double_holder_rounds
            << " max_holders=" << r.max_holders << " errors=" << r.errors << "\n";
  EXPECT_EQ(r.errors, 0) << r.first_error;
  if (mode == Mode::announce) {
    EXPECT_GT(r.claims, 0);
    return;
  }
  EXPECT_EQ(r.double_holder_rounds, 0);
  EXPECT_LE(r.max_holders, 1);
  if (mode != Mode::verify) {
    EXPECT_EQ(r.claims, r.rounds) << "a lease always has a winner";
  }
}

// All guards on one store object (an in-process store).
inline RaceReport run_race(const std::shared_ptr<Store>& store, Mode mode, int guards, int rounds,
                           Duration ttl = std::chrono::minutes(1)) {
  return run_race([&](int) { return store; }, mode, guards, rounds, ttl);
}

}  // namespace instance::testing
