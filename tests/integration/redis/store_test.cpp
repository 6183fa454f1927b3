// The Redis store on a real redis-server, beyond the store contract (lock
// mechanics, expiry and secrets in every message are the contract's):
// layout, hostile keys and data, epochs and expiries as the server keeps
// them, concurrency, reconnection, a server that is down, and what a missing
// or wrong password says.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <stop_token>
#include <thread>

#include "instance/stores/redis.hpp"
#include "instance/testing.hpp"
#include "redis_server.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<Store> store_on(const RedisServer&, RedisStoreOptions options) {
  return make_redis_store(std::move(options)).value();
}

TEST(RedisStore, DeclaresEveryCapabilityJudgedOnTheServersClock) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const Capabilities caps = store_on(server, server.options())->capabilities();
  EXPECT_TRUE(caps.versions);
  EXPECT_TRUE(caps.conditional_writes);
  EXPECT_TRUE(caps.native_lease);
  EXPECT_TRUE(caps.server_clock);
}

TEST(RedisStore, DocumentsAreHashesUnderThePrefix) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto store = store_on(server, server.options(prefix));
  const std::string version = store->replace(key("instances/a"), "{\"id\":\"a\"}").value();
  EXPECT_EQ(server.command({"HGET", prefix + "doc:instances/a", "data"}), "{\"id\":\"a\"}");
  EXPECT_EQ(server.command({"HGET", prefix + "doc:instances/a", "ver"}), version);
  EXPECT_EQ(version.size(), 32u);
}

TEST(RedisStore, AGlobInThePrefixMatchesOnlyItself) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string base = RedisServer::fresh_prefix();
  auto star = store_on(server, server.options(base + "a*[b]?\\:"));
  auto other = store_on(server, server.options(base + "abbx\\:"));
  auto plain = store_on(server, server.options(base + "a"));
  ASSERT_TRUE(star->replace(key("instances/mine"), "1"));
  ASSERT_TRUE(other->replace(key("instances/theirs"), "2"));
  ASSERT_TRUE(plain->replace(key("instances/plain"), "3"));
  auto listed = star->list(key("instances")).value();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].str(), "instances/mine");
  EXPECT_EQ(star->list(Key()).value().size(), 1u);
}

TEST(RedisStore, AForeignKeyInTheNamespaceFailsTheListingLoudly) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto store = store_on(server, server.options(prefix));
  ASSERT_TRUE(store->replace(key("instances/good"), "x"));
  server.command({"HSET", prefix + "doc:instances/../evil\x01", "data", "y", "ver", "v"});
  auto listed = store->list(key("instances"));
  ASSERT_FALSE(listed.has_value()) << "a listing must not drop what it cannot name";
  EXPECT_EQ(listed.error().code, Errc::malformed);
  EXPECT_NE(listed.error().message.find("\\x01"), std::string::npos) << listed.error().message;
}

TEST(RedisStore, AKeyThisStoreNeverWritesIsListedReadAndRemoved) {
  // Every record under instances/ is judged, whatever its name.
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto store = store_on(server, server.options(prefix));
  ASSERT_TRUE(store->replace(key("instances/good"), "x"));
  server.command({"HSET", prefix + "doc:instances/not canonical%", "data", "y", "ver", "v"});
  auto listed = store->list(key("instances"));
  ASSERT_TRUE(listed.has_value()) << listed.error().message;
  const Key odd = Key::from_listing("instances/not canonical%").value();
  EXPECT_THAT(*listed, ::testing::UnorderedElementsAre(key("instances/good"), odd));
  EXPECT_EQ(store->get(odd)->data, "y");
  EXPECT_TRUE(store->remove(odd));
  EXPECT_FALSE(store->get(odd).has_value());
}

TEST(RedisStore, WrongTypesAndOversizedDocumentsAreMalformedAndLeftAlone) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto store = store_on(server, server.options(prefix));
  server.command({"SET", prefix + "doc:instances/str", "plain string"});
  auto str = store->get(key("instances/str"));
  ASSERT_FALSE(str.has_value());
  EXPECT_EQ(str.error().code, Errc::malformed);
  EXPECT_NE(str.error().message.find("string"), std::string::npos) << str.error().message;

  server.command({"HSET", prefix + "doc:instances/big", "data",
                  std::string(kMaxDocumentSize + 1, 'x'), "ver", "v"});
  auto big = store->get(key("instances/big"));
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().code, Errc::malformed);
  EXPECT_NE(big.error().message.find(std::to_string(kMaxDocumentSize + 1) + " bytes"),
            std::string::npos)
      << big.error().message;
  EXPECT_EQ(server.command({"EXISTS", prefix + "doc:instances/big"}), "(integer) 1");

  server.command({"HSET", prefix + "doc:instances/half", "data", "no version"});
  EXPECT_EQ(store->get(key("instances/half")).error().code, Errc::malformed);

  auto written = store->replace(key("instances/str"), "x");
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().code, Errc::malformed);
  EXPECT_EQ(server.command({"GET", prefix + "doc:instances/str"}), "plain string");
}

