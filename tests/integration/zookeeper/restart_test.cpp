// ZooKeeper restarted (or killed) in the middle of a claim. The guard's time
// is a fake clock driven by the test (its renewals run when the test
// advances it); the lock's session lives on the real server's clock (30 s),
// which the test never waits for. ZooKeeper keeps sessions and their
// ephemeral znodes in its data across a restart and gives each session a
// whole timeout again, so the holder's client reconnects, its next renewal
// succeeds and nobody else gets in. A server down past the guard's fencing
// deadline (ttl - max-skew, below the session timeout) ends the claim.
#include <gtest/gtest.h>

#include <iostream>

#include "support/fake_time_guard.hpp"
#include "zookeeper_server.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

class ZookeeperRestart : public ::testing::Test, public FakeTimeGuards {
 protected:
  const std::string root = ZookeeperServer::fresh_root();

  // retry_deadline: long enough for a restarting server to come back on a
  // loaded machine (the most the guard's tuning allows at ttl 30 s).
  Guard guard(ZookeeperServer& server, std::string id, Duration retry_deadline = 10s) {
    ZookeeperStoreOptions options = server.options(root);
    options.retry_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(retry_deadline);
    return FakeTimeGuards::guard(make_zookeeper_store(options).value(), std::move(id));
  }

  // What the guards logged, to read a failure by.
  void TearDown() override {
    if (!HasFailure()) return;
    for (const auto& line : logger->formatted()) std::cerr << "[ guard log ] " << line << "\n";
  }
};

TEST_F(ZookeeperRestart, TheHolderRenewsAfterARestartAndACrash) {
  ZookeeperServer server;
  REQUIRE_ZOOKEEPER(server);
  Guard a = guard(server, "a");
  auto claim = a.claim();
  ASSERT_TRUE(claim.has_value()) << claim.error().error.message;
  EXPECT_EQ(claim->mode(), Mode::exclusive);
  const auto epoch = claim->epoch();

  ASSERT_TRUE(server.stop());
  ASSERT_TRUE(server.restart());
  scheduler->advance(10s);  // a renewal, on the restarted server
  EXPECT_EQ(losses, 0) << (loss ? loss->message : "");
  EXPECT_TRUE(claim->active());
  EXPECT_FALSE(logger->contains("renewal failed")) << "the renewal should have succeeded";
  Guard b = guard(server, "b");
  expect_refused(b);

  ASSERT_TRUE(server.crash());  // SIGKILL: what was logged survives
  ASSERT_TRUE(server.restart());
  scheduler->advance(10s);
  EXPECT_EQ(losses, 0) << (loss ? loss->message : "");
  EXPECT_TRUE(claim->active());
  expect_refused(b);

  const auto down = claim->stand_down();
  ASSERT_TRUE(down.has_value()) << down.error().message;
  auto next = b.claim();
  ASSERT_TRUE(next.has_value()) << next.error().error.message;
  ASSERT_TRUE(epoch && next->epoch());
  EXPECT_GT(*next->epoch(), *epoch);
  const auto next_down = next->stand_down();
  ASSERT_TRUE(next_down.has_value()) << next_down.error().message;
}

TEST_F(ZookeeperRestart, AServerDownPastTheFencingDeadlineEndsTheClaim) {
  ZookeeperServer server;
  REQUIRE_ZOOKEEPER(server);
  Guard a = guard(server, "a", 300ms);  // each renewal gives up quickly
  auto claim = a.claim();
  ASSERT_TRUE(claim.has_value()) << claim.error().error.message;
  ASSERT_TRUE(server.stop());
  scheduler->advance(10s);  // a renewal fails (disconnected: not lost) and is retried next period
  EXPECT_EQ(losses, 0) << (loss ? loss->message : "");
  EXPECT_TRUE(claim->active());
  scheduler->advance(20s);  // no renewal for ttl - max_skew: self-fenced
  EXPECT_EQ(losses, 1);
  EXPECT_EQ(claim->status(), ClaimStatus::lost);
  ASSERT_TRUE(server.restart()) << server.why_not();
}

}  // namespace
}  // namespace instance::testing
