// The guard on a real PostgreSQL cluster: exclusive mode on the store's own
// lease with the epoch from its sequence, and a server restart in the middle
// of a claim. Time is a FakeClock driven through a ManualScheduler: renewals
// run only when the test advances it, never by sleeping.
#include <gtest/gtest.h>

#include "instance/guard.hpp"
#include "instance/testing.hpp"
#include "server.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

class PostgresGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_POSTGRES();
    table_ = PostgresServer::fresh_table();
  }

  Guard guard(const std::string& id, Duration ttl = 30s) {
    auto options = test_options(table_);
    options.retry_deadline = 500ms;  // each call to the stopped server gives up soon
    return Guard::create(test_store(options),
                         {.ttl = ttl,
                          .id = id,
                          .clock = clock_,
                          .scheduler = scheduler_,
                          .mode = Mode::automatic,
                          .on_lost = [this](const Error& e) { lost_ = e.message; }})
        .value();
  }
  PostgresServer& server() { return PostgresServer::get(); }
  std::string epoch_sequence() {
    return server().admin("SELECT last_value FROM " + table_ + "_epoch");
  }

  std::string table_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler_ = std::make_shared<ManualScheduler>(clock_);
  std::string lost_;
};

TEST_F(PostgresGuard, AutoIsExclusiveOnTheServersLeaseWithTheSequencesEpoch) {
  auto a = guard("a");
  auto claim = a.claim();
  ASSERT_TRUE(claim) << claim.error().error.message;
  EXPECT_EQ(claim->mode(), Mode::exclusive);
  EXPECT_NE(claim->guarantee().find("store's own lock"), std::string_view::npos);
  ASSERT_TRUE(claim->epoch());
  EXPECT_EQ(std::to_string(*claim->epoch()), epoch_sequence());

  auto refused = guard("b").claim();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().error.code, Errc::another_instance);

  const auto first = *claim->epoch();
  ASSERT_TRUE(claim->stand_down());
  auto next = guard("b").claim();
  ASSERT_TRUE(next) << next.error().error.message;
  EXPECT_GT(*next->epoch(), first);
  EXPECT_EQ(std::to_string(*next->epoch()), epoch_sequence());
}

TEST_F(PostgresGuard, AHolderRenewsAfterAServerRestart) {
  auto a = guard("a", 30s);
  auto claim = a.claim();
  ASSERT_TRUE(claim) << claim.error().error.message;
  const auto before = claim->fence_deadline().value();

  server().stop();
  scheduler_->advance(10s);  // a renewal against the stopped server fails
  EXPECT_TRUE(claim->active());
  EXPECT_EQ(claim->fence_deadline().value(), before) << "no renewal succeeded while down";

  ASSERT_TRUE(server().start());
  scheduler_->advance(10s);  // the next renewal reconnects and refreshes the lease
  EXPECT_TRUE(claim->active()) << lost_;
  EXPECT_GT(claim->fence_deadline().value(), before);
  EXPECT_EQ(guard("b").claim().error().error.code, Errc::another_instance);
  EXPECT_TRUE(claim->stand_down());
  EXPECT_TRUE(guard("b").claim());
}

TEST_F(PostgresGuard, AHolderCutOffPastItsTtlStopsAndLeavesNothingCorrupt) {
  auto a = guard("a", 30s);
  auto claim = a.claim();
  ASSERT_TRUE(claim) << claim.error().error.message;
  const auto first = *claim->epoch();

  server().stop();
  scheduler_->advance(30s);  // renewals fail; the self-fencing deadline passes
  EXPECT_FALSE(claim->active());
  EXPECT_EQ(claim->status(), ClaimStatus::lost);
  EXPECT_FALSE(lost_.empty());

  ASSERT_TRUE(server().start());
  // The server still holds the lease until it expires on its own clock.
  auto early = guard("b").claim();
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().error.code, Errc::another_instance) << early.error().error.message;
  server().admin("UPDATE " + table_ + " SET expires_at = now() WHERE kind = 'l'");
  auto next = guard("b").claim();
  ASSERT_TRUE(next) << next.error().error.message;
  EXPECT_GT(*next->epoch(), first);
}

}  // namespace
}  // namespace instance::testing