TEST(RedisStore, EpochsCountGrantsInTheServersEpochKey) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto a = store_on(server, server.options(prefix));
  auto b = store_on(server, server.options(prefix));
  const Key lock = key("instances.lock");
  const LockGrant g1 = a->lock(lock, 30s, "a").value();
  const std::string& t1 = g1.token;
  EXPECT_EQ(g1.epoch, 1u);
  EXPECT_EQ(b->refresh_lock(lock, "1:not-the-token", 30s).error().code, Errc::locked);
  EXPECT_EQ(b->unlock(lock, "1:not-the-token").error().code, Errc::not_found);
  ASSERT_TRUE(a->unlock(lock, t1));
  const LockGrant g2 = b->lock(lock, 30s, "b").value();
  const std::string& t2 = g2.token;
  EXPECT_EQ(g2.epoch, 2u);
  EXPECT_EQ(server.command({"GET", prefix + "epoch:instances.lock"}), "2");
  ASSERT_TRUE(b->unlock(lock, t2));
}

// The expiry is the server's own (PX): a refresh sets a new one there.
TEST(RedisStore, TheLeaseExpiryIsTheServers) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto store = store_on(server, server.options(prefix));
  const Key lock = key("instances.lock");
  const std::string redis_key = prefix + "lock:instances.lock";
  const std::string token = store->lock(lock, 20s, "a").value().token;
  auto pttl = [&] { return std::stoll(server.command({"PTTL", redis_key}).substr(10)); };
  EXPECT_GT(pttl(), 10'000);
  EXPECT_LE(pttl(), 20'000);
  ASSERT_TRUE(store->refresh_lock(lock, token, 90s));
  EXPECT_GT(pttl(), 80'000) << "a refresh sets a new expiry on the server";
  ASSERT_TRUE(store->unlock(lock, token));
}

TEST(RedisStore, ConcurrentCallsOnOneStoreAreSafe) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  auto store = store_on(server, server.options());
  const Key counter = key("counter");
  ASSERT_TRUE(store->create(counter, "0"));
  constexpr int kThreads = 6;
  constexpr int kIncrements = 40;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kIncrements;) {
          auto doc = store->get(counter).value();
          const int n = std::stoi(doc.data);
          if (store->replace_if(counter, std::to_string(n + 1), doc.version)) ++i;
          ASSERT_TRUE(store->replace(key("own/" + std::to_string(t)), std::to_string(i)));
        }
      });
    }
  }
  EXPECT_EQ(store->get(counter)->data, std::to_string(kThreads * kIncrements));
  EXPECT_EQ(store->list(key("own")).value().size(), static_cast<std::size_t>(kThreads));
}

TEST(RedisStore, AServerThatIsDownIsUnavailableWithAnActionableMessage) {
  RedisStoreOptions options;
  options.port = free_port();
  options.retry_deadline = 200ms;
  options.initial_backoff = 10ms;
  auto stats = std::make_shared<RedisStats>();
  options.stats = stats;
  auto store = make_redis_store(options).value();
  const auto start = std::chrono::steady_clock::now();
  auto doc = store->get(key("instances/a"));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::unavailable);
  EXPECT_NE(doc.error().message.find("get instances/a on redis://127.0.0.1:"), std::string::npos)
      << doc.error().message;
  EXPECT_NE(doc.error().message.find("check that redis-server runs"), std::string::npos);
  EXPECT_NE(doc.error().message.find("attempts"), std::string::npos);
  EXPECT_GT(stats->retries.load(), 0u);
  EXPECT_LT(took, 2s);
}

