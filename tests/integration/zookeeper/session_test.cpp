// What the ZooKeeper store's lock sessions tell the guard: a disconnected
// session is not lost yet (refresh_lock answers unavailable: try again); an
// expired one is lost (not_found), and its lock ends without anyone
// unlocking it; a lock ends at once when its holder's store goes. The server
// is paused (SIGSTOP) so the client's heartbeats go unanswered; its expiry is
// polled, bounded, on the real clock.
#include <gtest/gtest.h>

#include <thread>

#include "support/test_support.hpp"
#include "zookeeper_server.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

// Two stores on one root of the shared server: a holder and another.
class ZookeeperSession : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ZOOKEEPER(server);
    holder = make_zookeeper_store(server.options(root)).value();
    other = make_zookeeper_store(server.options(root)).value();
  }
  ZookeeperServer& server = ZookeeperServer::shared();
  const std::string root = ZookeeperServer::fresh_root();
  const Key k = key("instances.lock");
  std::shared_ptr<Store> holder;
  std::shared_ptr<Store> other;
};

TEST_F(ZookeeperSession, DisconnectedIsNotLostExpiredIs) {
  auto grant = holder->lock(k, 1s, "holder");
  ASSERT_TRUE(grant) << grant.error().message;
  EXPECT_EQ(grant->granted, Duration(1s)) << "the session timeout the server agreed";
  ASSERT_TRUE(holder->refresh_lock(k, grant->token, 1s));

  ASSERT_TRUE(server.pause());
  auto away = holder->refresh_lock(k, grant->token, 1s);
  ASSERT_FALSE(away);
  EXPECT_EQ(away.error().code, Errc::unavailable) << away.error().message;
  std::this_thread::sleep_for(1500ms);  // past the session timeout, with the server stopped
  ASSERT_TRUE(server.resume());

  // The server expires the session once it runs again; the client learns it
  // when it reconnects.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  Result<Duration> refreshed = Duration::zero();
  while (std::chrono::steady_clock::now() < deadline) {
    refreshed = holder->refresh_lock(k, grant->token, 1s);
    if (!refreshed && refreshed.error().code != Errc::unavailable) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(refreshed) << "the session outlived a pause longer than its timeout";
  EXPECT_EQ(refreshed.error().code, Errc::not_found) << refreshed.error().message;
  EXPECT_NE(refreshed.error().message.find("expired"), std::string::npos)
      << refreshed.error().message;
  auto taken = other->lock(k, 30s, "other");
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_GT(taken->epoch, grant->epoch);
  EXPECT_EQ(holder->unlock(k, grant->token).error().code, Errc::not_found);
  EXPECT_TRUE(other->unlock(k, taken->token));
}

TEST_F(ZookeeperSession, AShortDisconnectionKeepsTheLock) {
  auto grant = holder->lock(k, 10s, "holder");
  ASSERT_TRUE(grant) << grant.error().message;
  EXPECT_EQ(grant->granted, Duration(10s));
  ASSERT_TRUE(server.pause());
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(server.resume());
  auto kept = holder->refresh_lock(k, grant->token, 10s);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(*kept, grant->granted);
  EXPECT_EQ(other->lock(k, 10s, "other").error().code, Errc::locked);
  EXPECT_TRUE(holder->unlock(k, grant->token));
}

TEST_F(ZookeeperSession, ALockEndsAtOnceWithItsStore) {
  ASSERT_TRUE(holder->lock(k, 30s, "holder"));
  EXPECT_EQ(other->lock(k, 30s, "other").error().code, Errc::locked);
  holder.reset();  // without unlocking
  const auto gone_at = std::chrono::steady_clock::now();
  auto taken = other->lock(k, 30s, "other");
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - gone_at, 2s) << "not a session timeout later";
  EXPECT_TRUE(other->unlock(k, taken->token));
}

TEST(ZookeeperDocuments, TheSessionComesBackAfterARestart) {
  ZookeeperServer server;
  REQUIRE_ZOOKEEPER(server);
  auto options = server.options();
  options.retry_deadline = 5000ms;
  auto store = make_zookeeper_store(options).value();
  ASSERT_TRUE(store->replace(key("instances/a"), "one"));
  ASSERT_TRUE(server.stop());
  ASSERT_TRUE(server.restart());
  auto doc = store->get(key("instances/a"));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->data, "one");
}

}  // namespace
}  // namespace instance::testing
