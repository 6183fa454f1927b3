// What the ZooKeeper store's lock sessions tell the guard: a disconnected
// session is not lost yet (refresh_lock answers unavailable: try again); an
// expired one is lost (not_found), and its lock ends without anyone
// unlocking it; a lock ends at once when its holder's store goes. A holder is
// cut off by the fault proxy's stall, or by pausing the server (SIGSTOP) for
// a disconnection shorter than its session; expiry is polled, bounded, on
// the real clock.
#include <gtest/gtest.h>

#include <thread>

#include "support/fault_proxy.hpp"
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
  // The holder reaches the server through a proxy that can stall it; the
  // server keeps running, so it expires the holder's session on its own
  // clock. (Pausing the server instead races on resume: a reconnect the
  // server reads before its expiry thread runs revives the session.)
  FaultProxy proxy(server.port());
  ASSERT_TRUE(proxy.running()) << proxy.why_not();
  auto via_proxy = server.options(root);
  via_proxy.servers = "127.0.0.1:" + std::to_string(proxy.port());
  holder = make_zookeeper_store(via_proxy).value();

  auto grant = holder->lock(k, 1s, "holder");
  ASSERT_TRUE(grant) << grant.error().message;
  EXPECT_EQ(grant->granted, Duration(1s)) << "the session timeout the server agreed";
  ASSERT_TRUE(holder->refresh_lock(k, grant->token, 1s));

  ASSERT_TRUE(proxy.set("stall"));
  auto away = holder->refresh_lock(k, grant->token, 1s);
  ASSERT_FALSE(away);
  EXPECT_EQ(away.error().code, Errc::unavailable) << away.error().message;

  // The server ends the session, and its lock with it, while the holder
  // cannot hear of it: another store takes the lock.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  Result<LockGrant> taken = fail(Errc::locked, "not tried");
  while (std::chrono::steady_clock::now() < deadline) {
    taken = other->lock(k, 30s, "other");
    if (taken || taken.error().code != Errc::locked) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(taken) << "the server kept a session it had not heard from for 10 s: "
                     << taken.error().message;
  EXPECT_GT(taken->epoch, grant->epoch);

  // Once it reconnects, the holder learns its session expired: lost, not
  // unavailable.
  ASSERT_TRUE(proxy.set("pass"));
  Result<Duration> refreshed = Duration::zero();
  const auto reconnect_deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < reconnect_deadline) {
    refreshed = holder->refresh_lock(k, grant->token, 1s);
    if (!refreshed && refreshed.error().code != Errc::unavailable) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(refreshed) << "the holder's session outlived its expiry";
  EXPECT_EQ(refreshed.error().code, Errc::not_found) << refreshed.error().message;
  EXPECT_NE(refreshed.error().message.find("expired"), std::string::npos)
      << refreshed.error().message;
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