// A server that takes connections and answers nothing (busy, overloaded,
// paused) is a timeout that says how long it waited, never "check that
// redis-server runs". Before, hiredis's words came through: "Resource
// temporarily unavailable; check that redis-server runs", from a server
// that was running but slow under CI's load.
TEST(RedisStore, AServerThatDoesNotAnswerInTimeIsATimeoutNotADownServer) {
  RedisServer server;
  REQUIRE_REDIS(server);
  auto options = server.options();
  options.command_timeout = 200ms;
  options.retry_deadline = 500ms;
  auto store = make_redis_store(options).value();
  ASSERT_TRUE(store->replace(key("instances/a"), "x"));  // connected and answering
  ASSERT_TRUE(server.pause());
  auto doc = store->get(key("instances/a"));
  ASSERT_TRUE(server.resume());
  ASSERT_FALSE(doc.has_value());
  const std::string& message = doc.error().message;
  EXPECT_EQ(doc.error().code, Errc::timeout) << message;
  EXPECT_NE(message.find("no answer within 200 ms (timed out)"), std::string::npos) << message;
  EXPECT_NE(message.find("did not answer in time"), std::string::npos) << message;
  EXPECT_EQ(message.find("check that redis-server runs"), std::string::npos) << message;
  EXPECT_EQ(message.find("temporarily unavailable"), std::string::npos) << message;
  // Answering again, the same store carries on.
  auto again = store->get(key("instances/a"));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->data, "x");
}

TEST(RedisStore, ReconnectsAfterTheServerRestarts) {
  RedisServer server;
  REQUIRE_REDIS(server);
  auto stats = std::make_shared<RedisStats>();
  RedisStoreOptions options = server.options();
  options.stats = stats;
  options.retry_deadline = 5s;  // the restart below takes a moment
  auto store = make_redis_store(options).value();
  ASSERT_TRUE(store->replace(key("instances/a"), "before"));
  ASSERT_TRUE(server.stop());
  ASSERT_TRUE(server.restart());
  auto doc = store->get(key("instances/a"));
  ASSERT_TRUE(doc.has_value()) << doc.error().message;
  EXPECT_EQ(doc->data, "before") << "append-only persistence keeps it";
  EXPECT_EQ(stats->connections.load(), 2u);
}

TEST(RedisStore, LogsOnceWhenTheServerHasNoPersistence) {
  RedisServer volatile_server({.persistent = false});
  REQUIRE_REDIS(volatile_server);
  auto logger = std::make_shared<CapturingLogger>();
  RedisStoreOptions options = volatile_server.options();
  options.logger = logger;
  auto store = make_redis_store(options).value();
  (void)store->capabilities();
  (void)store->capabilities();
  EXPECT_EQ(std::ranges::count_if(logger->lines(),
                                  [](const auto& l) {
                                    return l.text().find("without append-only persistence") !=
                                           std::string::npos;
                                  }),
            1);

  RedisServer& persistent = RedisServer::shared();
  REQUIRE_REDIS(persistent);
  auto quiet = std::make_shared<CapturingLogger>();
  options = persistent.options();
  options.logger = quiet;
  (void)make_redis_store(options).value()->capabilities();
  EXPECT_FALSE(quiet->contains("persistence"));
}

TEST(RedisStore, WarnsWhenTheServersClockDisagreesWithOurs) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  auto logger = std::make_shared<CapturingLogger>();
  auto clock = std::make_shared<FakeClock>();
  clock->set_wall(WallTime{std::chrono::sys_days{std::chrono::year{2000} / 1 / 1}});
  RedisStoreOptions options = server.options();
  options.logger = logger;
  options.clock = clock;
  options.max_clock_skew = 5s;
  (void)make_redis_store(options).value()->capabilities();
  EXPECT_TRUE(logger->contains("clock differs")) << "no skew warning";
}

// ---- credentials ------------------------------------------------------------

// The password never showing is the contract's; here, what the errors say.
TEST(RedisStore, AWrongOrMissingPasswordSaysWhereItComesFrom) {
  RedisServer& server = RedisServer::with_password();
  REQUIRE_REDIS(server);
  RedisStoreOptions options = server.options();
  options.password = "not-the-password";
  auto wrong = make_redis_store(options).value()->get(key("instances/a"));
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code, Errc::permission) << wrong.error().message;
  EXPECT_NE(wrong.error().message.find("INSTANCE_GUARD_PASSWORD"), std::string::npos);

  options.password.clear();
  auto none = make_redis_store(options).value()->get(key("instances/a"));
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, Errc::permission);
  EXPECT_NE(none.error().message.find("--password-file"), std::string::npos)
      << none.error().message;
}

