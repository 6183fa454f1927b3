// A redis-server restarted (or killed) in the middle of a claim. The guard's
// time is a fake clock driven by the test (its renewals run when the test
// advances it); the lease expires on the real server's clock (30 s), which
// the test never waits for.
//   append-only persistence (appendfsync always): the lease, its epoch and
//     the records survive a stop and a SIGKILL; the holder renews after the
//     restart and keeps the claim, and nobody else gets in.
//   no persistence: the restart ends the lease; the holder's next renewal
//     finds it gone and the claim is lost (the tool then stops its child);
//     the store is left usable and the next guard claims.
#include <gtest/gtest.h>

#include "instance/guard.hpp"
#include "instance/testing.hpp"
#include "redis_server.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

class RedisRestart : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler = std::make_shared<ManualScheduler>(clock);
  std::shared_ptr<CapturingLogger> logger = std::make_shared<CapturingLogger>();
  const std::string prefix = RedisServer::fresh_prefix();
  int losses = 0;
  std::optional<Error> loss;

  // retry_deadline: long enough for a restarting server to come back.
  Guard guard(RedisServer& server, std::string id, Duration retry_deadline = 3s) {
    RedisStoreOptions options = server.options(prefix);
    options.retry_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(retry_deadline);
    GuardOptions g{.ttl = 30s,
                   .id = std::move(id),
                   .clock = clock,
                   .scheduler = scheduler,
                   .logger = logger,
                   .mode = Mode::automatic,
                   .max_skew = 3s};
    g.on_lost = [this](const Error& e) {
      ++losses;
      loss = e;
    };
    return Guard::create(make_redis_store(options).value(), g).value();
  }
};

void expect_refused(Guard& g) {
  auto c = g.claim();
  ASSERT_FALSE(c.has_value()) << "a second holder got in";
  EXPECT_EQ(c.error().error.code, Errc::another_instance) << c.error().error.message;
}

TEST_F(RedisRestart, WithAppendOnlyPersistenceTheHolderRenewsAfterARestart) {
  RedisServer server({.persistent = true});
  REQUIRE_REDIS(server);
  Guard a = guard(server, "a");
  auto claim = a.claim();
  ASSERT_TRUE(claim.has_value()) << claim.error().error.message;
  EXPECT_EQ(claim->mode(), Mode::exclusive);
  const auto epoch = claim->epoch();
  const std::string lock_value = server.command({"GET", prefix + "lock:instances.lock"});

  ASSERT_TRUE(server.stop());
  ASSERT_TRUE(server.restart());
  EXPECT_EQ(server.command({"GET", prefix + "lock:instances.lock"}), lock_value)
      << "the lease survived the restart";

  scheduler->advance(10s);  // a renewal, on the restarted server
  EXPECT_EQ(losses, 0) << (loss ? loss->message : "");
  EXPECT_TRUE(claim->active());
  EXPECT_FALSE(logger->contains("renewal failed")) << "the renewal should have succeeded";
  Guard b = guard(server, "b");
  expect_refused(b);

  scheduler->advance(30s);  // three more renewals: still held
  EXPECT_TRUE(claim->active());
  ASSERT_TRUE(claim->stand_down());
  auto next = b.claim();
  ASSERT_TRUE(next.has_value()) << next.error().error.message;
  EXPECT_EQ(next->epoch(), std::optional<std::uint64_t>(*epoch + 1));
}

TEST_F(RedisRestart, WithAppendFsyncAlwaysTheLeaseSurvivesACrash) {
  RedisServer server({.persistent = true});
  REQUIRE_REDIS(server);
  Guard a = guard(server, "a");
  auto claim = a.claim();
  ASSERT_TRUE(claim.has_value()) << claim.error().error.message;
  ASSERT_TRUE(server.crash());
  ASSERT_TRUE(server.restart());
  scheduler->advance(10s);
  EXPECT_EQ(losses, 0) << (loss ? loss->message : "");
  EXPECT_TRUE(claim->active());
  Guard b = guard(server, "b");
  expect_refused(b);
}

TEST_F(RedisRestart, WithoutPersistenceTheHolderDetectsTheLossAndTheStoreStaysUsable) {
  RedisServer server({.persistent = false});
  REQUIRE_REDIS(server);
  Guard a = guard(server, "a");
  auto claim = a.claim();
  ASSERT_TRUE(claim.has_value()) << claim.error().error.message;

  ASSERT_TRUE(server.stop());
  ASSERT_TRUE(server.restart());
  EXPECT_EQ(server.command({"DBSIZE"}), "(integer) 0") << "nothing persisted";

  scheduler->advance(10s);  // the renewal finds the lease gone
  EXPECT_EQ(losses, 1);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->code, Errc::lost);
  EXPECT_NE(loss->message.find("lock is gone"), std::string::npos) << loss->message;
  EXPECT_EQ(claim->status(), ClaimStatus::lost);

  Guard b = guard(server, "b");
  auto next = b.claim();
  ASSERT_TRUE(next.has_value()) << next.error().error.message;
  EXPECT_EQ(next->epoch(), std::optional<std::uint64_t>(1)) << "the epoch restarted with the data";
  ASSERT_TRUE(next->stand_down());
}

TEST_F(RedisRestart, AServerDownPastTheFencingDeadlineEndsTheClaim) {
  RedisServer server({.persistent = true});
  REQUIRE_REDIS(server);
  Guard a = guard(server, "a", 200ms);  // each renewal gives up quickly
  auto claim = a.claim();
  ASSERT_TRUE(claim.has_value()) << claim.error().error.message;
  ASSERT_TRUE(server.stop());
  scheduler->advance(10s);  // a renewal fails (unavailable) and is retried next period
  EXPECT_EQ(losses, 0);
  EXPECT_TRUE(claim->active());
  scheduler->advance(20s);  // no renewal for ttl - max_skew: self-fenced
  EXPECT_EQ(losses, 1);
  EXPECT_EQ(claim->status(), ClaimStatus::lost);
  ASSERT_TRUE(server.restart());
}

}  // namespace
}  // namespace instance::testing
