// The one attempt loop of the network stores (instance/sdk/attempts.hpp), on a
// fake clock: what each attempt is told, when the loop stops, what it
// returns, and what the retry hook and the start-up budget hear.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "instance/sdk/attempts.hpp"
#include "instance/sdk/startup_budget.hpp"
#include "instance/testing.hpp"

namespace instance::net {
namespace {

using namespace std::chrono_literals;

Attempts policy(std::chrono::milliseconds deadline = 10s) {
  return {.retry = {.initial_backoff = 100ms, .max_backoff = 1s, .deadline = deadline},
          .request_timeout = 3s,
          .seed = 7};
}

TEST(NetAttempts, RetriesUntilAnAttemptSucceedsAndTellsEachWhatCameBefore) {
  FakeClock clock;
  std::vector<AttemptInfo> seen;
  std::vector<std::string> retried;
  auto done = run_until_done(
      policy(), clock,
      [&](const AttemptInfo& info) -> Attempt<int> {
        seen.push_back(info);
        // The first may have applied, the second surely not; the third works.
        if (info.number == 1) return attempt_error(Errc::unavailable, "reset", true, true);
        if (info.number == 2) return attempt_error(Errc::unavailable, "refused", true, false);
        return 42;
      },
      [&](const AttemptInfo& info, std::string_view why, Duration pause) {
        retried.push_back(std::to_string(info.number) + " " + std::string(why));
        EXPECT_GT(pause, Duration::zero());
      });
  ASSERT_TRUE(done.result);
  EXPECT_EQ(*done.result, 42);
  EXPECT_EQ(done.attempts, 3);
  EXPECT_FALSE(done.gave_up);
  EXPECT_TRUE(done.may_have_applied_before);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].number, 1);
  EXPECT_FALSE(seen[0].may_have_applied_before);
  EXPECT_TRUE(seen[1].may_have_applied_before);
  EXPECT_TRUE(seen[2].may_have_applied_before);  // it stays said
  EXPECT_EQ(seen[0].timeout, 3s);                // the first attempt: the whole request timeout
  EXPECT_EQ(retried, (std::vector<std::string>{"1 reset", "2 refused"}));
}

TEST(NetAttempts, AFailureNoRetryCuresEndsAtOnce) {
  FakeClock clock;
  const MonoTime start = clock.monotonic();
  int hooks = 0;
  auto done = run_until_done(
      policy(), clock,
      [&](const AttemptInfo&) -> Attempt<int> {
        return attempt_error(Errc::permission, "refused", false, true);
      },
      [&](const AttemptInfo&, std::string_view, Duration) { ++hooks; });
  ASSERT_FALSE(done.result);
  EXPECT_EQ(done.result.error().error.code, Errc::permission);
  EXPECT_EQ(done.attempts, 1);
  EXPECT_FALSE(done.gave_up);
  EXPECT_FALSE(done.may_have_applied_before)
      << "the last attempt's effect is the caller's to judge";
  EXPECT_EQ(hooks, 0);
  EXPECT_EQ(clock.monotonic(), start);
}

TEST(NetAttempts, TheDeadlineEndsTheChainWithTheLastOutcome) {
  FakeClock clock;
  const MonoTime start = clock.monotonic();
  int hooks = 0;
  auto done = run_attempts(
      policy(3s), clock,
      [&](const AttemptInfo& info) {
        return Tried<int>{.outcome = info.number, .retry = true, .why = "HTTP 503"};
      },
      [&](const AttemptInfo&, std::string_view, Duration) { ++hooks; });
  EXPECT_TRUE(done.gave_up);
  EXPECT_EQ(done.outcome, done.attempts) << "the last attempt's outcome is returned";
  EXPECT_GT(done.attempts, 3);
  EXPECT_EQ(hooks, done.attempts - 1);
  const Duration spent = clock.monotonic() - start;
  EXPECT_LT(spent, 3s);
  EXPECT_GT(spent, 3s - 1s);  // it stopped only when the next pause would cross the deadline
}

TEST(NetAttempts, OnceMakesOneAttemptAndGivesUp) {
  FakeClock clock;
  Attempts how = policy();
  how.once = true;
  auto done = run_until_done(how, clock, [&](const AttemptInfo&) -> Attempt<int> {
    return attempt_error(Errc::timeout, "no answer", true, true);
  });
  EXPECT_EQ(done.attempts, 1);
  EXPECT_TRUE(done.gave_up);
  EXPECT_EQ(done.result.error().error.code, Errc::timeout);
}

TEST(NetAttempts, TheStartupBudgetBoundsTheChainAndHearsEachRetry) {
  FakeClock clock;
  std::vector<std::string> heard;
  const StartupBudget budget(clock, 1s, [&](const RetryNotice& n) {
    heard.push_back(std::to_string(n.attempt) + " " + std::string(n.error));
  });
  const MonoTime start = clock.monotonic();
  auto done = run_until_done(policy(10s), clock, [&](const AttemptInfo&) -> Attempt<int> {
    return attempt_error(Errc::unavailable, "get a at h: no reply", true);
  });
  EXPECT_TRUE(done.gave_up);
  EXPECT_LE(clock.monotonic() - start, 1s) << "the budget, not the 10 s deadline, ended it";
  ASSERT_EQ(heard.size(), static_cast<std::size_t>(done.attempts - 1));
  EXPECT_EQ(heard.front(), "1 get a at h: no reply");
}

}  // namespace
}  // namespace instance::net