TEST(RedisStore, AnAclUserAuthenticatesWithItsPassword) {
  RedisServer server({.password = std::string(RedisServer::kPassword), .acl_user = "guard"});
  REQUIRE_REDIS(server);
  auto store = make_redis_store(server.options()).value();
  ASSERT_TRUE(store->replace(key("instances/a"), "x"));
  RedisStoreOptions other = server.options();
  other.user = "nobody";
  auto refused = make_redis_store(other).value()->get(key("instances/a"));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Errc::permission) << refused.error().message;
  EXPECT_EQ(refused.error().message.find(RedisServer::kPassword), std::string::npos);
}

// --wait's hand-over (Store::await_change): a waiter subscribes to the key's
// change channel and is woken by the PUBLISH of the script that unlocks or
// removes, not at its next poll. Each wait that should be woken is given a
// minute: one that was not woken would come back false after it.
template <typename F>
std::chrono::steady_clock::duration timed(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::steady_clock::now() - start;
}

TEST(RedisStoreWait, AWaiterIsWokenByAnUnlockInAnotherStore) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto holder = store_on(server, server.options(prefix));
  auto waiter = store_on(server, server.options(prefix));
  const Key k = key("instances.lock");
  auto held = holder->lock(k, 1min, "holder").value();
  std::optional<Result<bool>> woken;
  std::chrono::steady_clock::duration took{};
  std::thread t([&] { took = timed([&] { woken = waiter->await_change(k, 1min, {}); }); });
  // Not needed for correctness (a waiter that subscribes after the unlock
  // finds the lock gone), only so the wait is usually already blocked.
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(holder->unlock(k, held.token));
  t.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value()) << woken->error().message;
  EXPECT_TRUE(**woken);
  EXPECT_LT(took, 10s);
  EXPECT_TRUE(waiter->lock(k, 1min, "next"));  // and the lock is free to take
  // The waiter's subscription closed with the change (the caller claims
  // next): no connection stays open for nothing.
  EXPECT_EQ(server.command({"PUBSUB", "NUMSUB", prefix + "changed:0:lock:instances.lock"}),
            prefix + "changed:0:lock:instances.lock\n(integer) 0");
}

TEST(RedisStoreWait, AWaitForAFreeLockReturnsAtOnce) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  auto store = store_on(server, server.options());
  Result<bool> free = false;
  const auto took = timed([&] { free = store->await_change(key("instances.lock"), 1min, {}); });
  ASSERT_TRUE(free) << free.error().message;
  EXPECT_TRUE(*free);
  EXPECT_LT(took, 10s);
}

TEST(RedisStoreWait, AWaitEndsWithFalseWhenStopIsRequested) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  auto store = store_on(server, server.options());
  const Key k = key("instances.lock");
  ASSERT_TRUE(store->lock(k, 1min, "holder"));
  std::stop_source stop;
  std::optional<Result<bool>> woken;
  std::chrono::steady_clock::duration took{};
  std::thread t(
      [&] { took = timed([&] { woken = store->await_change(k, 1min, stop.get_token()); }); });
  std::this_thread::sleep_for(50ms);
  stop.request_stop();
  t.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value()) << woken->error().message;
  EXPECT_FALSE(**woken);  // not a change: the holder still holds
  EXPECT_LT(took, 10s);
  EXPECT_EQ(store->lock(k, 1min, "next").error().code, Errc::locked);
}

TEST(RedisStoreWait, AWaitOnAHeldLockTimesOutWithFalse) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto store = store_on(server, server.options(prefix));
  const Key k = key("instances.lock");
  ASSERT_TRUE(store->lock(k, 1min, "holder"));
  for (int i = 0; i < 2; ++i) {  // the second on the subscription the first left
    auto still = store->await_change(k, 100ms, {});
    ASSERT_TRUE(still) << still.error().message;
    EXPECT_FALSE(*still);
  }
  const std::string channel = prefix + "changed:0:lock:instances.lock";
  EXPECT_EQ(server.command({"PUBSUB", "NUMSUB", channel}), channel + "\n(integer) 1");
}

