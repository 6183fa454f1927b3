// The suite of support/unreachable_retries.hpp.
#include "support/unreachable_retries.hpp"

#include <vector>

#include "instance/guard.hpp"
#include "instance/sdk/startup_budget.hpp"
#include "instance/testing.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

const Key kKey = Key::parse("instances/a").value();

struct Notice {
  std::string error;
  int attempt = 0;
  Duration pause{};
};

// One failing get(): how long it took on the fake clock and on the real one.
struct Chain {
  Result<Document> result;
  Duration fake{};
  Duration real{};
};

Chain get_through(Store& store, FakeClock& clock) {
  const MonoTime fake_start = clock.monotonic();
  const auto real_start = Steady::now();
  auto result = store.get(kKey);
  return Chain{std::move(result), clock.monotonic() - fake_start, Steady::now() - real_start};
}

TEST_P(UnreachableRetries, RetriesUntilTheDeadlineOnTheStoresClock) {
  auto clock = std::make_shared<FakeClock>();
  const UnreachableSettings settings{.clock = clock, .retry_deadline = 10s, .max_backoff = 1s};
  auto store = GetParam().make(settings);
  const Chain chain = get_through(*store, *clock);
  ASSERT_FALSE(chain.result);
  EXPECT_EQ(chain.result.error().code, Errc::unavailable) << chain.result.error().message;
  EXPECT_NE(chain.result.error().message.find(GetParam().endpoint), std::string::npos)
      << chain.result.error().message;
  EXPECT_NE(chain.result.error().message.find("attempts"), std::string::npos)
      << chain.result.error().message;
  // It gave up when the next pause (at most max_backoff) would pass the
  // deadline, and every pause was taken on the fake clock: the real one
  // moved far less than the chain's ten fake seconds.
  EXPECT_LE(chain.fake, settings.retry_deadline);
  EXPECT_GE(chain.fake, settings.retry_deadline - settings.max_backoff);
  EXPECT_LT(chain.real, chain.fake / 2) << "the store slept on the real clock";
}

TEST_P(UnreachableRetries, AStartupBudgetEndsTheChainAndHearsEveryRetry) {
  auto clock = std::make_shared<FakeClock>();
  auto store = GetParam().make({.clock = clock, .retry_deadline = 10s, .max_backoff = 1s});
  std::vector<Notice> notices;
  const Duration budget_length = 2s;
  Chain chain;
  {
    const StartupBudget budget(*clock, budget_length, [&](const RetryNotice& n) {
      notices.push_back({std::string(n.error), n.attempt, n.pause});
    });
    chain = get_through(*store, *clock);
  }
  ASSERT_FALSE(chain.result);
  EXPECT_EQ(chain.result.error().code, Errc::unavailable);
  EXPECT_LE(chain.fake, budget_length) << "the budget did not end the store's own 10 s chain";
  ASSERT_GE(notices.size(), 2u);
  Duration paused{};
  for (std::size_t i = 0; i < notices.size(); ++i) {
    EXPECT_EQ(notices[i].attempt, static_cast<int>(i) + 1);
    EXPECT_NE(notices[i].error.find(GetParam().endpoint), std::string::npos) << notices[i].error;
    paused += notices[i].pause;
  }
  // A refused connection takes no fake time: the chain is its pauses, each
  // one told to the budget before it was taken.
  EXPECT_EQ(paused, chain.fake);
}

TEST_P(UnreachableRetries, TheGuardsTtlBoundsTheChain) {
  auto clock = std::make_shared<FakeClock>();
  auto store = GetParam().make({.clock = clock, .retry_deadline = 10s, .max_backoff = 1s});
  const Duration ttl = 6s;  // a renewal every 2 s: a chain must end by then
  ASSERT_TRUE(Guard::create(store, {.ttl = ttl, .clock = clock}));
  const Chain chain = get_through(*store, *clock);
  ASSERT_FALSE(chain.result);
  EXPECT_LE(chain.fake, ttl / 3) << "the store kept its own 10 s";
  EXPECT_GT(chain.fake, Duration::zero());
}

TEST_P(UnreachableRetries, AGuardStartingOnItLogsEachRetryAtInfoAndGivesUpInItsBudget) {
  auto clock = std::make_shared<FakeClock>();
  auto logger = std::make_shared<CapturingLogger>();
  auto store = GetParam().make({.clock = clock, .retry_deadline = 10s, .max_backoff = 1s});
  auto guard = Guard::create(store, {.ttl = 30s,
                                     .clock = clock,
                                     .scheduler = std::make_shared<ManualScheduler>(clock),
                                     .logger = logger,
                                     .mode = Mode::exclusive,
                                     .startup_timeout = 3s})
                   .value();
  const MonoTime start = clock->monotonic();
  auto claim = guard.claim();
  ASSERT_FALSE(claim);
  EXPECT_EQ(claim.error().error.code, Errc::unavailable) << claim.error().error.message;
  EXPECT_LE(clock->monotonic() - start, 3s);
  int retries = 0;
  for (const auto& line : logger->lines()) {
    if (line.message != "the store did not answer; trying again") continue;
    ++retries;
    EXPECT_EQ(line.level, LogLevel::info);
    EXPECT_NE(line.text().find(GetParam().endpoint), std::string::npos) << line.text();
  }
  EXPECT_GE(retries, 2);
}

}  // namespace
}  // namespace instance::testing