TEST(RedisStoreWait, ARemovedRecordWakesItsWaiter) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto holder = store_on(server, server.options(prefix));
  auto waiter = store_on(server, server.options(prefix));
  const Key plain = key("instances/a");
  const Key conditional = key("instances/b");
  ASSERT_TRUE(holder->replace(plain, "{}"));
  const std::string version = holder->replace(conditional, "{}").value();
  auto still = waiter->await_change(plain, 100ms, {});
  ASSERT_TRUE(still) << still.error().message;
  EXPECT_FALSE(*still);  // present: nothing to wake for

  for (const Key& k : {plain, conditional}) {
    std::optional<Result<bool>> woken;
    std::chrono::steady_clock::duration took{};
    std::thread t([&] { took = timed([&] { woken = waiter->await_change(k, 1min, {}); }); });
    std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(k == plain ? holder->remove(k) : holder->remove_if(k, version));
    t.join();
    ASSERT_TRUE(woken.has_value() && woken->has_value()) << woken->error().message;
    EXPECT_TRUE(**woken) << k.str();
    EXPECT_LT(took, 10s);
  }
}

TEST(RedisStoreWait, TwoWaitersAtOnceAreBothWoken) {
  RedisServer& server = RedisServer::shared();
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto holder = store_on(server, server.options(prefix));
  auto waiter = store_on(server, server.options(prefix));  // one store, two waits
  const Key k = key("instances.lock");
  auto held = holder->lock(k, 1min, "holder").value();
  std::optional<Result<bool>> first, second;
  std::thread a([&] { first = waiter->await_change(k, 1min, {}); });
  std::thread b([&] { second = waiter->await_change(k, 1min, {}); });
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(holder->unlock(k, held.token));
  a.join();
  b.join();
  for (auto* woken : {&first, &second}) {
    ASSERT_TRUE(woken->has_value() && (*woken)->has_value()) << (*woken)->error().message;
    EXPECT_TRUE(***woken);
  }
}

// With a password, the subscriber authenticates as the store's connection
// does; a user whose ACL denies the channels still unlocks (the scripts
// publish with pcall), and its wait fails, naming the store, never the
// password, so the guard polls.
TEST(RedisStoreWait, AWaitAuthenticatesAndAnAclWithoutChannelsStillUnlocks) {
  RedisServer server({.password = std::string(RedisServer::kPassword), .acl_user = "guard"});
  REQUIRE_REDIS(server);
  const std::string prefix = RedisServer::fresh_prefix();
  auto holder = store_on(server, server.options(prefix));
  auto waiter = store_on(server, server.options(prefix));
  const Key k = key("instances.lock");
  auto held = holder->lock(k, 1min, "holder").value();
  std::optional<Result<bool>> woken;
  std::thread t([&] { woken = waiter->await_change(k, 1min, {}); });
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(holder->unlock(k, held.token));
  t.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value()) << woken->error().message;
  EXPECT_TRUE(**woken);

  const std::string secret = "Np-Secret-93a1";
  ASSERT_EQ(server.command({"ACL", "SETUSER", "nochannels", "on", ">" + secret, "~*", "+@all",
                            "resetchannels"}),
            "OK");
  RedisStoreOptions options = server.options(prefix);
  options.user = "nochannels";
  options.password = secret;
  auto denied = make_redis_store(options).value();
  auto mine = denied->lock(k, 1min, "denied").value();
  auto wait = denied->await_change(k, 1min, {});
  ASSERT_FALSE(wait.has_value());
  EXPECT_NE(wait.error().code, Errc::unsupported);
  EXPECT_NE(wait.error().message.find("wait for a change of instances.lock on redis://127.0.0.1:"),
            std::string::npos)
      << wait.error().message;
  EXPECT_EQ(wait.error().message.find(secret), std::string::npos) << wait.error().message;
  ASSERT_TRUE(denied->unlock(k, mine.token));
  ASSERT_TRUE(denied->replace(key("instances/a"), "{}"));
  EXPECT_TRUE(denied->remove(key("instances/a")));
}

TEST(RedisStoreWait, AServerThatIsDownFailsTheWaitSoTheCallerPolls) {
  RedisStoreOptions options;
  options.port = free_port();
  options.retry_deadline = 200ms;
  options.initial_backoff = 10ms;
  auto store = make_redis_store(options).value();
  auto wait = store->await_change(key("instances.lock"), 1min, {});
  ASSERT_FALSE(wait.has_value());
  EXPECT_EQ(wait.error().code, Errc::unavailable) << wait.error().message;
  EXPECT_NE(wait.error().message.find("redis://127.0.0.1:"), std::string::npos)
      << wait.error().message;
}

}  // namespace
}  // namespace instance::testing
